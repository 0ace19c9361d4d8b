"""Reading images and cutting them to shape (MXNet's ``mx.image`` functions).

An image is an ``(H, W, C)`` uint8 array, channels RGB, as MXNet's OpenCV
decoder gives it.  Pillow decodes (any format it knows: PNG, JPEG, BMP,
GIF, ...); the resizing is OpenCV's arithmetic (see ``resize.py``); crops
are slices.  The work is NumPy on the host: the result comes back as an
``nd.NDArray`` on the source's context (``mx.np.ndarray`` after
``npx.set_np()``), one function, ``_to_mx``, making that choice.

The random crops draw from Python's ``random`` module, as MXNet's do:
``random.seed(n)`` makes them repeat (``mx.random.seed`` does not, in MXNet
either)::

    img = mx.image.imread('cat.jpg')                  # (H, W, 3) uint8
    img = mx.image.resize_short(img, 256)
    crop, (x0, y0, w, h) = mx.image.random_crop(img, (224, 224))
"""
import io
import os
import random
from numbers import Number

import numpy as np

from ..base import MXNetError, as_mxnet_error
from ..util import is_np_array
from .resize import resize_hwc

__all__ = ['imread', 'imdecode', 'imresize', 'scale_down', 'copyMakeBorder',
           'resize_short', 'fixed_crop', 'random_crop', 'center_crop',
           'color_normalize', 'random_size_crop']


# === arrays in and out ==========================================================

def _host(src):
    """A NumPy copy of an image given as an NDArray, mx.np array or array."""
    if hasattr(src, 'asnumpy'):
        return src.asnumpy()
    return np.asarray(src)


def _to_mx(out, like=None):
    """``out`` (NumPy) as the array type MXNet returns, on ``like``'s context."""
    from ..ndarray.ndarray import array
    from ..numpy import ndarray as np_ndarray
    arr = array(out, ctx=getattr(like, 'context', None), dtype=out.dtype)
    return arr.as_np_ndarray() if is_np_array() or isinstance(like, np_ndarray) else arr


def _as_dtype(out, dtype):
    """``out`` cast back to ``dtype``; integers clipped to their range first."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        out = np.clip(out, info.min, info.max)
    return out.astype(dtype, copy=False)


def _image_shape(name, src):
    shape = tuple(src.shape)
    if len(shape) != 3:
        raise as_mxnet_error(ValueError(
            f'{name}: expected an image (height, width, channels), got shape '
            f'{shape}'))
    return shape


# === decoding ===================================================================

def _gray(rgb, png):
    """Colour to gray as MXNet's decoders do it: libpng's 15-bit weights,
    truncated, for a PNG; OpenCV's 14-bit ones, rounded, for the rest."""
    r, g, b = (rgb[:, :, c].astype(np.int32) for c in range(3))
    if png:
        return ((r * 9798 + g * 19235 + b * 3735) >> 15).astype(np.uint8)
    return ((r * 4899 + g * 9617 + b * 1868 + 8192) >> 14).astype(np.uint8)


def _decode(data, flag, to_rgb, what):
    from PIL import Image, ImageOps, UnidentifiedImageError
    try:
        with Image.open(io.BytesIO(data)) as im:
            png = im.format == 'PNG'
            if flag == 0 and im.format == 'JPEG':
                im.draft('L', im.size)            # libjpeg's own gray, as OpenCV
            im = ImageOps.exif_transpose(im)      # OpenCV honours the EXIF turn
            if flag == 0 and im.mode in ('1', 'L', 'I', 'I;16', 'F'):
                pixels = np.asarray(im.convert('L'))
            else:
                pixels = np.asarray(im.convert('RGB'))
                if flag == 0:
                    pixels = _gray(pixels, png)
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise as_mxnet_error(ValueError(
            f'{what}: decoding failed, {len(data)} bytes are not an image '
            f'Pillow can read ({e})')) from None
    if flag == 0:
        return pixels[:, :, None]
    return pixels if to_rgb else pixels[:, :, ::-1]


def _write_out(img, out, like=None):
    """``img`` as a new array on ``like``'s context, or copied into ``out``."""
    if out is None:
        return _to_mx(np.ascontiguousarray(img), like)
    out[:] = _to_mx(np.ascontiguousarray(img), out)
    return out


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decode an encoded image (bytes, bytearray, or uint8 array of them).

    ``flag=1``: ``(H, W, 3)`` colour, ``flag=0``: ``(H, W, 1)`` grayscale;
    ``to_rgb=0`` gives OpenCV's BGR order.

    >>> img = mx.image.imdecode(open('cat.png', 'rb').read())
    """
    if isinstance(buf, (bytes, bytearray)):
        data = bytes(buf)
    elif isinstance(buf, np.ndarray) or hasattr(buf, 'asnumpy'):
        data = _host(buf).astype(np.uint8, copy=False).tobytes()
    else:
        raise as_mxnet_error(TypeError(
            'imdecode: buf must be bytes, bytearray or a uint8 array, got '
            f'{type(buf).__name__} (encode a str to bytes first)'))
    return _write_out(_decode(data, flag, to_rgb, 'imdecode'), out)


def imread(filename, flag=1, to_rgb=1, out=None):
    """Read and decode the image file ``filename`` (see :func:`imdecode`).

    >>> mx.image.imread('cat.jpg', flag=0).shape
    (H, W, 1)
    """
    try:
        with open(os.fspath(filename), 'rb') as f:
            data = f.read()
    except OSError as e:
        raise MXNetError(f"imread: '{filename}' couldn't open file: "
                         f'{e.strerror}') from None
    return _write_out(_decode(data, flag, to_rgb, f"imread '{filename}'"), out)


# === resizing and padding =======================================================

def imresize(src, w, h, interp=1, out=None):
    """Resize ``src`` (H, W, C) to width ``w`` and height ``h``.

    ``interp``: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos.
    """
    _image_shape('imresize', src)
    resized = resize_hwc(_host(src), int(w), int(h), interp)
    return _write_out(resized, out, src)


_BORDERS = {0: 'constant', 1: 'symmetric', 2: 'reflect', 3: 'edge', 4: 'wrap'}


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=(),
                   out=None):
    """Pad an image: ``type`` 0 constant (``values`` per channel, or
    ``value``), 1 reflect (``cba|abc``), 2 reflect-101 (``cb|abc``),
    3 replicate, 4 wrap; OpenCV's border codes."""
    # pylint: disable=redefined-builtin
    _image_shape('copyMakeBorder', src)
    if type not in _BORDERS:
        raise as_mxnet_error(ValueError(
            f'copyMakeBorder: unknown type {type!r}, expected one of 0-4 '
            '(constant, reflect, reflect_101, replicate, wrap)'))
    x = _host(src)
    pad = ((top, bot), (left, right), (0, 0))
    if type == 0:
        fill = np.broadcast_to(np.asarray(values if len(values) else value,
                                          dtype=np.float64), (x.shape[2],))
        padded = np.stack([np.pad(x[:, :, c], pad[:2], constant_values=fill[c])
                           for c in range(x.shape[2])], axis=2)
    else:
        padded = np.pad(x, pad, mode=_BORDERS[type])
    return _write_out(padded, out, src)


def _get_interp_method(interp, sizes=()):
    """MXNet's interp code 9 (auto: cubic up, area down, else bilinear) and
    10 (random) as one of 0-4; ``sizes`` is ``(old_h, old_w, new_h, new_w)``."""
    if interp == 9:
        if not sizes:
            return 2
        oh, ow, nh, nw = sizes
        if nh > oh and nw > ow:
            return 2
        return 3 if nh < oh and nw < ow else 1
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f'Unknown interp method {interp!r}: expected 0-4, 9 or 10')
    return interp


def scale_down(src_size, size):
    """Shrink a crop ``size`` (w, h), keeping its aspect, to fit ``src_size``.

    >>> mx.image.scale_down((640, 480), (720, 120))
    (640, 106)
    """
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src, size, interp=2):
    """Resize so that the shorter edge is ``size`` (aspect kept, floored)."""
    h, w, _ = _image_shape('resize_short', src)
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h,
                    interp=_get_interp_method(interp, (h, w, new_h, new_w)))


# === crops ======================================================================

def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The ``w x h`` region at ``(x0, y0)``, resized to ``size`` (w, h) if given."""
    _image_shape('fixed_crop', src)
    out = _host(src)[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        method = _get_interp_method(interp, (h, w, size[1], size[0]))
        out = resize_hwc(out, int(size[0]), int(size[1]), method)
    return _to_mx(np.ascontiguousarray(out), src)


def random_crop(src, size, interp=2):
    """A random ``size`` (w, h) crop: ``(out, (x0, y0, w, h))``; an image
    smaller than ``size`` gives its largest crop of that aspect, resized."""
    h, w, _ = _image_shape('random_crop', src)
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """The centred ``size`` (w, h) crop: ``(out, (x0, y0, w, h))``."""
    h, w, _ = _image_shape('center_crop', src)
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """A crop of random area (fraction ``area``, or range) and aspect
    ``ratio`` (range, sampled in log space), resized to ``size`` (w, h):
    ``(out, (x0, y0, w, h))``.  After 10 misses, the centre crop."""
    h, w, _ = _image_shape('random_size_crop', src)
    if 'min_area' in kwargs:                      # MXNet's deprecated name
        area = kwargs.pop('min_area')
    if kwargs:
        raise TypeError(f'random_size_crop: unexpected keyword arguments {sorted(kwargs)}')
    if isinstance(area, Number):
        area = (area, 1.0)
    log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * h * w
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
            return out, (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


# === values =====================================================================

def color_normalize(src, mean, std=None):
    """``(src - mean) / std`` per channel (``mean`` or ``std`` may be None).

    MXNet updates ``src`` in place and returns it; here a new float array is
    returned (``src`` is often uint8, which cannot hold the result).
    """
    x = _host(src)
    out = x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float32)
    if mean is not None:
        out = out - _host(mean).astype(out.dtype)
    if std is not None:
        out = out / _host(std).astype(out.dtype)
    return _to_mx(np.ascontiguousarray(out, dtype=out.dtype), src)
