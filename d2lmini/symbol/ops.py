"""Every ``nd`` operator as a symbol function: the same name, the same
arguments, but it adds a node to a graph instead of computing.

The symbol functions are generated from the ``nd`` functions' signatures:
arguments that are Symbols become the node's inputs (in the order of the
signature), the others its attributes; missing parameters of layers become
new variables (``fc1_weight``).  Lowering calls the ``nd`` function itself
(:func:`call_node`), so the two programming models share every operator.
"""
import inspect
import types

from .. import ndarray as nd
from ..base import MXNetError, as_mxnet_error
from ..ndarray.ndarray import invoke
from ..ndarray.registry import OPS
from .symbol import (AUTO_INPUTS, Symbol, Variable, _Node, _fresh_name, _nout,
                     _skip_auto)

_SKIP = {'NDArray', 'array', 'empty', 'waitall', 'save', 'load', 'load_frombuffer',
         'from_numpy', 'invoke', 'register', 'op_names', 'into', 'OPS', 'Op',
         'reset_arrays', 'Case', 'cpu', 'builtins', 'warnings', 'broadcast_shapes',
         'norm_axis', 'result_dtype', 'infer_reshape', 'empty_like'}
_NO_INPUT = inspect.Parameter.empty

# name -> the callable that computes the node (an nd function, usually)
LOWER = {}
_SIGS = {}


def _is_array_param(p):
    return p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) \
        and p.name not in ('out', 'name', 'ctx')


def has_op(op):
    return op in LOWER or op in OPS


def _lower_fn(op):
    fn = LOWER.get(op)
    if fn is None:
        if op not in OPS:
            raise MXNetError(f"unknown operator '{op}'")

        def fn(*arrays, **attrs):
            return invoke(OPS[op], arrays, attrs)
        LOWER[op] = fn
    return fn


def input_names(op, attrs, n, varargs):
    """How the ``n`` inputs of a loaded node are passed to its function."""
    if varargs:
        return [None] * n
    sig = _SIGS.get(op)
    if sig is None:                   # a raw table op: positional
        return [None] * n
    names = [p.name for p in sig.parameters.values()
             if _is_array_param(p) and p.name not in attrs]
    return names[:n]


def _make(op, inputs, attrs, hint=None, name=None, attr=None):
    """A new node ``op`` on ``inputs`` [(input name or None, Symbol)]."""
    node_inputs, names = [], []
    for nm, s in inputs:
        if len(s) != 1:
            raise TypeError(f"operator '{op}': input '{nm}' is a group of "
                            f"{len(s)} outputs; pick one with sym[i]")
        node_inputs.append(s._outputs[0])
        names.append(nm)
    user = {k: str(v) for k, v in (attr or {}).items()}
    node = _Node(op, _fresh_name(name, hint or op.lower()), node_inputs, names,
                 attrs, user, _nout(op, attrs))
    return Symbol([(node, i) for i in range(node.nout)])


def _symbol_function(op, fn):
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    auto = AUTO_INPUTS.get(op, ())

    def symbol_fn(*args, name=None, attr=None, **kwargs):
        kwargs.pop('out', None)
        inputs, attrs = [], {}
        if varargs:
            for a in args:
                if not isinstance(a, Symbol):
                    raise TypeError(f"{op}: positional arguments must be Symbols, "
                                    f"got {type(a).__name__}")
                inputs.append((None, a))
            for k, v in kwargs.items():
                if isinstance(v, Symbol):
                    raise TypeError(f"{op}: pass the input symbols by position")
                attrs[k] = v
            return _make(op, inputs, attrs, name=name, attr=attr)
        try:
            bound = sig.bind_partial(*args, **kwargs).arguments
        except TypeError as e:
            raise TypeError(f'mx.sym.{op}: {e}') from None
        extra = bound.pop('kwargs', None) or bound.pop('ignored', None) or {}
        node_name = None
        for p in params:
            if p.name not in bound:
                if p.name in auto and not _skip_auto(op, p.name, {**bound, **extra}):
                    node_name = node_name or _fresh_name(name, op.lower())
                    inputs.append((p.name, Variable(f'{node_name}_{p.name}')))
                continue
            v = bound[p.name]
            if isinstance(v, Symbol):
                inputs.append((p.name, v))
            elif v is None and p.name in auto and \
                    not _skip_auto(op, p.name, {**bound, **extra}):
                node_name = node_name or _fresh_name(name, op.lower())
                inputs.append((p.name, Variable(f'{node_name}_{p.name}')))
            elif p.default is not _NO_INPUT and v is p.default and v is None:
                continue                     # an optional input left out
            else:
                attrs[p.name] = v
        for k, v in extra.items():
            if isinstance(v, Symbol):
                raise TypeError(f"{op}: unexpected input symbol '{k}'")
            attrs[k] = v
        return _make(op, inputs, attrs, name=node_name or name, attr=attr)

    symbol_fn.__name__ = symbol_fn.__qualname__ = op
    symbol_fn.__doc__ = (f'Symbolic ``{op}``: adds a node to the graph; the '
                         f'computation is ``nd.{op}``.\n\n' + (fn.__doc__ or ''))
    return symbol_fn


def call_node(node, arrays):
    """Run ``node``'s function on NDArrays; the list of its outputs."""
    fn = _lower_fn(node.op)
    pos = [a for nm, a in zip(node.input_names, arrays) if nm is None]
    kw = {nm: a for nm, a in zip(node.input_names, arrays) if nm is not None}
    try:
        res = fn(*pos, **kw, **node.attrs)
    except (ValueError, TypeError, IndexError, KeyError, MXNetError) as e:
        shapes = ', '.join(f'{nm or "arg%d" % i}={a.shape}' for i, (nm, a) in
                           enumerate(zip(node.input_names, arrays)))
        msg = f"operator '{node.op}' (node '{node.name}') with inputs {shapes}: {e}"
        raise as_mxnet_error(type(e)(msg)) from e
    if isinstance(res, (list, tuple)):
        return list(res)
    return [res]


# --- generation ---------------------------------------------------------------------
def _generate(namespace, source, prefix=''):
    made = {}
    for op in dir(source):
        if op.startswith('__') or op in _SKIP:
            continue
        fn = getattr(source, op)
        if not callable(fn) or isinstance(fn, (type, types.ModuleType)):
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        full = prefix + op
        LOWER[full] = fn
        _SIGS[full] = sig
        made[op] = _symbol_function(full, fn)
    namespace.update(made)
    return made


_ops = _generate(globals(), nd)
__all__ = sorted(_ops)          # underscored ones too (F._conv_act)
# The operators with a scalar (``x + 2``) are table ops with no nd function.
for _op in OPS:
    if _op.endswith('_scalar') and _op not in LOWER:
        _lower_fn(_op)
del _op

random = types.ModuleType('d2lmini.symbol.random', 'Random sampling, symbolically.')
_generate(random.__dict__, nd.random, prefix='_random_')
for _k, _v in list(random.__dict__.items()):
    if callable(_v) and not _k.startswith('_'):
        _v.__name__ = _k

FLUENT = {k: globals()[k] for k in (
    'reshape', 'flatten', 'transpose', 'sum', 'mean', 'max', 'min', 'prod', 'exp',
    'log', 'sqrt', 'square', 'relu', 'sigmoid', 'tanh', 'softmax', 'log_softmax',
    'expand_dims', 'squeeze', 'swapaxes', 'slice_axis', 'split', 'clip', 'abs',
    'sign', 'broadcast_to', 'tile', 'repeat', 'flip', 'argmax', 'argmin', 'one_hot',
    'take', 'pick', 'topk', 'sort', 'argsort', 'zeros_like', 'ones_like', 'norm',
    'slice', 'reshape_like', 'broadcast_like', 'round', 'floor', 'ceil',
    'reciprocal', 'sin', 'cos', 'softmin', 'nansum', 'nanprod', 'log1p', 'expm1',
    'rsqrt', 'dot', 'batch_dot', 'diag' if 'diag' in globals() else 'exp')
    if k in globals()}
FLUENT['astype'] = globals()['cast']


def __dir__():
    return sorted(_ops)
