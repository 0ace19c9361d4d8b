"""Vision datasets: MNIST, Fashion-MNIST, CIFAR-10 and CIFAR-100 (MXNet's
``gluon.data.vision``).

``dataset[i]`` is ``(image, label)``: the image a uint8 NDArray of shape
``(height, width, channel)`` on ``cpu(0)`` (``(28, 28, 1)`` for the MNISTs,
``(32, 32, 3)`` for CIFAR), the label a ``numpy.int32``, as in MXNet.
Slices give a batch: ``X, y = mnist_train[:18]`` is an NDArray
``(18, 28, 28, 1)`` and an int32 array.  Where the files are found (or
downloaded to) is explained in :mod:`.fashion_mnist_files` (Fashion-MNIST)
and :mod:`.mnist_cifar_files` (the others, from MXNet's repository).
"""
import os
import threading

import numpy as np

from ....context import Context
from ....ndarray.ndarray import array
from ..dataset import Dataset, _is_batchable
from . import fashion_mnist_files, mnist_cifar_files

__all__ = ['MNIST', 'FashionMNIST', 'CIFAR10', 'CIFAR100']

_CACHE = {}
_CACHE_LOCK = threading.Lock()


def _cached(tag, paths, read):
    """``read()``'s (images, labels), read once per process and per version
    of the files at ``paths``.

    The arrays are read-only and shared by every dataset made from the
    same files: the book builds the training set in many chapters.
    """
    key = (tag,) + tuple((str(p), os.stat(p).st_mtime_ns) for p in paths)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            images, labels = read()
            images.setflags(write=False)
            labels.setflags(write=False)
            hit = _CACHE[key] = (images, labels)
    return hit


class _DownloadedDataset(Dataset):
    """Images ``(N, H, W, C)`` uint8 and labels ``(N,)`` int32 held in
    memory (MXNet's base of MNIST, CIFAR10...)."""

    def __init__(self, images, labels, train, transform):
        self._images, self._label = images, labels
        self._train, self._transform = train, transform

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
        return f'{type(self).__name__}({split}, {len(self)} examples)'


def _idx_split(paths):
    """Images (N, 28, 28, 1) and labels of an IDX images and labels file."""
    images, labels = fashion_mnist_files.read_split(*paths)
    return images.reshape(images.shape + (1,)), labels


class MNIST(_DownloadedDataset):
    """LeCun's handwritten digits: 60,000 training and 10,000 test images.

    Parameters
    ----------
    root : str, optional
        The folder of the four ``.gz`` IDX files (decompressed copies work
        too); default ``$MXNET_HOME/datasets/mnist``, i.e.
        ``~/.mxnet/datasets/mnist``.  Missing files are downloaded there from
        MXNet's repository and checked against MXNet's SHA-1 sums
        (:mod:`.mnist_cifar_files`).
    train : bool
        The training set (True) or the test set.
    transform : callable, optional
        ``transform(data, label) -> (data, label)``, applied to each example.

    Examples
    --------
    >>> mnist_train = gluon.data.vision.MNIST(train=True)  # doctest: +SKIP
    >>> mnist_train[0][0].shape, mnist_train[0][1]          # doctest: +SKIP
    ((28, 28, 1), 5)
    """

    def __init__(self, root=None, train=True, transform=None):
        paths = mnist_cifar_files.mnist_paths(root, train)
        images, labels = _cached('mnist', paths, lambda: _idx_split(paths))
        super().__init__(images, labels, train, transform)


class FashionMNIST(_DownloadedDataset):
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
        paths = fashion_mnist_files.find_or_download(train, root)
        images, labels = _cached('fashion-mnist', paths,
                                 lambda: _idx_split(paths))
        super().__init__(images, labels, train, transform)


class CIFAR10(_DownloadedDataset):
    """Krizhevsky's CIFAR-10: 50,000 training and 10,000 test colour images
    of 32 x 32 pixels in 10 classes.

    Parameters
    ----------
    root : str, optional
        The folder of the binary batch files (``data_batch_1.bin`` ..
        ``data_batch_5.bin``, ``test_batch.bin``); default
        ``$MXNET_HOME/datasets/cifar10``.  If one is missing, MXNet's archive
        ``cifar-10-binary.tar.gz`` is downloaded there (SHA-1 checked) and
        the batches extracted (:mod:`.mnist_cifar_files`).
    train : bool
        The training set (True) or the test set.
    transform : callable, optional
        ``transform(data, label) -> (data, label)``, applied to each example.

    Examples
    --------
    >>> cifar = gluon.data.vision.CIFAR10(train=False)     # doctest: +SKIP
    >>> cifar[0][0].shape, cifar[0][1]                      # doctest: +SKIP
    ((32, 32, 3), 3)
    """

    _files, _column = mnist_cifar_files.CIFAR10_FILES, 0

    def __init__(self, root=None, train=True, transform=None):
        files, column = self._files, self._column
        paths = mnist_cifar_files.cifar_paths(files, root, train)
        images, labels = _cached(
            (files['namespace'], column), paths, lambda: _cifar_split(
                paths, files['labels'], column))
        super().__init__(images, labels, train, transform)


def _cifar_split(paths, label_bytes, column):
    parts = [mnist_cifar_files.read_cifar_batch(p, label_bytes) for p in paths]
    return (np.concatenate([images for images, _ in parts]),
            np.concatenate([labels[column] for _, labels in parts]))


class CIFAR100(CIFAR10):
    """CIFAR-100: as :class:`CIFAR10`, 100 classes grouped in 20 superclasses.

    ``fine_label=True`` gives the 100 fine classes as labels, False (the
    default, as in MXNet) the 20 coarse ones.  The files are ``train.bin``
    and ``test.bin`` in ``root`` (default ``$MXNET_HOME/datasets/cifar100``),
    from ``cifar-100-binary.tar.gz``.
    """

    _files = mnist_cifar_files.CIFAR100_FILES

    def __init__(self, root=None, fine_label=False, train=True, transform=None):
        self._column = int(bool(fine_label))
        super().__init__(root, train, transform)
