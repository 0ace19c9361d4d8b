"""The iterator protocol of ``mx.io``: :class:`DataIter` hands out
:class:`DataBatch` objects and describes them with :class:`DataDesc`.

Every iterator of the package builds on these three: ``io.py``'s
(``NDArrayIter``, ``CSVIter``, ...), ``mnist_iter.py``'s ``MNISTIter`` and
``image/record_iter.py``'s ``ImageRecordIter``; ``mx.io`` re-exports them.
"""
from collections import namedtuple

import numpy as np

__all__ = ['DataDesc', 'DataBatch', 'DataIter']

class DataDesc(namedtuple('DataDesc', ['name', 'shape'])):
    """Name and shape of one input (a tuple), with ``dtype`` and ``layout``.

    ``layout`` names the axes of ``shape``: ``'NCHW'`` says the batch is on
    axis 0 (``N``), ``'TNC'`` on axis 1.

    >>> d = mx.io.DataDesc('data', (32, 1, 28, 28))
    >>> d.name, d.shape, d.layout
    ('data', (32, 1, 28, 28), 'NCHW')
    """

    def __new__(cls, name, shape, dtype=np.float32, layout='NCHW'):
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __getnewargs__(self):            # copy and pickle keep dtype and layout
        return (self.name, self.shape, self.dtype, self.layout)

    def __repr__(self):
        return f'DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]'

    @staticmethod
    def get_batch_axis(layout):
        """The axis of ``layout`` holding the batch (``'N'``); 0 if None, -1
        if the layout has no batch axis."""
        return 0 if layout is None else layout.find('N')

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from ``[(name, shape), ...]`` and optional
        ``[(name, dtype), ...]``."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch: ``data`` and ``label`` are lists of NDArrays.

    ``pad`` counts the examples at the end that only fill the batch up (a
    prediction drops them); ``index`` holds the examples' indices when the
    iterator knows them; ``bucket_key``, ``provide_data`` and
    ``provide_label`` serve iterators whose shapes change from batch to batch.
    """

    def __init__(self, data, label=None, pad=None, index=None,
                 bucket_key=None, provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(f'DataBatch: data must be a list of NDArrays, '
                            f'got {type(data).__name__}')
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f'DataBatch: label must be a list of NDArrays, '
                            f'got {type(label).__name__}')
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [l.shape for l in self.label] if self.label else None
        return (f'{type(self).__name__}: data shapes: {data_shapes} '
                f'label shapes: {label_shapes}')

    __repr__ = __str__


class DataIter:
    """Base class of the iterators: Python's iterator protocol on top of
    ``iter_next`` (advance; False at the end) and ``getdata`` / ``getlabel``
    / ``getpad`` / ``getindex`` (read the current batch).  ``reset`` starts
    a new epoch."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Go back to the start of the data."""

    def next(self):
        """The next :class:`DataBatch`; StopIteration at the end of the epoch."""
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=self.getdata(), label=self.getlabel(),
                         pad=self.getpad(), index=self.getindex())

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Move to the next batch; False when there is none."""
        raise NotImplementedError(f'{type(self).__name__} must define iter_next')

    def getdata(self):
        """The current batch's data, a list of NDArrays."""
        raise NotImplementedError(f'{type(self).__name__} must define getdata')

    def getlabel(self):
        """The current batch's labels, a list of NDArrays (None: unlabelled)."""
        return None

    def getindex(self):
        """The indices of the current batch's examples (None if unknown)."""
        return None

    def getpad(self):
        """How many examples of the current batch are padding (none here)."""
        return 0


def _check_batch_size(who, batch_size):
    if isinstance(batch_size, bool) or \
            not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
        raise ValueError(f'{who}: batch_size must be a positive integer, got '
                         f'{batch_size!r}')

