"""The fluent methods of NDArray and Symbol: ``x.floor()`` is ``nd.floor(x)``
and ``s.floor()`` is ``mx.sym.floor(s)``, as in MXNet.

One list, :data:`FLUENT`, serves both; where the two differ (as they do in
MXNet) the difference is named below: :data:`NDARRAY_OWN`,
:data:`SYMBOL_EXTRA`.  Symbol looks its methods up in
:data:`d2lmini.symbol.ops.FLUENT`, made from these.

MXNet 1.x gives NDArray one method per operator that takes an array first
(``python/mxnet/ndarray/ndarray.py``), each passing every argument on to
the ``nd`` function of the same name.  Here each method looks the function
up when it is called, so a method works as soon as its operator exists,
and ``x.sum(axis=1, exclude=True)`` or ``x.norm(ord=1)`` mean exactly what
``nd.sum`` and ``nd.norm`` mean.

>>> nd.array([[1.5, -2.5]]).floor()
<BLANKLINE>
[[ 1. -3.]]
<NDArray 1x2 @cpu(0)>
"""
import inspect
import sys

# MXNet 1.9.1's fluent methods (python/mxnet/symbol/symbol.py): each calls
# the operator of the same name with the array or symbol first.
FLUENT = (
    'reshape', 'reshape_like', 'zeros_like', 'ones_like', 'broadcast_axes', 'repeat',
    'pad', 'swapaxes', 'split', 'split_v2', 'slice', 'slice_axis', 'slice_like',
    'take', 'one_hot', 'pick', 'sort', 'topk', 'argsort', 'argmax', 'argmax_channel',
    'argmin', 'clip', 'abs', 'sign', 'flatten', 'shape_array', 'size_array',
    'expand_dims', 'broadcast_to', 'broadcast_like', 'tile', 'transpose', 'flip',
    'depth_to_space', 'space_to_depth', 'diag', 'sum', 'nansum', 'prod', 'nanprod',
    'mean', 'max', 'min', 'norm', 'round', 'rint', 'fix', 'floor', 'ceil', 'trunc',
    'sin', 'cos', 'tan', 'arcsin', 'arccos', 'arctan', 'degrees', 'radians', 'sinh',
    'cosh', 'tanh', 'arcsinh', 'arccosh', 'arctanh', 'exp', 'expm1', 'log', 'log10',
    'log2', 'log1p', 'sqrt', 'rsqrt', 'cbrt', 'rcbrt', 'square', 'reciprocal', 'relu',
    'sigmoid', 'softmax', 'log_softmax', 'softmin', 'squeeze')

# NDArray methods of their own (ndarray.py), not fluent: they accept MXNet's
# other argument forms (``x.reshape(2, 3)``, ``x.transpose(1, 0)``) and
# ``inplace=``, as MXNet's NDArray does (its transpose aside).
NDARRAY_OWN = ('reshape', 'transpose', 'flatten', 'expand_dims', 'squeeze')

# Symbol's methods beyond the list: method name -> operator.  ``astype`` is
# MXNet's fluent ``cast`` (NDArray.astype is a method of its own, with
# ``copy=``); ``dot`` and ``batch_dot`` are d2lmini's, so that a graph
# reads like the NumPy code it replaces.
SYMBOL_EXTRA = {'astype': 'cast', 'dot': 'dot', 'batch_dot': 'batch_dot'}

_PACKAGE = __name__.rpartition('.')[0]          # d2lmini.ndarray: the nd module


def _nd_function(name):
    fn = getattr(sys.modules[_PACKAGE], name, None)
    if fn is None:
        raise NotImplementedError(f'NDArray.{name}(): d2lmini has no nd.{name} yet')
    return fn


def _method(cls, name):
    def method(self, *args, **kwargs):
        return _nd_function(name)(self, *args, **kwargs)
    method.__name__, method.__qualname__ = name, f'{cls.__name__}.{name}'
    fn = getattr(sys.modules[_PACKAGE], name, None)
    if fn is None:          # a placeholder that raises: no docstring, so the
        return method       # API reference leaves it out
    # What the reference shows: nd.<name>'s arguments, ``self`` for the first,
    # and its summary.  The call itself still passes everything on.
    params = list(inspect.signature(fn).parameters.values())
    method.__signature__ = inspect.Signature([params[0].replace(name='self')] +
                                             params[1:])
    summary = (inspect.getdoc(fn) or '').split('\n\n')[0]
    method.__doc__ = (f'{summary}\n\nThe fluent form of ``nd.{name}``: '
                      f'``x.{name}(...)`` is ``nd.{name}(x, ...)``.').lstrip()
    return method


def ndarray_methods():
    """NDArray's fluent method names: the list less its own methods.  Each
    one exists, so that ``dir(NDArray)`` is MXNet's; one whose nd function
    d2lmini lacks raises NotImplementedError."""
    return [n for n in FLUENT if n not in NDARRAY_OWN]


def symbol_methods():
    """Symbol's fluent methods, ``{method name: operator name}``; only those
    whose operator exists are methods (:data:`d2lmini.symbol.ops.FLUENT`)."""
    return {**{n: n for n in FLUENT}, **SYMBOL_EXTRA}


def available():
    """NDArray's fluent method names whose nd function exists now."""
    nd = sys.modules[_PACKAGE]
    return [n for n in ndarray_methods() if hasattr(nd, n)]


def install(cls):
    """Give ``cls`` (NDArray) its fluent methods (once the nd functions
    exist: their signatures and summaries are the methods')."""
    for name in ndarray_methods():
        if name not in cls.__dict__:
            setattr(cls, name, _method(cls, name))
