"""Shape and type inference on a Symbol, without computing anything.

Shapes flow *forward*: a node whose input shapes are all known is lowered
on placeholders (its ``nd`` function does the inference, exactly as when it
runs), which gives its output shapes.  They also flow *backwards* into the
parameters of layers: ``FullyConnected`` knows its weight is
``(num_hidden, features of data)`` (:func:`.symbol._param_shapes`).  One
pass in graph order does both, because a layer's parameters are inferred
just before the layer itself.
"""
import numpy as np

from .. import autograd as _ag
from ..base import MXNetError
from ..context import cpu
from . import graph
from .ops import call_node
from .symbol import _param_shapes

DEFAULT_DTYPE = np.dtype(np.float32)


def _known(sym, args, kwargs, what):
    """{variable name: value} from positional (list_arguments order) and keywords."""
    arg_names = sym.list_arguments()
    inputs = sym.list_inputs()
    known = {}
    if args:
        if len(args) > len(arg_names):
            raise ValueError(f'{what}: {len(args)} positional values for '
                             f'{len(arg_names)} arguments {arg_names}')
        known.update({n: v for n, v in zip(arg_names, args) if v is not None})
    unknown = set(kwargs) - set(inputs)
    if unknown:
        raise ValueError(f"{what}: unknown argument name(s) {sorted(unknown)}; the "
                         f"symbol's inputs are {inputs}")
    known.update({k: v for k, v in kwargs.items() if v is not None})
    return known


def _check_unique(sym):
    names = [n.name for n in sym._variables()]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise MXNetError(f'the symbol has several different variables named {dup}; '
                         f'names of inputs must be unique')


def _shape(v, name):
    try:
        s = tuple(int(d) for d in v)
    except TypeError:
        raise TypeError(f"shape of '{name}' must be a tuple of ints, got {v!r}") \
            from None
    return s


def propagate(sym, shapes, dtypes, partial):
    """Walk the graph; returns ({(id(node), i): (shape, dtype)}, variables)."""
    _check_unique(sym)
    nodes = sym._nodes()
    info = {}
    var_shape = {}
    for n in nodes:
        if n.is_variable:
            s = shapes.get(n.name)
            if s is None and '__shape__' in n.user:
                s = tuple(int(d) for d in n.user['__shape__'].strip('()[] ')
                          .replace(' ', '').split(',') if d)
                if 0 in s:
                    s = None             # MXNet's "unknown dimension"
            var_shape[n.name] = s
    cap = graph.Capture()
    env = {}
    old = list(_ag._STATE)
    _ag._STATE[:] = [False, False]
    try:
        with cap, cpu():
            for n in nodes:
                if n.is_variable:
                    s = var_shape[n.name]
                    d = dtypes.get(n.name) or (np.dtype(n.user['__dtype__'])
                                               if '__dtype__' in n.user else None)
                    info[(id(n), 0)] = (s, d)
                    continue
                # backwards: a layer's parameters from its data
                known = {nm: info[(id(src), i)][0]
                         for (src, i), nm in zip(n.inputs, n.input_names)
                         if nm is not None}
                if any(v is None for v in known.values()):
                    for nm, s in _param_shapes(n.op, n.attrs, known).items():
                        for (src, i), name in zip(n.inputs, n.input_names):
                            if name == nm and src.is_variable and \
                                    info[(id(src), 0)][0] is None:
                                info[(id(src), 0)] = (s, info[(id(src), 0)][1])
                                var_shape[src.name] = s
                ins = [info[(id(src), i)] for src, i in n.inputs]
                if any(s is None for s, _ in ins):
                    for i in range(n.nout):
                        info[(id(n), i)] = (None, None)
                    continue
                # forward: the node's own function on placeholders
                first = next((d for _, d in ins if d is not None), DEFAULT_DTYPE)
                arrays = []
                for (src, i), (s, d) in zip(n.inputs, ins):
                    key = (id(src), i)
                    a = env.get(key)
                    if a is None or a._shape != s:
                        a = env[key] = cap.arg(s, d or first, cpu())
                    arrays.append(a)
                cap.node = n.name
                outs = call_node(n, arrays)
                for i, o in enumerate(outs):
                    info[(id(n), i)] = (o._shape, o._dtype)
                    env[(id(n), i)] = o
    finally:
        _ag._STATE[:] = old
    return info, nodes


def _split(sym, info, nodes, pick, partial, empty):
    aux = sym._aux_ids()
    var = [n for n in nodes if n.is_variable]
    args = [pick(info[(id(n), 0)]) for n in var if id(n) not in aux]
    auxs = [pick(info[(id(n), 0)]) for n in var if id(n) in aux]
    outs = [pick(info[(id(n), i)]) for n, i in sym._outputs]
    if not partial and any(v is None for v in args + auxs + outs):
        return None, None, None
    fix = (lambda v: empty if v is None else v)
    return [fix(v) for v in args], [fix(v) for v in outs], [fix(v) for v in auxs]


def infer_shape(sym, args, kwargs, partial):
    known = {k: _shape(v, k) for k, v in _known(sym, args, kwargs, 'infer_shape')
             .items()}
    info, nodes = propagate(sym, known, {}, partial)
    return _split(sym, info, nodes, lambda v: v[0], partial, ())


def infer_type(sym, args, kwargs):
    known = {k: np.dtype(v) for k, v in _known(sym, args, kwargs, 'infer_type').items()}
    # Types flow with shapes (a node is lowered to learn its output type);
    # where shapes are unknown, an output has the inputs' type.
    info, nodes = propagate(sym, {}, known, True)
    var = [n for n in nodes if n.is_variable]
    aux = sym._aux_ids()
    first = next((d for d in known.values()), DEFAULT_DTYPE)

    def t(n, i=0):
        d = info[(id(n), i)][1]
        return (d or known.get(n.name) or first).type

    arg_t = [t(n) for n in var if id(n) not in aux]
    aux_t = [t(n) for n in var if id(n) in aux]
    out_t = [t(n, i) for n, i in sym._outputs]
    return arg_t, out_t, aux_t
