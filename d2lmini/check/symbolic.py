"""Chapter 14, symbolic programming: shape inference, by hand.

``mlp_arg_shapes(data_shape, num_hiddens)`` returns the shape of every
argument of the symbol ``fc1 -> relu -> fc2 -> relu -> ... -> fcK``
(``FullyConnected`` layers named ``fc1`` ... with ``num_hiddens[i]``
outputs): ``{'data': ..., 'fc1_weight': ..., 'fc1_bias': ..., ...}``.
``mx.sym``'s ``infer_shape`` is the oracle.
"""
from .. import symbol as sym
from . import Case, run_cases

CASES = [((2, 5), [3]), ((4, 1, 28, 28), [256, 10]), ((1, 3), [4, 4, 2]),
         ((8, 2, 3), [1])]


def _expected(data_shape, num_hiddens):
    net = sym.var('data')
    for i, h in enumerate(num_hiddens, 1):
        if i > 1:
            net = sym.Activation(net, act_type='relu')
        net = sym.FullyConnected(net, num_hidden=h, name=f'fc{i}')
    arg_shapes, _, _ = net.infer_shape(data=data_shape)
    return dict(zip(net.list_arguments(), arg_shapes))


def mlp_arg_shapes(solution):
    """Check ``solution(data_shape, num_hiddens)``: {argument: shape}."""
    cases = [Case(*c, names=('data_shape', 'num_hiddens')) for c in CASES]

    def compare(expected, got, args):
        if not isinstance(got, dict):
            return f'expected a dict {{argument: shape}}, got {got!r}'
        for name, shape in expected.items():
            if name not in got:
                return f'{name!r} is missing; expected {expected}'
            if tuple(got[name]) != shape:
                return f'{name}: expected {shape}, got {got[name]}'
        extra = sorted(set(got) - set(expected))
        if extra:
            return f'unexpected arguments {extra}; expected {expected}'
        return None

    return run_cases(solution, cases, _expected, compare,
                     prepare=lambda args: (args[0], list(args[1])),
                     todo='mlp_arg_shapes(data_shape, num_hiddens) returns '
                          '{argument name: shape}')
