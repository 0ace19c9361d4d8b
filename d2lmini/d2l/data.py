"""Data: a synthetic regression set (:func:`synthetic_data`), arrays as
a DataLoader (:func:`load_array`), Fashion-MNIST
(:func:`load_data_fashion_mnist`, which a distributed job's workers split
between them, and :func:`get_fashion_mnist_labels`), and a minibatch
split over devices (:func:`split_batch`).
"""
import os
import sys

import numpy as np

from .. import ndarray as nd
from .plotting import _host


def synthetic_data(w, b, num_examples):
    """Generate y = Xw + b + noise."""
    X = nd.random.normal(0, 1, (num_examples, len(w)))
    y = nd.dot(X, w) + b
    y += nd.random.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def load_array(data_arrays, batch_size, is_train=True):
    """Construct a Gluon data iterator."""
    from ..gluon import data as gdata
    dataset = gdata.ArrayDataset(*data_arrays)
    return gdata.DataLoader(dataset, batch_size, shuffle=is_train)


def get_dataloader_workers():
    """Use 4 threads to read the data (fewer on a machine with fewer cores)."""
    return 0 if sys.platform.startswith('win') else min(4, os.cpu_count() or 1)


def load_data_fashion_mnist(batch_size, resize=None, root=None,
                            num_parts=1, part_index=0):
    """Download the Fashion-MNIST dataset and then load it into memory.

    Returns ``(train_iter, test_iter)``: DataLoaders of ``(X, y)`` with
    ``X`` float32 ``(batch, 1, 28, 28)`` (or ``resize`` x ``resize``) in
    [0, 1] and ``y`` int32.  ``root`` is a folder to look in first.

    For distributed training each worker passes ``num_parts=kv.num_workers,
    part_index=kv.rank``: its ``train_iter`` then reads only its own
    contiguous part of the training set (``60000 // num_parts`` images, in a
    new order each epoch), so that the workers together see every image
    once per epoch and all run the same number of batches, as ``dist_sync``
    needs.  The last ``60000 % num_parts`` images are left out (none for 2,
    3, 4, 5 or 6 workers).  ``test_iter`` is the whole test set for
    everyone.

    >>> train_iter, test_iter = d2l.load_data_fashion_mnist(
    ...     256, num_parts=kv.num_workers, part_index=kv.rank)
    """
    from ..gluon.data import DataLoader, SplitSampler
    from ..gluon.data.vision import FashionMNIST, transforms
    trans = [transforms.ToTensor()]
    if resize:
        trans.insert(0, transforms.Resize(resize))
    trans = transforms.Compose(trans)
    mnist_train = FashionMNIST(root=root, train=True).transform_first(trans)
    mnist_test = FashionMNIST(root=root, train=False).transform_first(trans)
    if num_parts == 1 and part_index == 0:
        shuffle, sampler = True, None
    else:
        shuffle, sampler = False, SplitSampler(
            len(mnist_train), num_parts, part_index, shuffle=True, even=True)
    return (DataLoader(mnist_train, batch_size, shuffle=shuffle,
                       sampler=sampler, num_workers=get_dataloader_workers()),
            DataLoader(mnist_test, batch_size, shuffle=False,
                       num_workers=get_dataloader_workers()))


def get_fashion_mnist_labels(labels):
    """Return text labels for the Fashion-MNIST dataset."""
    from ..gluon.data.vision.fashion_mnist_files import TEXT_LABELS
    labels = np.asarray(_host(labels)).reshape(-1)
    return [TEXT_LABELS[int(i)] for i in labels]


def split_batch(X, y, devices):
    """Split ``X`` and ``y`` into multiple devices.

    Raises ``ValueError`` if ``X`` and ``y`` hold different numbers of
    examples (or, from ``split_and_load``, if there are fewer examples than
    devices or they do not divide evenly).
    """
    from ..gluon import utils
    if X.shape[0] != y.shape[0]:
        raise ValueError(f'split_batch: X has {X.shape[0]} examples (shape '
                         f'{X.shape}) but y has {y.shape[0]} (shape {y.shape}); '
                         f'pass the features and labels of one minibatch')
    return (utils.split_and_load(X, devices), utils.split_and_load(y, devices))
