"""Datasets: indexable collections of examples (MXNet's ``gluon.data``).

A :class:`Dataset` has ``__getitem__`` and ``__len__``; ``dataset[i]`` is one
example, usually a tuple ``(data, label)``.  ``transform`` and
``transform_first`` wrap a dataset with a function applied on access.

Besides the per-example protocol, array-backed datasets answer a batch
protocol that the :class:`~d2lmini.gluon.data.DataLoader` uses to build a
whole batch with one NumPy fancy-indexing call:

``_can_batch()``
    Whether ``_batch`` works.  Called on the caller's thread when an epoch
    starts, so it may also prepare what ``_batch`` reads.  False when a
    transform is written for single examples, or the data lives on a GPU;
    the loader then reads example by example.
``_batch(indices)``
    The examples at ``indices`` (an int64 array), already stacked: a list
    of NumPy arrays, one per field (or one array for single-field
    datasets), exactly what stacking ``[self[i] for i in indices]`` field by
    field would give.  It runs in the loader's worker threads, so it must
    use NumPy only, never the engine.

A transform takes part in the batch protocol when it has ``batchable =
True``: it then accepts a stacked batch as well as one example (the
:mod:`~d2lmini.gluon.data.vision.transforms` do: ``ToTensor`` of an
``(N, H, W, C)`` batch is the stack of the examples' ``ToTensor``).
"""
import numpy as np

__all__ = ['Dataset', 'SimpleDataset', 'ArrayDataset', 'as_numpy', 'part_range']


def as_numpy(x):
    """A NumPy view of an NDArray (host copy for a GPU one), array or list."""
    from ...ndarray.ndarray import NDArray
    if isinstance(x, NDArray):
        if x.context.device_type == 'cpu':
            return np.asarray(x._value())       # the host buffer itself: no copy
        return x.asnumpy()
    return np.asarray(x)


def part_range(length, num_parts, part_index, names=('num_parts', 'part_index')):
    """``(start, end)`` of part ``part_index`` when ``range(length)`` is cut
    into ``num_parts`` contiguous parts, the first ``length % num_parts``
    of them one longer (MXNet's ``Dataset.shard``).

    >>> [part_range(10, 3, i) for i in range(3)]
    [(0, 4), (4, 7), (7, 10)]
    """
    n_name, i_name = names
    for name, value in ((n_name, num_parts), (i_name, part_index)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f'{name} must be an int, got {value!r}')
    if num_parts < 1:
        raise ValueError(f'{n_name} must be at least 1, got {num_parts}')
    if not 0 <= part_index < num_parts:
        raise ValueError(f'{i_name} must be in [0, {num_parts}) for '
                         f'{n_name}={num_parts}, got {part_index} (a '
                         f'worker passes its kv.rank, which counts from 0)')
    size, extra = divmod(int(length), int(num_parts))
    start = part_index * size + min(part_index, extra)
    return int(start), int(start + size + (part_index < extra))


def _is_batchable(fn):
    return bool(getattr(fn, 'batchable', False))


class Dataset:
    """Abstract dataset: implement ``__getitem__`` and ``__len__``."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def _can_batch(self):
        """Whether :meth:`_batch` works (see the module docstring)."""
        return False

    def _batch(self, indices):
        """Stacked examples at ``indices`` (see the module docstring)."""
        raise NotImplementedError

    def transform(self, fn, lazy=True):
        """A dataset whose examples are ``fn(*example)`` (``fn(example)``
        for non-tuple examples).

        ``lazy=False`` applies ``fn`` to every example now and keeps the
        results in memory.
        """
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn, lazy=True):
        """Apply ``fn`` to the first field only (the image, not the label)."""
        return self.transform(_TransformFirstClosure(fn), lazy)

    def filter(self, fn):
        """The examples for which ``fn(example)`` is true."""
        keep = [i for i in range(len(self)) if fn(self[i])]
        return _IndexedDataset(self, np.asarray(keep, dtype=np.int64))

    def shard(self, num_shards, index):
        """The ``index``-th of ``num_shards`` contiguous, near-equal parts.

        As in MXNet: the first ``len(self) % num_shards`` shards hold one
        example more than the others, and together the shards are the whole
        dataset.  For distributed training, shard before shuffling, so that
        every worker keeps to its own examples.

        >>> part = dataset.shard(kv.num_workers, kv.rank)
        """
        start, end = part_range(len(self), num_shards, index,
                                names=('num_shards', 'index'))
        return _IndexedDataset(self, np.arange(start, end, dtype=np.int64))

    def take(self, count):
        """The first ``count`` examples (all of them for None)."""
        n = len(self) if count is None else min(count, len(self))
        return _IndexedDataset(self, np.arange(n, dtype=np.int64))

    def sample(self, sampler):
        """The examples at the indices ``sampler`` yields, in its order."""
        return _IndexedDataset(self, np.fromiter(iter(sampler), dtype=np.int64))


class SimpleDataset(Dataset):
    """A dataset over a list, tuple or array: ``dataset[i] = data[i]``."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]

    def _can_batch(self):
        return isinstance(self._data, np.ndarray)

    def _batch(self, indices):
        return self._data[indices]


class ArrayDataset(Dataset):
    """Examples zipped from arrays of equal length: ``(a[i], b[i], ...)``.

    Accepts NDArrays, NumPy arrays and lists.  As in MXNet, a 1-d NDArray is
    turned into a NumPy array, so ``dataset[i]`` of a label vector is a
    NumPy scalar; an n-d NDArray gives NDArray rows.

    >>> dataset = gluon.data.ArrayDataset(features, labels)
    >>> X, y = dataset[0]
    """

    def __init__(self, *args):
        if not args:
            raise ValueError('ArrayDataset needs at least one array')
        from ...ndarray.ndarray import NDArray
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError(f'All arrays must have the same length; array[0] '
                                 f'has length {self._length} while array[{i}] has '
                                 f'{len(data)}.')
            if isinstance(data, NDArray) and len(data.shape) == 1:
                data = data.asnumpy()
            self._data.append(data)
        self._np = None

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length

    def _can_batch(self):
        from ...ndarray.ndarray import NDArray
        # A GPU array is read row by row on the main thread (engine ops).
        if any(isinstance(d, NDArray) and d.context.device_type != 'cpu'
               for d in self._data):
            return False
        # Host views of the fields, taken here on the caller's thread (an
        # NDArray's buffer once its pending writes are done): the loader's
        # threads then only touch NumPy arrays.
        self._np = [as_numpy(d) for d in self._data]
        return True

    def _batch(self, indices):
        if self._np is None:
            self._can_batch()
        fields = [f[indices] for f in self._np]
        return fields[0] if len(fields) == 1 else fields


class _IndexedDataset(Dataset):
    """``base`` seen through an index array (take, shard, filter, sample)."""

    def __init__(self, base, indices):
        self._base, self._indices = base, indices

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return [self._base[int(i)] for i in self._indices[idx]]
        return self._base[int(self._indices[idx])]

    def _can_batch(self):
        return self._base._can_batch()

    def _batch(self, indices):
        return self._base._batch(self._indices[indices])


class _TransformFirstClosure:
    """``fn`` applied to the first field of an example (picklable, batchable)."""

    def __init__(self, fn):
        self._fn = fn
        self.batchable = _is_batchable(fn)

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)

    def batch(self, fields):
        if isinstance(fields, list):
            return [self._fn(fields[0])] + fields[1:]
        return self._fn(fields)


class _LazyTransformDataset(Dataset):
    """``fn`` applied to each example on access."""

    def __init__(self, data, fn):
        self._data, self._fn = data, fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)

    def _can_batch(self):
        return _is_batchable(self._fn) and self._data._can_batch()

    def _batch(self, indices):
        fn = self._fn
        fields = self._data._batch(indices)
        if hasattr(fn, 'batch'):
            return fn.batch(fields)
        if isinstance(fields, list):     # fn(*example) on stacked fields
            out = fn(*fields)
            return list(out) if isinstance(out, tuple) else out
        return fn(fields)
