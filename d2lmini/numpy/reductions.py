"""``mx.np``'s reductions: ``np.sum``, ``x.mean()``, ``np.std``, ``np.argmax``, ...

NumPy reduces every axis to a 0-d array, where ``nd`` gives shape ``(1,)``;
so each of ``nd``'s reduce ops has an ``mx.np`` variant in the op table under
MXNet's name (``_np_sum``, ``_npi_mean``, ...), the same class with
``full_shape = ()`` (and the same gradient, checked by the same cases).
The mean of integers is float32 and ``argmax`` gives int64, as MXNet does.
``std``/``var``/``average``/``all``/``any`` are built from these, so their
gradients come with them; ``median``/``percentile``/``quantile`` sort on the
host (no gradient).
"""
import builtins

import numpy as _np

from ..ndarray.ndarray import NDArray, invoke
from ..ndarray.registry import OPS, register, norm_axis
from ..ndarray import broadcast_reduce as _br
from .multiarray import ndarray, asarray, array, method

__all__ = ['sum', 'mean', 'max', 'min', 'amax', 'amin', 'prod', 'argmax', 'argmin',
           'std', 'var', 'average', 'all', 'any', 'count_nonzero', 'median',
           'percentile', 'quantile', 'nanmax', 'nanmin', 'nansum', 'nanprod',
           'ptp', 'cumsum', 'cumprod']


def _variant(base, name, **body):
    body.update(name=name, full_shape=(), __doc__=f'mx.np variant of {base.name!r}: '
                'a full reduction gives a 0-d array.')
    return register(type(f'Np{type(base).__name__}', (type(base),), body))


def _check_nonempty(op, shape, axis):
    """max/min/argmax/argmin have no identity: reducing a zero-length axis is
    an error, raised at once (not later, from the engine), as MXNet's is."""
    axes = range(len(shape)) if axis is None else norm_axis(op.name, axis, len(shape))
    if builtins.any(shape[i] == 0 for i in axes if i < len(shape)):
        raise ValueError(f"operator '{op.name}': zero-size array {tuple(shape)} has no "
                         f"{op.name.split('_')[-1]} over axis {axis}")


def _nonempty_infer(self, shapes, dtypes, axis=None, keepdims=False):
    _check_nonempty(self, shapes[0], axis)
    return type(self).__mro__[1].infer(self, shapes, dtypes, axis, keepdims)


for _base, _name in [('sum', '_np_sum'), ('max', '_np_max'), ('min', '_np_min'),
                     ('prod', '_np_prod'), ('nansum', '_np_nansum'),
                     ('nanprod', '_np_nanprod'), ('norm', '_npi_norm')]:
    _variant(OPS[_base], _name, **({'infer': _nonempty_infer} if _base in ('max', 'min')
                                   else {}))


def _mean_forward(self, a, axis=None, keepdims=False):
    dt = self.out_dtype(a.dtype)
    r = a.mean(axis=axis, keepdims=keepdims, dtype=_np.float64 if dt.itemsize > 4
               else _np.float32)
    return r.astype(dt)


_variant(OPS['mean'], '_npi_mean', forward=_mean_forward,
         out_dtype=lambda self, d: d if d.kind == 'f' else _np.dtype(_np.float32))


def _arg_infer(self, shapes, dtypes, axis=None, keepdims=False):
    _check_nonempty(self, shapes[0], axis)
    if axis is None:
        return ((1,) * len(shapes[0]) if keepdims else ()), _np.dtype(_np.int64)
    shape, dtype = _br.ReduceOp.infer(self, shapes, dtypes, axis, keepdims)
    return shape, _np.dtype(_np.int64)


def _arg_forward(self, a, axis=None, keepdims=False, f='argmax'):
    if a.ndim == 0:
        axis = None          # NumPy takes axis 0 or -1 here, CuPy none
    return getattr(a, f)(axis=axis, keepdims=keepdims).astype(_np.int64)


for _base, _name in [('argmax', '_npi_argmax'), ('argmin', '_npi_argmin')]:
    _variant(OPS[_base], _name, infer=_arg_infer,
             forward=lambda self, a, axis=None, keepdims=False, f=_base:
             _arg_forward(self, a, axis, keepdims, f))


def _acc_cast(a, dtype):
    """``(a, dtype to give)``: floats accumulate in at least float32 (MXNet's
    accumulation type; float16 sums drift otherwise), then become ``dtype``."""
    out = _np.dtype(dtype) if dtype is not None else a._dtype
    if out.kind == 'f' and (a._dtype.kind == 'f' or a._dtype != out):
        acc = builtins.max(out, a._dtype if a._dtype.kind == 'f' else out,
                           _np.dtype(_np.float32), key=lambda d: d.itemsize)
        return a.astype(acc, copy=False), out
    if dtype is not None:
        a = a.astype(dtype, copy=False)
    return a, None


def _reduce(opname, a, axis, keepdims, dtype=None, out=None):
    a = asarray(a)
    give = None
    if opname in ('_np_sum', '_np_prod', '_npi_mean'):
        a, give = _acc_cast(a, dtype)
    elif dtype is not None:
        a = a.astype(dtype, copy=False)
    elif a._dtype == _np.bool_ and opname in ('_np_sum', '_np_prod'):
        a = a.astype(_np.int64)          # NumPy counts booleans
    if isinstance(axis, list):
        axis = tuple(axis)
    if axis == ():                   # NumPy: reduce over no axis (the op's dtype rule
        a, axis, keepdims = a.reshape(a._shape + (1,)), -1, False   # still applies)
    res = invoke(OPS[opname], (a,), {'axis': axis, 'keepdims': bool(keepdims)})
    if give is not None and res._dtype != give:
        res = res.astype(give)
    return _reduce_into(res, out)


def _reduce_into(res, out):
    if out is None:
        return res
    out[...] = res
    return out


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """The sum over ``axis`` (all axes: a 0-d array).

    >>> np.sum(np.ones((2, 3)), axis=1)
    array([3., 3.])
    """
    res = _reduce('_np_sum', a, axis, keepdims, dtype, out)
    return res if initial is None else res + initial


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """The mean over ``axis`` (integers give float32)."""
    return _reduce('_npi_mean', a, axis, keepdims, dtype, out)


def max(a, axis=None, out=None, keepdims=False):
    """The maximum over ``axis``."""
    return _reduce('_np_max', a, axis, keepdims, None, out)


def min(a, axis=None, out=None, keepdims=False):
    """The minimum over ``axis``."""
    return _reduce('_np_min', a, axis, keepdims, None, out)


amax, amin = max, min


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    """The product over ``axis``."""
    res = _reduce('_np_prod', a, axis, keepdims, dtype, out)
    return res if initial is None else res * initial


def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    """The sum, NaN counted as 0."""
    return _reduce('_np_nansum', a, axis, keepdims, dtype, out)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False):
    """The product, NaN counted as 1."""
    return _reduce('_np_nanprod', a, axis, keepdims, dtype, out)


def _arg(opname, a, axis, out, keepdims=False):
    a = asarray(a)
    if axis is None and keepdims is False:
        pass
    return _reduce(opname, a, axis, keepdims, None, out)


def argmax(a, axis=None, out=None, keepdims=False):
    """The index of the maximum (of the flattened array if ``axis`` is None), int64."""
    return _arg('_npi_argmax', a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    """The index of the minimum (of the flattened array if ``axis`` is None), int64."""
    return _arg('_npi_argmin', a, axis, out, keepdims)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """The variance over ``axis``: ``mean(|a - a.mean()|**2)``, divided by
    ``n - ddof`` instead of ``n`` when ``ddof`` is given."""
    a = asarray(a)
    if a._dtype.kind != 'f':
        a = a.astype(dtype or _np.float32)
    m = mean(a, axis, dtype, keepdims=True)
    d = a - m
    v = mean(d * d, axis, dtype, keepdims=keepdims)
    if ddof:
        n = a.size // builtins.max(1, v.size)
        v = v * (n / builtins.max(n - ddof, 0) if n > ddof else _np.nan)
    if out is not None:
        out[...] = v
        return out
    return v


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """The standard deviation over ``axis`` (``sqrt(var)``)."""
    res = invoke(OPS['sqrt'], (var(a, axis, dtype, None, ddof, keepdims),))
    if out is not None:
        out[...] = res
        return out
    return res


def average(a, axis=None, weights=None, returned=False):
    """The (weighted) average over ``axis``."""
    a = asarray(a)
    if weights is None:
        avg = mean(a, axis)
        scl = array(a.size // builtins.max(1, avg.size), dtype=avg._dtype, ctx=a._ctx)
    else:
        w = asarray(weights)
        if w._shape != a._shape:
            if axis is None or w.ndim != 1 or w._shape[0] != a._shape[axis]:
                raise TypeError(f'average: weights of shape {w._shape} do not fit '
                                f'an array of shape {a._shape} along axis {axis}')
            shape = [1] * a.ndim
            shape[axis] = -1
            w = w.reshape(shape)
        scl = sum(w * _ones_like(a), axis)
        avg = sum(a * w, axis) / scl
    return (avg, scl) if returned else avg


def _ones_like(a):
    return invoke(OPS['ones_like_op'], (a,))


def all(a, axis=None, out=None, keepdims=False):
    """Whether every element (over ``axis``) is nonzero, as bool."""
    res = _reduce('_np_sum', asarray(a) == 0, axis, keepdims)   # (True when empty)
    return _reduce_into(res == 0, out)


def any(a, axis=None, out=None, keepdims=False):
    """Whether some element (over ``axis``) is nonzero, as bool."""
    res = _reduce('_np_sum', asarray(a) != 0, axis, keepdims)
    return _reduce_into(res > 0, out)


def count_nonzero(a, axis=None, keepdims=False):
    """How many elements (over ``axis``) are nonzero, as int64."""
    return sum(asarray(a) != 0, axis, dtype=_np.int64, keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    """``max - min`` over ``axis``."""
    return max(a, axis, None, keepdims) - min(a, axis, None, keepdims)


def nanmax(a, axis=None, out=None, keepdims=False):
    """The maximum, ignoring NaN (no gradient)."""
    return _host(_np.nanmax, a, axis=axis, keepdims=keepdims)


def nanmin(a, axis=None, out=None, keepdims=False):
    """The minimum, ignoring NaN (no gradient)."""
    return _host(_np.nanmin, a, axis=axis, keepdims=keepdims)


def _host(fn, a, **kw):
    a = asarray(a)
    r = _np.asarray(fn(a.asnumpy(), **kw))
    dt = a._dtype if a._dtype.kind == 'f' else _np.dtype(_np.float32)
    return array(r.astype(dt), ctx=a._ctx)


def median(a, axis=None, out=None, overwrite_input=None, keepdims=False):
    """The median over ``axis`` (on the host: no gradient)."""
    return _host(_np.median, a, axis=axis, keepdims=keepdims)


def percentile(a, q, axis=None, out=None, overwrite_input=None,
               interpolation='linear', keepdims=False):
    """The ``q``-th percentiles over ``axis`` (on the host: no gradient)."""
    q = q.asnumpy() if isinstance(q, NDArray) else q
    return _host(_np.percentile, a, q=q, axis=axis, method=interpolation,
                 keepdims=keepdims)


def quantile(a, q, axis=None, out=None, overwrite_input=None,
             interpolation='linear', keepdims=False):
    """The ``q``-th quantiles over ``axis`` (on the host: no gradient)."""
    q = q.asnumpy() if isinstance(q, NDArray) else q
    return _host(_np.quantile, a, q=q, axis=axis, method=interpolation,
                 keepdims=keepdims)


def cumsum(a, axis=None, dtype=None, out=None):
    """The running sum along ``axis`` (flattened if None): a product with a
    triangular matrix of ones, so the gradient is the op table's ``dot``."""
    a, give = _acc_cast(asarray(a), dtype)
    if give is not None and give != a._dtype:
        return cumsum(a, axis).astype(give)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = norm_axis('cumsum', axis, a.ndim)[0]
    n = a._shape[axis]
    if a._dtype.kind != 'f':                 # integers: exact, on the host
        return array(_np.cumsum(a.asnumpy(), axis=axis), ctx=a._ctx)
    tri = array(_np.triu(_np.ones((n, n))), dtype=a._dtype, ctx=a._ctx)
    moved = invoke(OPS['swapaxes'], (a,), {'dim1': axis, 'dim2': a.ndim - 1})
    res = invoke(OPS['dot'], (moved, tri))
    return invoke(OPS['swapaxes'], (res,), {'dim1': axis, 'dim2': a.ndim - 1})


def cumprod(a, axis=None, dtype=None, out=None):
    """The running product along ``axis`` (on the host: no gradient)."""
    a = asarray(a)
    return array(_np.cumprod(a.asnumpy(), axis=axis, dtype=dtype), ctx=a._ctx)


for _fn in (sum, mean, max, min, prod, argmax, argmin, std, var, all, any, cumsum,
            ptp):
    method(_fn)
