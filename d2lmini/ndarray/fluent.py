"""NDArray's fluent methods: ``x.floor()`` is ``nd.floor(x)``, as in MXNet.

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

# MXNet 1.9.1's fluent methods that call the nd function of the same name.
# (reshape, transpose, flatten, expand_dims and squeeze are NDArray methods
# of their own: they accept MXNet's other argument forms and ``inplace=``.)
FLUENT = (
    'reshape_like', 'zeros_like', 'ones_like', 'broadcast_axes', 'repeat', 'pad',
    'swapaxes', 'split', 'split_v2', 'slice', 'slice_axis', 'slice_like', 'take',
    'one_hot', 'pick', 'sort', 'topk', 'argsort', 'argmax', 'argmax_channel',
    'argmin', 'clip', 'abs', 'sign', 'shape_array', 'size_array', 'tile', 'flip',
    'depth_to_space', 'space_to_depth', 'diag', 'sum', 'nansum', 'prod', 'nanprod',
    'mean', 'max', 'min', 'norm', 'round', 'rint', 'fix', 'floor', 'ceil', 'trunc',
    'sin', 'cos', 'tan', 'arcsin', 'arccos', 'arctan', 'degrees', 'radians', 'sinh',
    'cosh', 'tanh', 'arcsinh', 'arccosh', 'arctanh', 'exp', 'expm1', 'log', 'log10',
    'log2', 'log1p', 'sqrt', 'rsqrt', 'cbrt', 'rcbrt', 'square', 'reciprocal', 'relu',
    'sigmoid', 'softmax', 'log_softmax', 'softmin', 'broadcast_to', 'broadcast_like')

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


def available():
    """The fluent method names whose nd function exists now."""
    nd = sys.modules[_PACKAGE]
    return [n for n in FLUENT if hasattr(nd, n)]


def install(cls):
    """Give ``cls`` every fluent method it does not define itself (once the
    nd functions exist: their signatures and summaries are the methods')."""
    for name in FLUENT:
        if name not in cls.__dict__:
            setattr(cls, name, _method(cls, name))
