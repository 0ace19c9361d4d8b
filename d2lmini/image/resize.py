"""Resizing an image as OpenCV's ``cv::resize`` does (MXNet's ``imresize``).

A resize is separable: each output row is a weighted sum of input rows, and
each output column of input columns.  So one ``(n_out, n_in)`` weight matrix
per axis says everything, and ``A_h @ image @ A_w.T`` does the work::

    out[i] = sum_j A[i, j] * x[j]

The five methods (MXNet's ``interp`` codes) differ only in how a row of ``A``
is made.  Output pixel ``i`` looks at source position ``(i + 0.5) * s - 0.5``
(``s = n_in / n_out``, pixel centres aligned) and weighs its neighbours:

====  ==========  ===========================================================
code  method      weights
====  ==========  ===========================================================
0     nearest     1 at ``floor(i * s)`` (OpenCV does not centre this one)
1     bilinear    the two neighbours, by distance
2     bicubic     four neighbours, Keys' kernel with ``a = -0.75``
3     area        shrinking: the share of each source pixel that the output
                  pixel's box ``[i s, (i + 1) s)`` covers; enlarging: bilinear
                  with OpenCV's own offsets
4     lanczos     eight neighbours, ``sinc(x) sinc(x / 4)``, normalised
====  ==========  ===========================================================

Neighbours past the border repeat the edge pixel.  OpenCV computes 8-bit
images in fixed point; here it is float32 then rounded, so a pixel may differ
from MXNet's by one level (measured on noise images in ``tests/test_image``).
Unlike Pillow, no method widens its kernel when shrinking (no antialiasing).
"""
import functools

import numpy as np

__all__ = ['resize_matrix', 'resize_hwc']


def _taps(rows, scale, n_in, n_taps, kernel):
    """Weights of ``n_taps`` neighbours around each centred source position."""
    src = (rows + 0.5) * scale - 0.5
    first = np.floor(src).astype(np.int64) - (n_taps // 2 - 1)
    idx = first[:, None] + np.arange(n_taps)                 # (n_out, taps)
    w = kernel(src[:, None] - idx)
    w /= w.sum(axis=1, keepdims=True)
    return np.clip(idx, 0, n_in - 1), w


def _cubic(x, a=-0.75):
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def _lanczos4(x):
    return np.sinc(x) * np.sinc(x / 4) * (np.abs(x) < 4)


def _area_weights(n_in, n_out):
    """Shrinking: the overlap of ``[i s, (i + 1) s)`` with each source pixel."""
    edges = np.arange(n_out + 1) * (n_in / n_out)
    lo, hi = edges[:-1, None], edges[1:, None]
    j = np.arange(n_in)[None, :]
    return np.clip(np.minimum(hi, j + 1) - np.maximum(lo, j), 0, None) / (hi - lo)


@functools.lru_cache(maxsize=128)
def resize_matrix(n_in, n_out, interp=1):
    """``(n_out, n_in)`` float32 weights that resize one axis (read-only)."""
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f'imresize: unknown interp {interp!r}; MXNet knows 0 '
                         'nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos '
                         '(and 9, 10 through resize_short and the augmenters)')
    rows = np.arange(n_out)
    scale = n_in / n_out
    a = np.zeros((n_out, n_in))
    if interp == 0:
        a[rows, np.minimum(np.floor(rows * scale).astype(np.int64), n_in - 1)] = 1
    elif interp == 3 and n_out <= n_in:
        a = _area_weights(n_in, n_out)
    else:
        if interp == 3:      # enlarging by area: OpenCV's offset bilinear
            sx = np.floor(rows * scale).astype(np.int64)
            fx = (rows + 1) - (sx + 1) / scale
            fx = np.where(fx <= 0, 0.0, fx - np.floor(fx))
            idx = np.stack([sx, sx + 1], axis=1)
            w = np.stack([1 - fx, fx], axis=1)
            idx = np.clip(idx, 0, n_in - 1)
        elif interp == 1:
            src = np.clip((rows + 0.5) * scale - 0.5, 0, None)
            i0 = np.floor(src).astype(np.int64)
            idx = np.clip(np.stack([i0, i0 + 1], axis=1), 0, n_in - 1)
            w = np.stack([1 - (src - i0), src - i0], axis=1)
        else:
            taps, kernel = (4, _cubic) if interp == 2 else (8, _lanczos4)
            idx, w = _taps(rows, scale, n_in, taps, kernel)
        np.add.at(a, (np.repeat(rows, idx.shape[1]), idx.ravel()), w.ravel())
    a = a.astype(np.float32)
    a.setflags(write=False)
    return a


def resize_hwc(x, w, h, interp=1):
    """Resize NumPy image(s) ``(..., H, W, C)`` to width ``w``, height ``h``.

    Integer images are rounded and clipped to their dtype's range (bicubic
    and lanczos overshoot); float images stay float.
    """
    ih, iw = x.shape[-3], x.shape[-2]
    if w <= 0 or h <= 0:
        raise ValueError(f'imresize: the size must be positive, got w={w}, h={h}')
    if (ih, iw) == (h, w):
        return np.array(x, copy=True)
    ah, aw = resize_matrix(ih, h, interp), resize_matrix(iw, w, interp)
    planes = np.moveaxis(x, -1, -3).astype(np.float32)          # (..., C, H, W)
    out = np.moveaxis(ah @ planes @ aw.T, -3, -1)
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return np.ascontiguousarray(out.astype(x.dtype, copy=False))
