"""Helpers shared by the neural-network operator families: dtype checks,
scratch buffers, and the geometry of sliding windows (convolution, pooling).
(The keyword check, :func:`d2lmini.base._check_kwargs`, and ``_xp``, in
:mod:`d2lmini.ndarray.op_utils`, are shared with every other operator.)"""
import math
import threading

import numpy as np

from ... import backend


def _needs_grad(a):
    # Only arrays on the tape (variables, or results of recorded ops) get a
    # gradient; skipping the others saves e.g. the data gradient of the first
    # layer, as MXNet does for inputs with grad_req='null'.
    return a._node is not None


def _float_dtype(name, dtypes):
    """The one floating dtype all these inputs share, as MXNet requires.

    Refused here, on the front end, so a wrong dtype never fails later
    inside the engine (or silently computes in float64).
    """
    d0 = dtypes[0]
    for d in dtypes:
        if d.kind != 'f' or d != d0:
            raise TypeError(f"operator '{name}': inputs must share one floating-point "
                            f"dtype, got {', '.join(str(t) for t in dtypes)}; cast "
                            f"with .astype('float32')")
    return d0


def _tuple(name, key, value, n):
    """``3`` or ``(3, 3)`` -> ``(3, 3)`` for an n-D kernel/stride/pad."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    try:
        t = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{name}: {key} must be an int or a tuple of ints, "
                        f"got {value!r}") from None
    if len(t) != n:
        raise ValueError(f"{name}: {key}={value!r} needs {n} value(s) for "
                         f"{n}-D spatial input")
    return t


def _result(res, out):
    """MXNet's ``out=`` argument: write the result into an existing array."""
    if out is None:
        return res
    out[:] = res
    return out


_LOCAL = threading.local()       # one set of scratch buffers per worker thread
_WS_LIMIT = 64 << 20             # bytes; bigger temporaries are not kept


def _ws(xp, name, shape, dtype):
    """A scratch buffer reused across calls (NumPy only).

    A fresh multi-MB array may come straight from the OS, which zeroes each
    4 KB page on first touch: ~1000 page faults per 4 MB, on every call.
    Never return a scratch buffer to a user: the next call overwrites it.
    """
    size = math.prod(shape)
    dtype = np.dtype(dtype)
    if xp is not np or size * dtype.itemsize > _WS_LIMIT:
        return xp.empty(shape, dtype)
    bufs = _LOCAL.__dict__.setdefault('bufs', {})
    buf = bufs.get((name, dtype))
    if buf is None or buf.size < size:
        buf = bufs[(name, dtype)] = np.empty(size, dtype)
    return buf[:size].reshape(shape)


def _as_strided(a, shape, strides):
    if isinstance(a, np.ndarray):
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=False)
    return backend.xp_of(a).lib.stride_tricks.as_strided(a, shape, strides)


def _matmul(xp, a, b, out):
    """``out = a @ b`` for stacks of one matrix per group (one GEMM if 1 group)."""
    if a.shape[0] == 1:
        xp.matmul(a[0], b[0], out=out[0])
    else:
        xp.matmul(a, b, out=out)
    return out


def _tap(a, i, j, g, h_axis, rows=None):
    """The view of ``a`` seen by kernel tap ``(i, j)`` at every output pixel
    (of output rows ``rows = (r0, r1)`` only, if given).

    ``a`` is padded; its spatial axes are ``h_axis`` and ``h_axis + 1``.
    """
    r0, r1 = rows or (0, g.OH)
    h0, w0 = r0 * g.sh + i * g.dh, j * g.dw
    key = (slice(None),) * h_axis + (
        slice(h0, h0 + g.sh * (r1 - r0 - 1) + 1, g.sh),
        slice(w0, w0 + g.sw * (g.OW - 1) + 1, g.sw))
    return a[key]


class _Geom:
    """Sizes of one 2-D convolution/pooling: input, kernel, output."""
    __slots__ = ('N', 'C', 'H', 'W', 'KH', 'KW', 'sh', 'sw', 'dh', 'dw', 'ph', 'pw',
                 'OH', 'OW', 'Hp', 'Wp', 'M')

    def __init__(self, dshape, kernel, stride, dilate, pad, ceil=False):
        self.N, self.C, self.H, self.W = dshape
        (self.KH, self.KW), (self.sh, self.sw) = kernel, stride
        (self.dh, self.dw), (self.ph, self.pw) = dilate, pad
        span_h = self.dh * (self.KH - 1) + 1
        span_w = self.dw * (self.KW - 1) + 1
        rnd = (lambda a, b: -(-a // b)) if ceil else (lambda a, b: a // b)
        self.OH = rnd(self.H + 2 * self.ph - span_h, self.sh) + 1
        self.OW = rnd(self.W + 2 * self.pw - span_w, self.sw) + 1
        # padded extent: 'full' pooling windows may run past the padding
        self.Hp = max(self.H + 2 * self.ph, (self.OH - 1) * self.sh + span_h)
        self.Wp = max(self.W + 2 * self.pw, (self.OW - 1) * self.sw + span_w)
        self.M = self.OH * self.OW * self.N


_LAYOUTS = {3: ('NCW', 'NWC'), 4: ('NCHW', 'NHWC'), 5: ('NCDHW', 'NDHWC')}


def _spatial(name, data, layout):
    """``(n, channels_last)``: the number of spatial axes of ``data`` (1, 2
    or 3) and whether ``layout`` puts the channels last (NWC, NHWC, NDHWC).

    The ops compute channels-first; a channels-last input is transposed in
    and out by the front end (so its gradient flows through the transposes).
    """
    if data.ndim not in _LAYOUTS:
        raise ValueError(f'{name}: data must be 3-D (N, C, W), 4-D (N, C, H, W) or '
                         f'5-D (N, C, D, H, W), got shape {data.shape}')
    if layout is not None and layout not in _LAYOUTS[data.ndim]:
        raise ValueError(f'{name}: layout={layout!r} does not fit {data.ndim}-D data '
                         f'of shape {data.shape}; use one of {_LAYOUTS[data.ndim]}')
    return data.ndim - 2, layout is not None and layout[-1] == 'C'


def _channels_first(a):
    """``(N, ..., C)`` -> ``(N, C, ...)`` (a transposed view, recorded)."""
    return a.transpose((0, a.ndim - 1) + tuple(range(1, a.ndim - 1)))


def _channels_last(a):
    """``(N, C, ...)`` -> ``(N, ..., C)``."""
    return a.transpose((0,) + tuple(range(2, a.ndim)) + (1,))


def _lift(data):
    """``(N, C, W)`` -> ``(N, C, 1, W)``: 1-D ops run as 2-D ones of height 1."""
    return data.reshape((data.shape[0], data.shape[1], 1, data.shape[2]))
