"""``mx.np``'s creation functions beyond ``zeros``/``ones``/``full``:
``arange``, ``linspace``, ``eye``, ``meshgrid``, the ``*_like`` family.

MXNet's defaults: float32 unless a ``dtype`` is given, even for
``np.arange(5)`` (MXNet 1.x's rule, where NumPy would say int64).
"""
import numpy as _np

from ..context import current_context
from ..ndarray.ndarray import NDArray, invoke
from ..ndarray.registry import OPS
from .multiarray import asarray, array, _dtype, full

__all__ = ['arange', 'linspace', 'logspace', 'eye', 'identity', 'meshgrid',
           'zeros_like', 'ones_like', 'full_like', 'empty_like', 'copy', 'tri',
           'indices', 'diagflat']


def _host(values, dtype, ctx, device):
    return array(_np.asarray(values), dtype=dtype, ctx=ctx or device or current_context())


def arange(start, stop=None, step=1, dtype=None, ctx=None, device=None):
    """Evenly spaced values in ``[start, stop)`` (float32 unless ``dtype``)."""
    if stop is None:
        start, stop = 0, start
    return _host(_np.arange(start, stop, step), _dtype(dtype), ctx, device)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
             ctx=None, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    vals, step = _np.linspace(start, stop, num, endpoint=endpoint, retstep=True,
                              axis=axis)
    res = _host(vals, _dtype(dtype), ctx, device)
    return (res, step) if retstep else res


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0,
             ctx=None, device=None):
    """``base ** linspace(start, stop, num)``."""
    return _host(_np.logspace(start, stop, num, endpoint=endpoint, base=base, axis=axis),
                 _dtype(dtype), ctx, device)


def eye(N, M=None, k=0, dtype=None, ctx=None, device=None, **kwargs):
    """A 2-D array with ones on the ``k``-th diagonal."""
    return _host(_np.eye(N, M, k), _dtype(dtype), ctx, device)


def identity(n, dtype=None, ctx=None, device=None):
    """The ``n x n`` identity matrix."""
    return eye(n, dtype=dtype, ctx=ctx, device=device)


def tri(N, M=None, k=0, dtype=None, ctx=None, device=None):
    """Ones at and below the ``k``-th diagonal."""
    return _host(_np.tri(N, M, k), _dtype(dtype), ctx, device)


def indices(dimensions, dtype=None, ctx=None, device=None):
    """The grid of indices of an array of shape ``dimensions`` (int64)."""
    return _host(_np.indices(dimensions), _dtype(dtype, 'int64'), ctx, device)


def meshgrid(*xi, indexing='xy', sparse=False, copy=True):
    """Coordinate arrays from coordinate vectors (broadcast copies, so
    gradients flow back to ``xi``)."""
    xs = [asarray(x).reshape(-1) for x in xi]
    n = len(xs)
    shape = [x.shape[0] for x in xs]
    if indexing == 'xy' and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        s = [1] * n
        j = i
        if indexing == 'xy' and n > 1 and i < 2:
            j = 1 - i
        s[j] = -1
        v = x.reshape(s)
        out.append(v if sparse else invoke(OPS['broadcast_to'], (v,),
                                             {'shape': tuple(shape)}))
    return out


def _like(a, dtype):
    a = asarray(a)
    return a, a._dtype if dtype is None else _np.dtype(dtype)


def zeros_like(a, dtype=None, order='C', ctx=None, device=None, out=None):
    """Zeros of ``a``'s shape (and dtype unless ``dtype``)."""
    return full_like(a, 0, dtype, order, ctx, device, out)


def ones_like(a, dtype=None, order='C', ctx=None, device=None, out=None):
    """Ones of ``a``'s shape (and dtype unless ``dtype``)."""
    return full_like(a, 1, dtype, order, ctx, device, out)


def full_like(a, fill_value, dtype=None, order='C', ctx=None, device=None, out=None):
    """``fill_value`` in ``a``'s shape (and dtype unless ``dtype``)."""
    a, dt = _like(a, dtype)
    res = full(a._shape, fill_value, dtype=dt, ctx=ctx or device or a._ctx)
    if out is not None:
        out[...] = res
        return out
    return res


def empty_like(prototype, dtype=None, order='C', subok=False, shape=None, ctx=None,
               device=None):
    """An array of ``prototype``'s shape and dtype, values not set."""
    a, dt = _like(prototype, dtype)
    return full(shape or a._shape, 0, dtype=dt, ctx=ctx or device or a._ctx)


def copy(a):
    """A copy of ``a``."""
    return asarray(a).copy()


def diagflat(v, k=0):
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal
    (differentiable: ``np.diag`` of ``v.ravel()``)."""
    from .shapes import diag
    return diag(asarray(v).reshape(-1), k)
