"""Memory layout of 4-D arrays: NCHW as seen, CHWN as stored.

An NDArray of shape ``(N, C, H, W)`` may be stored in one of two orders:

* **NCHW** (C-contiguous), how arrays are made by ``nd.array``, ``nd.zeros``...
* **CHWN**, the batch innermost: how a convolution's GEMM produces its result
  (see :mod:`d2lmini.ndarray.nn.convolution`).  The op hands it out as an
  ``(N, C, H, W)`` view with NumPy strides, so nothing outside sees a
  difference except speed.

Ops keep their input's order where they can (NumPy's elementwise ops do so
by themselves; pooling uses :func:`empty_as`), so on a CPU a CNN stays in
CHWN from one convolution to the next.  On a GPU only the convolution's
result is CHWN: CuPy's elementwise kernels write C-ordered (NCHW) results,
so the next convolution transposes its input, a fast copy on the device.
Where the two orders meet, :func:`copyto` transposes with a cache-blocked
copy.  No value ever depends on the layout.
One behaviour does: ``reshape`` is a view (sharing memory) when NumPy can
express the new shape with strides, so on a CHWN-stored array a reshape
that moves the batch axis (``flatten`` does) is a copy.
"""
import numpy as np

from .. import backend


def chwn(a):
    """``a`` (N, C, H, W) as the C-contiguous ``(C, H, W, N)`` array it is
    stored as, or None if it is stored another way (or is not 4-D)."""
    if a.ndim != 4:
        return None
    t = a.transpose(1, 2, 3, 0)
    return t if t.flags.c_contiguous else None


def empty_as(xp, shape, like):
    """An empty NCHW array of ``shape``, stored in ``like``'s memory order."""
    if len(shape) == 4 and chwn(like) is not None:
        n, c, h, w = shape
        return xp.empty((c, h, w, n), like.dtype).transpose(3, 0, 1, 2)
    return xp.empty(shape, like.dtype)


def as_layout(a, like, copy=False):
    """``a`` itself if it is stored like ``like`` (and not ``copy``), else a
    copy that is."""
    if not copy and (chwn(a) is None) == (chwn(like) is None):
        return a
    out = empty_as(backend.xp_of(a), a.shape, like)
    copyto(out, a)
    return out


_SLAB = 48 * 1024                # bytes of source rows per block: about L1 size


def transpose_into(src, dst):
    """``dst[...] = src.T`` for 2-D arrays, fast for large ones on a CPU.

    NumPy copies in the destination's order.  Transposing a wide array (e.g.
    ``(N, C*H*W)``) that way reads short columns: fine.  A tall one (``(F*OH*OW,
    N)``) is read along columns thousands of rows long, and every step misses
    the L1 cache; slabs of rows that fit in L1 make that copy 3x faster.
    """
    if not isinstance(src, np.ndarray) or src.shape[0] <= src.shape[1]:
        dst[...] = src.T
        return dst
    step = max(8, _SLAB // (src.shape[1] * src.itemsize))
    for i in range(0, src.shape[0], step):
        np.copyto(dst[:, i:i + step], src[i:i + step].T)
    return dst


def copyto(dst, src):
    """``dst[...] = src``; a cache-blocked transpose when one of two
    same-shape 4-D arrays is stored NCHW and the other CHWN."""
    if isinstance(dst, np.ndarray) and isinstance(src, np.ndarray) and \
            dst.ndim == 4 and dst.shape == src.shape and dst.shape[0] > 1:
        n = dst.shape[0]
        s, d = chwn(src), chwn(dst)
        if s is not None and d is None and dst.flags.c_contiguous:
            transpose_into(s.reshape(-1, n), dst.reshape(n, -1))
            return dst
        if d is not None and s is None and src.flags.c_contiguous:
            transpose_into(src.reshape(n, -1), d.reshape(-1, n))
            return dst
    dst[...] = src
    return dst
