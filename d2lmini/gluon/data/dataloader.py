"""``DataLoader``: mini-batches from a Dataset, prepared in the background.

    train_iter = gluon.data.DataLoader(dataset, batch_size=256, shuffle=True,
                                       num_workers=4)
    for X, y in train_iter:          # NDArrays on cpu(0)
        ...

How a batch is made
    When the dataset is array-backed and its transforms work on whole
    batches (``_can_batch()``; see :mod:`.dataset`), a batch is ONE NumPy
    fancy-indexing call into the whole dataset's arrays, the transforms run
    once on the stacked batch (``ToTensor`` of ``(256, 28, 28, 1)`` uint8),
    and each field becomes an NDArray once, without a copy.  Otherwise the
    examples are read one by one and stacked by ``batchify_fn``
    (:func:`default_batchify_fn`, as in MXNet).

Where it is made
    Vectorized batches are made ahead of time by a background thread (with
    ``num_workers=0``) or by a pool of ``num_workers`` threads, at most
    ``prefetch`` batches ahead (default ``2 * max(1, num_workers)``), and
    handed over in order: the training loop only takes finished batches
    from a queue.  Threads rather than processes because the work is NumPy
    (indexing, casts, matmuls), which releases the GIL, and threads share
    the dataset's arrays without copying or pickling them.  ``prefetch=0``
    makes every batch in the caller's thread, when it is asked for.

    Example-by-example batches are made in the caller's thread: datasets
    and transforms written for single examples may run NDArray operators,
    and the engine takes operators from one front-end thread.

Shuffling uses NumPy's global generator (``np.random.seed`` makes it
repeatable), drawn when an epoch's iteration starts, in the caller's thread.
"""
import queue
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...context import Context, cpu_pinned
from ...engine import _MEMORY
from ...ndarray.ndarray import NDArray, _make, array
from .dataset import part_range
from ...util import is_np_array

__all__ = ['DataLoader', 'default_batchify_fn', 'default_mp_batchify_fn',
           'Sampler', 'SequentialSampler', 'RandomSampler', 'SplitSampler',
           'FilterSampler', 'BatchSampler']

_CPU = Context('cpu', 0)
_LAST_BATCH = ('keep', 'discard', 'rollover')


# === samplers ==================================================================
class Sampler:
    """Base class: iterating yields indices (or batches of indices)."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start + 1, ..., start + length - 1``."""

    def __init__(self, length, start=0):
        self._length, self._start = int(length), int(start)

    def _indices(self):
        return np.arange(self._start, self._start + self._length, dtype=np.int64)

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """``0 .. length-1`` in a new random order each time (``np.random``)."""

    def __init__(self, length):
        self._length = int(length)

    def _indices(self):
        indices = np.arange(self._length, dtype=np.int64)
        np.random.shuffle(indices)
        return indices

    def __iter__(self):
        return iter(self._indices().tolist())

    def __len__(self):
        return self._length


class SplitSampler(Sampler):
    """Part ``part_index`` of ``range(length)`` cut in ``num_parts``: what
    one worker of ``num_parts`` reads in distributed training.

    The part is contiguous, with the sizes of :meth:`Dataset.shard` (the
    first ``length % num_parts`` parts one longer; all parts together are
    the whole range).  ``even=True`` gives every part ``length //
    num_parts`` indices instead, as the ``SplitSampler`` of MXNet's
    distributed examples, leaving out the last ``length % num_parts``: then
    every worker runs the same number of batches, which ``dist_sync``
    needs.  With ``shuffle=True`` the part is visited in a new random order
    each epoch, drawn from ``np.random`` (``seed=None``) or from a
    generator of its own seeded with ``seed``.

    >>> sampler = gluon.data.SplitSampler(len(dataset), kv.num_workers,
    ...                                   kv.rank, shuffle=True)
    >>> loader = gluon.data.DataLoader(dataset, 256, sampler=sampler)
    """

    def __init__(self, length, num_parts=1, part_index=0, shuffle=False,
                 seed=None, even=False):
        if even:
            part_range(length, num_parts, part_index)       # the checks
            size = int(length) // num_parts
            self._start, self._end = part_index * size, (part_index + 1) * size
        else:
            self._start, self._end = part_range(length, num_parts, part_index)
        self._shuffle = shuffle
        self._rng = np.random if seed is None else np.random.RandomState(seed)

    def _indices(self):
        indices = np.arange(self._start, self._end, dtype=np.int64)
        if self._shuffle:
            self._rng.shuffle(indices)
        return indices

    def __iter__(self):
        return iter(self._indices().tolist())

    def __len__(self):
        return self._end - self._start


class FilterSampler(Sampler):
    """The indices ``i`` of ``dataset`` for which ``fn(dataset[i])`` is true.

    ``fn`` is evaluated once, here, in order.
    """

    def __init__(self, fn, dataset):
        self._indices_kept = np.asarray(
            [i for i in range(len(dataset)) if fn(dataset[i])], dtype=np.int64)

    def _indices(self):
        return self._indices_kept

    def __iter__(self):
        return iter(self._indices_kept.tolist())

    def __len__(self):
        return len(self._indices_kept)


def _sampler_indices(sampler):
    if hasattr(sampler, '_indices'):
        return sampler._indices()
    return np.fromiter(iter(sampler), dtype=np.int64)


class BatchSampler(Sampler):
    """Groups a sampler's indices into batches of ``batch_size``.

    ``last_batch`` says what happens to a last, smaller batch: ``'keep'``
    it, ``'discard'`` it, or ``'rollover'``: put its indices in front of
    the next epoch's.
    """

    def __init__(self, sampler, batch_size, last_batch='keep'):
        if last_batch not in _LAST_BATCH:
            raise ValueError(f"last_batch must be one of {_LAST_BATCH}, got "
                             f"{last_batch!r}")
        if int(batch_size) < 1:
            raise ValueError(f'batch_size must be a positive int, got {batch_size!r}')
        self._sampler, self._batch_size = sampler, int(batch_size)
        self._last_batch = last_batch
        self._prev = np.empty(0, dtype=np.int64)

    def _batches(self):
        """This epoch's batches as int64 arrays (consumes the rollover)."""
        idx = _sampler_indices(self._sampler)
        if len(self._prev):
            idx = np.concatenate([self._prev, idx])
            self._prev = np.empty(0, dtype=np.int64)
        bs = self._batch_size
        full = len(idx) // bs * bs
        batches = [idx[i:i + bs] for i in range(0, full, bs)]
        rest = idx[full:]
        if len(rest):
            if self._last_batch == 'keep':
                batches.append(rest)
            elif self._last_batch == 'rollover':
                self._prev = rest
        return batches

    def __iter__(self):
        return (b.tolist() for b in self._batches())

    def __len__(self):
        n, bs = len(self._sampler), self._batch_size
        if self._last_batch == 'keep':
            return (n + bs - 1) // bs
        if self._last_batch == 'discard':
            return n // bs
        return (len(self._prev) + n) // bs


# === batchify ===================================================================
def _wrap(a):
    """A fresh host array as an NDArray on cpu(0), without copying it."""
    a = np.ascontiguousarray(a)
    out = _make(a.shape, a.dtype, _CPU)
    out._data = a
    if _MEMORY[0] is not None:               # mx.profiler counts memory
        _MEMORY[0](_CPU, (), [out])
    return out


def default_batchify_fn(data):
    """Stack a list of examples into a batch (MXNet's default).

    NDArrays are stacked with ``nd.stack`` (on their context); tuples are
    batched field by field into a list; anything else goes through NumPy
    into one NDArray on ``cpu(0)``, keeping its dtype.
    """
    first = data[0]
    if isinstance(first, NDArray):
        from ...ndarray.matrix import stack
        return stack(*data, axis=0)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    arr = np.asarray(data)
    return array(arr, ctx=_CPU, dtype=arr.dtype)


def default_mp_batchify_fn(data):
    """MXNet's batchify for worker processes: the batch in shared host
    memory.  Here workers are threads and ``cpu_shared(0)`` is ``cpu(0)``,
    so it is :func:`default_batchify_fn` with the batch moved to
    ``cpu(0)``."""
    return _to_context(default_batchify_fn(data), _CPU)


def _as_np(batch):
    """``batch`` (an NDArray or nested lists/tuples of them) as mx.np arrays."""
    if isinstance(batch, NDArray):
        return batch.as_np_ndarray()
    if isinstance(batch, (list, tuple)):
        return type(batch)(_as_np(b) for b in batch)
    return batch


def _to_context(batch, ctx):
    """``batch`` (an NDArray or nested lists/tuples of them) on ``ctx``."""
    if isinstance(batch, NDArray):
        return batch.as_in_context(ctx)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_context(b, ctx) for b in batch)
    return batch


def _to_ndarrays(fields):
    if isinstance(fields, (list, tuple)):
        return [_wrap(f) for f in fields]
    return _wrap(fields)


# === the background producer ===================================================
class _Done:
    __slots__ = ('value', 'error')

    def __init__(self, value=None, error=None):
        self.value, self.error = value, error

    def result(self):
        if self.error is not None:
            raise self.error
        return self.value


def _produce(make, batches, pool, q, stop):
    """Thread body: make (or submit) batches in order, at most ``q`` ahead."""
    try:
        for idx in batches:
            if stop.is_set():
                return
            if pool is not None:
                item = pool.submit(make, idx)
            else:
                try:
                    item = _Done(make(idx))
                except BaseException as e:   # noqa: B902 - handed to the consumer
                    item = _Done(error=e)
            while True:
                try:
                    q.put(item, timeout=0.1)
                    break
                except queue.Full:
                    if stop.is_set():
                        return
    finally:
        if pool is not None:      # queued batches still finish unless stopped
            pool.shutdown(wait=False, cancel_futures=stop.is_set())


class _PrefetchIter:
    """Iterator over batches that threads prepare ahead of time."""

    def __init__(self, make, batches, num_workers, depth):
        self._left = len(batches)
        self._q = queue.Queue(maxsize=max(1, depth))
        stop = threading.Event()
        pool = (ThreadPoolExecutor(num_workers, thread_name_prefix='d2lmini-data')
                if num_workers > 0 else None)
        self._thread = threading.Thread(
            target=_produce, args=(make, batches, pool, self._q, stop),
            daemon=True, name='d2lmini-data-prefetch')
        self._thread.start()
        # An abandoned iterator (a `break` out of the loop) stops its thread.
        self._finalizer = weakref.finalize(self, stop.set)

    def __iter__(self):
        return self

    def __next__(self):
        if self._left <= 0:
            self._finalizer()
            raise StopIteration
        while True:
            try:
                item = self._q.get(timeout=1.0)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._q.empty():
                    raise RuntimeError('the DataLoader prefetch thread died') from None
        self._left -= 1
        return item.result()

    def __len__(self):
        return self._left


def _sync_iter(make, batches):
    for idx in batches:
        yield make(idx)


# === the loader ===================================================================
class DataLoader:
    """Loads a Dataset in mini-batches (MXNet 1.x ``gluon.data.DataLoader``).

    Parameters
    ----------
    dataset : Dataset
    batch_size : int
    shuffle : bool
        A new random order every epoch.
    sampler : Sampler, optional
        Yields the indices to read (instead of ``shuffle``).
    last_batch : {'keep', 'discard', 'rollover'}
        What to do with a last, incomplete batch (default ``'keep'``).
    batch_sampler : Sampler, optional
        Yields whole batches of indices (instead of the four above).
    batchify_fn : callable, optional
        Makes a batch from a list of examples; giving one reads the
        dataset example by example.
    num_workers : int
        Threads that make batches in parallel (0: one background thread).
    pin_memory : bool
        Put every batch on ``cpu_pinned(pin_device_id)``.  Pinned host memory
        is plain host memory in d2lmini, so ``cpu_pinned(i)`` is ``cpu(i)``
        and with the default ``pin_device_id=0`` the batches stay where they
        are.
    pin_device_id : int
    prefetch : int, optional
        How many batches may be made ahead (0: none, no thread).
    thread_pool : bool
        Accepted for MXNet's API: workers are always threads here (see the
        module docstring), so both values behave the same.
    timeout : int
        Accepted for MXNet's API; must be positive.
    auto_reload : bool
        Prepare the next epoch's iterator as soon as the current one ends
        (and the first one at construction), as MXNet 1.9.1 does: its
        shuffle is drawn and its prefetching starts before ``for`` asks.

    Examples
    --------
    >>> loader = gluon.data.DataLoader(gluon.data.ArrayDataset(X, y), 10,
    ...                                shuffle=True)
    >>> for X_batch, y_batch in loader:                     # doctest: +SKIP
    ...     pass
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None,
                 num_workers=0, pin_memory=False, pin_device_id=0, prefetch=None,
                 thread_pool=False, timeout=120, auto_reload=False):
        self._dataset = dataset
        if not timeout > 0:
            raise ValueError(f'DataLoader: timeout must be positive, got {timeout!r}')
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError('batch_size must be specified unless '
                                 'batch_sampler is specified')
            if sampler is None:
                sampler = (RandomSampler(len(dataset)) if shuffle
                           else SequentialSampler(len(dataset)))
            elif shuffle:
                raise ValueError('shuffle must not be specified if sampler is '
                                 'specified')
            batch_sampler = BatchSampler(sampler, batch_size,
                                         last_batch if last_batch else 'keep')
        elif (batch_size is not None or shuffle or sampler is not None
              or last_batch is not None):
            raise ValueError('batch_size, shuffle, sampler and last_batch must '
                             'not be specified if batch_sampler is specified.')
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn
        # As in MXNet, the mode when the loader is made decides: mx.np
        # batches after npx.set_np() (the workers' threads have no flag).
        self._np = is_np_array()
        self._num_workers = max(0, int(num_workers))
        self._prefetch = (2 * max(1, self._num_workers) if prefetch is None
                          else max(0, int(prefetch)))
        pinned = cpu_pinned(int(pin_device_id)) if pin_memory else _CPU
        self._pin_ctx = None if pinned == _CPU else pinned
        self.auto_reload = bool(auto_reload)
        self._ready = self._new_iter() if self.auto_reload else None

    def __len__(self):
        return len(self._batch_sampler)

    def _batch_indices(self):
        bs = self._batch_sampler
        if hasattr(bs, '_batches'):
            return bs._batches()
        return [np.asarray(b, dtype=np.int64) for b in bs]

    def _make_vectorized(self, indices):
        return _to_ndarrays(self._dataset._batch(indices))

    def _make_one_by_one(self, indices):
        batchify = self._batchify_fn or default_batchify_fn
        dataset = self._dataset
        return batchify([dataset[int(i)] for i in indices])

    def _vectorized(self):
        return self._batchify_fn is None and \
            getattr(self._dataset, '_can_batch', lambda: False)()

    def _new_iter(self):
        batches = self._batch_indices()       # shuffled here, in the caller's thread
        if not self._vectorized():
            it = _sync_iter(self._make_one_by_one, batches)
        elif self._prefetch == 0:
            it = _sync_iter(self._make_vectorized, batches)
        else:
            it = _PrefetchIter(self._make_vectorized, batches, self._num_workers,
                               self._prefetch)
        if self._pin_ctx is not None:
            it = (_to_context(b, self._pin_ctx) for b in it)
        if self._np:
            it = (_as_np(b) for b in it)
        return it

    def __iter__(self):
        it, self._ready = self._ready, None   # a prepared iterator serves once
        if it is None:
            it = self._new_iter()
        return self._reloading(it) if self.auto_reload else it

    def _reloading(self, it):
        yield from it
        if self._ready is None:               # prepare the next epoch now
            self._ready = self._new_iter()
