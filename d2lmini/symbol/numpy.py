"""``sym.np`` and ``sym.npx``: NumPy-mode graph nodes, so a HybridBlock's
``hybrid_forward(F, x)`` can call ``F.np.dot``, ``F.npx.relu``, ``x.T`` or
``x.reshape(...)`` whether ``F`` is ``nd`` or ``sym``.

One operator serves them all: ``_np_call``, a node that records *which*
function to call (``fn='np.dot'``, ``'npx.relu'`` or ``'ndarray.reshape'``
for a method) and its arguments, with the Symbols among them replaced by
markers ``('__in__', i)`` (the node's i-th input).  Lowering the graph
calls that same function on the tracing placeholders, as ``mx.np`` arrays,
so the imperative and the hybridized block run the very same front end;
the plan it captures holds the table operators underneath.  The
attributes are Python literals, so ``export`` writes them to
``-symbol.json`` and ``SymbolBlock.imports`` reads them back.

While NumPy mode is on (``npx.set_np()``, as when a block is traced in it)
a Symbol's methods are ``mx.np.ndarray``'s (:func:`method`), and ``x + y``
broadcasts, as NumPy's does.
"""
import importlib
import types

import numpy as _onp

from .ops import LOWER, _make
from .symbol import Symbol

__all__ = ['np', 'npx', 'method', 'NP_CALL']

NP_CALL = '_np_call'
_MARK = '__in__'
# Where the function of ``fn='np.dot'`` lives; 'ndarray.x' is a method.
_ROOTS = {'np': 'd2lmini.numpy', 'npx': 'd2lmini.numpy_extension'}
# What a Symbol cannot answer before it is computed (as symbol.__getattr__ says).
NOT_COMPUTED = ('shape', 'dtype', 'context', 'ctx', 'size', 'ndim')


def _literal(v):
    """``v`` as a Python literal (a dtype by its name), for the JSON file."""
    if isinstance(v, (list, tuple)):
        return type(v)(_literal(x) for x in v)
    if isinstance(v, dict):
        return {k: _literal(x) for k, x in v.items()}
    if isinstance(v, (type, _onp.dtype)):
        return _onp.dtype(v).name
    if isinstance(v, _onp.generic):
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f'a NumPy-mode Symbol node cannot hold a {type(v).__name__} '
                    f'argument ({v!r}); pass numbers, strings, tuples or Symbols')


def _template(v, inputs):
    """``v`` with each Symbol replaced by a marker; the Symbols go to ``inputs``."""
    if isinstance(v, Symbol):
        inputs.append((None, v))
        return (_MARK, len(inputs) - 1)
    if isinstance(v, (list, tuple)):
        return type(v)(_template(x, inputs) for x in v)
    return _literal(v)


def node(fn, args, kwargs, name=None):
    """A ``_np_call`` node calling ``fn`` (``'np.dot'``) on ``args``/``kwargs``."""
    inputs = []
    targs = _template(tuple(args), inputs)
    tkw = {k: _template(v, inputs) for k, v in kwargs.items()}
    hint = fn.rsplit('.', 1)[-1].strip('_')
    return _make(NP_CALL, inputs, {'fn': fn, 'args': targs, 'kwargs': tkw},
                 hint=hint or 'np', name=name)


def _resolve(fn):
    root, _, path = fn.partition('.')
    if root == 'ndarray':
        return None, path
    if root not in _ROOTS:
        raise ValueError(f"_np_call: unknown function '{fn}'")
    obj = importlib.import_module(_ROOTS[root])
    for part in path.split('.'):
        obj = getattr(obj, part)
    return obj, None


def _fill(t, arrays):
    if isinstance(t, tuple) and len(t) == 2 and t[0] == _MARK:
        return arrays[t[1]]
    if isinstance(t, (list, tuple)):
        return type(t)(_fill(x, arrays) for x in t)
    return t


def np_call(*arrays, fn, args=(), kwargs=None):
    """Run a ``_np_call`` node: ``fn`` on ``arrays`` put back in place of
    the markers, the arrays seen as ``mx.np`` arrays (their class is
    swapped for the call: the placeholders are the graph's own)."""
    from ..numpy.multiarray import ndarray
    func, meth = _resolve(fn)
    saved = [a.__class__ for a in arrays]
    for a in arrays:
        a.__class__ = ndarray
    try:
        a, kw = _fill(tuple(args), arrays), _fill(dict(kwargs or {}), arrays)
        if meth is None:
            out = func(*a, **kw)
        else:
            attr = getattr(a[0], meth)
            out = attr(*a[1:], **kw) if callable(attr) else attr
    finally:
        for x, cls in zip(arrays, saved):
            x.__class__ = cls
    for o in out if isinstance(out, (list, tuple)) else (out,):
        o.__class__ = ndarray
    return out


LOWER[NP_CALL] = np_call


class _Namespace(types.ModuleType):
    """``sym.np`` / ``sym.npx`` (and their ``random``, ``linalg``): each
    function of the ``mx.np``/``mx.npx`` namesake as a node builder; other
    attributes (dtypes, constants) are the namesake's own."""

    def __init__(self, path):
        super().__init__(f'd2lmini.symbol.{path}', f'Symbolic ``mx.{path}``.')
        self._path = path

    def __getattr__(self, attr):
        if attr.startswith('__'):
            raise AttributeError(attr)
        fn = f'{self._path}.{attr}'
        try:
            target, _ = _resolve(fn)
        except AttributeError:
            raise AttributeError(f"mx.sym.{self._path} has no '{attr}' (mx."
                                 f"{self._path} has no such function)") from None
        if isinstance(target, types.ModuleType):
            made = _Namespace(fn)
        elif callable(target) and not isinstance(target, type):
            def made(*args, name=None, **kwargs):
                return node(fn, args, kwargs, name=name)
            made.__name__ = made.__qualname__ = attr
            made.__doc__ = f'Symbolic ``mx.{fn}``: adds a node to the graph.'
        else:
            made = target
        setattr(self, attr, made)
        return made


np = _Namespace('np')
npx = _Namespace('npx')


def method(sym, name):
    """``sym.name`` in NumPy mode: ``mx.np.ndarray``'s method (a function
    that adds a node) or property (the node itself, ``x.T``)."""
    from ..numpy.multiarray import ndarray
    attr = getattr(ndarray, name, None)
    if attr is None or name in NOT_COMPUTED:
        return None
    if isinstance(attr, property):
        return node(f'ndarray.{name}', (sym,), {})
    return lambda *args, **kwargs: node(f'ndarray.{name}', (sym,) + args, kwargs)
