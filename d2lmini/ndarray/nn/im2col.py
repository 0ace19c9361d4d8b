"""im2col: a convolution's windows as the columns of one matrix, so that
the whole convolution is ONE matrix product (ndarray/nn/convolution.py,
the fused ops of ndarray/nn/fused.py).

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
import numpy as np

from ..layout import chwn as _chwn, transpose_into as _transpose_into
from ..op_utils import _xp
from ._common import _as_strided, _tap, _ws


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


def _bands(g, dtype, xp, f=0, align=1):
    """Bands ``(r0, r1)`` of output rows whose ``cols`` (and ``f`` rows of
    output) take about _BAND bytes.

    A batch's ``cols`` is big (41 MB for LeNet's second layer at batch 256):
    made all at once it streams through main memory three times (written by
    im2col, read by the GEMM, read again by col2im).  Built and consumed one
    band at a time it stays in the cache: 20% faster on a 2-core CPU, and the
    memory stays bounded for large images.  ``align``: bands start on
    multiples of it (a fused pooling's window height).  Each band is still ONE GEMM over
    the whole batch; a small problem is a single band; a GPU takes one band.
    """
    per_row = (g.C * g.KH * g.KW + f) * g.OW * g.N * np.dtype(dtype).itemsize
    step = g.OH if xp is not np else max(1, _BAND // per_row)
    step = max(align, step // align * align)       # whole pooling windows
    return [(r, min(r + step, g.OH)) for r in range(0, g.OH, step)]


def _im2col(win, rows, g, ones=False):
    """``cols`` for output rows ``rows``: ``(C*KH*KW, rows*OW*N)``, a scratch
    buffer; for stride 1 the copy moves runs of OW*N contiguous numbers.
    ``ones``: one more row of ones, so that the weight gradient's GEMM also
    sums ``dY`` over the pixels: the bias gradient, for free."""
    r0, r1 = rows
    k, m = g.C * g.KH * g.KW, (r1 - r0) * g.OW * g.N
    buf = _ws(_xp(win), 'cols', ((k + ones) * m,), win.dtype)
    buf[:k * m].reshape(g.C, g.KH, g.KW, r1 - r0, g.OW, g.N)[...] = \
        win[:, :, :, r0:r1]
    if ones:
        buf[k * m:] = 1
    return buf.reshape(k + ones, m)


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
