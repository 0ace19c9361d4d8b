"""Every ``nd`` operator as a symbol function: the same name, the same
arguments, but it adds a node to a graph instead of computing.

Which ``nd`` functions are operators is declared by their families (see
:mod:`d2lmini.ndarray`): every name of a family's ``__all__`` but its
``NOT_SYMBOLIC``.  The symbol functions are generated from the ``nd``
functions' signatures: arguments that are Symbols become the node's inputs
(in the order of the signature), the others its attributes; missing
parameters of layers become new variables (``fc1_weight``).  Lowering calls
the ``nd`` function itself (:func:`call_node`), so the two programming
models share every operator.
"""
import inspect
import types

from .. import ndarray as nd
from ..base import MXNetError, as_mxnet_error
from ..ndarray import fluent
from ..ndarray.ndarray import invoke
from ..ndarray.registry import OPS
from .symbol import (AUTO_INPUTS, Symbol, Variable, _Node, _fresh_name, _nout,
                     _skip_auto)

_NO_INPUT = inspect.Parameter.empty
# Required array inputs that, left out, become variables ``{name}_data``, so
# that ``FullyConnected(name='fc3', num_hidden=10)`` can be composed later.
_DATA_INPUTS = ('data', 'lhs', 'rhs')
# Attributes without which a layer has no shape (MXNet: "Required parameter
# num_hidden ... is not presented"), checked when the symbol is made.
_REQUIRED = {'FullyConnected': ('num_hidden',), 'Convolution': ('kernel', 'num_filter'),
             'Deconvolution': ('kernel', 'num_filter'), 'Activation': ('act_type',)}

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


def _make(op, inputs, attrs, hint=None, name=None, attr=None, resolved=None):
    """A new node ``op`` on ``inputs`` [(input name or None, Symbol)].

    ``resolved``: the node's name already given by the NameManager (when it
    named the layer's parameter variables), not to be prefixed again.
    """
    node_inputs, names = [], []
    for nm, s in inputs:
        if len(s) != 1:
            raise TypeError(f"operator '{op}': input '{nm}' is a group of "
                            f"{len(s)} outputs; pick one with sym[i]")
        node_inputs.append(s._outputs[0])
        names.append(nm)
    user = {k: str(v) for k, v in (attr or {}).items()}
    node = _Node(op, resolved or _fresh_name(name, hint or op.lower()), node_inputs,
                 names, attrs, user, _nout(op, attrs))
    return Symbol([(node, i) for i in range(node.nout)])


def _user_attrs(kwargs, attr):
    """Take MXNet's attribute keywords out of ``kwargs``: ``__name__``-style
    ones (``__layout__='TNC'``) and ``lr_mult``/``wd_mult``.  Returns the
    node's attributes and those its new parameter variables get."""
    attr = dict(attr or {})
    var_attr = {}
    for k in list(kwargs):
        if k.startswith('__') and k.endswith('__'):
            attr[k] = str(kwargs.pop(k))
        elif k in ('lr_mult', 'wd_mult'):
            var_attr[f'__{k}__'] = str(kwargs.pop(k))
    attr.update(var_attr)
    return attr, var_attr


def _auto_var(op, node_name, arg, var_attr):
    """The variable a layer creates for its missing input ``arg``."""
    user = dict(var_attr)
    if op == 'LeakyReLU' and arg == 'gamma':     # MXNet's PReLU starts at 0.25
        from ..initializer import Constant
        user['__init__'] = Constant(0.25).dumps()
    return Variable(f'{node_name}_{arg}', attr=user or None)


def _symbol_function(op, fn):
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    auto = AUTO_INPUTS.get(op, ())

    def symbol_fn(*args, name=None, attr=None, **kwargs):
        kwargs.pop('out', None)
        attr, var_attr = _user_attrs(kwargs, attr)
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
        missing = [a for a in _REQUIRED.get(op, ()) if bound.get(a) is None]
        if missing:
            raise TypeError(f"mx.sym.{op}: the required attribute(s) {missing} are "
                            f"missing (e.g. {op}(data, {missing[0]}=...))")
        node_name = None
        given = {**bound, **extra}
        for p in params:
            v = bound.get(p.name)
            if isinstance(v, Symbol):
                inputs.append((p.name, v))
            elif v is None and (p.name in auto and not _skip_auto(op, p.name, given) or
                                p.name not in bound and p.name in _DATA_INPUTS and
                                p.default is _NO_INPUT):
                # a missing input the layer makes a variable for (fc1_weight)
                node_name = node_name or _fresh_name(name, op.lower())
                inputs.append((p.name, _auto_var(op, node_name, p.name, var_attr)))
            elif p.name in bound and not (v is None and p.default is None):
                attrs[p.name] = v            # (an optional input left out: skipped)
        for k, v in extra.items():
            if isinstance(v, Symbol):
                raise TypeError(f"{op}: unexpected input symbol '{k}'")
            attrs[k] = v
        return _make(op, inputs, attrs, name=name, attr=attr, resolved=node_name)

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
def symbolic(family):
    """The ``{name: nd function}`` a family declares as graph operators."""
    skip = getattr(family, 'NOT_SYMBOLIC', ())
    return {op: getattr(family, op) for op in family.__all__ if op not in skip}


def _generate(namespace, functions, prefix=''):
    made = {}
    for op, fn in functions.items():
        full = prefix + op
        LOWER[full] = fn
        _SIGS[full] = inspect.signature(fn)
        made[op] = _symbol_function(full, fn)
    namespace.update(made)
    return made


_ops = _generate(globals(), {op: fn for family in nd.FAMILIES
                             for op, fn in symbolic(family).items()}
                 | nd.random.TOP_LEVEL)
__all__ = sorted(_ops)          # underscored ones too (F._conv_act)
# The operators with a scalar (``x + 2``) are table ops with no nd function.
for _op in OPS:
    if _op.endswith('_scalar') and _op not in LOWER:
        _lower_fn(_op)
del _op

random = types.ModuleType('d2lmini.symbol.random', 'Random sampling, symbolically.')
_generate(random.__dict__, symbolic(nd.random), prefix='_random_')
for _k, _v in list(random.__dict__.items()):
    if callable(_v) and not _k.startswith('_'):
        _v.__name__ = _k

# Symbol's fluent methods (the list is NDArray's too: ndarray/fluent.py):
# ``sym.reshape(...)`` is ``mx.sym.reshape(sym, ...)``.
FLUENT = {name: _ops[op] for name, op in fluent.symbol_methods().items()
          if op in _ops}


def __dir__():
    return sorted(_ops)
