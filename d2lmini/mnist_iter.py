"""``mx.io.MNISTIter``: batches from the MNIST IDX files, as MXNet's native
iterator (``src/io/iter_mnist.cc``) hands them out.

MXNet's behaviour, kept here:

- pixels become float32 ``value / 256`` (not 255: 255 is 0.99609375);
  labels are float32, a batch of them ``(batch_size,)``;
- data ``(batch_size, 1, rows, cols)``, or ``(batch_size, rows * cols)``
  with ``flat=True``;
- only whole batches: the last ``n % batch_size`` examples of the part are
  never served, and ``pad`` is 0;
- ``shuffle`` (the default) reorders the examples once, when the iterator
  is made, from ``seed``: every epoch then visits them in that same order;
- ``num_parts`` / ``part_index`` (``kv.num_workers`` / ``kv.rank``) keep
  one contiguous part of the files.

Two differences: the parts are cut as every sharded reader of d2lmini cuts
them (:func:`~d2lmini.gluon.data.dataset.part_range`: the first ``n %
num_parts`` parts one longer), where MXNet's MNISTIter cuts at ``floor(n *
i / num_parts)``, so with uneven parts a boundary may sit one example
apart; and the shuffled order comes from NumPy's generator, not from C++'s
``std::shuffle``.  Damaged files, gzip-compressed files (accepted too) and
an images file without its labels are reported with the file name and the
byte offset (by :mod:`d2lmini.gluon.data.vision.fashion_mnist_files`).

>>> train_iter = mx.io.MNISTIter(image='train-images-idx3-ubyte',
...                              label='train-labels-idx1-ubyte',
...                              batch_size=100, num_parts=kv.num_workers,
...                              part_index=kv.rank)    # doctest: +SKIP
>>> train_iter.provide_data                             # doctest: +SKIP
[DataDesc[data,(100, 1, 28, 28),<class 'numpy.float32'>,NCHW]]
"""
import logging

import numpy as np

from .context import cpu
from .data_iter import DataBatch, DataDesc, DataIter, _check_batch_size
from .ndarray.ndarray import array

__all__ = ['MNISTIter']

log = logging.getLogger('d2lmini.io')


class MNISTIter(DataIter):
    """Iterates over the MNIST IDX files ``image`` and ``label``.

    Parameters
    ----------
    image, label : str
        The images and labels IDX files (``train-images-idx3-ubyte``...),
        decompressed as MXNet wants them, or gzip-compressed.
    batch_size : int, default 128
    shuffle : bool, default True
        Reorder the examples once, from ``seed`` (see the module docstring).
    flat : bool, default False
        Batches of ``(batch_size, rows * cols)`` instead of ``(batch_size,
        1, rows, cols)``.
    seed : int, default 0
    silent : bool, default False
        False logs what was loaded (logger ``d2lmini.io``, level INFO).
    num_parts, part_index : int, default 1, 0
        Read only part ``part_index`` of ``num_parts`` contiguous parts.
    input_shape : tuple, optional
        What MXNet's examples pass (``(1, 28, 28)`` or ``(784,)``); MXNet
        ignores it, here it must hold ``rows * cols`` values.
    dtype : str, optional
        The data's type (default float32), as MXNet's ``dtype``.
    data_name, label_name : str
        The names in ``provide_data`` / ``provide_label``.
    prefetch_buffer, ctx
        Accepted for MXNet's API; the batches are made when asked for.
    """

    def __init__(self, image='./train-images-idx3-ubyte',
                 label='./train-labels-idx1-ubyte', batch_size=128,
                 shuffle=True, flat=False, seed=0, silent=False, num_parts=1,
                 part_index=0, input_shape=None, dtype=None, data_name='data',
                 label_name='softmax_label', prefetch_buffer=4, ctx='gpu'):
        # Here, not at import: they load gluon, and mx.io loads this module.
        from .gluon.data.dataset import part_range
        from .gluon.data.vision.fashion_mnist_files import read_split
        _check_batch_size('MNISTIter', batch_size)
        super().__init__(int(batch_size))
        images, labels = read_split(image, label, image_shape=None,
                                    num_classes=None)
        n, rows, cols = images.shape
        if input_shape is not None and int(np.prod(input_shape)) != rows * cols:
            raise ValueError(f'MNISTIter: input_shape {tuple(input_shape)} does '
                             f'not hold the {rows} x {cols} images of {image}')
        start, end = part_range(n, num_parts, part_index)
        order = np.arange(start, end)
        if shuffle:
            np.random.RandomState(seed).shuffle(order)
        shape = (rows * cols,) if flat else (1, rows, cols)
        data = images[order].reshape((len(order),) + shape).astype(np.float32)
        data *= np.float32(1 / 256)                 # exact: a power of two
        self._data = data if dtype is None else data.astype(dtype)
        self._label = labels[order].astype(np.float32)
        self._batches = len(order) // self.batch_size
        if self._batches == 0:
            raise ValueError(f'MNISTIter: part {part_index} of {num_parts} of '
                             f'{image} holds {len(order)} images, fewer than '
                             f'batch_size={batch_size}: no batch to serve')
        self.provide_data = [DataDesc(data_name, (self.batch_size,) + shape,
                                      self._data.dtype.type)]
        self.provide_label = [DataDesc(label_name, (self.batch_size,),
                                       np.float32)]
        self._cursor = -1
        if not silent:
            log.info('MNISTIter: load %d images, shuffle=%d, shape=%s',
                     len(order), bool(shuffle), self.provide_data[0].shape)

    def reset(self):
        self._cursor = -1

    def iter_next(self):
        self._cursor += 1
        return self._cursor < self._batches

    def _rows(self, host):
        if not 0 <= self._cursor < self._batches:
            raise RuntimeError('MNISTIter: no current batch; call next() '
                               '(or reset() at the end of an epoch)')
        lo = self._cursor * self.batch_size
        return array(host[lo:lo + self.batch_size], ctx=cpu(), dtype=host.dtype)

    def getdata(self):
        """The current batch's images, one NDArray (as MXNet's native
        iterators return it)."""
        return self._rows(self._data)

    def getlabel(self):
        """The current batch's labels, one NDArray."""
        return self._rows(self._label)

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=0)
