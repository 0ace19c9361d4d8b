"""Vision datasets: Fashion-MNIST (MXNet's ``gluon.data.vision.FashionMNIST``).

``FashionMNIST(train=True)[i]`` is ``(image, label)``: the image a uint8
NDArray of shape ``(28, 28, 1)`` (height, width, channel) on ``cpu(0)``, the
label a ``numpy.int32``, as in MXNet.  Slices give a batch:
``X, y = mnist_train[:18]`` is an NDArray ``(18, 28, 28, 1)`` and an int32
array.  Where the files are found (or downloaded to) is explained in
:mod:`.fashion_mnist_files`.
"""
import os
import threading

import numpy as np

from ....context import Context
from ....ndarray.ndarray import array
from ..dataset import Dataset, _is_batchable
from . import fashion_mnist_files

__all__ = ['FashionMNIST']

_CACHE = {}
_CACHE_LOCK = threading.Lock()


def _load(root, train):
    """The split's (images (N,28,28,1), labels (N,)), read once per process.

    The arrays are read-only and shared by every dataset made from the
    same files: the book builds the training set in many chapters.
    """
    paths = fashion_mnist_files.find_or_download(train, root)
    key = tuple((str(p), os.stat(p).st_mtime_ns) for p in paths)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            images, labels = fashion_mnist_files.load(train, root)
            images = images.reshape(images.shape + (1,))
            images.setflags(write=False)
            labels.setflags(write=False)
            hit = _CACHE[key] = (images, labels)
    return hit


class FashionMNIST(Dataset):
    """Zalando's Fashion-MNIST: 60,000 training and 10,000 test images.

    Parameters
    ----------
    root : str, optional
        A folder to look in first (see :mod:`.fashion_mnist_files` for the
        others: ``$D2LMINI_DATA``, the user cache, Debian's package).
    train : bool
        The training set (True) or the test set.
    transform : callable, optional
        ``transform(data, label) -> (data, label)``, applied to each example.

    Examples
    --------
    >>> mnist_train = gluon.data.vision.FashionMNIST(train=True)
    >>> feature, label = mnist_train[0]                     # doctest: +SKIP
    >>> feature.shape, feature.dtype, label.dtype           # doctest: +SKIP
    ((28, 28, 1), <class 'numpy.uint8'>, dtype('int32'))
    """

    def __init__(self, root=None, train=True, transform=None):
        self._root, self._train, self._transform = root, train, transform
        self._images, self._label = _load(root, train)

    def __len__(self):
        return len(self._label)

    def __getitem__(self, idx):
        if isinstance(idx, np.ndarray) or isinstance(idx, list):
            idx = np.asarray(idx, dtype=np.int64)
        data = array(self._images[idx], ctx=Context('cpu', 0), dtype=np.uint8)
        label = self._label[idx]
        if self._transform is not None:
            return self._transform(data, label)
        return data, label

    def _can_batch(self):
        return self._transform is None or _is_batchable(self._transform)

    def _batch(self, indices):
        fields = [self._images[indices], self._label[indices]]
        if self._transform is None:
            return fields
        return list(self._transform(*fields))

    def __repr__(self):
        split = 'train' if self._train else 'test'
        return f'FashionMNIST({split}, {len(self)} examples)'
