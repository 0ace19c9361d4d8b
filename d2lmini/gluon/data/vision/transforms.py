"""Image transforms (MXNet's ``gluon.data.vision.transforms``).

Each transform takes one image ``(H, W, C)`` or a batch ``(N, H, W, C)``
(``(C, H, W)`` / ``(N, C, H, W)`` after ``ToTensor``), as an NDArray (the
result is an NDArray on the same context) or a NumPy array (the result is a
NumPy array).  Because a batch in gives the stack of the per-image results,
the DataLoader runs them once per batch (``batchable = True``)::

    trans = transforms.Compose([transforms.Resize(64), transforms.ToTensor()])
    mnist_train = FashionMNIST(train=True).transform_first(trans)

They are plain callables, not Blocks: the work is NumPy on the host, done by
the loader's threads.
"""
import functools

import numpy as np

from ..dataset import as_numpy

__all__ = ['Transform', 'Compose', 'ToTensor', 'Normalize', 'Resize', 'Cast']


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


def _from_planes(x):
    """``(N, C, H, W)`` -> contiguous ``(N, H, W, C)``."""
    n, c, h, w = x.shape
    if c == 1:
        return x.reshape(n, h, w, 1)
    return np.ascontiguousarray(np.moveaxis(x, 1, 3))


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


@functools.lru_cache(maxsize=64)
def _resize_matrix(n_in, n_out, interpolation):
    """``(n_out, n_in)`` weights: ``out = A @ x`` resizes one axis.

    Bilinear (1) samples at pixel centres, as OpenCV's ``INTER_LINEAR``:
    source ``(i + 0.5) * n_in / n_out - 0.5``, clamped to the image.
    Nearest (0) takes source ``floor(i * n_in / n_out)``.
    """
    a = np.zeros((n_out, n_in), dtype=np.float32)
    rows = np.arange(n_out)
    scale = n_in / n_out
    if interpolation == 0:
        src = np.minimum(np.floor(rows * scale).astype(np.int64), n_in - 1)
        a[rows, src] = 1.0
    else:
        s = np.clip((rows + 0.5) * scale - 0.5, 0, n_in - 1)
        i0 = np.floor(s).astype(np.int64)
        frac = (s - i0).astype(np.float32)
        i1 = np.minimum(i0 + 1, n_in - 1)
        np.add.at(a, (rows, i0), 1.0 - frac)
        np.add.at(a, (rows, i1), frac)
    a.setflags(write=False)
    return a


class Resize(Transform):
    """Resize images to ``size``: an int (square) or ``(width, height)``.

    ``keep_ratio=True`` with an int size scales the shorter side to
    ``size``.  ``interpolation``: 1 bilinear (default), 0 nearest.
    Integer images stay integer (rounded); floats stay floats.
    """

    def __init__(self, size, keep_ratio=False, interpolation=1):
        self._size, self._keep_ratio = size, keep_ratio
        if interpolation not in (0, 1):
            raise ValueError('Resize: interpolation must be 0 (nearest) or 1 '
                             f'(bilinear), got {interpolation!r}')
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
        batch = x.ndim == 4
        xb = x if batch else x[None]
        n, h, w, c = xb.shape
        oh, ow = self._target(h, w)
        if (oh, ow) == (h, w):
            return np.array(x, copy=True)
        if self._interpolation == 0:
            rows = np.minimum(np.floor(np.arange(oh) * (h / oh)).astype(np.int64), h - 1)
            cols = np.minimum(np.floor(np.arange(ow) * (w / ow)).astype(np.int64), w - 1)
            out = xb[:, rows][:, :, cols]
        else:
            ah = _resize_matrix(h, oh, 1)
            aw = _resize_matrix(w, ow, 1)
            planes = _to_planes(xb).astype(np.float32)           # (N, C, H, W)
            res = ah @ planes @ aw.T                               # (N, C, oh, ow)
            if np.issubdtype(x.dtype, np.integer):
                # Weights are convex: no clipping needed, only rounding.
                np.rint(res, out=res)
            out = _from_planes(res).astype(x.dtype, copy=False)
        return out if batch else out[0]

    def __repr__(self):
        return (f'Resize(size={self._size}, keep_ratio={self._keep_ratio}, '
                f'interpolation={self._interpolation})')


class Cast(Transform):
    """Cast to ``dtype`` (default float32)."""

    def __init__(self, dtype='float32'):
        self._dtype = np.dtype(dtype)

    def forward(self, x):
        return x.astype(self._dtype)
