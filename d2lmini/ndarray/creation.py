"""Arrays made from a few numbers: ``eye``, ``linspace`` (MXNet's
``src/operator/tensor/init_op``; ``zeros``, ``ones``, ``arange`` live in
:mod:`.ndarray`)."""
import numpy as np

from ..base import _check_kwargs
from .ndarray import _IGNORED, _ctx, _dtype, _from_host

# The front ends this family gives nd (and mx.sym, less NOT_SYMBOLIC)
__all__ = ['eye', 'linspace']


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An ``N x M`` array (``M=0``: square) with ones on diagonal ``k``.

    >>> nd.eye(2)
    [[1. 0.]
     [0. 1.]]
    """
    _check_kwargs(eye, kwargs, _IGNORED)
    N, M, k = int(N), int(M) or int(N), int(k)
    if N < 0 or M < 0:
        raise ValueError(f'eye: N and M must be >= 0, got N={N}, M={M}')
    ctx, dtype = _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.eye(N, M, k, dtype=dtype), (N, M), dtype, ctx,
                      'eye')


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None, **kwargs):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included
    unless ``endpoint=False``); float32 unless ``dtype``."""
    _check_kwargs(linspace, kwargs, _IGNORED)
    num = int(num)
    if num < 0:
        raise ValueError(f'linspace: num must be >= 0, got {num}')
    ctx, dtype = _ctx(ctx), _dtype(dtype)

    def fn(xp):
        return xp.linspace(start, stop, num, endpoint=endpoint,
                           dtype=np.float64).astype(dtype)
    return _from_host(fn, (num,), dtype, ctx, 'linspace')
