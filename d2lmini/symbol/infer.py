"""Shape and type inference on a Symbol, without computing anything.

Shapes flow *forward*: a node whose input shapes are all known is lowered
on placeholders (its ``nd`` function does the inference, exactly as when it
runs), which gives its output shapes.  They also flow *backwards* into the
parameters of layers: ``FullyConnected`` knows its weight is
``(num_hidden, features of data)`` (:func:`.symbol._param_shapes`), and
through elementwise operators both ways, even for partly known shapes
(``0`` for an unknown dimension).  A pass in graph order does both; passes
repeat while they learn something (a weight read by an earlier node).
"""
import numpy as np

from .. import autograd as _ag
from ..base import MXNetError
from ..context import cpu
from ..ndarray.nn.amp_cast import _F32, _cast_to, _widest
from ..ndarray.utils import DTYPES
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


# Operators whose output has the shape of their input(s): shapes flow through
# them in both directions even while only partly known (MXNet's ElemwiseShape).
_ELEMWISE = frozenset({
    'elemwise_add', 'elemwise_sub', 'elemwise_mul', 'elemwise_div', 'Cast', 'cast',
    'amp_cast', 'Activation', 'relu', 'sigmoid', 'tanh', 'softrelu', 'Dropout',
    'BlockGrad', 'stop_gradient', 'identity', '_copy', 'negative', 'abs', 'exp',
    'log', 'sqrt', 'square', 'sign', 'zeros_like', 'ones_like', 'LeakyReLU'})


def _elemwise(op):
    return op in _ELEMWISE or op.endswith('_scalar')


def _merge(a, b):
    """Two partial shapes of one value as one (0: unknown dimension)."""
    if a is None:
        return b
    if b is None or len(a) != len(b):
        return a
    return tuple(x or y for x, y in zip(a, b))


def _parse_shape(text):
    return tuple(int(d) for d in text.strip('()[] ').replace(' ', '').split(',') if d)


def propagate(sym, shapes, dtypes, zero_unknown=True):
    """Walk the graph; returns ({(id(node), i): (shape, dtype)}, nodes).

    A shape is ``None`` while unknown; with ``zero_unknown`` a ``0`` in a
    shape is an unknown dimension (MXNet's convention for partial shapes),
    else a real empty axis.  Passes repeat until nothing new is learned, so
    a shape found late (a layer's weight, inferred from its data) reaches
    the nodes that read it earlier in graph order.
    """
    _check_unique(sym)
    nodes = sym._nodes()
    info = {}
    for n in nodes:
        if n.is_variable:
            s = shapes.get(n.name)
            if s is None and '__shape__' in n.user:
                s = _parse_shape(n.user['__shape__']) or None
            d = dtypes.get(n.name) or var_dtype(n)
            info[(id(n), 0)] = (s, d)

    def full(s):
        return s is not None and not (zero_unknown and 0 in s)

    def learn(src, i, s):
        """``s`` is (part of) the shape of ``src``'s output ``i``: record it,
        and pass it on through elementwise ops.  Whether anything changed."""
        cur, d = info.get((id(src), i), (None, None))
        new = _merge(cur, s)
        if new == cur or full(cur):
            return False
        info[(id(src), i)] = (new, d)
        if not src.is_variable and _elemwise(src.op) and id(src) not in done:
            for s2, j in src.inputs:
                learn(s2, j, new)
        return True

    cap = graph.Capture()
    env, done = {}, set()
    old = list(_ag._STATE)
    _ag._STATE[:] = [False, False]
    try:
        with cap, cpu():
            for _ in range(len(nodes) + 1):
                changed = False
                for n in nodes:
                    if n.is_variable or id(n) in done:
                        continue
                    changed |= _visit(n, info, full, learn, cap, env, done)
                if not changed:
                    break
    finally:
        _ag._STATE[:] = old
    for n in nodes:
        for i in range(n.nout):
            info.setdefault((id(n), i), (None, None))
    return info, nodes


def _visit(n, info, full, learn, cap, env, done):
    """One node in one pass: shapes backwards into its parameters, then
    forwards (lowered on placeholders once every input shape is known)."""
    changed = False
    entry = {(id(src), i): info.get((id(src), i), (None, None)) for src, i in n.inputs}
    known = {nm: entry[(id(src), i)][0]
             for (src, i), nm in zip(n.inputs, n.input_names) if nm is not None}
    if any(not full(v) for v in known.values()):
        for nm, s in _param_shapes(n.op, n.attrs, {k: v for k, v in known.items()
                                                   if v is not None}).items():
            for (src, i), name in zip(n.inputs, n.input_names):
                if name == nm:
                    changed |= learn(src, i, tuple(s))
    ins = [info.get((id(src), i), (None, None)) for src, i in n.inputs]
    if not all(full(s) for s, _ in ins):
        if _elemwise(n.op) and n.nout == 1:
            s = None
            for s2, _ in ins:
                s = _merge(s, s2)
            if s is not None:
                changed |= learn(n, 0, s)
        return changed
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
    done.add(id(n))
    return True


def _split(sym, info, nodes, pick, partial, empty, complete=None):
    aux = sym._aux_ids()
    var = [n for n in nodes if n.is_variable]
    args = [pick(info[(id(n), 0)]) for n in var if id(n) not in aux]
    auxs = [pick(info[(id(n), 0)]) for n in var if id(n) in aux]
    outs = [pick(info[(id(n), i)]) for n, i in sym._outputs]
    complete = complete or (lambda v: v is not None)
    if not partial and not all(complete(v) for v in args + auxs + outs):
        return None, None, None
    fix = (lambda v: empty if v is None else v)
    return [fix(v) for v in args], [fix(v) for v in outs], [fix(v) for v in auxs]


def infer_shape(sym, args, kwargs, partial):
    known = {k: _shape(v, k) for k, v in _known(sym, args, kwargs, 'infer_shape')
             .items()}
    info, nodes = propagate(sym, known, {})
    return _split(sym, info, nodes, lambda v: v[0], partial, (),
                  lambda v: v is not None and 0 not in v)


def _dtype_attr(node):
    d = node.attrs.get('dtype')
    if d is None or d == 'None':
        return None
    try:
        return np.dtype(d)
    except TypeError:
        return None


def var_dtype(node):
    """The type a variable declares (``__dtype__``: a name, or one of
    MXNet's type codes, ``'0'`` float32, ``'2'`` float16, ``'-1'`` none)."""
    d = node.user.get('__dtype__')
    if d is None or d == '-1':
        return None
    return np.dtype(DTYPES[int(d)] if d.isdigit() else d)


# Operators whose types follow their own rule, not "the inputs share one
# type" (MXNet's FInferType of each): fn(node, input keys, types) -> changed
def _set(t, key, d):
    if d is None or t.get(key) is not None:
        return False
    t[key] = d
    return True


def _amp_cast_type(n, keys, t):
    d = t.get(keys[0])
    return _set(t, (id(n), 0), np.dtype(n.attrs['dtype']) if d is None else
                _cast_to(d, np.dtype(n.attrs['dtype'])))


def _amp_multicast_type(n, keys, t):
    ds = [t.get(k) for k in keys]
    if ds[0] is None and not n.attrs.get('cast_narrow') and _F32 not in ds:
        return False                     # the widest type is not known yet
    to = _widest([d for d in ds if d is not None], n.attrs.get('cast_narrow'))
    return any([_set(t, (id(n), i), None if d is None else _cast_to(d, to))
                for i, d in enumerate(ds)])


def _batch_norm_type(n, keys, t):
    """float16 data has float32 statistics, gamma and beta (MXNet's rule)."""
    d = t.get(keys[0])
    if d is None:
        return False
    p = _F32 if d == np.float16 else d
    changed = any([_set(t, k, p) for (src, _), k in zip(n.inputs[1:], keys[1:])
                   if src.is_variable])
    return any([_set(t, (id(n), i), d if i == 0 else p)
                for i in range(n.nout)]) or changed


TYPE_RULES = {'amp_cast': _amp_cast_type, 'amp_multicast': _amp_multicast_type,
              'BatchNorm': _batch_norm_type}


def infer_type(sym, args, kwargs, partial=False):
    """Types flow forward and to the untyped inputs of each operator.

    An operator's inputs share one type (``FullyConnected``'s weight takes
    its data's), its outputs have it too, unless the operator has a
    ``dtype`` attribute (``Cast``, ``one_hot``...) or a rule of its own
    (:data:`TYPE_RULES`).  What stays unknown is ``None`` with ``partial``,
    else the type of the first known input (float32 if none is known).
    """
    known = {k: np.dtype(v) for k, v in _known(sym, args, kwargs, 'infer_type').items()}
    _check_unique(sym)
    nodes = sym._nodes()
    t = {}
    for n in nodes:
        if n.is_variable:
            t[(id(n), 0)] = known.get(n.name) or var_dtype(n)
    for _ in range(len(nodes) + 1):
        changed = False
        for n in nodes:
            if n.is_variable:
                continue
            keys = [(id(src), i) for src, i in n.inputs]
            rule = TYPE_RULES.get(n.op)
            if rule is not None:
                changed |= rule(n, keys, t)
                continue
            common = next((t[k] for k in keys if t.get(k) is not None), None)
            if common is not None:
                for (src, i), k in zip(n.inputs, keys):
                    if t.get(k) is None and src.is_variable:
                        t[k] = common
                        changed = True
            out = _dtype_attr(n) or common
            for i in range(n.nout):
                if out is not None and t.get((id(n), i)) is None:
                    t[(id(n), i)] = out
                    changed = True
        if not changed:
            break
    default = None if partial else next(iter(known.values()), DEFAULT_DTYPE)

    def typ(key):
        d = t.get(key) or default
        return None if d is None else d.type

    var = [n for n in nodes if n.is_variable]
    aux = sym._aux_ids()
    return ([typ((id(n), 0)) for n in var if id(n) not in aux],
            [typ((id(n), i)) for n, i in sym._outputs],
            [typ((id(n), 0)) for n in var if id(n) in aux])
