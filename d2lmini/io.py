"""Data iterators for the Module API: ``mx.io`` as in MXNet 1.x.

Why one long file: ``mx.io`` is one small family of iterators
(DataIter and the ones built on it), kept together as in MXNet, each class
short and independent of the others.

A :class:`DataIter` hands out :class:`DataBatch` objects (lists of NDArrays
plus a ``pad`` count) and describes what it yields with :class:`DataDesc`
(name, shape, dtype, layout), which is what ``Module.bind`` needs before the
first batch exists (the three are in ``data_iter.py``).  :class:`NDArrayIter` walks arrays held in memory,
:class:`CSVIter` a CSV file; :class:`ResizeIter` fixes the number of
batches per epoch; :class:`PrefetchingIter` reads the next batch on a
thread while the current one trains.

>>> it = mx.io.NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5),
...                        batch_size=2, last_batch_handle='pad')
>>> [b.pad for b in it]
[0, 0, 1]
"""
import bz2
import gzip
import lzma
import os
import threading
import warnings
import weakref
from collections import OrderedDict

import numpy as np

from .context import cpu
from .data_iter import DataBatch, DataDesc, DataIter, _check_batch_size
from .image.record_iter import ImageRecordIter
from .limits import check_load_size, max_load_bytes
from .mnist_iter import MNISTIter
from .ndarray.ndarray import NDArray, array, from_numpy

__all__ = ['DataDesc', 'DataBatch', 'DataIter', 'NDArrayIter', 'CSVIter',
           'ResizeIter', 'PrefetchingIter', 'MNISTIter', 'ImageRecordIter']


# ---------------------------------------------------------------- NDArrayIter


def _named_arrays(data, default_name, what, allow_empty):
    """``[(name, numpy array), ...]`` sorted by name, from one array, a
    list of arrays or a dict (MXNet's naming: one array is ``default_name``,
    the i-th of several is ``_i_<default_name>``).  Each is a host copy of
    the input, float32 unless the input was an NDArray (as ``nd.array``)."""
    if data is None:
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise ValueError(f'NDArrayIter: {what} is empty; give at least '
                             f'one array')
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict((f'_{i}_{default_name}', d)
                               for i, d in enumerate(data))
    if not isinstance(data, dict):
        raise TypeError(f'NDArrayIter: {what} must be an NDArray, a numpy '
                        f'array, a list of them or a dict name -> array, got '
                        f'{type(data).__name__}')
    named = []
    for name, value in data.items():
        if isinstance(value, NDArray):
            host = value.asnumpy()
        else:
            try:
                host = array(value, ctx=cpu()).asnumpy()
            except (TypeError, ValueError) as e:
                raise TypeError(f'NDArrayIter: {what} {name!r} of type '
                                f'{type(value).__name__} is not an array: '
                                f'{e}') from None
        named.append((name, np.ascontiguousarray(host)))
    return sorted(named, key=lambda item: item[0])


class NDArrayIter(DataIter):
    """Batches from arrays held in memory (NDArrays, numpy arrays, lists or
    dicts of them), with the same row taken from every data and label array.

    ``last_batch_handle`` says what happens when ``batch_size`` does not
    divide the number of examples: ``'pad'`` fills the last batch with
    examples from the start (``pad`` counts them), ``'discard'`` drops the
    partial batch, ``'roll_over'`` keeps its examples for the front of the
    next epoch's first batch.  ``shuffle`` draws a new order (``self.idx``,
    with numpy's global generator) at every ``reset``.  Batches live on
    ``cpu()``.

    ``num_parts`` and ``part_index`` (``kv.num_workers`` and ``kv.rank``)
    make the iterator walk only its contiguous part of the examples, cut as
    :meth:`gluon.data.Dataset.shard` cuts (the first ``n % num_parts``
    parts one longer): the workers of a distributed job together read every
    example once per epoch.  Shuffling, padding and roll-over stay inside
    the part.  (MXNet's own NDArrayIter has no such keywords; its native
    iterators do.)

    >>> it = mx.io.NDArrayIter({'x': np.zeros((10, 3))}, np.arange(10),
    ...                        batch_size=4, last_batch_handle='discard')
    >>> it.provide_data, len(list(it))
    ([DataDesc[x,(4, 3),<class 'numpy.float32'>,NCHW]], 2)
    """

    _HANDLES = ('pad', 'discard', 'roll_over')

    def __init__(self, data, label=None, batch_size=1, shuffle=False,
                 last_batch_handle='pad', data_name='data',
                 label_name='softmax_label', layout='NCHW', num_parts=1,
                 part_index=0):
        from .gluon.data.dataset import part_range   # loads gluon: not at import
        _check_batch_size('NDArrayIter', batch_size)
        if last_batch_handle not in self._HANDLES:
            raise ValueError(f'NDArrayIter: last_batch_handle must be one of '
                             f'{self._HANDLES}, got {last_batch_handle!r}')
        super().__init__(int(batch_size))
        self.layout = layout
        self._axis = DataDesc.get_batch_axis(layout)
        if self._axis < 0:
            raise ValueError(f'NDArrayIter: layout {layout!r} has no batch '
                             f'axis N')
        data = _named_arrays(data, data_name, 'data', allow_empty=False)
        label = _named_arrays(label, label_name, 'label', allow_empty=True)
        both = sorted({n for n, _ in data} & {n for n, _ in label})
        if both:
            raise ValueError(f'NDArrayIter: names {both} are used for both '
                             f'data and label; give them different names')
        # Every batch is a gather from these host arrays; self.data and
        # self.label (MXNet's (name, NDArray) lists) share their memory.
        self._host = dict(data + label)
        self.data = [(name, from_numpy(host)) for name, host in data]
        self.label = [(name, from_numpy(host)) for name, host in label]
        total = self._check_lengths()
        start, end = part_range(total, num_parts, part_index)
        if start == end:
            raise ValueError(f'NDArrayIter: part {part_index} of {num_parts} '
                             f'is empty: {total} examples are too few for '
                             f'{num_parts} parts')
        # self.idx holds the rows of this part only: every batch, shuffle
        # and pad is drawn from it.
        self.num_data = end - start
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(start, end)
        self.cursor = -self.batch_size
        self._carry = None            # roll_over: rows owed to the next epoch
        self.reset()

    def _check_lengths(self):
        lengths = {name: arr.shape[self._axis] if arr.ndim > self._axis else None
                   for name, arr in self.data + self.label}
        if None in lengths.values():
            bad = [n for n, v in lengths.items() if v is None]
            raise ValueError(f'NDArrayIter: arrays {bad} have no axis '
                             f'{self._axis} (the N of layout {self.layout!r})')
        data_n = {lengths[name] for name, _ in self.data}
        short = {name: lengths[name] for name, _ in self.label
                 if lengths[name] < min(data_n)}
        if len(data_n) > 1 or short:
            raise ValueError(f'NDArrayIter: data and label must have the same '
                             f'number of examples along the batch axis, got '
                             f'{lengths}')
        num = next(iter(data_n))
        longer = [name for name, _ in self.label if lengths[name] > num]
        if longer:          # MXNet reads the first num labels; say so
            warnings.warn(f'NDArrayIter: label(s) {longer} have more examples '
                          f'than the data ({lengths}); only the first {num} are '
                          f'used', stacklevel=3)
        if num == 0:
            raise ValueError('NDArrayIter: the data has no examples')
        return num

    def _descs(self, named):
        descs = []
        for name, arr in named:
            shape = list(arr.shape)
            shape[self._axis] = self.batch_size
            descs.append(DataDesc(name, tuple(shape), arr.dtype, self.layout))
        return descs

    @property
    def provide_data(self):
        """A DataDesc (batch shape) per data array."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """A DataDesc (batch shape) per label array."""
        return self._descs(self.label)

    def hard_reset(self):
        """Start a new epoch, forgetting rows rolled over from the last one."""
        self._carry = None
        self.cursor = -self.batch_size
        if self.shuffle:
            np.random.shuffle(self.idx)

    def reset(self):
        n, bs = self.num_data, self.batch_size
        rolling = self.last_batch_handle == 'roll_over' and n - bs < self.cursor < n
        if rolling:
            # The unfinished batch leads the next epoch; the cursor goes
            # negative by as many rows as it carries.
            self._carry = self._rows().copy()
            self.cursor = -len(self._carry) - bs
        else:
            self.cursor = -bs
        if self.shuffle:
            np.random.shuffle(self.idx)

    def iter_next(self):
        self.cursor += self.batch_size
        if self.cursor >= 0:
            self._carry = None                 # served by the batch before
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        rows = self._rows()
        if len(rows) < self.batch_size:        # discard / roll_over: partial
            raise StopIteration
        return DataBatch(data=self._gather(self.data, rows),
                         label=self._gather(self.label, rows),
                         pad=self.getpad(), index=None)

    def _rows(self):
        """Indices into the arrays of the current batch's examples."""
        n, bs, c = self.num_data, self.batch_size, self.cursor
        if c >= n:
            raise RuntimeError('NDArrayIter: past the end of the data; call '
                               'reset() to start a new epoch')
        if c <= -bs:
            raise RuntimeError('NDArrayIter: no current batch; call '
                               'iter_next() (or next()) first')
        if -bs < c < 0:                        # roll_over's first batch
            if self._carry is None:
                raise RuntimeError('NDArrayIter: no rolled-over rows for this '
                                   'batch; call hard_reset()')
            return np.concatenate([self._carry, self.idx[:c + bs]])
        if c + bs <= n:
            return self.idx[c:c + bs]
        if self.last_batch_handle == 'pad':    # wrap round (more than once
            return self.idx[np.arange(c, c + bs) % n]  # if bs > n)
        return self.idx[c:]

    def _gather(self, named, rows):
        out = []
        for name, arr in named:
            arr.wait_to_read()                 # a write to self.data lands first
            host = np.take(self._host[name], rows, axis=self._axis)
            out.append(array(host, ctx=cpu(), dtype=arr.dtype))
        return out

    def getdata(self):
        return self._gather(self.data, self._rows())

    def getlabel(self):
        return self._gather(self.label, self._rows())

    def getpad(self):
        n, bs, c = self.num_data, self.batch_size, self.cursor
        if self.last_batch_handle == 'pad' and c + bs > n:
            return c + bs - n
        if self.last_batch_handle == 'roll_over' and -bs < c < 0:
            return -c                          # MXNet: the rows carried over
        return 0


# -------------------------------------------------------------------- CSVIter

class CSVIter(DataIter):
    """Batches from a CSV file of flattened examples (one per line) and an
    optional CSV of labels, as MXNet's native ``CSVIter``.

    Each line of ``data_csv`` holds ``prod(data_shape)`` numbers; labels are
    float32 of ``label_shape`` (``(1,)``: one number per line, batched as
    ``(batch_size,)``), zeros when there is no ``label_csv``.  The last
    batch of an epoch is filled from the start of the file (``pad`` counts
    those rows); with ``round_batch=True`` the next epoch then begins after
    them, so that every example is seen equally often.  As for MXNet's
    native iterators, ``getdata()`` and ``getlabel()`` return one NDArray,
    not a list.

    >>> it = mx.io.CSVIter(data_csv='x.csv', data_shape=(3,),
    ...                    label_csv='y.csv', batch_size=30)   # doctest: +SKIP
    """

    _DTYPES = ('float32', 'int32', 'int64')

    def __init__(self, data_csv, data_shape, label_csv=None, label_shape=(1,),
                 batch_size=1, round_batch=True, dtype='float32',
                 data_name='data', label_name='softmax_label', **kwargs):
        unknown = set(kwargs) - {'prefetch_buffer', 'ctx'}
        if unknown:
            raise TypeError(f'CSVIter: unknown arguments {sorted(unknown)}')
        _check_batch_size('CSVIter', batch_size)
        if str(np.dtype(dtype)) not in self._DTYPES:
            raise ValueError(f'CSVIter: dtype must be one of {self._DTYPES}, '
                             f'got {dtype!r}')
        super().__init__(int(batch_size))
        data_shape, label_shape = tuple(data_shape), tuple(label_shape)
        self._data = self._read(data_csv, data_shape, np.dtype(dtype))
        n = self._data.shape[0]
        if label_csv is None or label_csv == 'NULL':
            self._label = np.zeros((n,) + label_shape, np.float32)
        else:
            self._label = self._read(label_csv, label_shape, np.dtype('float32'))
            if self._label.shape[0] != n:
                raise ValueError(f'CSVIter: {data_csv} has {n} rows but '
                                 f'{label_csv} has {self._label.shape[0]}')
        if label_shape == (1,):
            self._label = self._label.reshape(n)
        self.provide_data = [DataDesc(data_name, (self.batch_size,) + data_shape,
                                      np.dtype(dtype).type)]
        self.provide_label = [DataDesc(label_name, (self.batch_size,) +
                                       self._label.shape[1:], np.float32)]
        self.round_batch = round_batch
        self._start = 0               # where this epoch begins (round_batch)
        self._overflow = 0            # rows the last batch took from the start
        self._rows = None
        self.reset()

    @staticmethod
    def _read(path, shape, dtype):
        rows = np.loadtxt(_csv_source(path), delimiter=',', dtype=dtype, ndmin=2)
        if rows.shape[0] == 0:
            raise ValueError(f'CSVIter: {path} holds no rows')
        size = int(np.prod(shape))
        if rows.shape[1] != size:
            raise ValueError(f'CSVIter: the rows of {path} hold {rows.shape[1]} '
                             f'values, but shape {shape} needs {size}')
        return rows.reshape((rows.shape[0],) + shape)

    def reset(self):
        self._start = self._overflow if self.round_batch else 0
        self._overflow = 0
        self._cursor = self._start - self.batch_size
        self._rows = None

    def iter_next(self):
        n = self._data.shape[0]
        if self._overflow:            # the epoch ended with a filled-up batch
            return False
        self._cursor += self.batch_size
        if self._cursor >= n:
            return False
        self._rows = np.arange(self._cursor, self._cursor + self.batch_size) % n
        self._overflow = max(0, self._cursor + self.batch_size - n)
        return True

    def _current(self, source):
        if self._rows is None:
            raise RuntimeError('CSVIter: no current batch; call iter_next() '
                               '(or next()) first')
        return array(source[self._rows], ctx=cpu(), dtype=source.dtype)

    def getdata(self):
        return self._current(self._data)

    def getlabel(self):
        return self._current(self._label)

    def getindex(self):
        return self._rows

    def getpad(self):
        return self._overflow

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=[self.getdata()], label=[self.getlabel()],
                         pad=self.getpad(), index=self.getindex())


# ----------------------------------------------------------------- ResizeIter

class _WrapsBatches(DataIter):
    """An iterator whose batches come whole from another: the parts of the
    current batch are those of ``self.current_batch``."""

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


# np.loadtxt inflates a file with one of these extensions (NumPy's
# DataSource); CSVIter opens such a file itself, to stop at the load limit.
_INFLATE = {'.gz': gzip.open, '.bz2': bz2.open, '.xz': lzma.open, '.lzma': lzma.open}


def _csv_source(path):
    """What ``np.loadtxt`` reads for ``path``: the path itself, or for a
    compressed file its lines, read no further than the load limit of
    :mod:`d2lmini.limits` (compressed text declares no size)."""
    if isinstance(path, (str, os.PathLike)):
        opener = _INFLATE.get(os.path.splitext(os.fspath(path))[1].lower())
        if opener is not None:
            return _lines_up_to_the_limit(path, opener)
    return path


def _lines_up_to_the_limit(path, opener):
    limit, total = max_load_bytes(), 0
    with opener(path, 'rb') as f:
        while True:
            line = f.readline(limit - total + 1)   # bounded, even with no newline
            if not line:
                return
            total += len(line)
            check_load_size(path, total, 'its text', at_least=True)
            yield line.decode('utf-8')


class ResizeIter(_WrapsBatches):
    """``size`` batches per epoch from ``data_iter``, restarting it when it
    runs out early and stopping it early when it has more.

    >>> it = mx.io.ResizeIter(mx.io.NDArrayIter(np.ones((10, 2)),
    ...                                         batch_size=5), 3)
    >>> len(list(it))
    3
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__(data_iter.batch_size)
        if not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f'ResizeIter: size must be a non-negative '
                             f'integer, got {size!r}')
        self.data_iter = data_iter
        self.size = int(size)
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, 'default_bucket_key'):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


# ------------------------------------------------------------ PrefetchingIter

class _Prefetcher:
    """A thread that reads one batch ahead from each iterator.

    It holds the iterators, not the PrefetchingIter, so that dropping the
    PrefetchingIter lets a finalizer stop the thread.
    """

    def __init__(self, iters):
        self.iters = iters
        self.cond = threading.Condition()
        self.wanted = False        # the main thread asked for a batch
        self.result = None         # ('ok', batches) or ('error', exception)
        self.busy = False
        self.pending = False       # a read was asked for and not yet taken
        self.stopped = False
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name='PrefetchingIter')
        self.thread.start()

    def _loop(self):
        while True:
            with self.cond:
                while not (self.wanted or self.stopped):
                    self.cond.wait()
                if self.stopped:
                    return
                self.wanted, self.busy = False, True
            try:
                result = ('ok', [_next_or_none(it) for it in self.iters])
            except Exception as e:             # handed to the main thread
                result = ('error', e)
            with self.cond:
                self.result, self.busy = result, False
                self.cond.notify_all()

    def request(self):
        with self.cond:
            self.result, self.wanted, self.pending = None, True, True
            self.cond.notify_all()

    def take(self):
        """The batches asked for by the last :meth:`request` (waiting)."""
        with self.cond:
            if not self.pending:
                raise RuntimeError('PrefetchingIter: a read failed or the '
                                   'epoch ended; call reset()')
            while self.result is None:
                if not self.thread.is_alive():
                    raise RuntimeError('PrefetchingIter: its reader thread '
                                       'has stopped (iterator closed?)')
                self.cond.wait(timeout=1.0)
            result, self.result, self.pending = self.result, None, False
        if result[0] == 'error':
            raise result[1]
        return result[1]

    def settle(self):
        """Wait until no read is pending, dropping what it read."""
        with self.cond:
            while (self.wanted or self.busy) and self.thread.is_alive():
                self.cond.wait(timeout=1.0)
            self.result, self.pending = None, False

    def stop(self, timeout=10.0):
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)


def _next_or_none(it):
    try:
        return it.next()
    except StopIteration:
        return None


class PrefetchingIter(_WrapsBatches):
    """Reads the next batch of one or more iterators on a background thread
    while the caller works on the current one, and joins their batches
    (data of the first iterator, then of the second...).

    ``rename_data`` / ``rename_label``: one dict per iterator renaming its
    inputs (``{'data': 'data_1'}``).  At most one batch per iterator is read
    ahead.  ``close()`` (or dropping the iterator) stops the thread.

    >>> a = mx.io.NDArrayIter({'data': np.ones((4, 2))}, batch_size=2)
    >>> b = mx.io.NDArrayIter({'data': np.zeros((4, 2))}, batch_size=2)
    >>> it = mx.io.PrefetchingIter([a, b], rename_data=[{'data': 'a'},
    ...                                                 {'data': 'b'}])
    >>> [d.name for d in it.provide_data], len(list(it))
    (['a', 'b'], 2)
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, (list, tuple)):
            iters = [iters]
        if not iters:
            raise ValueError('PrefetchingIter: give at least one iterator')
        for renames, what in ((rename_data, 'rename_data'),
                              (rename_label, 'rename_label')):
            if renames is not None and len(renames) != len(iters):
                raise ValueError(f'PrefetchingIter: {what} needs one dict per '
                                 f'iterator ({len(iters)}), got {len(renames)}')
        self.iters = list(iters)
        self.n_iter = len(self.iters)
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0].shape[0]
        self.current_batch = None
        self._exhausted = False
        self._prefetcher = _Prefetcher(self.iters)
        self._finalizer = weakref.finalize(self, self._prefetcher.stop)
        self._prefetcher.request()

    def _renamed(self, renames, descs_of):
        out = []
        for i, it in enumerate(self.iters):
            for desc in descs_of(it):
                if not isinstance(desc, DataDesc):
                    desc = DataDesc(*desc)
                if renames is not None:
                    desc = DataDesc(renames[i].get(desc.name, desc.name),
                                    desc.shape, desc.dtype, desc.layout)
                out.append(desc)
        return out

    @property
    def provide_data(self):
        return self._renamed(self.rename_data, lambda it: it.provide_data)

    @property
    def provide_label(self):
        return self._renamed(self.rename_label, lambda it: it.provide_label)

    def close(self):
        """Stop the reader thread (the iterator is unusable afterwards)."""
        self._finalizer()

    def reset(self):
        self._prefetcher.settle()       # let a read in flight finish first
        for it in self.iters:
            it.reset()
        self._exhausted = False
        self._prefetcher.request()

    def iter_next(self):
        if self._exhausted:
            return False
        batches = self._prefetcher.take()
        ended = [b is None for b in batches]
        if all(ended):
            self._exhausted = True
            return False
        if any(ended):
            raise ValueError(f'PrefetchingIter: the iterators have different '
                             f'numbers of batches (ended: {ended})')
        pads = [b.pad for b in batches]
        if len(set(pads)) > 1:
            raise ValueError(f'PrefetchingIter: the iterators disagree on the '
                             f'padding of this batch: {pads}')
        self.current_batch = DataBatch(
            sum((list(b.data) for b in batches), []),
            sum((list(b.label or []) for b in batches), []),
            batches[0].pad, batches[0].index,
            provide_data=self.provide_data, provide_label=self.provide_label)
        self._prefetcher.request()
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return self.current_batch

