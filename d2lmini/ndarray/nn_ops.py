"""Neural-network operators: the layers of a CNN as ops of the op table.

``FullyConnected``, ``Convolution``, ``Pooling``, ``Activation``,
``LeakyReLU``, ``softmax``, ``log_softmax``, ``softmax_cross_entropy``,
``SoftmaxOutput``, ``Dropout`` and ``BatchNorm``, with MXNet 1.x's names,
keywords and NCHW layout.  As everywhere in d2lmini, each op holds
``forward`` (raw NumPy/CuPy arrays) and ``backward`` (NDArray ops) side by
side, and ``cases`` for its gradient check.

Convolution as one matrix product (im2col)
------------------------------------------
A convolution slides the kernel over the input and takes a dot product at
each position.  Copy every window into a column of a matrix (*im2col*) and
all those dot products become ONE matrix product, which BLAS does at full
speed.  One channel, a 3x3 input and a 2x2 kernel::

    input x    its four 2x2 windows      cols: one column per window
    a b c      a b   b c   d e   e f     tap (0,0):  a  b  d  e
    d e f      d e   e f   g h   h i     tap (0,1):  b  c  e  f
    g h i                                tap (1,0):  d  e  g  h
                                         tap (1,1):  e  f  h  i

    out = W.reshape(F, C*KH*KW) @ cols   ->  (F, 4): F output maps of 2x2

Rows of ``cols`` are the kernel taps ``(c, kh, kw)``, columns the output
pixels.  The backward pass is two more products: ``dW = dY @ cols.T``, and
``dcols = W.T @ dY``, whose columns are added back onto the windows they came
from (*col2im*: the adjoint of im2col).

The layout is chosen for speed on a CPU.  Columns are ordered
``(oh, ow, n)``, the batch innermost, and the input is first transposed to
``(C, H, W, N)``.  Then a window row is a *contiguous* run of ``OW * N``
numbers, so im2col and col2im are long memory copies and adds, and the whole
batch goes through each GEMM at once.  ``cols`` is built a band of output
rows at a time, small enough to stay in the CPU cache (see :func:`_bands`),
and the backward pass computes ``dx`` and ``dW`` in one sweep over the bands.

The GEMM's result ``(F, OH, OW, N)`` is not transposed back: the op returns
it as an ``(N, F, OH, OW)`` *view* (NumPy strides), so ``y.shape`` is NCHW as
always while the memory stays CHWN.  Elementwise ops and pooling keep their
input's memory order, and the next convolution finds its input already in
``(C, H, W, N)``: a CNN runs from layer to layer without transposing (only
the network's input and the flatten before the first dense layer pay one,
on small arrays).  The gradients flow back the same way.  No value depends
on the layout; ``asnumpy()`` returns an ordinary C-ordered copy.
"""
import difflib
import functools
import inspect
import math
import threading

import numpy as np

from .. import autograd as _ag
from .. import backend
from .ndarray import invoke
from .ops import _sigmoid, _softrelu, one_hot
from .layout import as_layout as _as_layout, chwn as _chwn, empty_as as _empty_as
from .layout import copyto as _copyto, transpose_into as _transpose_into
from .registry import OPS, Case, Op, register
from . import random as _random

__all__ = ['FullyConnected', 'Convolution', 'Pooling', 'Activation', 'LeakyReLU',
           'softmax', 'log_softmax', 'softmax_cross_entropy', 'SoftmaxOutput',
           'SoftmaxActivation', 'Dropout', 'BatchNorm']


# === helpers ===================================================================
def _xp(a):
    return np if isinstance(a, np.ndarray) else backend.xp_of(a)


def _needs_grad(a):
    # Only arrays on the tape (variables, or results of recorded ops) get a
    # gradient; skipping the others saves e.g. the data gradient of the first
    # layer, as MXNet does for inputs with grad_req='null'.
    return a._node is not None


@functools.lru_cache(maxsize=None)
def _keywords(fn):
    return tuple(p for p in inspect.signature(fn).parameters if p != 'kwargs')


def _check_kwargs(fn, kwargs, ignored=()):
    """Unknown keywords fail loudly, with a guess at the intended one.

    ``ignored`` are MXNet keywords accepted and ignored (cuDNN tuning...).
    """
    for k in kwargs:
        if k not in ignored:
            known = _keywords(fn)
            near = difflib.get_close_matches(k, known, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ''
            raise TypeError(f"{fn.__name__}() got an unexpected keyword argument "
                            f"'{k}'{hint}; its keywords are {', '.join(known)}")


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


# === FullyConnected ============================================================
@register
class FullyConnected(Op):
    """``out = data @ weight.T + bias``: one GEMM.

    ``flatten=True`` (MXNet's default) treats ``data`` as ``(N, -1)``;
    ``flatten=False`` applies the layer to the last axis.
    """
    name = 'FullyConnected'
    cases = (Case((3, 4), (5, 4), (5,), num_hidden=5),
             Case((2, 3, 2), (4, 6), num_hidden=4),
             Case((2, 3, 4), (5, 4), (5,), num_hidden=5, flatten=False))

    def infer(self, shapes, dtypes, num_hidden=None, flatten=True):
        x, w = shapes[0], shapes[1]
        if not x:
            raise ValueError("operator 'FullyConnected': data must have at least "
                             "one axis, got a scalar")
        d = math.prod(x[1:]) if flatten else x[-1]
        nh = w[0] if num_hidden is None and w else num_hidden
        if tuple(w) != (nh, d):
            raise ValueError(f"operator 'FullyConnected': weight shape {w} does not "
                             f"match data shape {x} (flatten={flatten}) and "
                             f"num_hidden={nh}: expected {(nh, d)}")
        if len(shapes) == 3 and tuple(shapes[2]) != (nh,):
            raise ValueError(f"operator 'FullyConnected': bias shape {shapes[2]} "
                             f"!= ({nh},)")
        out = (x[0], nh) if flatten else tuple(x[:-1]) + (nh,)
        return out, _float_dtype(self.name, dtypes)

    def forward(self, x, w, b=None, num_hidden=None, flatten=True):
        x2 = x.reshape(x.shape[0], -1) if flatten else x.reshape(-1, x.shape[-1])
        y = _xp(x).matmul(x2, w.T)
        if y.dtype != x.dtype:
            y = y.astype(x.dtype)
        if b is not None:
            y += b
        return y if flatten else y.reshape(x.shape[:-1] + (w.shape[0],))

    def backward(self, g, inputs, out, num_hidden=None, flatten=True):
        x, w = inputs[0], inputs[1]
        g2 = g.reshape((-1, w.shape[0]))
        grads = [None, None]
        if _needs_grad(x):
            grads[0] = invoke(OPS['dot'], (g2, w)).reshape(x.shape)
        if _needs_grad(w):
            x2 = x.reshape((g2.shape[0], w.shape[1]))
            grads[1] = invoke(OPS['dot'], (g2, x2), {'transpose_a': True})
        if len(inputs) == 3:
            grads.append(g2.sum(axis=0) if _needs_grad(inputs[2]) else None)
        return grads


# === Convolution ===============================================================
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


@functools.lru_cache(maxsize=512)
def _conv_geom(name, dshape, wshape, kernel, stride, dilate, pad, num_group):
    """Check a convolution's shapes (errors name the op) and size it."""
    if len(dshape) != 4:
        raise ValueError(f"operator '{name}': data must be 4-D (N, C, H, W), got "
                         f"shape {dshape}")
    if len(wshape) != 4:
        raise ValueError(f"operator '{name}': weight must be 4-D (num_filter, "
                         f"C/num_group, KH, KW), got shape {wshape}")
    kernel = _tuple(name, 'kernel', wshape[2:] if kernel is None else kernel, 2)
    stride = _tuple(name, 'stride', stride, 2)
    dilate = _tuple(name, 'dilate', dilate, 2)
    pad = _tuple(name, 'pad', pad, 2)
    if min(stride + dilate) < 1 or min(pad) < 0 or min(kernel) < 1:
        raise ValueError(f"operator '{name}': need kernel, stride, dilate >= 1 and "
                         f"pad >= 0, got kernel={kernel}, stride={stride}, "
                         f"dilate={dilate}, pad={pad}")
    n, c = dshape[:2]
    f = wshape[0]
    if c % num_group or f % num_group:
        raise ValueError(f"operator '{name}': channels ({c}) and num_filter ({f}) "
                         f"must be divisible by num_group ({num_group})")
    expect = (f, c // num_group) + kernel
    if tuple(wshape) != expect:
        raise ValueError(f"operator '{name}': weight shape {wshape} does not match "
                         f"data shape {dshape} with kernel={kernel}, num_group="
                         f"{num_group}: expected {expect}")
    g = _Geom(dshape, kernel, stride, dilate, pad)
    if g.OH < 1 or g.OW < 1:
        raise ValueError(f"operator '{name}': kernel {kernel} (dilate {dilate}) is "
                         f"larger than the padded input {(g.H + 2 * g.ph, g.W + 2 * g.pw)}"
                         f" of data shape {dshape}")
    return g


def _to_chwn(x, g):
    """NCHW ``x`` -> ``(C, H + 2ph, W + 2pw, N)``, zero border.

    Free if ``x`` is already stored as CHWN and there is no padding (the
    input of every convolution after the first); a copy into a scratch
    buffer otherwise.
    """
    xp = _xp(x)
    t = _chwn(x)
    pad = g.ph or g.pw
    if t is not None and not pad:
        return t                                     # in place: free
    xc = _ws(xp, 'chwn', (g.C, g.H + 2 * g.ph, g.W + 2 * g.pw, g.N), x.dtype)
    if t is None:                                    # NCHW: transpose it first
        t = _ws(xp, 'chwn_inner', (g.C, g.H, g.W, g.N), x.dtype) if pad else xc
        _transpose_into(x.reshape(g.N, -1), t.reshape(-1, g.N))
        if not pad:
            return xc
    ph, pw = g.ph, g.pw
    xc[:, :ph] = 0
    xc[:, ph + g.H:] = 0
    xc[:, ph:ph + g.H, :pw] = 0
    xc[:, ph:ph + g.H, pw + g.W:] = 0
    xc[:, ph:ph + g.H, pw:pw + g.W] = t
    return xc


def _windows(x, g):
    """All the windows of NCHW ``x``, as a ``(C, KH, KW, OH, OW, N)`` view.

    ``win[c, i, j, oh, ow, n] = xpad[n, c, oh*sh + i*dh, ow*sw + j*dw]``: one
    strided view of the transposed input, no copy yet.
    """
    xc = _to_chwn(x, g)
    sc, sh, sw, sn = xc.strides
    return _as_strided(xc, (g.C, g.KH, g.KW, g.OH, g.OW, g.N),
                       (sc, g.dh * sh, g.dw * sw, g.sh * sh, g.sw * sw, sn))


_BAND = 4 << 20           # bytes of cols per GEMM: a few MB stay in the CPU cache


def _bands(g, dtype, xp, f=0):
    """Bands ``(r0, r1)`` of output rows whose ``cols`` (and ``f`` rows of
    output) take about _BAND bytes.

    A batch's ``cols`` is big (41 MB for LeNet's second layer at batch 256):
    made all at once it streams through main memory three times (written by
    im2col, read by the GEMM, read again by col2im).  Built and consumed one
    band at a time it stays in the cache: 20% faster on a 2-core CPU, and the
    memory stays bounded for large images.  Each band is still ONE GEMM over
    the whole batch; a small problem is a single band; a GPU takes one band.
    """
    per_row = (g.C * g.KH * g.KW + f) * g.OW * g.N * np.dtype(dtype).itemsize
    step = g.OH if xp is not np else max(1, _BAND // per_row)
    return [(r, min(r + step, g.OH)) for r in range(0, g.OH, step)]


def _im2col(win, rows, g):
    """``cols`` for output rows ``rows``: ``(C*KH*KW, rows*OW*N)``, a scratch
    buffer; for stride 1 the copy moves runs of OW*N contiguous numbers."""
    r0, r1 = rows
    cols = _ws(_xp(win), 'cols', (g.C, g.KH, g.KW, r1 - r0, g.OW, g.N), win.dtype)
    cols[...] = win[:, :, :, r0:r1]
    return cols.reshape(g.C * g.KH * g.KW, -1)


def _col2im(cols, rows, dxc, g):
    """The adjoint of :func:`_im2col`: add each column back onto its window
    in the padded ``(C, Hp, Wp, N)`` gradient ``dxc``; one add per tap."""
    d = cols.reshape(g.C, g.KH, g.KW, rows[1] - rows[0], g.OW, g.N)
    for i in range(g.KH):
        for j in range(g.KW):
            v = _tap(dxc, i, j, g, 1, rows)
            _xp(v).add(v, d[:, i, j], out=v)


def _grouped(a, groups):
    """``(rows, cols)`` -> ``(groups, rows/groups, cols)``: a view."""
    return a.reshape(groups, a.shape[0] // groups, -1)


def _band(a, rows):
    """Columns of ``(F, OH, OW, N)`` array ``a`` for output rows ``rows``,
    as a ``(F, rows*OW*N)`` view."""
    return a[:, rows[0]:rows[1]].reshape(a.shape[0], -1)


def _gemm_rows(f, k, groups, xp):
    """Rows to give the forward GEMM for ``f`` filters of ``k`` taps.

    OpenBLAS's float32 kernels work on blocks of 8 rows here; 50 rows leave
    a ragged block that costs as much as 6 more (measured: a 50 x 500 by
    500 x 20736 product takes longer than a 56-row one).  So a compute-bound
    GEMM gets zero rows up to a multiple of 8, dropped afterwards.
    """
    if xp is not np or groups != 1 or f < 8 or k < 64:
        return f
    return -(-f // 8) * 8


def _conv_forward(x, w, b, g, groups, act=None):
    """The convolution (plus bias, plus ``act`` = 'relu' if given), returned
    as an (N, F, OH, OW) view of an (F, OH, OW, N) array: the GEMM's layout,
    kept as it is (see :func:`_chwn`)."""
    xp = _xp(x)
    f = w.shape[0]
    w2 = w.reshape(f, -1)
    fp = _gemm_rows(f, w2.shape[1], groups, xp)
    if fp != f:
        wp = _ws(xp, 'w_rows', (fp, w2.shape[1]), w.dtype)
        wp[:f] = w2
        wp[f:] = 0
        w2 = wp
    wg = _grouped(w2, groups)
    win = _windows(x, g)
    ypad = xp.empty((fp, g.OH, g.OW, g.N), x.dtype)
    y = ypad[:f]                                   # C-contiguous either way
    bias = None if b is None else b.reshape(f, 1)
    for rows in _bands(g, x.dtype, xp, fp):
        cols = _im2col(win, rows, g)
        _matmul(xp, wg, _grouped(cols, groups), _grouped(_band(ypad, rows), groups))
        yb = _band(y, rows)                        # still in the cache:
        if bias is not None:
            yb += bias
        if act == 'relu':
            xp.maximum(yb, 0, out=yb)
    return y.transpose(3, 0, 1, 2)


def _conv_grads(dy, g, groups, w=None, x=None, wshape=None):
    """``dx`` (if ``w`` is given) and ``dW`` (if ``x`` is given) of a
    convolution, in one pass over the bands of output rows: each band's cols
    and dcols are used while they are in the cache.  ``dx`` is col2im of
    ``W.T @ dY``; ``dW = dY @ cols.T``.  ``dY`` is used in place if it is
    stored as (F, OH, OW, N) (it is when it comes from the layers above),
    and ``dx`` comes back stored like ``x``.
    """
    xp = _xp(dy)
    f = dy.shape[1]
    dyt = _chwn(dy)
    if dyt is None:
        dyt = _ws(xp, 'dy', (f, g.OH, g.OW, g.N), dy.dtype)
        _transpose_into(dy.reshape(g.N, -1), dyt.reshape(-1, g.N))
    dx = dw = None
    if x is not None:
        win = _windows(x, g)                         # recomputed, as MXNet does
        # dW.T = cols @ dY.T: this orientation of the GEMM is ~15% faster
        # with OpenBLAS than dY @ cols.T, and dW is small to transpose back.
        dwt = xp.empty((groups, g.C * g.KH * g.KW // groups, f // groups), dy.dtype)
        part = xp.empty_like(dwt)
    # dx is stored like x (a gradient takes its variable's layout): CHWN
    # inside a CNN, NCHW for a network's input.  Unknown x: CHWN.
    as_chwn = x is None or _chwn(x) is not None
    if w is not None:
        wt = _grouped(w.reshape(f, -1), groups).transpose(0, 2, 1)
        shape = (g.C, g.H + 2 * g.ph, g.W + 2 * g.pw, g.N)
        dxc = xp.empty(shape, dy.dtype) if as_chwn and not (g.ph or g.pw) else \
            _ws(xp, 'dchwn', shape, dy.dtype)        # else the result itself
        dxc.fill(0)
    for k, rows in enumerate(_bands(g, dy.dtype, xp)):
        dy_band = _grouped(_band(dyt, rows), groups)
        if x is not None:                            # dW = sum over bands
            cols = _grouped(_im2col(win, rows, g), groups)
            _matmul(xp, cols, dy_band.transpose(0, 2, 1), part if k else dwt)
            if k:
                dwt += part
        if w is not None:                            # (reuses the cols buffer)
            dcols = _ws(xp, 'cols', (g.C * g.KH * g.KW, dy_band.shape[2]),
                        dy.dtype)
            _matmul(xp, wt, dy_band, _grouped(dcols, groups))
            _col2im(dcols, rows, dxc, g)
    if w is not None:
        if g.ph or g.pw:                             # crop the padding
            dxc = dxc[:, g.ph:g.ph + g.H, g.pw:g.pw + g.W]
            if as_chwn:
                dxc = xp.ascontiguousarray(dxc)
        dx = dxc.transpose(3, 0, 1, 2)
        if not as_chwn:
            dx = _copyto(xp.empty(dx.shape, dx.dtype), dx)
    if x is not None:
        dw = xp.ascontiguousarray(dwt.transpose(0, 2, 1)).reshape(wshape)
    return dx, dw


def _check_out_grad(name, dy, g, f):
    """The gradient ops' check: ``dy`` has the convolution output's shape."""
    if tuple(dy) != (g.N, f, g.OH, g.OW):
        raise ValueError(f"operator '{name}': output gradient shape {tuple(dy)} "
                         f"!= convolution output {(g.N, f, g.OH, g.OW)}")


@register
class Convolution(Op):
    """2-D convolution (cross-correlation, as in every DL framework), NCHW.

    ``data (N, C, H, W)``, ``weight (num_filter, C/num_group, KH, KW)``,
    optional ``bias (num_filter,)`` -> ``(N, num_filter, OH, OW)`` with
    ``OH = (H + 2*pad - dilate*(KH-1) - 1) // stride + 1``.
    """
    name = 'Convolution'
    cases = (Case((2, 3, 5, 5), (4, 3, 3, 3), (4,), kernel=(3, 3), num_filter=4),
             Case((2, 3, 6, 5), (4, 3, 3, 2), kernel=(3, 2), stride=(2, 1),
                  pad=(1, 1), num_filter=4),
             Case((1, 4, 6, 6), (6, 2, 2, 3), (6,), kernel=(2, 3), dilate=(2, 1),
                  pad=(0, 1), num_group=2, num_filter=6))

    def infer(self, shapes, dtypes, kernel=None, stride=(1, 1), dilate=(1, 1),
              pad=(0, 0), num_filter=None, num_group=1):
        d, w = tuple(shapes[0]), tuple(shapes[1])
        g = _conv_geom(self.name, d, w, kernel, stride, dilate, pad, num_group)
        f = w[0]
        if num_filter is not None and num_filter != f:
            raise ValueError(f"operator 'Convolution': num_filter={num_filter} but "
                             f"weight shape {w} has {f} filters")
        if len(shapes) == 3 and tuple(shapes[2]) != (f,):
            raise ValueError(f"operator 'Convolution': bias shape {shapes[2]} != "
                             f"({f},) for weight shape {w}")
        return (g.N, f, g.OH, g.OW), _float_dtype(self.name, dtypes)

    def forward(self, x, w, b=None, kernel=None, stride=(1, 1), dilate=(1, 1),
                pad=(0, 0), num_filter=None, num_group=1):
        g = _conv_geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                       num_group)
        return _conv_forward(x, w, b, g, num_group)

    def backward(self, dy, inputs, out, kernel=None, stride=(1, 1), dilate=(1, 1),
                 pad=(0, 0), num_filter=None, num_group=1):
        x, w = inputs[0], inputs[1]
        geom = {'kernel': kernel, 'stride': stride, 'dilate': dilate, 'pad': pad,
                'num_group': num_group}
        grads = [None, None]
        if _needs_grad(x) and _needs_grad(w):        # both in one pass
            grads = invoke(OPS['_conv_backward'], (dy, x, w), geom)
        elif _needs_grad(x):
            grads[0] = invoke(OPS['_conv_data_grad'], (dy, w),
                              dict(geom, data_shape=x.shape))
        elif _needs_grad(w):                         # e.g. the first layer
            grads[1] = invoke(OPS['_conv_weight_grad'], (dy, x),
                              dict(geom, weight_shape=w.shape))
        if len(inputs) == 3:
            grads.append(dy.sum(axis=(0, 2, 3)) if _needs_grad(inputs[2]) else None)
        return grads


@register
class ConvDataGrad(Op):
    """``dx`` of a convolution from ``dy`` and ``weight``: GEMM, then col2im.

    (A "transposed convolution".)  Linear in both inputs, so its own gradient
    is a convolution and a weight gradient.
    """
    name = '_conv_data_grad'
    cases = (Case((2, 4, 3, 3), (4, 3, 3, 3), data_shape=(2, 3, 5, 5), kernel=(3, 3)),
             Case((2, 4, 3, 6), (4, 3, 3, 2), data_shape=(2, 3, 6, 5), kernel=(3, 2),
                  stride=(2, 1), pad=(1, 1)),
             Case((1, 6, 4, 6), (6, 2, 2, 3), data_shape=(1, 4, 6, 6), kernel=(2, 3),
                  dilate=(2, 1), pad=(0, 1), num_group=2))

    def infer(self, shapes, dtypes, data_shape, kernel=None, stride=(1, 1),
              dilate=(1, 1), pad=(0, 0), num_group=1):
        dy, w = tuple(shapes[0]), tuple(shapes[1])
        g = _conv_geom(self.name, tuple(data_shape), w, kernel, stride, dilate, pad,
                       num_group)
        _check_out_grad(self.name, dy, g, w[0])
        return tuple(data_shape), _float_dtype(self.name, dtypes)

    def forward(self, dy, w, data_shape, kernel=None, stride=(1, 1), dilate=(1, 1),
                pad=(0, 0), num_group=1):
        g = _conv_geom(self.name, tuple(data_shape), w.shape, kernel, stride, dilate,
                       pad, num_group)
        return _conv_grads(dy, g, num_group, w=w)[0]

    def backward(self, gx, inputs, out, data_shape, **geom):
        dy, w = inputs
        grads = [None, None]
        if _needs_grad(dy):       # d<gx, D(dy, w)>/d dy = conv(gx, w)
            grads[0] = invoke(OPS['Convolution'], (gx, w), geom)
        if _needs_grad(w):        # ... and d/dw = the weight gradient for (dy, gx)
            grads[1] = invoke(OPS['_conv_weight_grad'], (dy, gx),
                              dict(geom, weight_shape=w.shape))
        return grads


@register
class ConvWeightGrad(Op):
    """``dW`` of a convolution from ``dy`` and ``data``: im2col, then one GEMM."""
    name = '_conv_weight_grad'
    cases = (Case((2, 4, 3, 3), (2, 3, 5, 5), weight_shape=(4, 3, 3, 3), kernel=(3, 3)),
             Case((2, 4, 3, 6), (2, 3, 6, 5), weight_shape=(4, 3, 3, 2), kernel=(3, 2),
                  stride=(2, 1), pad=(1, 1)),
             Case((1, 6, 4, 6), (1, 4, 6, 6), weight_shape=(6, 2, 2, 3), kernel=(2, 3),
                  dilate=(2, 1), pad=(0, 1), num_group=2))

    def infer(self, shapes, dtypes, weight_shape, kernel=None, stride=(1, 1),
              dilate=(1, 1), pad=(0, 0), num_group=1):
        dy, x = tuple(shapes[0]), tuple(shapes[1])
        w = tuple(weight_shape)
        g = _conv_geom(self.name, x, w, kernel, stride, dilate, pad, num_group)
        _check_out_grad(self.name, dy, g, w[0])
        return w, _float_dtype(self.name, dtypes)

    def forward(self, dy, x, weight_shape, kernel=None, stride=(1, 1), dilate=(1, 1),
                pad=(0, 0), num_group=1):
        w = tuple(weight_shape)
        g = _conv_geom(self.name, x.shape, w, kernel, stride, dilate, pad, num_group)
        return _conv_grads(dy, g, num_group, x=x, wshape=w)[1]

    def backward(self, gw, inputs, out, weight_shape, **geom):
        dy, x = inputs
        grads = [None, None]
        if _needs_grad(dy):       # d<gw, Wg(dy, x)>/d dy = conv(x, gw)
            grads[0] = invoke(OPS['Convolution'], (x, gw), geom)
        if _needs_grad(x):        # ... and d/dx = the data gradient for (dy, gw)
            grads[1] = invoke(OPS['_conv_data_grad'], (dy, gw),
                              dict(geom, data_shape=x.shape))
        return grads


@register
class ConvBackward(Op):
    """Both ``(dx, dW)`` of a convolution from ``(dy, data, weight)``, in one
    pass (what ``Convolution.backward`` uses when both are needed)."""
    name = '_conv_backward'
    nout = 2
    cases = (Case((2, 4, 3, 3), (2, 3, 5, 5), (4, 3, 3, 3), kernel=(3, 3)),
             Case((1, 6, 4, 6), (1, 4, 6, 6), (6, 2, 2, 3), kernel=(2, 3),
                  dilate=(2, 1), pad=(0, 1), num_group=2))

    def infer(self, shapes, dtypes, kernel=None, stride=(1, 1), dilate=(1, 1),
              pad=(0, 0), num_group=1):
        dy, x, w = (tuple(s) for s in shapes)
        g = _conv_geom(self.name, x, w, kernel, stride, dilate, pad, num_group)
        _check_out_grad(self.name, dy, g, w[0])
        dt = _float_dtype(self.name, dtypes)
        return [(x, dt), (w, dt)]

    def forward(self, dy, x, w, kernel=None, stride=(1, 1), dilate=(1, 1), pad=(0, 0),
                num_group=1):
        g = _conv_geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                       num_group)
        return list(_conv_grads(dy, g, num_group, w=w, x=x, wshape=w.shape))

    def backward(self, ograds, inputs, outputs, **geom):
        gx, gw = ograds
        dy, x, w = inputs
        ddy = None
        if _needs_grad(dy):       # the two linear maps of dy, added
            ddy = invoke(OPS['Convolution'], (gx, w), geom) + \
                invoke(OPS['Convolution'], (x, gw), geom)
        dx = invoke(OPS['_conv_data_grad'], (dy, gw),
                    dict(geom, data_shape=x.shape)) if _needs_grad(x) else None
        dw = invoke(OPS['_conv_weight_grad'], (dy, gx),
                    dict(geom, weight_shape=w.shape)) if _needs_grad(w) else None
        return [ddy, dx, dw]


@register
class ConvolutionAct(Op):
    """``Activation(Convolution(x, w, b), 'relu')`` as ONE op.

    The relu is applied to each band of the GEMM's output while it is still
    in the CPU cache, instead of in a second pass over the largest array of
    a CNN (LeNet's first layer: 14 MB per batch of 256).  MXNet's MKL-DNN
    backend fuses the same pair.  gluon's ``Conv2D(..., activation='relu')``
    runs this op; the values are those of the two ops in sequence.
    """
    name = '_conv_act'
    cases = (Case((2, 3, 5, 5), (4, 3, 3, 3), (4,), kernel=(3, 3), num_filter=4,
                  act_type='relu'),
             Case((2, 3, 6, 5), (4, 3, 3, 2), kernel=(3, 2), stride=(2, 1),
                  pad=(1, 1), num_filter=4, act_type='relu'))

    def infer(self, shapes, dtypes, act_type='relu', **conv):
        if act_type != 'relu':
            raise ValueError(f"operator '{self.name}': act_type={act_type!r}; only "
                             f"'relu' is fused (use Convolution, then Activation)")
        return type(OPS['Convolution']).infer(self, shapes, dtypes, **conv)

    def forward(self, x, w, b=None, act_type='relu', kernel=None, stride=(1, 1),
                dilate=(1, 1), pad=(0, 0), num_filter=None, num_group=1):
        g = _conv_geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                       num_group)
        return _conv_forward(x, w, b, g, num_group, act=act_type)

    def backward(self, dy, inputs, out, act_type='relu', **conv):
        dz = _ACTIVATIONS[act_type][1](dy, None, out)    # through the relu
        return OPS['Convolution'].backward(dz, inputs, out, **conv)


# === Pooling ====================================================================
_POOL_TYPES = ('max', 'avg', 'sum')


@functools.lru_cache(maxsize=512)
def _pool_geom(dshape, kernel, pool_type, global_pool, stride, pad, convention):
    name = 'Pooling'
    if len(dshape) != 4:
        raise ValueError(f"operator '{name}': data must be 4-D (N, C, H, W), got "
                         f"shape {dshape}")
    if pool_type not in _POOL_TYPES:
        raise ValueError(f"operator '{name}': pool_type={pool_type!r} is not one of "
                         f"{_POOL_TYPES}")
    if convention not in ('valid', 'full'):
        raise ValueError(f"operator '{name}': pooling_convention={convention!r}; "
                         f"supported: 'valid' (floor) and 'full' (ceil)")
    if global_pool:
        kernel, stride, pad = dshape[2:], (1, 1), (0, 0)
    elif kernel is None:
        raise ValueError(f"operator '{name}': kernel is required unless "
                         f"global_pool=True")
    kernel = _tuple(name, 'kernel', kernel, 2)
    stride = _tuple(name, 'stride', stride, 2)
    pad = _tuple(name, 'pad', pad, 2)
    g = _Geom(dshape, kernel, stride, (1, 1), pad, ceil=convention == 'full')
    if g.OH < 1 or g.OW < 1 or min(kernel + stride) < 1:
        raise ValueError(f"operator '{name}': kernel {kernel} (stride {stride}) does "
                         f"not fit the padded input {(g.H + 2 * g.ph, g.W + 2 * g.pw)}"
                         f" of data shape {dshape}")
    return g


@functools.lru_cache(maxsize=512)
def _pool_divisor(g, count_include_pad):
    """Per-output window sizes for 'avg', as MXNet (and PyTorch) count them.

    With ``count_include_pad`` a window counts its padding but not what lies
    past it ('full' windows near the end); without, only real pixels.
    """
    def sizes(n_out, s, k, p, size):
        start = np.arange(n_out) * s - p
        end = np.minimum(start + k, size + p)
        if count_include_pad:
            return end - start
        return np.minimum(end, size) - np.maximum(start, 0)
    d = np.outer(sizes(g.OH, g.sh, g.KH, g.ph, g.H), sizes(g.OW, g.sw, g.KW, g.pw, g.W))
    return float(d.flat[0]) if (d == d.flat[0]).all() else d


def _pool_padded(x, g, fill):
    """``x`` inside a border of ``fill`` wide enough for every window."""
    if g.Hp == g.H and g.Wp == g.W:
        return x
    buf = _empty_as(_xp(x), (g.N, g.C, g.Hp, g.Wp), x)
    buf.fill(fill)
    buf[:, :, g.ph:g.ph + g.H, g.pw:g.pw + g.W] = x
    return buf


def _low(dtype):
    # MXNet pads max pooling with the lowest finite value, not -inf.
    return np.finfo(dtype).min if np.dtype(dtype).kind == 'f' else np.iinfo(dtype).min


def _pool_key(dshape, kernel, pool_type, global_pool, stride, pad, convention):
    """:func:`_pool_geom` with hashable arguments (it is cached)."""
    return _pool_geom(tuple(dshape), None if kernel is None else tuple(kernel),
                      pool_type, bool(global_pool), tuple(stride), tuple(pad),
                      convention)


@register
class Pooling(Op):
    """Max / average / sum pooling over 2-D windows, NCHW.

    MXNet's defaults: ``stride=(1, 1)``, ``pad=(0, 0)``,
    ``pooling_convention='valid'`` (floor; ``'full'`` is ceil),
    ``count_include_pad=True``.  ``global_pool`` pools each whole map.
    """
    name = 'Pooling'
    cases = (Case((2, 3, 4, 4), kernel=(2, 2), stride=(2, 2)),
             Case((1, 2, 5, 5), kernel=(3, 3), stride=(2, 2), pad=(1, 1)),
             Case((1, 2, 6, 6), kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                  pooling_convention='full'),
             Case((1, 2, 6, 6), kernel=(3, 2), stride=(2, 2), pad=(1, 1),
                  pool_type='avg', pooling_convention='full', count_include_pad=False),
             Case((1, 2, 6, 6), kernel=(3, 2), stride=(2, 2), pad=(1, 1),
                  pool_type='avg', pooling_convention='full'),
             Case((2, 2, 5, 5), kernel=(3, 2), stride=(1, 2), pad=(1, 0),
                  pool_type='avg'),
             Case((1, 2, 4, 5), kernel=(2, 2), pool_type='sum'),
             Case((2, 3, 3, 4), global_pool=True),
             Case((2, 3, 3, 4), global_pool=True, pool_type='avg'))

    def infer(self, shapes, dtypes, kernel=None, pool_type='max', global_pool=False,
              stride=(1, 1), pad=(0, 0), pooling_convention='valid',
              count_include_pad=True):
        g = _pool_key(shapes[0], kernel, pool_type, global_pool, stride, pad,
                      pooling_convention)
        return (g.N, g.C, g.OH, g.OW), _float_dtype(self.name, dtypes)

    def forward(self, x, kernel=None, pool_type='max', global_pool=False,
                stride=(1, 1), pad=(0, 0), pooling_convention='valid',
                count_include_pad=True):
        xp = _xp(x)
        if global_pool:
            reduce = {'max': x.max, 'avg': x.mean, 'sum': x.sum}[pool_type]
            return reduce(axis=(2, 3), keepdims=True).astype(x.dtype, copy=False)
        g = _pool_key(x.shape, kernel, pool_type, global_pool, stride, pad,
                      pooling_convention)
        src = _pool_padded(x, g, _low(x.dtype) if pool_type == 'max' else 0)
        combine = xp.maximum if pool_type == 'max' else xp.add
        y = _empty_as(xp, (g.N, g.C, g.OH, g.OW), x)     # x's memory order
        y[...] = _tap(src, 0, 0, g, 2)
        for i in range(g.KH):                 # one pass per kernel tap
            for j in range(g.KW):
                if i or j:
                    combine(y, _tap(src, i, j, g, 2), out=y)
        if pool_type == 'avg':
            d = _pool_divisor(g, bool(count_include_pad))
            y /= d if isinstance(d, float) else xp.asarray(d, dtype=x.dtype)
        return y

    def backward(self, dy, inputs, out, **attrs):
        return [invoke(OPS['_pool_backward'], (dy, inputs[0], out), attrs)]


@register
class PoolBackward(Op):
    """``dx`` of Pooling from ``(dy, x, y)``.

    Max: each window's gradient goes to its first maximum in scan order (as
    MXNet and PyTorch do), found by comparing every tap with ``y``.
    Avg/sum: each tap adds ``dy`` (divided by the window size) back.
    """
    name = '_pool_backward'
    differentiable = False

    def infer(self, shapes, dtypes, **attrs):
        return tuple(shapes[1]), dtypes[1]

    def forward(self, dy, x, y, kernel=None, pool_type='max', global_pool=False,
                stride=(1, 1), pad=(0, 0), pooling_convention='valid',
                count_include_pad=True):
        xp = _xp(x)
        n, c, h, w = x.shape
        if global_pool:
            if pool_type == 'max':
                first = x.reshape(n, c, -1).argmax(axis=2)[..., None]
                hit = xp.arange(h * w) == first
                return (hit * dy.reshape(n, c, 1)).astype(x.dtype).reshape(x.shape)
            dx = xp.empty_like(x)
            dx[...] = dy / (h * w) if pool_type == 'avg' else dy
            return dx
        g = _pool_key(x.shape, kernel, pool_type, global_pool, stride, pad,
                      pooling_convention)
        # When the windows tile x exactly (stride == kernel, no padding, no
        # leftover rows), each pixel belongs to one tap: write, don't add.
        tiles = (g.sh, g.sw) == (g.KH, g.KW) and not (g.ph or g.pw) and \
            (g.OH * g.KH, g.OW * g.KW) == (h, w)
        dxp = _empty_as(xp, (n, c, g.Hp, g.Wp), x)       # x's memory order
        if not tiles:
            dxp.fill(0)
        dy = _as_layout(dy, x)
        taps = [(i, j) for i in range(g.KH) for j in range(g.KW)]
        if pool_type == 'max':
            src = _pool_padded(x, g, _low(x.dtype))
            taken = None
            for k, (i, j) in enumerate(taps):
                eq = _tap(src, i, j, g, 2) == y
                if taken is None:             # the first tap wins its ties
                    hit = taken = eq          # (taken is updated after hit's use)
                else:                         # a later tap: only if none before
                    hit = eq > taken
                    if k < len(taps) - 1:
                        taken |= eq
                v = _tap(dxp, i, j, g, 2)
                if tiles:
                    xp.multiply(dy, hit, out=v)
                else:
                    xp.add(v, dy * hit, out=v)
        else:
            gd = dy
            if pool_type == 'avg':
                d = _pool_divisor(g, bool(count_include_pad))
                gd = dy / (d if isinstance(d, float) else xp.asarray(d, dtype=dy.dtype))
            for i, j in taps:
                v = _tap(dxp, i, j, g, 2)
                if tiles:
                    v[...] = gd
                else:
                    xp.add(v, gd, out=v)
        if dxp.shape == x.shape:
            return dxp
        return _as_layout(dxp[:, :, g.ph:g.ph + h, g.pw:g.pw + w], x, copy=True)


# === activations =================================================================
def _away_from_zero(shape):
    """Random inputs with |x| in [0.1, 1]: kinks at 0 stay out of the check."""
    return lambda r: r.uniform(0.1, 1.0, shape) * r.choice([-1.0, 1.0], shape)


def _softsign(a):
    return a / (1 + abs(a))


# act_type: (forward on raw arrays, backward g, x, y -> dx in NDArray ops)
_ACTIVATIONS = {
    'relu': (lambda a: _xp(a).maximum(a, 0), lambda g, x, y: g * (y > 0)),
    'sigmoid': (_sigmoid, lambda g, x, y: g * y * (1 - y)),
    'tanh': (lambda a: _xp(a).tanh(a), lambda g, x, y: g * (1 - y * y)),
    'softrelu': (_softrelu, lambda g, x, y: g * invoke(OPS['sigmoid'], (x,))),
    'softsign': (_softsign, lambda g, x, y: g / invoke(OPS['square'], (1 + abs(x),))),
}


@register
class Activation(Op):
    """Elementwise ``relu``, ``sigmoid``, ``tanh``, ``softrelu`` or ``softsign``."""
    name = 'Activation'
    cases = (Case(inputs=[_away_from_zero((3, 4))], act_type='relu'),
             Case((3, 4), act_type='sigmoid'), Case((3, 4), act_type='tanh'),
             Case((3, 4), act_type='softrelu'), Case((3, 4), act_type='softsign'))

    def infer(self, shapes, dtypes, act_type):
        if act_type not in _ACTIVATIONS:
            raise ValueError(f"operator 'Activation': act_type={act_type!r} is not one "
                             f"of {sorted(_ACTIVATIONS)}")
        return shapes[0], _float_dtype(self.name, dtypes)

    def forward(self, a, act_type):
        return _ACTIVATIONS[act_type][0](a)

    def backward(self, g, inputs, out, act_type):
        return [_ACTIVATIONS[act_type][1](g, inputs[0], out)]


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@register
class LeakyReLU(Op):
    """MXNet's LeakyReLU family: ``leaky``, ``elu``, ``selu`` and ``prelu``.

    ``leaky``: ``x if x > 0 else slope * x``; ``elu``: ``slope * (exp(x) - 1)``
    for ``x <= 0``; ``selu``: the fixed-point scaled ELU; ``prelu`` takes the
    slopes as a second input ``gamma`` (one per channel, axis 1, or one).
    """
    name = 'LeakyReLU'
    cases = (Case(inputs=[_away_from_zero((3, 4))], act_type='leaky', slope=0.1),
             Case(inputs=[_away_from_zero((3, 4))], act_type='elu', slope=0.7),
             Case(inputs=[_away_from_zero((3, 4))], act_type='selu'),
             Case(inputs=[_away_from_zero((2, 3, 2)),
                          lambda r: r.uniform(0.1, 0.5, (3,))], act_type='prelu'))
    TYPES = ('leaky', 'elu', 'selu', 'prelu')

    def infer(self, shapes, dtypes, act_type='leaky', slope=0.25, lower_bound=0.125,
              upper_bound=0.334):
        if act_type not in self.TYPES:
            raise ValueError(f"operator 'LeakyReLU': act_type={act_type!r} is not one "
                             f"of {self.TYPES}")
        if (act_type == 'prelu') != (len(shapes) == 2):
            raise ValueError("operator 'LeakyReLU': act_type='prelu' takes (data, "
                             "gamma), the other types data only")
        if act_type == 'prelu':
            x, gm = shapes
            if len(gm) != 1 or (gm[0] != 1 and (len(x) < 2 or gm[0] != x[1])):
                raise ValueError(f"operator 'LeakyReLU': prelu gamma shape {gm} must "
                                 f"be (1,) or (channels,) for data shape {x}")
        return shapes[0], _float_dtype(self.name, dtypes)

    @staticmethod
    def _gamma_shape(x_ndim, gamma):
        # one slope per channel (axis 1), broadcast over the other axes
        return (1, -1) + (1,) * (x_ndim - 2) if x_ndim >= 2 and gamma.shape[0] > 1 \
            else (1,) * x_ndim

    def forward(self, x, gamma=None, act_type='leaky', slope=0.25, lower_bound=0.125,
                upper_bound=0.334):
        xp = _xp(x)
        if act_type == 'leaky':
            return xp.where(x > 0, x, x * slope)
        if act_type == 'prelu':
            gm = gamma.reshape(self._gamma_shape(x.ndim, gamma))
            return xp.where(x > 0, x, x * gm).astype(x.dtype, copy=False)
        neg = xp.expm1(xp.minimum(x, 0))           # exp of x <= 0 only: no overflow
        if act_type == 'elu':
            return xp.where(x > 0, x, neg * slope)
        return xp.where(x > 0, x, neg * _SELU_ALPHA) * x.dtype.type(_SELU_SCALE)

    def backward(self, g, inputs, out, act_type='leaky', slope=0.25, **unused):
        x = inputs[0]
        pos = x > 0
        if act_type == 'leaky':
            return [g * (pos * (1 - slope) + slope)]
        if act_type == 'elu':               # d/dx slope*(e^x - 1) = y + slope
            return [g * (pos + (1 - pos) * (out + slope))]
        if act_type == 'selu':
            return [g * (pos * _SELU_SCALE + (1 - pos) * (out + _SELU_SCALE * _SELU_ALPHA))]
        gamma = inputs[1]
        gm = gamma.reshape(self._gamma_shape(x.ndim, gamma))
        dx = g * (pos + (1 - pos) * gm)
        dgamma = None
        if _needs_grad(gamma):
            t = g * x * (1 - pos)
            axes = tuple(i for i in range(x.ndim) if i != 1 or gamma.shape[0] == 1)
            dgamma = t.sum(axis=axes).reshape(gamma.shape)
        return [dx, dgamma]


# === softmax and friends ============================================================
def _scaled(a, temperature):
    return a if temperature is None or temperature == 1 else a / temperature


def _check_axis(name, axis, shape):
    if not -len(shape) <= axis < max(1, len(shape)):
        raise ValueError(f"operator '{name}': axis {axis} out of range for shape "
                         f"{shape}")


@register
class Softmax(Op):
    """``exp(x/T) / sum(exp(x/T))`` along ``axis``, computed without overflow."""
    name = 'softmax'
    cases = (Case((3, 4)), Case((2, 3, 4), axis=1), Case((3, 4), temperature=2.0))

    def infer(self, shapes, dtypes, axis=-1, temperature=None):
        _check_axis(self.name, axis, shapes[0])
        return shapes[0], _float_dtype(self.name, dtypes)

    def forward(self, a, axis=-1, temperature=None):
        xp = _xp(a)
        a = _scaled(a, temperature)
        e = xp.exp(a - a.max(axis=axis, keepdims=True))
        e /= e.sum(axis=axis, keepdims=True)
        return e

    def backward(self, g, inputs, y, axis=-1, temperature=None):
        gy = g * y
        return [_scaled(gy - y * gy.sum(axis=axis, keepdims=True), temperature)]


@register
class LogSoftmax(Op):
    """``log(softmax(x))`` along ``axis``, as ``x - max - log(sum(exp(x - max)))``."""
    name = 'log_softmax'
    cases = (Case((3, 4)), Case((2, 3, 4), axis=0), Case((3, 4), temperature=0.5))

    def infer(self, shapes, dtypes, axis=-1, temperature=None):
        _check_axis(self.name, axis, shapes[0])
        return shapes[0], _float_dtype(self.name, dtypes)

    def forward(self, a, axis=-1, temperature=None):
        xp = _xp(a)
        a = _scaled(a, temperature)
        s = a - a.max(axis=axis, keepdims=True)
        s -= xp.log(xp.exp(s).sum(axis=axis, keepdims=True))
        return s

    def backward(self, g, inputs, y, axis=-1, temperature=None):
        p = invoke(OPS['exp'], (y,))
        return [_scaled(g - p * g.sum(axis=axis, keepdims=True), temperature)]


@register
class SoftmaxCrossEntropy(Op):
    """MXNet's ``softmax_cross_entropy(data, label)``: the SUM over the batch
    of ``-log softmax(data)[label]``, shape ``(1,)``."""
    name = 'softmax_cross_entropy'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (4, 3)), [0, 2, 1, 2]], grad=[0]),)

    def infer(self, shapes, dtypes):
        d, lab = tuple(shapes[0]), tuple(shapes[1])
        if len(d) != 2 or lab != d[:1]:
            raise ValueError(f"operator 'softmax_cross_entropy': needs data (N, K) and "
                             f"label (N,), got {d} and {lab}")
        return (1,), _float_dtype(self.name, dtypes[:1])

    def forward(self, x, label):
        xp = _xp(x)
        logp = OPS['log_softmax'].forward(x, axis=1)
        idx = label.astype(np.int64).reshape(-1, 1)
        return -xp.take_along_axis(logp, idx, axis=1).sum(keepdims=True).reshape(1)

    def backward(self, g, inputs, out):
        x, label = inputs
        p = invoke(OPS['softmax'], (x,), {'axis': 1})
        return [(p - one_hot(label, x.shape[1], dtype=x.dtype)) * g, None]


@register
class SoftmaxOutputGrad(Op):
    """The gradient SoftmaxOutput sends back: ``(p - onehot(label)) * scale``."""
    name = '_softmax_output_grad'
    differentiable = False

    def infer(self, shapes, dtypes, **params):
        return shapes[0], dtypes[0]

    def forward(self, p, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,
                use_ignore=False, preserve_shape=False, normalization='null',
                out_grad=False, smooth_alpha=0.0):
        xp = _xp(p)
        if multi_output:                     # classes on axis 1: move them last
            q = xp.moveaxis(p, 1, -1)
        elif preserve_shape:
            q = p
        else:
            q = p.reshape(p.shape[0], -1)
        k = q.shape[-1]
        lab = label.reshape(q.shape[:-1])
        hot = lab.astype(np.int64)[..., None] == xp.arange(k)
        if smooth_alpha:
            target = xp.where(hot, 1.0 - smooth_alpha, smooth_alpha / (k - 1))
        else:
            target = hot
        grad = (q - target).astype(p.dtype, copy=False)
        scale = grad_scale
        if use_ignore:
            keep = lab != ignore_label
            grad *= keep[..., None]
        if normalization == 'batch':
            scale = scale / p.shape[0]
        elif normalization == 'valid':
            n = float(keep.sum()) if use_ignore else lab.size
            scale = scale / max(n, 1.0)
        grad *= scale
        if multi_output:
            grad = xp.moveaxis(grad, -1, 1)
        return xp.ascontiguousarray(grad.reshape(p.shape))


class _SoftmaxOutputFn(_ag.Function):
    """SoftmaxOutput is a *loss head*: its output is softmax(data), but its
    backward sends ``p - onehot(label)`` (the gradient of the cross-entropy)
    whatever the head gradient.  That is not the derivative of its output,
    so it is an ``autograd.Function``, not a table op with a gradient check.
    """

    def __init__(self, params):
        self.params = params

    def forward(self, data, label):
        prm = self.params
        if prm['multi_output']:
            p = invoke(OPS['softmax'], (data,), {'axis': 1})
        elif prm['preserve_shape']:
            p = invoke(OPS['softmax'], (data,), {'axis': -1})
        else:
            p = invoke(OPS['softmax'], (data.reshape((data.shape[0], -1)),),
                       {'axis': -1}).reshape(data.shape)
        self.save_for_backward(p, label)
        return p

    def backward(self, dout):
        p, label = self.saved_tensors
        g = invoke(OPS['_softmax_output_grad'], (p, label), self.params)
        if self.params['out_grad']:
            g = g * dout
        return g, None


# === Dropout ===================================================================
@register
class DropoutMask(Op):
    """Draws Dropout's mask: 0 with probability ``p``, else ``1 / (1 - p)``.

    The draw runs inside the kernel, on the device's stream, from the
    context's generator (``rng``), so a seed reproduces it in any engine mode.
    """
    name = '_dropout_mask'
    differentiable = False

    def infer(self, shapes, dtypes, p, axes, rng):
        shape = tuple(1 if i in axes else s for i, s in enumerate(shapes[0]))
        return shape, _float_dtype(self.name, dtypes)

    def forward(self, a, p, axes, rng):
        shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
        dt = a.dtype if a.dtype in (np.float32, np.float64) else np.float32
        keep = rng.random(shape, dtype=dt) >= p
        return (keep * a.dtype.type(1.0 / (1.0 - p))).astype(a.dtype, copy=False)


@register
class DropoutOp(Op):
    """``data * mask`` (the mask broadcast over ``axes``)."""
    name = 'Dropout'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (4, 5)),
                          lambda r: (r.uniform(size=(4, 5)) > 0.5) * 2.0], grad=[0]),
             Case(inputs=[lambda r: r.uniform(-1, 1, (2, 3, 4)),
                          lambda r: (r.uniform(size=(2, 3, 1)) > 0.3) / 0.7], grad=[0]))

    def infer(self, shapes, dtypes):
        return shapes[0], _float_dtype(self.name, dtypes)

    def forward(self, a, mask):
        return a * mask

    def backward(self, g, inputs, out):
        return [g * inputs[1], None]


# === BatchNorm =================================================================
def _bn_axes(ndim, axis):
    ax = axis % ndim
    return ax, tuple(i for i in range(ndim) if i != ax), \
        tuple(-1 if i == ax else 1 for i in range(ndim))


@register
class BatchNorm(Op):
    """Batch normalization over ``axis`` (the channels; MXNet default 1).

    Outputs ``(out, mean, var)`` like MXNet's op (the front end returns
    ``out`` unless ``output_mean_var``).  With ``training`` the statistics
    are the batch's (``var`` biased, as MXNet); otherwise ``moving_mean`` and
    ``moving_var``.  ``fix_gamma`` (MXNet's default!) uses ``gamma = 1`` and
    gives gamma a zero gradient.  The moving statistics are *aux states*:
    never differentiated, and updated in place by the :func:`BatchNorm`
    front end, not here, so this op stays a pure function.
    """
    name = 'BatchNorm'
    nout = 3

    @staticmethod
    def _inputs(shape, c, var_low=0.5):
        return [lambda r: r.uniform(-1, 1, shape), lambda r: r.uniform(0.5, 1.5, c),
                lambda r: r.uniform(-1, 1, c), lambda r: r.uniform(-1, 1, c),
                lambda r: r.uniform(var_low, 1.5, c)]

    cases = (Case(inputs=_inputs((4, 3, 2, 2), 3), grad=[0, 1, 2], training=True,
                  fix_gamma=False),
             Case(inputs=_inputs((5, 3), 3), grad=[0, 1, 2], training=True),
             Case(inputs=_inputs((3, 2, 4), 4), grad=[0, 1, 2], training=True,
                  axis=-1, fix_gamma=False, eps=1e-3),
             Case(inputs=_inputs((4, 3, 2, 2), 3), grad=[0, 1, 2], training=False,
                  fix_gamma=False))

    def infer(self, shapes, dtypes, eps=1e-3, momentum=0.9, fix_gamma=True,
              use_global_stats=False, axis=1, training=False):
        x = tuple(shapes[0])
        if not -len(x) <= axis < len(x):
            raise ValueError(f"operator 'BatchNorm': axis {axis} out of range for data "
                             f"shape {x}")
        c = x[axis % len(x)]
        _float_dtype(self.name, dtypes[:1])
        for d in dtypes[1:]:           # statistics may be wider (fp16 data)
            _float_dtype(self.name, [d])
        names = ('gamma', 'beta', 'moving_mean', 'moving_var')
        for nm, s in zip(names, shapes[1:]):
            if tuple(s) != (c,):
                raise ValueError(f"operator 'BatchNorm': {nm} shape {tuple(s)} != "
                                 f"({c},), the channels of data shape {x} on axis "
                                 f"{axis}")
        return [(x, dtypes[0]), ((c,), dtypes[3]), ((c,), dtypes[4])]

    def forward(self, x, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
                fix_gamma=True, use_global_stats=False, axis=1, training=False):
        xp = _xp(x)
        ax, red, bshape = _bn_axes(x.ndim, axis)
        if training and not use_global_stats:
            mean = x.mean(axis=red)
            xc = x - mean.reshape(bshape)
            var = (xc * xc).mean(axis=red)
        else:
            mean, var = moving_mean.copy(), moving_var.copy()
            xc = x - mean.reshape(bshape).astype(x.dtype, copy=False)
        scale = 1 / xp.sqrt(var + eps)
        if not fix_gamma:
            scale = scale * gamma
        xc *= scale.reshape(bshape).astype(x.dtype, copy=False)
        xc += beta.reshape(bshape).astype(x.dtype, copy=False)
        return [xc, mean.astype(moving_mean.dtype, copy=False),
                var.astype(moving_var.dtype, copy=False)]

    def backward(self, ograds, inputs, outputs, eps=1e-3, momentum=0.9, fix_gamma=True,
                 use_global_stats=False, axis=1, training=False):
        g, gmean, gvar = ograds
        x, gamma = inputs[0], inputs[1]
        ax, red, bshape = _bn_axes(x.ndim, axis)
        m = x.size // x.shape[ax]
        mean = outputs[1].reshape(bshape)
        invstd = invoke(OPS['rsqrt'], (outputs[2].reshape(bshape) + eps,))
        scale = invstd if fix_gamma else invstd * gamma.reshape(bshape)
        xhat = (x - mean) * invstd
        gsum = g.sum(axis=red, keepdims=True)
        gxhat = (g * xhat).sum(axis=red, keepdims=True)
        if training and not use_global_stats:
            # d/dx of out, mean and var, folded into per-channel coefficients:
            # dx = g*scale + xhat*a + b
            a = gvar.reshape(bshape) * (2.0 / m) / invstd - scale * gxhat / m
            b = gmean.reshape(bshape) / m - scale * gsum / m
            dx = g * scale + xhat * a + b
        else:                          # the statistics are constants here
            dx = g * scale
        dgamma = None
        if _needs_grad(gamma):
            dgamma = gamma * 0 if fix_gamma else gxhat.reshape(gamma.shape)
        return [dx, dgamma, gsum.reshape(inputs[2].shape), None, None]


# === functional front ends (MXNet's nd.* signatures) =============================
def FullyConnected(data, weight, bias=None, num_hidden=None, no_bias=False,
                   flatten=True, out=None, name=None, **kwargs):
    """``data @ weight.T + bias`` (``weight``: ``(num_hidden, in_units)``).

    >>> nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), nd.zeros(4),
    ...                   num_hidden=4).shape
    (2, 4)
    """
    _check_kwargs(FullyConnected, kwargs)
    if num_hidden is None:
        raise TypeError("FullyConnected() missing required keyword 'num_hidden'")
    args = (data, weight) if no_bias or bias is None else (data, weight, bias)
    res = invoke(OPS['FullyConnected'], args,
                 {'num_hidden': int(num_hidden), 'flatten': bool(flatten)})
    return _result(res, out)


_CONV_IGNORED = ('workspace', 'cudnn_tune', 'cudnn_off')


def _spatial(name, data, layout):
    if layout not in (None, 'NCW', 'NCHW'):
        raise ValueError(f"{name}: layout={layout!r} is not supported; d2lmini "
                         f"computes in NCW/NCHW (transpose your data)")
    if data.ndim not in (3, 4):
        if data.ndim == 5:
            raise NotImplementedError(f'{name}: 3-D (NCDHW) is not implemented; '
                                      f'1-D (NCW) and 2-D (NCHW) are')
        raise ValueError(f'{name}: data must be 3-D (N, C, W) or 4-D (N, C, H, W), '
                         f'got shape {data.shape}')
    return data.ndim - 2


def _lift(data):
    """``(N, C, W)`` -> ``(N, C, 1, W)``: 1-D ops run as 2-D ones of height 1."""
    return data.reshape((data.shape[0], data.shape[1], 1, data.shape[2]))


def Convolution(data, weight, bias=None, kernel=None, stride=None, dilate=None,
                pad=None, num_filter=None, num_group=1, no_bias=False, layout=None,
                out=None, name=None, **kwargs):
    """N-D convolution (1-D on ``(N, C, W)``, 2-D on ``(N, C, H, W)``).

    ``kernel``, ``stride``, ``dilate``, ``pad`` take ints or tuples;
    ``bias`` is used unless ``no_bias`` (or it is None).

    >>> x, w = nd.ones((1, 1, 4, 4)), nd.ones((2, 1, 3, 3))
    >>> nd.Convolution(x, w, kernel=3, num_filter=2, no_bias=True).shape
    (1, 2, 2, 2)
    """
    _check_kwargs(Convolution, kwargs, _CONV_IGNORED)
    return _result(_convolution('Convolution', data, weight, bias, kernel, stride,
                                dilate, pad, num_filter, num_group, no_bias,
                                layout), out)


def _conv_act(data, weight, bias=None, act_type='relu', kernel=None, stride=None,
              dilate=None, pad=None, num_filter=None, num_group=1, no_bias=False,
              layout=None):
    """``Activation(Convolution(...), act_type)`` as one fused op (2-D; relu):
    what gluon's ``Conv2D(activation='relu')`` runs."""
    return _convolution('_conv_act', data, weight, bias, kernel, stride, dilate,
                        pad, num_filter, num_group, no_bias, layout,
                        act_type=act_type)


def _convolution(op, data, weight, bias, kernel, stride, dilate, pad, num_filter,
                 num_group, no_bias, layout, **extra):
    if kernel is None or num_filter is None:
        raise TypeError("Convolution() needs the keywords 'kernel' and 'num_filter'")
    n = _spatial('Convolution', data, layout)
    if op != 'Convolution' and n != 2:
        raise ValueError(f"operator '{op}': 2-D only, got data shape {data.shape}")
    attrs = {'kernel': _tuple('Convolution', 'kernel', kernel, n),
             'stride': _tuple('Convolution', 'stride', 1 if stride is None else stride, n),
             'dilate': _tuple('Convolution', 'dilate', 1 if dilate is None else dilate, n),
             'pad': _tuple('Convolution', 'pad', 0 if pad is None else pad, n),
             'num_filter': int(num_filter), 'num_group': int(num_group)}
    if n == 1:
        attrs.update({k: (1,) + v if k != 'pad' else (0,) + v
                      for k, v in attrs.items() if isinstance(v, tuple)})
        if weight.ndim != 3:
            raise ValueError(f"operator 'Convolution': 1-D weight must be 3-D "
                             f"(num_filter, C/num_group, K), got shape {weight.shape}")
        data, weight = _lift(data), _lift(weight)
    args = (data, weight) if no_bias or bias is None else (data, weight, bias)
    res = invoke(OPS[op], args, dict(attrs, **extra))
    if n == 1:
        res = res.reshape((res.shape[0], res.shape[1], res.shape[3]))
    return res


def Pooling(data, kernel=None, pool_type='max', global_pool=False, stride=None,
            pad=None, pooling_convention='valid', count_include_pad=True, layout=None,
            out=None, name=None, **kwargs):
    """Max/avg/sum pooling (MXNet defaults: ``stride=1``, ``pad=0``, 'valid').

    >>> nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=2, stride=2).shape
    (1, 1, 2, 2)
    """
    _check_kwargs(Pooling, kwargs, ('cudnn_off', 'p_value'))
    n = _spatial('Pooling', data, layout)
    if kernel is None and not global_pool:
        raise TypeError("Pooling() needs 'kernel' (or global_pool=True)")
    attrs = {'kernel': None if kernel is None else _tuple('Pooling', 'kernel', kernel, n),
             'pool_type': pool_type, 'global_pool': bool(global_pool),
             'stride': _tuple('Pooling', 'stride', 1 if stride is None else stride, n),
             'pad': _tuple('Pooling', 'pad', 0 if pad is None else pad, n),
             'pooling_convention': pooling_convention,
             'count_include_pad': bool(count_include_pad)}
    if n == 1:
        for k in ('kernel', 'stride', 'pad'):
            if attrs[k] is not None:
                attrs[k] = ((0,) if k == 'pad' else (1,)) + attrs[k]
        data = _lift(data)
    res = invoke(OPS['Pooling'], (data,), attrs)
    if n == 1:
        res = res.reshape((res.shape[0], res.shape[1], res.shape[3]))
    return _result(res, out)


def Activation(data, act_type, out=None, name=None, **kwargs):
    """``act_type``: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""
    _check_kwargs(Activation, kwargs)
    return _result(invoke(OPS['Activation'], (data,), {'act_type': act_type}), out)


def LeakyReLU(data, gamma=None, act_type='leaky', slope=0.25, lower_bound=0.125,
              upper_bound=0.334, out=None, name=None, **kwargs):
    """'leaky' (``slope``), 'elu', 'selu', or 'prelu' (slopes in ``gamma``)."""
    _check_kwargs(LeakyReLU, kwargs)
    args = (data,) if gamma is None else (data, gamma)
    res = invoke(OPS['LeakyReLU'], args, {'act_type': act_type, 'slope': float(slope)})
    return _result(res, out)


def softmax(data, axis=-1, temperature=None, out=None, name=None, **kwargs):
    """Softmax along ``axis`` (of ``data / temperature``)."""
    _check_kwargs(softmax, kwargs)
    res = invoke(OPS['softmax'], (data,), {'axis': int(axis), 'temperature': temperature})
    return _result(res, out)


def log_softmax(data, axis=-1, temperature=None, out=None, name=None, **kwargs):
    """``log(softmax(data))`` along ``axis``, stable for large inputs."""
    _check_kwargs(log_softmax, kwargs)
    res = invoke(OPS['log_softmax'], (data,), {'axis': int(axis),
                                                'temperature': temperature})
    return _result(res, out)


def SoftmaxActivation(data, mode='instance', out=None, name=None, **kwargs):
    """Deprecated MXNet op: softmax over axis 1 ('channel') or the rest."""
    _check_kwargs(SoftmaxActivation, kwargs)
    if mode == 'channel':
        return _result(softmax(data, axis=1), out)
    flat = softmax(data.reshape((data.shape[0], -1)), axis=-1)
    return _result(flat.reshape(data.shape), out)


def softmax_cross_entropy(data, label, out=None, name=None, **kwargs):
    """Sum over the batch of ``-log softmax(data)[label]``; shape ``(1,)``.

    >>> round(nd.softmax_cross_entropy(nd.zeros((2, 4)), nd.array([0, 3])).asscalar(), 4)
    2.7726
    """
    _check_kwargs(softmax_cross_entropy, kwargs)
    return _result(invoke(OPS['softmax_cross_entropy'], (data, label)), out)


def SoftmaxOutput(data, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,
                  use_ignore=False, preserve_shape=False, normalization='null',
                  out_grad=False, smooth_alpha=0.0, out=None, name=None, **kwargs):
    """Softmax forward; backward sends ``grad_scale * (p - onehot(label))``.

    The gradient of the cross-entropy, *ignoring the head gradient* (unless
    ``out_grad``): MXNet's classic loss layer.
    """
    _check_kwargs(SoftmaxOutput, kwargs)
    if normalization not in ('null', 'batch', 'valid'):
        raise ValueError(f"SoftmaxOutput: normalization={normalization!r} is not one "
                         f"of 'null', 'batch', 'valid'")
    params = {'grad_scale': float(grad_scale), 'ignore_label': float(ignore_label),
              'multi_output': bool(multi_output), 'use_ignore': bool(use_ignore),
              'preserve_shape': bool(preserve_shape), 'normalization': normalization,
              'out_grad': bool(out_grad), 'smooth_alpha': float(smooth_alpha)}
    return _result(_SoftmaxOutputFn(params)(data, label), out)


def Dropout(data, p=0.5, mode='training', axes=(), cudnn_off=False, out=None,
            name=None, **kwargs):
    """Zero each element with probability ``p``, scale the rest by ``1/(1-p)``.

    Active in training (``autograd.record()`` or ``train_mode()``), or always
    with ``mode='always'``; otherwise the identity.  ``axes`` share one mask
    value along them (variational dropout).
    """
    _check_kwargs(Dropout, kwargs)
    if mode not in ('training', 'always'):
        raise ValueError(f"Dropout: mode={mode!r} is not 'training' or 'always'")
    if not 0 <= p <= 1:
        raise ValueError(f'Dropout: p={p} is not a probability in [0, 1]')
    if p == 0 or not (mode == 'always' or _ag.is_training()):
        return _result(data, out)
    if p == 1:
        return _result(data * 0, out)
    axes = tuple(a % data.ndim for a in ((axes,) if isinstance(axes, int) else axes))
    mask = invoke(OPS['_dropout_mask'], (data,),
                  {'p': float(p), 'axes': axes, 'rng': _random.generator(data.context)})
    return _result(invoke(OPS['Dropout'], (data, mask)), out)


def BatchNorm(data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
              fix_gamma=True, use_global_stats=False, output_mean_var=False, axis=1,
              cudnn_off=False, out=None, name=None, **kwargs):
    """Batch normalization, MXNet 1.x semantics (note ``fix_gamma=True`` and
    ``eps=1e-3`` are MXNet's defaults; Gluon's layer passes its own).

    In training (``autograd.record()``) it normalizes with the batch's
    statistics and updates ``moving_mean``/``moving_var`` IN PLACE:
    ``moving = momentum * moving + (1 - momentum) * batch``.  Otherwise (or
    with ``use_global_stats``) it uses the moving statistics.
    """
    _check_kwargs(BatchNorm, kwargs, ('min_calib_range', 'max_calib_range',
                                        'act_type'))
    training = _ag.is_training() and not use_global_stats
    attrs = {'eps': float(eps), 'momentum': float(momentum),
             'fix_gamma': bool(fix_gamma), 'use_global_stats': bool(use_global_stats),
             'axis': int(axis), 'training': training}
    res, mean, var = invoke(OPS['BatchNorm'],
                            (data, gamma, beta, moving_mean, moving_var), attrs)
    if training:
        # The aux states: ordinary in-place writes, so the engine orders them
        # after every pending read of the old values.
        with _ag.pause(train_mode=True):
            for aux, batch in ((moving_mean, mean), (moving_var, var)):
                aux[:] = aux * momentum + batch * (1 - momentum)
    if output_mean_var:
        return [res, mean, var]
    return _result(res, out)
