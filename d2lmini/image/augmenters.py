"""Augmenters: callable image -> image steps, and ``CreateAugmenter``'s list.

Each ``Augmenter`` keeps its constructor's arguments, so ``dumps()`` can
say what it is (JSON ``["resizeaug", {"size": 256, "interp": 2}]``).  The
random choices come from Python's ``random`` (and ``LightingAug``'s noise
from NumPy's global generator), as in MXNet: seed those to repeat a run.

The colour jitters work on float images (``CastAug`` first, as
``CreateAugmenter`` orders them) and are not clipped, as in MXNet; an
integer image keeps its dtype, clipped to its range::

    augs = mx.image.CreateAugmenter((3, 224, 224), resize=256,
                                    rand_crop=True, rand_mirror=True,
                                    mean=True, std=True)
    for aug in augs:
        img = aug(img)          # (224, 224, 3) float32, normalised
"""
import json
import random

import numpy as np

from .image import (_as_dtype, _get_interp_method, _host, _to_mx, center_crop,
                    color_normalize, imresize, random_crop, random_size_crop,
                    resize_short)

__all__ = ['Augmenter', 'SequentialAug', 'RandomOrderAug', 'ResizeAug',
           'ForceResizeAug', 'RandomCropAug', 'RandomSizedCropAug',
           'CenterCropAug', 'BrightnessJitterAug', 'ContrastJitterAug',
           'SaturationJitterAug', 'HueJitterAug', 'ColorJitterAug',
           'LightingAug', 'ColorNormalizeAug', 'RandomGrayAug',
           'HorizontalFlipAug', 'CastAug', 'CreateAugmenter']

_LUMA = np.array([0.299, 0.587, 0.114])


class Augmenter:
    """Base class: keeps ``kwargs`` for :meth:`dumps`; subclasses ``__call__``."""

    def __init__(self, **kwargs):
        self._kwargs = {k: (_host(v).tolist()
                            if isinstance(v, np.ndarray) or hasattr(v, 'asnumpy')
                            else v) for k, v in kwargs.items()}

    def dumps(self):
        """``[lower-case class name, kwargs]`` as a JSON string."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError('an Augmenter subclass must define __call__')


def _apply(src, fn):
    """``fn`` on the host pixels as float, back in ``src``'s dtype and kind."""
    x = _host(src)
    out = fn(x.astype(np.float32) if np.issubdtype(x.dtype, np.integer) else x)
    return _to_mx(np.ascontiguousarray(_as_dtype(out, x.dtype)), src)


class SequentialAug(Augmenter):
    """Apply the augmenters ``ts`` in order."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        """``[name, [each one's dumps()]]`` (a list, as MXNet returns)."""
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(SequentialAug):
    """Apply the augmenters ``ts`` in a fresh random order each call."""

    def __call__(self, src):
        random.shuffle(self.ts)
        return super().__call__(src)


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size`` (see ``resize_short``)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` (w, h), aspect not kept."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size,
                        interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """A random ``size`` (w, h) crop (see ``random_crop``)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A crop of random area and aspect, resized to ``size`` (w, h)."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.area = kwargs.pop('min_area', area)   # MXNet's deprecated name
        if kwargs:
            raise TypeError('RandomSizedCropAug: unexpected keyword arguments '
                            f'{sorted(kwargs)}')
        self.size, self.ratio, self.interp = size, ratio, interp

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio,
                                self.interp)[0]


class CenterCropAug(Augmenter):
    """The centred ``size`` (w, h) crop."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Scale by ``1 + u``, ``u`` uniform in ``[-brightness, brightness]``."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        return _apply(src, lambda x: x * alpha)


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean gray level: ``alpha x + (1 - alpha) gray``."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        # MXNet: 3 (1 - alpha) mean(x * luma), i.e. (1 - alpha) times the mean gray
        return _apply(src, lambda x: x * alpha + 3.0 * (1.0 - alpha) * np.mean(
            x * _LUMA.astype(x.dtype)))


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its own gray level."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        return _apply(src, lambda x: x * alpha + (1.0 - alpha) * np.sum(
            x * _LUMA.astype(x.dtype), axis=2, keepdims=True))


class HueJitterAug(Augmenter):
    """Rotate the hue by ``u * 180`` degrees, ``u`` uniform in ``[-hue, hue]``,
    in YIQ space (a linear approximation of an HSV hue turn)."""
    _TYIQ = np.array([[0.299, 0.587, 0.114],
                      [0.596, -0.274, -0.321],
                      [0.211, -0.523, 0.311]])
    _ITYIQ = np.array([[1.0, 0.956, 0.621],
                       [1.0, -0.272, -0.647],
                       [1.0, -1.107, 1.705]])

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        turn = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = (self._ITYIQ @ turn @ self._TYIQ).T
        return _apply(src, lambda x: x @ t.astype(x.dtype))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0), random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = [cls(v) for cls, v in ((BrightnessJitterAug, brightness),
                                    (ContrastJitterAug, contrast),
                                    (SaturationJitterAug, saturation)) if v > 0]
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA noise: add ``eigvec @ (alpha * eigval)``, ``alpha``
    normal with std ``alphastd`` (NumPy's global generator, as MXNet)."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval, self.eigvec = np.asarray(eigval), np.asarray(eigvec)

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        return _apply(src, lambda x: x + rgb.astype(x.dtype))


class ColorNormalizeAug(Augmenter):
    """``(x - mean) / std`` per channel (see ``color_normalize``)."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean, self.std = mean, std

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, gray (``0.21 R + 0.72 G + 0.07 B``) in all
    three channels."""
    _MAT = np.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = _apply(src, lambda x: x @ self._MAT.astype(x.dtype))
        return src


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, mirror left-right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = _to_mx(np.ascontiguousarray(_host(src)[:, ::-1]), src)
        return src


class CastAug(Augmenter):
    """Cast to ``typ`` (float32)."""

    def __init__(self, typ='float32'):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


_IMAGENET_MEAN = (123.68, 116.28, 103.53)
_IMAGENET_STD = (58.395, 57.12, 57.375)
_IMAGENET_EIGVAL = (55.46, 4.794, 1.148)
_IMAGENET_EIGVEC = ((-0.5675, 0.7192, 0.4009),
                    (-0.5808, -0.0045, -0.8140),
                    (-0.5836, -0.6948, 0.4203))


def _per_channel(name, v, default):
    if v is True:
        return np.array(default)
    if v is not None:
        shape = tuple(getattr(v, 'shape', ()))
        if not shape or shape[0] not in (1, 3):
            raise ValueError(f'CreateAugmenter: {name} must be True, None or an '
                             f'array of 1 or 3 values, got shape {shape}')
        v = _host(v)
    return v


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False,
                    rand_mirror=False, mean=None, std=None, brightness=0,
                    contrast=0, saturation=0, hue=0, pca_noise=0, rand_gray=0,
                    inter_method=2):
    """The standard list of augmenters for ``data_shape`` (C, H, W): resize,
    crop (centre, random, or random-sized), mirror, cast to float32, colour
    jitter, hue, PCA noise, gray, normalise (``mean=True``/``std=True``: the
    ImageNet statistics).

    >>> augs = mx.image.CreateAugmenter((3, 224, 224), rand_mirror=True)
    """
    # pylint: disable=invalid-name
    augs = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError('CreateAugmenter: rand_resize needs rand_crop=True')
        augs.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0),
                                       inter_method))
    elif rand_crop:
        augs.append(RandomCropAug(crop_size, inter_method))
    else:
        augs.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, np.array(_IMAGENET_EIGVAL),
                                np.array(_IMAGENET_EIGVEC)))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    mean = _per_channel('mean', mean, _IMAGENET_MEAN)
    std = _per_channel('std', std, _IMAGENET_STD)
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs
