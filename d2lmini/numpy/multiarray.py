"""``mx.np.ndarray``: an NDArray with NumPy's semantics.

MXNet 1.x has two array types over one engine: the legacy ``nd.NDArray``
and the NumPy-compatible ``mx.np.ndarray`` (``mxnet.numpy``).  Here, as in
MXNet, the second is a subclass of the first with no state of its own: the
same data, the same engine streams, the same autograd tape.  Every operator
goes through :func:`d2lmini.ndarray.ndarray.invoke`, which gives its output
the class of its first input, so an operator applied to ``np`` arrays gives
an ``np`` array.  What differs is only what NumPy users expect: 0-d results
from integer indexing and full reductions, ``array([...])`` printing,
comparisons that give booleans, and the creation functions below.

``x.as_nd_ndarray()`` and ``nd_x.as_np_ndarray()`` convert without copying.
"""
import numpy as _np

from ..context import current_context
from ..ndarray import ndarray as _ndm
from ..ndarray.ndarray import NDArray, _share

__all__ = ['ndarray', 'array', 'zeros', 'ones', 'empty', 'full']


class ndarray(NDArray):
    """An n-dimensional array with NumPy's semantics, on a context."""
    __slots__ = ()

    def as_nd_ndarray(self):
        """This array as an ``nd.NDArray``, without copying."""
        return _share(self, NDArray)

    def as_np_ndarray(self):
        """The array itself."""
        return self

    @property
    def ctx(self):
        """The context the array lives on (MXNet's ``ctx``)."""
        return self._ctx

    device = ctx

    def as_in_ctx(self, ctx):
        """This array on ``ctx``: itself if already there, else a copy."""
        return self.as_in_context(ctx)

    def __repr__(self):
        s = repr(self.asnumpy())
        if self._dtype == _np.float32:
            s = s.replace(', dtype=float32', '')
        if self._ctx.device_type != 'cpu':
            s = s[:-1] + f', ctx={self._ctx})'
        return s

    def __str__(self):
        s = str(self.asnumpy())
        return s if self._ctx.device_type == 'cpu' else f'{s} @{self._ctx}'


def _np_class(out):
    """Make a freshly created ``nd`` array an ``np`` one, in place (the two
    classes have the same layout, so this is a pointer change)."""
    out.__class__ = ndarray
    return out


def _dtype(dtype, default='float32'):
    return _np.dtype(default if dtype is None else dtype)


def array(object, dtype=None, ctx=None, device=None):
    """An ``np.ndarray`` from a list, NumPy array or array: float32 unless
    ``dtype`` is given or ``object`` is an array with a dtype of its own
    (MXNet's rule)."""
    ctx = ctx or device or current_context()
    if isinstance(object, NDArray):
        if dtype is None:
            dtype = object.dtype
        return _np_class(object.as_in_context(ctx).astype(dtype, copy=True))
    if dtype is None and isinstance(object, _np.ndarray) and object.dtype != _np.float64:
        dtype = object.dtype
    if dtype is None and isinstance(object, (bool, _np.bool_)) or (
            isinstance(object, _np.ndarray) and object.dtype == _np.bool_ and dtype is None):
        dtype = _np.bool_
    return _np_class(_ndm.array(object, ctx=ctx, dtype=_dtype(dtype)))


def zeros(shape, dtype=None, order='C', ctx=None, device=None):
    """An array of zeros (float32 unless ``dtype``)."""
    return _np_class(_ndm.zeros(shape, ctx=ctx or device, dtype=_dtype(dtype)))


def ones(shape, dtype=None, order='C', ctx=None, device=None):
    """An array of ones (float32 unless ``dtype``)."""
    return _np_class(_ndm.ones(shape, ctx=ctx or device, dtype=_dtype(dtype)))


def empty(shape, dtype=None, order='C', ctx=None, device=None):
    """An array whose values are not set (float32 unless ``dtype``)."""
    return _np_class(_ndm.empty(shape, ctx=ctx or device, dtype=_dtype(dtype)))


def full(shape, fill_value, dtype=None, order='C', ctx=None, device=None, out=None):
    """An array filled with ``fill_value`` (float32 unless ``dtype``)."""
    return _np_class(_ndm.full(shape, fill_value, ctx=ctx or device, dtype=_dtype(dtype)))
