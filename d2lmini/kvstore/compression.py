"""2-bit gradient compression with error feedback (``kv.set_gradient_compression``).

MXNet's ``src/kvstore/gradient_compression``: a sender adds its gradient
to a *residual* it keeps, and sends each element of that sum as one of
three values::

    r = residual + grad
    send +t where r >= t,  -t where r <= -t,  0 elsewhere
    residual = r - sent                  # kept for the next push

Nothing is lost, only delayed: what was not sent this time stays in the
residual and is sent once it has grown past the threshold ``t`` (*error
feedback*).  Without the residual, a gradient element smaller than ``t``
would never be sent at all.

Three values fit in 2 bits, so 16 elements travel in one 32-bit word, a
16th of float32.  The bits of a word are MXNet's: element ``j`` of a
block of 16 is in byte ``j // 4`` of the word (in memory order), at bits
``7-6`` for ``j % 4 == 0`` down to bits ``1-0`` for ``j % 4 == 3``;
``11`` is ``+t``, ``10`` is ``-t``, ``00`` (and ``01``) is 0.  The last
word of an array whose size is not a multiple of 16 is padded with 0s.
The receiver *decompresses* (words back to ``{-t, 0, +t}`` in float32)
before it sums.

:func:`quantize_2bit` and :func:`dequantize_2bit` work on backend arrays
(NumPy or CuPy); :class:`GradientCompression` holds what
``set_gradient_compression`` set and runs them as engine operations on
NDArrays.  The stores use it: ``'device'`` compresses what each device
sends to the device that sums (:mod:`.local`), ``dist_*`` what a worker
sends to the servers (:mod:`.dist.store`, :mod:`.dist.server`).

>>> import numpy as np
>>> residual = np.zeros(3, np.float32)
>>> words = quantize_2bit(np.array([0.25, 0.75, -1.], np.float32), residual, 0.5)
>>> dequantize_2bit(words, 3, 0.5)
array([ 0. ,  0.5, -0.5], dtype=float32)
>>> residual                             # what is still to be sent
array([ 0.25,  0.25, -0.5 ], dtype=float32)
"""
import functools
import math

import numpy as np

from .. import backend
from ..ndarray.ndarray import _make, _run, _write_inplace
from .base import KVStoreError

__all__ = ['GradientCompression', 'quantize_2bit', 'dequantize_2bit',
           'compressed_size', 'decompress_push', 'FACTOR']

#: elements per 32-bit word with 2 bits each
FACTOR = 16
_F32 = np.dtype(np.float32)
_U32 = np.dtype(np.uint32)


def compressed_size(size):
    """The number of 32-bit words that carry ``size`` elements."""
    return -(-size // FACTOR)


def quantize_2bit(grad, residual, threshold):
    """Add ``grad`` to ``residual`` (in place), quantize, and return the
    packed words (uint32, :func:`compressed_size` of them); ``residual``
    keeps what was not sent.  Both float32, same size, any backend."""
    xp = backend.xp_of(residual)
    t = np.float32(threshold)
    r = residual.reshape(-1)                   # a view: residual is written
    r += grad.reshape(-1)
    pos, neg = r >= t, r <= -t
    r -= (pos.astype(_F32) - neg.astype(_F32)) * t     # exactly r - t, r + t, r
    n = r.size
    codes = xp.zeros(compressed_size(n) * FACTOR, np.uint8)
    codes[:n] = (pos.view(np.uint8) * np.uint8(3)) | (neg.view(np.uint8) << 1)
    c = codes.reshape(-1, 4)                   # a byte: 4 elements, first high
    packed = (c[:, 0] << 6) | (c[:, 1] << 4) | (c[:, 2] << 2) | c[:, 3]
    return packed.view(_U32)                   # 4 bytes a word, memory order


def dequantize_2bit(words, size, threshold):
    """The ``size`` float32 values (``-t``, 0 or ``+t``) packed in ``words``."""
    xp = backend.xp_of(words)
    if words.dtype != _U32 or words.size != compressed_size(size):
        raise ValueError(f'{size} elements travel as {compressed_size(size)} '
                         f'uint32 words, got {words.size} {words.dtype}')
    b = words.reshape(-1).view(np.uint8)
    codes = xp.empty((b.size, 4), np.uint8)
    for j in range(4):
        codes[:, j] = (b >> (6 - 2 * j)) & 3
    t = np.float32(threshold)
    table = xp.asarray(np.array([0, 0, -t, t], _F32))  # 00, 01, 10, 11
    return xp.take(table, codes.reshape(-1)[:size])


def decompress_push(kind, threshold, words, size):
    """What a server makes of a compressed push (header fields ``compression``
    and ``threshold``, one array of ``words``): the float32 values, or a
    ValueError saying what is wrong with the message."""
    if kind != '2bit':
        raise ValueError(f'Unknown type for gradient compression {kind}')
    if threshold is None or not (threshold > 0 and math.isfinite(threshold)):
        raise ValueError(f'a 2bit push needs a finite threshold > 0, got {threshold!r}')
    return dequantize_2bit(words, size, threshold)


def _parse(params):
    """``(type, threshold)`` from MXNet's dict, checked in MXNet's order (its
    values are read as strings, as ``_ctype_dict`` passes them)."""
    if not isinstance(params, dict):
        raise TypeError(f'set_gradient_compression expects a dict such as '
                        f"{{'type': '2bit', 'threshold': 0.5}}, got "
                        f'{type(params).__name__}')
    if 'type' not in params:
        raise KVStoreError("set_gradient_compression: Required parameter type of "
                           "string is not presented (e.g. {'type': '2bit'})")
    kind, value = str(params['type']), str(params.get('threshold', 0.5))
    try:
        threshold = float(value)
    except ValueError:
        raise KVStoreError(f'set_gradient_compression: Invalid Parameter format '
                           f"for threshold expect float but value='{value}'") from None
    if not (threshold > 0 and math.isfinite(threshold)):
        raise KVStoreError(f'set_gradient_compression: threshold must be greater '
                           f'than 0 (and finite), got {value}')
    if kind != '2bit':
        raise KVStoreError(f'Unknown type for gradient compression {kind} '
                           f"(the one type is '2bit')")
    return kind, float(np.float32(threshold))


def _k_quantize(residual, _words, grad, *, threshold):
    return residual, quantize_2bit(grad, residual, threshold)


def _k_dequantize(words, *, size, shape, threshold):
    return dequantize_2bit(words, size, threshold).reshape(shape)


class GradientCompression:
    """What ``set_gradient_compression`` set (MXNet's ``GradientCompression``):
    ``type`` ('2bit') and ``threshold`` (a float32 value)."""

    def __init__(self, params):
        self.type, self.threshold = _parse(params)

    def __repr__(self):
        return f'GradientCompression({{type: {self.type!r}, threshold: {self.threshold}}})'

    def header(self):
        """The header fields that say how a compressed push reads."""
        return {'compression': self.type, 'threshold': self.threshold}

    def compress(self, grad, residual):
        """The words of ``grad`` + ``residual`` (NDArrays on one device),
        quantized there; ``residual`` keeps the rest.  An engine operation."""
        words = _make((compressed_size(grad.size),), _U32, grad.context)
        fn = functools.partial(_k_quantize, threshold=self.threshold)
        _write_inplace('quantize_2bit', fn, [residual, words], [grad])
        return words

    def decompress(self, words, shape):
        """A float32 NDArray of ``shape`` from ``words``, on their device."""
        out = _make(tuple(shape), _F32, words.context)
        fn = functools.partial(_k_dequantize, size=math.prod(shape), shape=tuple(shape),
                               threshold=self.threshold)
        _run('dequantize_2bit', fn, (words,), [out], words.context)
        return out
