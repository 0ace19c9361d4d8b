"""``mx.np``'s sorting, searching and set functions: ``np.sort``, ``np.unique``,
``np.nonzero``, ``np.bincount``, ``np.allclose``, ...

Their results are indices, counts or booleans, or (``sort``) a permutation
of the input: none needs a gradient except ``sort``/``take``, which gather
through the op table's ``take``.  The rest run NumPy on the values (so they
wait for them), as MXNet's own CPU kernels for these do.
"""
import numpy as _np

from ..ndarray.ndarray import NDArray, invoke
from ..ndarray.registry import OPS
from .multiarray import asarray, array, method

__all__ = ['sort', 'argsort', 'unique', 'nonzero', 'flatnonzero', 'argwhere',
           'searchsorted', 'bincount', 'take', 'take_along_axis', 'diag_indices_from',
           'fill_diagonal', 'delete', 'insert', 'allclose', 'isclose', 'array_equal',
           'array_equiv', 'histogram', 'digitize', 'unravel_index', 'ravel_multi_index',
           'may_share_memory', 'shares_memory', 'lexsort', 'interp', 'polyval',
           'blackman', 'hamming', 'hanning', 'set_printoptions', 'resize']


def _out(values, like, dtype=None):
    v = _np.asarray(values)
    if dtype is None:
        dtype = v.dtype if v.dtype != _np.float64 else like._dtype
    return array(v, dtype=dtype, ctx=like._ctx)


def take(a, indices, axis=None, mode='raise', out=None):
    """The elements of ``a`` at ``indices`` along ``axis`` (flattened if None);
    differentiable in ``a``."""
    a = asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    idx = indices if isinstance(indices, NDArray) else array(indices, dtype=_np.int64,
                                                              ctx=a._ctx)
    n = a.shape[axis]
    if mode == 'raise':
        i = idx.asnumpy()
        if i.size and (i.max() >= n or i.min() < -n):
            raise IndexError(f'take: index {int(i.max() if i.max() >= n else i.min())} '
                             f'is out of bounds for axis {axis} with size {n}')
        idx = array(_np.where(i < 0, i + n, i), dtype=_np.int64, ctx=a._ctx)
    return invoke(OPS['take'], (a, asarray(idx).astype(_np.int64, copy=False)),
                  {'axis': axis, 'mode': 'wrap' if mode == 'wrap' else 'clip'})


def take_along_axis(arr, indices, axis):
    """The elements of ``arr`` at ``indices`` along ``axis`` (shapes match
    but for ``axis``); differentiable in ``arr``."""
    arr, idx = asarray(arr), asarray(indices).asnumpy().astype(_np.int64)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    axis %= arr.ndim
    grid = list(_np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    flat = _np.ravel_multi_index(tuple(_np.broadcast_arrays(*grid)), arr.shape)
    return take(arr.reshape(-1), array(flat, dtype=_np.int64, ctx=arr._ctx), 0)


def sort(a, axis=-1, kind=None, order=None):
    """``a`` sorted along ``axis`` (a gather, so differentiable)."""
    a = asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    return take_along_axis(a, argsort(a, axis), axis)


def argsort(a, axis=-1, kind=None, order=None):
    """The indices that sort ``a`` along ``axis`` (int64; stable)."""
    a = asarray(a)
    return _out(_np.argsort(a.asnumpy(), axis=axis, kind='stable'), a, _np.int64)


def unique(ar, return_index=False, return_inverse=False, return_counts=False,
           axis=None):
    """The sorted unique elements (and, as asked, their first indices, the
    inverse indices and the counts, int64)."""
    a = asarray(ar)
    res = _np.unique(a.asnumpy(), return_index, return_inverse, return_counts, axis)
    if not isinstance(res, tuple):
        return _out(res, a, a._dtype)
    return (_out(res[0], a, a._dtype),) + tuple(_out(r, a, _np.int64) for r in res[1:])


def nonzero(a):
    """The indices of the nonzero elements, one int64 array per axis."""
    a = asarray(a)
    return tuple(_out(i, a, _np.int64) for i in _np.nonzero(a.asnumpy()))


def flatnonzero(a):
    """The indices of the nonzero elements of ``a.ravel()``."""
    a = asarray(a)
    return _out(_np.flatnonzero(a.asnumpy()), a, _np.int64)


def argwhere(a):
    """The indices of the nonzero elements, one row each (int64)."""
    a = asarray(a)
    return _out(_np.argwhere(a.asnumpy()), a, _np.int64)


def searchsorted(a, v, side='left', sorter=None):
    """Where ``v``'s elements would go in the sorted ``a`` (int64)."""
    a = asarray(a)
    vv = v.asnumpy() if isinstance(v, NDArray) else v
    return _out(_np.searchsorted(a.asnumpy(), vv, side), a, _np.int64)


def bincount(x, weights=None, minlength=0):
    """Counts of each non-negative integer in ``x`` (int64; weights: their dtype)."""
    x = asarray(x)
    if x._dtype.kind not in 'iub':
        raise TypeError(f'bincount: input must be an integer array, got {x._dtype}')
    w = None if weights is None else asarray(weights).asnumpy()
    r = _np.bincount(x.asnumpy(), w, minlength)
    return _out(r, x, _np.int64 if w is None else asarray(weights)._dtype)


def diag_indices_from(arr):
    """The indices of the main diagonal of a square ``arr``."""
    arr = asarray(arr)
    return tuple(_out(i, arr, _np.int64) for i in _np.diag_indices_from(arr.asnumpy()))


def fill_diagonal(a, val, wrap=False):
    """Write ``val`` on the main diagonal of ``a``, in place."""
    h = a.asnumpy()
    _np.fill_diagonal(h, val.asnumpy() if isinstance(val, NDArray) else val, wrap)
    a[...] = h


def delete(arr, obj, axis=None):
    """``arr`` without the entries ``obj`` along ``axis``."""
    arr = asarray(arr)
    o = obj.asnumpy() if isinstance(obj, NDArray) else obj
    return _out(_np.delete(arr.asnumpy(), o, axis), arr, arr._dtype)


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before ``obj`` along ``axis``."""
    arr = asarray(arr)
    o = obj.asnumpy() if isinstance(obj, NDArray) else obj
    v = values.asnumpy() if isinstance(values, NDArray) else values
    return _out(_np.insert(arr.asnumpy(), o, v, axis), arr, arr._dtype)


def _host(x):
    return x.asnumpy() if isinstance(x, NDArray) else _np.asarray(x)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where ``|a - b| <= atol + rtol * |b|`` (bool)."""
    like = a if isinstance(a, NDArray) else asarray(b)
    return _out(_np.isclose(_host(a), _host(b), rtol, atol, equal_nan), asarray(like),
                _np.bool_)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether all of ``isclose`` holds (a 0-d bool array, as MXNet)."""
    like = a if isinstance(a, NDArray) else asarray(b)
    return _out(_np.allclose(_host(a), _host(b), rtol, atol, equal_nan), asarray(like),
                _np.bool_)


def array_equal(a1, a2, equal_nan=False):
    """Whether the arrays have one shape and equal elements (a Python bool)."""
    return bool(_np.array_equal(_host(a1), _host(a2)))


def array_equiv(a1, a2):
    """Whether the arrays broadcast to one another and are equal."""
    return bool(_np.array_equiv(_host(a1), _host(a2)))


def histogram(a, bins=10, range=None, normed=None, weights=None, density=None):
    """Counts of ``a`` in ``bins`` and the bin edges."""
    a = asarray(a)
    b = bins.asnumpy() if isinstance(bins, NDArray) else bins
    h, e = _np.histogram(a.asnumpy(), b, range, density=density,
                         weights=None if weights is None else _host(weights))
    return _out(h, a, _np.int64 if not density else a._dtype), _out(e, a, a._dtype)


def digitize(x, bins, right=False):
    """The bin of each element (int64)."""
    x = asarray(x)
    return _out(_np.digitize(x.asnumpy(), _host(bins), right), x, _np.int64)


def unravel_index(indices, shape, order='C'):
    """Flat indices as tuples of per-axis indices."""
    i = asarray(indices)
    return tuple(_out(r, i, _np.int64) for r in _np.unravel_index(i.asnumpy(), shape))


def ravel_multi_index(multi_index, dims, mode='raise', order='C'):
    """Per-axis indices as flat indices."""
    idx = tuple(_host(m) for m in multi_index)
    like = asarray(multi_index[0])
    return _out(_np.ravel_multi_index(idx, dims, mode=mode), like, _np.int64)


def lexsort(keys, axis=-1):
    """Indices that sort by the last key, then the one before, ... (int64)."""
    k = [_host(x) for x in keys]
    return _out(_np.lexsort(k, axis), asarray(keys[0]), _np.int64)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise linear interpolation (no gradient)."""
    xa = asarray(x) if isinstance(x, NDArray) else asarray(fp)
    return _out(_np.interp(_host(x), _host(xp), _host(fp), left, right, period), xa)


def polyval(p, x):
    """The polynomial with coefficients ``p`` at ``x`` (Horner's rule,
    differentiable)."""
    p, x = asarray(p), asarray(x)
    y = x * 0
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def _window(fn, M, dtype=None, ctx=None, device=None):
    return array(fn(M), dtype=dtype or 'float32', ctx=ctx or device)


def blackman(M, dtype=None, ctx=None, device=None):
    """The Blackman window."""
    return _window(_np.blackman, M, dtype, ctx, device)


def hamming(M, dtype=None, ctx=None, device=None):
    """The Hamming window."""
    return _window(_np.hamming, M, dtype, ctx, device)


def hanning(M, dtype=None, ctx=None, device=None):
    """The Hann window."""
    return _window(_np.hanning, M, dtype, ctx, device)


def may_share_memory(a, b, max_work=None):
    """Whether ``a`` and ``b`` may share memory (views of one array)."""
    return shares_memory(a, b)


def shares_memory(a, b, max_work=None):
    """Whether ``a`` and ``b`` are, or are views of, the same array."""
    ra = a._base if a._base is not None else a
    rb = b._base if b._base is not None else b
    return ra is rb


def set_printoptions(precision=None, threshold=None, **kwargs):
    """NumPy's print options (arrays print through NumPy)."""
    _np.set_printoptions(precision=precision, threshold=threshold, **kwargs)


def resize(a, new_shape):
    """``a`` repeated or cut to fill ``new_shape``."""
    a = asarray(a)
    return _out(_np.resize(a.asnumpy(), new_shape), a, a._dtype)


for _fn in (sort, argsort, take, nonzero):
    method(_fn)
