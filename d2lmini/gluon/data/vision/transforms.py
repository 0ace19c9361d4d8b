"""Image transforms (MXNet's ``gluon.data.vision.transforms``).

Each transform takes one image ``(H, W, C)`` or a batch ``(N, H, W, C)``
(``(C, H, W)`` / ``(N, C, H, W)`` after ``ToTensor``), as an NDArray (the
result is an NDArray on the same context) or a NumPy array (the result is a
NumPy array).  Because a batch in gives the stack of the per-image results,
the DataLoader runs them once per batch (``batchable = True``)::

    trans = transforms.Compose([transforms.Resize(64), transforms.ToTensor()])
    mnist_train = FashionMNIST(train=True).transform_first(trans)

They are plain callables, not Blocks: the work is NumPy on the host, done by
the loader's threads.  The random ones (flips, colour jitter) draw from the
package's generator (``mx.random.seed`` repeats them) once per image, so
they are not batchable; the random crop, as MXNet's, uses Python's
``random`` through ``mx.image.random_size_crop``.
"""
import numpy as np

from ....image.resize import resize_hwc
from ..dataset import as_numpy

__all__ = ['Transform', 'Compose', 'ToTensor', 'Normalize', 'Resize', 'Cast',
           'CenterCrop', 'RandomResizedCrop', 'RandomFlipLeftRight',
           'RandomFlipTopBottom', 'RandomBrightness', 'RandomContrast',
           'RandomSaturation', 'RandomHue', 'RandomColorJitter',
           'RandomLighting']


class Transform:
    """Base class: subclasses implement ``forward`` on NumPy arrays."""
    batchable = True

    def forward(self, x):                         # pragma: no cover - abstract
        """Override: the transformed image(s), from NumPy array ``x``."""
        raise NotImplementedError

    def __call__(self, x):
        from ....ndarray.ndarray import NDArray, array
        if isinstance(x, NDArray):
            out = self.forward(as_numpy(x))
            out = array(out, ctx=x.context, dtype=out.dtype)
            out.__class__ = x.__class__       # an mx.np image gives an mx.np one
            return out
        return self.forward(np.asarray(x))

    def __repr__(self):
        return f'{type(self).__name__}()'


class Compose(Transform):
    """Apply transforms one after the other.

    >>> trans = Compose([Resize(224), ToTensor()])
    """

    def __init__(self, transforms):
        self._transforms = list(transforms)
        self.batchable = all(getattr(t, 'batchable', False)
                             for t in self._transforms)

    def forward(self, x):
        for t in self._transforms:
            x = t.forward(x) if isinstance(t, Transform) else np.asarray(t(x))
        return x

    def __call__(self, x):
        if all(isinstance(t, Transform) for t in self._transforms):
            return super().__call__(x)       # one NDArray <-> NumPy round trip
        for t in self._transforms:
            x = t(x)
        return x

    def __len__(self):
        return len(self._transforms)

    def __getitem__(self, i):
        return self._transforms[i]

    def __repr__(self):
        inner = ', '.join(repr(t) for t in self._transforms)
        return f'Compose([{inner}])'


def _check_image(name, x, layouts=('HWC', 'NHWC')):
    if x.ndim not in (3, 4):
        raise ValueError(f'{name}: expected an image {layouts[0]} or a batch '
                         f'{layouts[1]} (3 or 4 dimensions), got shape {x.shape}')


def _to_planes(x):
    """``(N, H, W, C)`` -> ``(N, C, H, W)`` (a free reshape when C == 1)."""
    n, h, w, c = x.shape
    return x.reshape(n, 1, h, w) if c == 1 else np.moveaxis(x, 3, 1)


class ToTensor(Transform):
    """``(H, W, C)`` in [0, 255] -> float32 ``(C, H, W)`` in [0, 1].

    A batch ``(N, H, W, C)`` becomes ``(N, C, H, W)``.
    """

    def forward(self, x):
        _check_image('ToTensor', x)
        chw = _to_planes(x) if x.ndim == 4 else _to_planes(x[None])[0]
        out = np.empty(chw.shape, dtype=np.float32)
        np.divide(chw, np.float32(255), out=out, dtype=np.float32,
                  casting='unsafe')
        return out


class Normalize(Transform):
    """``(x - mean) / std`` per channel of ``(C, H, W)`` or ``(N, C, H, W)``.

    ``mean`` and ``std`` are numbers or one value per channel.
    """

    def __init__(self, mean=0.0, std=1.0):
        self._mean, self._std = mean, std

    def forward(self, x):
        _check_image('Normalize', x, ('CHW', 'NCHW'))
        c = x.shape[-3]
        mean = np.asarray(self._mean, dtype=np.float32).reshape(-1, 1, 1)
        std = np.asarray(self._std, dtype=np.float32).reshape(-1, 1, 1)
        for what, v in (('mean', mean), ('std', std)):
            if v.shape[0] not in (1, c):
                raise ValueError(f'Normalize: {v.shape[0]} {what} values for an '
                                 f'image with {c} channels')
        out = np.subtract(x, mean, dtype=np.float32)
        out /= std
        return out

    def __repr__(self):
        return f'Normalize(mean={self._mean}, std={self._std})'


class Resize(Transform):
    """Resize images to ``size``: an int (square) or ``(width, height)``.

    ``keep_ratio=True`` with an int size scales the shorter side to
    ``size``.  ``interpolation``: MXNet's codes, 1 bilinear (default), 0
    nearest, 2 bicubic, 3 area, 4 lanczos: OpenCV's arithmetic, from
    ``mx.image``'s ``resize.py``.  Integer images stay integer (rounded);
    floats stay floats.
    """

    def __init__(self, size, keep_ratio=False, interpolation=1):
        self._size, self._keep_ratio = size, keep_ratio
        if interpolation not in (0, 1, 2, 3, 4):
            raise ValueError('Resize: interpolation must be 0 (nearest), 1 '
                             '(bilinear), 2 (bicubic), 3 (area) or 4 (lanczos), '
                             f'got {interpolation!r}')
        self._interpolation = interpolation

    def _target(self, h, w):
        size = self._size
        if isinstance(size, (int, np.integer)):
            if self._keep_ratio:
                if h < w:
                    return int(size), int(round(w * size / h))
                return int(round(h * size / w)), int(size)
            return int(size), int(size)
        width, height = size
        return int(height), int(width)

    def forward(self, x):
        _check_image('Resize', x)
        oh, ow = self._target(*x.shape[-3:-1])
        return resize_hwc(x, ow, oh, self._interpolation)

    def __repr__(self):
        return (f'Resize(size={self._size}, keep_ratio={self._keep_ratio}, '
                f'interpolation={self._interpolation})')


class Cast(Transform):
    """Cast to ``dtype`` (default float32)."""

    def __init__(self, dtype='float32'):
        self._dtype = np.dtype(dtype)

    def forward(self, x):
        return x.astype(self._dtype)


# === random transforms: one draw per image =======================================

def _uniform(low, high, n=1):
    """``n`` draws from the package's CPU generator (``mx.random.seed``)."""
    from ....ndarray import random
    return random.uniform(low, high, shape=(n,)).asnumpy().astype(np.float64)


class _PerImage(Transform):
    """A random transform: ``_forward_one`` on each ``(H, W, C)`` image."""
    batchable = False

    def forward(self, x):
        _check_image(type(self).__name__, x)
        if x.ndim == 4:
            return np.stack([self._forward_one(img) for img in x])
        return self._forward_one(x)


class CenterCrop(_PerImage):
    """The centred ``size`` crop (int or (w, h)), upsampled if larger."""

    def __init__(self, size, interpolation=1):
        self._size = (size, size) if isinstance(size, int) else tuple(size)
        self._interpolation = interpolation

    def _forward_one(self, x):
        from .... import image
        return image.center_crop(x, self._size, self._interpolation)[0].asnumpy()


class RandomResizedCrop(_PerImage):
    """A crop of random area (``scale`` of the image) and aspect ``ratio``,
    resized to ``size`` (int or (w, h)); see ``mx.image.random_size_crop``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=1):
        self._size = (size, size) if isinstance(size, int) else tuple(size)
        self._args = (self._size, scale, ratio, interpolation)

    def _forward_one(self, x):
        from .... import image
        return image.random_size_crop(x, *self._args)[0].asnumpy()


class RandomFlipLeftRight(_PerImage):
    """Mirror left-right with probability 1/2."""
    _axis = 1

    def _forward_one(self, x):
        return np.flip(x, self._axis).copy() if _uniform(0, 1)[0] < 0.5 else x


class RandomFlipTopBottom(RandomFlipLeftRight):
    """Flip upside down with probability 1/2."""
    _axis = 0


_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _saturate(out, dtype):
    """MXNet's saturate_cast: uint8 clipped to [0, 255] and truncated."""
    if dtype == np.uint8:
        out = np.clip(out, 0, 255)
    return out.astype(dtype)


def _brightness(x, alpha):
    return x * alpha


def _contrast(x, alpha):
    gray = np.mean(x @ _LUMA) if x.shape[2] == 3 else np.mean(x)
    return x * alpha + (1 - alpha) * gray


def _saturation(x, alpha):
    # MXNet 1.9.1's kernel keeps only the blue term of the gray sum (it
    # assigns instead of adding); here the full luma, as its docs describe.
    if x.shape[2] != 3:
        return x
    return x * alpha + (1 - alpha) * (x @ _LUMA)[:, :, None]


def _hue(x, alpha):
    """Turn the hue by ``alpha * 360`` degrees through HLS, as MXNet."""
    if x.shape[2] != 3:
        return x
    rgb = x / 255.0
    vmax, vmin = rgb.max(axis=2), rgb.min(axis=2)
    light, diff = (vmax + vmin) / 2, vmax - vmin
    grey = diff <= np.finfo(np.float32).eps
    safe = np.where(grey, 1, diff)
    sat = np.where(light < 0.5, diff / np.where(grey, 1, vmax + vmin),
                   diff / np.where(grey, 1, 2 - vmax - vmin))
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    h = np.where(vmax == r, (g - b) / safe,
                 np.where(vmax == g, (b - r) / safe + 2, (r - g) / safe + 4))
    h = np.where(grey, 0, h) + alpha * 6           # in sixths of a turn
    # HLS -> RGB: each channel n is l - a * max(-1, min(k - 3, 9 - k, 1)),
    # k = (n + h * 2) mod 12 (n = 0, 8, 4 for r, g, b)
    a = np.where(grey, 0, sat * np.minimum(light, 1 - light))[..., None]
    k = (np.array([0, 8, 4]) + (h * 2)[..., None]) % 12
    out = light[..., None] - a * np.clip(np.minimum(k - 3, 9 - k), -1, 1)
    return out * 255.0


class _Jitter(_PerImage):
    """Random factors for some of brightness, contrast, saturation, hue."""
    _ADJUST = {'brightness': _brightness, 'contrast': _contrast,
               'saturation': _saturation, 'hue': _hue}

    def __init__(self, **amounts):
        for name, v in amounts.items():
            if v < 0:
                raise ValueError(f'{type(self).__name__}: {name} must be >= 0, '
                                 f'got {v}')
        self._amounts = amounts

    def _range(self, name):
        v = self._amounts[name]
        return (-v, v) if name == 'hue' else (max(0.0, 1 - v), 1 + v)

    def _forward_one(self, x):
        names = [n for n, v in self._amounts.items() if v > 0]
        if len(names) > 1:                          # a random order each call
            names = [names[i] for i in np.argsort(_uniform(0, 1, len(names)))]
        out = x.astype(np.float32)
        for name in names:
            out = self._ADJUST[name](out, _uniform(*self._range(name))[0])
            out = _saturate(out, x.dtype).astype(np.float32)
        return out.astype(x.dtype)

    def __repr__(self):
        args = ', '.join(f'{k}={v}' for k, v in self._amounts.items())
        return f'{type(self).__name__}({args})'


class RandomBrightness(_Jitter):
    """Scale by a factor uniform in ``[max(0, 1 - brightness), 1 + brightness]``."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)


class RandomContrast(_Jitter):
    """Blend with the mean gray level, factor uniform around 1 by ``contrast``."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)


class RandomSaturation(_Jitter):
    """Blend each pixel with its gray level, factor around 1 by ``saturation``."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)


class RandomHue(_Jitter):
    """Turn the hue by ``u * 360`` degrees, ``u`` uniform in ``[-hue, hue]``."""

    def __init__(self, hue):
        super().__init__(hue=hue)


class RandomColorJitter(_Jitter):
    """Brightness, contrast, saturation and hue jitter (those > 0), in a
    random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__(brightness=brightness, contrast=contrast,
                         saturation=saturation, hue=hue)


class RandomLighting(_PerImage):
    """AlexNet's PCA noise with ``alpha`` std (ImageNet's eigenvectors)."""
    _EIGVAL = np.array([55.46, 4.794, 1.148])
    _EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                        [-0.5808, -0.0045, -0.8140],
                        [-0.5836, -0.6948, 0.4203]])

    def __init__(self, alpha):
        self._alpha = alpha

    def _forward_one(self, x):
        from ....ndarray import random
        a = random.normal(0, self._alpha, shape=(3,)).asnumpy()
        return _saturate(x + (self._EIGVEC @ (a * self._EIGVAL)), x.dtype)
