"""``KVStore``: what every store shares, whatever carries its values.

A store maps keys (all ints or all strs) to arrays.  ``push`` sums the
values given for a key (one per device) and, without an optimizer,
*replaces* the stored value with the sum; with one (``set_optimizer`` or
``_set_updater``), it calls ``updater(key, summed, stored)``, which updates
the stored weight in place.  ``pull`` copies the stored value into one or
many arrays, on any devices::

    kv = mx.kv.create('device')
    kv.init(3, nd.zeros((2, 3)))
    kv.push(3, [nd.ones((2, 3), ctx=c) for c in devices])     # stored: 2s
    kv.pull(3, out=[nd.zeros((2, 3), ctx=c) for c in devices])

This class holds everything that does not depend on *where* values are
reduced and kept: reading the many argument shapes (one key or a list of
keys; one array or a list per key), checking keys, shapes, dtypes and
devices before anything changes, the updater, and the optimizer states on
disk.  A store says where the work happens by overriding four methods:

* ``_init_key(key, value)``: keep a copy of ``value``;
* ``_push_key(key, values)``: sum ``values``; store the sum, or hand it to
  ``self._updater``;
* ``_pull_key(key, outs)``: copy the stored value into every ``out``;
* ``_state_context(key)``: where the optimizer state of ``key`` lives.

(and, when many keys can travel together, ``_push_keys`` / ``_pull_keys``,
which by default call the one-key methods in turn.)

:class:`d2lmini.kvstore.local.LocalStore` keeps values in this process;
a distributed store sends them to servers instead, with the same front end.
"""
import numpy as np

from .. import optimizer as opt
from ..backend import check_context
from ..context import cpu
from ..ndarray.ndarray import NDArray
from . import compression as _compression
from . import states as _states
from .base import KVStoreBase, KVStoreError

__all__ = ['KVStore']


def _is_int_key(k):
    return isinstance(k, int) and not isinstance(k, bool) or \
        type(k).__module__ == 'numpy' and hasattr(k, 'dtype') and k.dtype.kind in 'iu'


def _on(state, ctx):
    """An optimizer state (None, an array or nested tuples) on ``ctx``."""
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        return type(state)(_on(s, ctx) for s in state)
    return state.as_in_context(ctx)


class KVStore(KVStoreBase):
    """The front end shared by all stores; subclasses move the values."""

    def __init__(self, name):
        self._type = name
        self._meta = {}              # key -> (shape, dtype) of the stored value
        self._key_type = None        # int or str, fixed by the first key seen
        self._updater = None
        self._compression = None     # set_gradient_compression

    def __repr__(self):
        return f'<{type(self).__name__} {self._type!r}: {len(self._meta)} keys>'

    def __contains__(self, key):
        return key in self._meta

    # -- properties ------------------------------------------------------------------
    @property
    def type(self):
        """The name this store was created with (``'local'``, ``'device'``...)."""
        return self._type

    @property
    def rank(self):
        """This worker's rank: 0 in a single process."""
        return 0

    @property
    def num_workers(self):
        """Number of workers: 1 in a single process."""
        return 1

    def barrier(self):
        """Wait for every worker: nothing to wait for in a single process."""

    _barrier = barrier

    def is_capable(self, capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f'Unknown capability: {capability}')

    # -- argument checking ----------------------------------------------------------
    def _check_key(self, op, k, key_type):
        if _is_int_key(k):
            kind = int
        elif isinstance(k, str):
            kind = str
        else:
            raise KVStoreError(f'kv.{op}: keys are ints or strs, got {k!r} '
                               f'({type(k).__name__})')
        if key_type is not None and kind is not key_type:
            raise KVStoreError(
                f'kv.{op}: key {k!r} is {kind.__name__}, but this store uses '
                f'{key_type.__name__} keys: mixed key types are not allowed')
        return (int(k) if kind is int else k), kind

    def _pairs(self, op, key, value, what='value'):
        """``[(key, [arrays])]`` from any of MXNet's argument shapes.

        Keys repeated in a list are merged (their arrays concatenated), as
        MXNet groups them.  Nothing in the store changes here.
        """
        if isinstance(key, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(key):
                n = len(value) if isinstance(value, (list, tuple)) else 1
                raise KVStoreError(
                    f'kv.{op}: {len(key)} keys {list(key)} but {n} {what}s: pass '
                    f'one {what} (or one list of {what}s) per key')
            raw = list(zip(key, value))
        else:
            raw = [(key, value)]
        key_type, grouped = self._key_type, {}
        for k, v in raw:
            k, key_type = self._check_key(op, k, key_type)
            arrays = list(v) if isinstance(v, (list, tuple)) else [v]
            if not arrays:
                raise KVStoreError(f'kv.{op}: no {what} given for key {k!r}')
            for a in arrays:
                if not isinstance(a, NDArray):
                    raise KVStoreError(f'kv.{op}: the {what} for key {k!r} is a '
                                       f'{type(a).__name__}; pass NDArrays')
                if a.stype != 'default':
                    raise KVStoreError(f'kv.{op}: key {k!r}: only dense arrays '
                                       f'are supported, got stype {a.stype!r}')
                check_context(a.context)
            grouped.setdefault(k, []).extend(arrays)
        return list(grouped.items()), key_type

    def _check_known(self, op, pairs, what):
        for k, arrays in pairs:
            if k not in self._meta:
                raise KVStoreError(f'kv.{op}: key {k!r} has not been initialized: '
                                   f'call kv.init({k!r}, value) first')
            shape, dtype = self._meta[k]
            for a in arrays:
                if a.shape != shape or a.dtype != dtype:
                    raise KVStoreError(
                        f'kv.{op}: key {k!r} holds {dtype.__name__} of shape '
                        f'{shape}, but the {what} on {a.context} is '
                        f'{a.dtype.__name__} of shape {a.shape}')

    # -- the operations ----------------------------------------------------------------
    def init(self, key, value):
        """Store a copy of ``value`` under ``key`` (each key once).

        ``key`` may be a list, with one value per key.
        """
        pairs, key_type = self._pairs('init', key, value)
        for k, arrays in pairs:
            # a key twice in one call (or one key with a list of values) is
            # a duplicate too, as in MXNet: which value would be stored?
            if k in self._meta or len(arrays) > 1:
                raise KVStoreError(
                    f'kv.init: duplicate init of key {k!r}: call kv.init or '
                    f'kv.broadcast once per key, with one value')
        self._key_type = key_type
        for k, arrays in pairs:
            self._meta[k] = (arrays[0].shape, arrays[0].dtype)
            self._init_key(k, arrays[0])

    def push(self, key, value, priority=0):
        """Sum the values of each key (one per device) into the store.

        Without an updater the sum replaces the stored value; with one,
        ``updater(key, sum, stored)`` updates it.  Returns at once: the work
        is queued on the devices' engine streams.
        """
        pairs, _ = self._pairs('push', key, value)
        self._check_known('push', pairs, 'value')
        self._check_compressible('push', pairs)
        self._push_keys(pairs)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the stored value of each key into ``out`` (one or many arrays)."""
        if out is None:
            raise KVStoreError('kv.pull: pass out=, the array(s) to copy into')
        pairs, _ = self._pairs('pull', key, out, 'output')
        self._check_known('pull', pairs, 'output')
        self._pull_keys(pairs)

    def pushpull(self, key, value, out=None, priority=0):
        """``push`` then ``pull``: all-reduce when no updater is set.

        ``out`` defaults to ``value`` itself (in place).
        """
        pairs, _ = self._pairs('pushpull', key, value)
        outs = pairs if out is None else self._pairs('pushpull', key, out, 'output')[0]
        self._check_known('pushpull', pairs, 'value')
        self._check_known('pushpull', outs, 'output')
        self._check_compressible('pushpull', pairs)
        self._push_keys(pairs)
        self._pull_keys(outs)

    def broadcast(self, key, value, out, priority=0):
        """``init(key, value)`` then ``pull(key, out)``: every ``out`` gets ``value``."""
        vpairs, key_type = self._pairs('broadcast', key, value)
        opairs, _ = self._pairs('broadcast', key, out, 'output')
        for (k, arrays), (_, outs) in zip(vpairs, opairs):
            for o in outs:
                if o.shape != arrays[0].shape or o.dtype != arrays[0].dtype:
                    raise KVStoreError(
                        f'kv.broadcast: key {k!r}: the value is '
                        f'{arrays[0].dtype.__name__} of shape {arrays[0].shape}, '
                        f'an output on {o.context} is {o.dtype.__name__} of '
                        f'shape {o.shape}')
        self.init(key, value)
        self._pull_keys(opairs)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """MXNet's pull of some rows of a row_sparse value: not here."""
        raise NotImplementedError('row_sparse_pull: d2lmini has only dense '
                                  'storage; use kv.pull')

    def set_gradient_compression(self, compression_params):
        """Send gradients as 2 bits an element, with error feedback
        (:mod:`.compression`): ``{'type': '2bit', 'threshold': 0.5}``.

        As MXNet: for the ``'device'`` stores (what each device sends to the
        one that sums) and the ``dist`` ones (what a worker sends to the
        servers; pulls are not compressed), float32 values only.  Call it
        before the first push (``gluon.Trainer(compression_params=...)``
        does); calling it again changes the threshold, the residuals stay.
        (MXNet's dist stores refuse ``pushpull`` with compression, which
        its own Trainer calls; here ``pushpull`` is a compressed push and a
        pull on every store.)
        """
        if 'device' not in self._type and 'dist' not in self._type:
            raise KVStoreError(f'Gradient compression is not supported for this '
                               f'type of kvstore ({self._type!r}: use a '
                               f"'device' or 'dist' store)")
        self._compression = _compression.GradientCompression(compression_params)

    def _check_compressible(self, op, pairs):
        if self._compression is None:
            return
        for k, arrays in pairs:
            if arrays[0].dtype != np.float32:
                raise KVStoreError(
                    f'kv.{op}: key {k!r} holds {arrays[0].dtype.__name__}: Gradient '
                    f'compression is only supported for float32 type of parameters')

    def _reinit(self, key, value):
        """Store ``value`` again under the known ``key`` (same shape and
        dtype): a Trainer that is reset (its parameters were loaded) and
        reuses this store object broadcasts through here."""
        pairs, _ = self._pairs('init', key, value)
        self._check_known('init', pairs, 'value')
        for k, arrays in pairs:
            self._init_key(k, arrays[0])

    # -- updates on the store ---------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Update stored weights with ``optimizer`` at every push."""
        if not isinstance(optimizer, opt.Optimizer):
            raise TypeError(f'set_optimizer expects an Optimizer, got '
                            f'{type(optimizer).__name__}')
        self._set_updater(opt.get_updater(optimizer))

    def _set_updater(self, updater):
        """``updater(key, recv, stored)`` runs at every push (in place on ``stored``)."""
        if not callable(updater):
            raise TypeError(f'the updater must be callable, got {updater!r}')
        self._updater = updater

    def _move_state(self, key, ctx, old_ctx):
        """Move the optimizer state of ``key`` and its update count (the
        optimizer counts per device) from ``old_ctx`` to ``ctx``."""
        states = getattr(self._updater, 'states', None)
        if states and states.get(key) is not None:
            states[key] = _on(states[key], ctx)
        o = getattr(self._updater, 'optimizer', None)
        counts = getattr(o, '_all_index_update_counts', {})
        if key in counts.get(old_ctx, {}):
            counts.setdefault(ctx, {})[key] = counts[old_ctx][key]

    def _optimizer_updater(self, op):
        upd = self._updater
        if upd is None or not hasattr(upd, 'states'):
            raise KVStoreError(f'kv.{op}: this store has no optimizer: call '
                               f'kv.set_optimizer(...) first')
        return upd

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer's states (and, with ``dump_optimizer``, its
        hyperparameters and counters) to ``fname``; no pickle inside."""
        upd = self._optimizer_updater('save_optimizer_states')
        _states.save(fname, upd, dump_optimizer=dump_optimizer)

    def load_optimizer_states(self, fname):
        """Read what :meth:`save_optimizer_states` (or ``Trainer.save_states``)
        wrote; each state goes to the device of its stored weight."""
        upd = self._optimizer_updater('load_optimizer_states')
        _states.load(fname, [(upd, self._state_context)],
                     shape_of=lambda i: self._meta[i][0] if i in self._meta else None,
                     contexts={self._state_context(k) for k in self._meta})

    # -- transport: where values are reduced and kept ------------------------------
    def _push_keys(self, pairs):
        """Push ``[(key, values)]``: a key at a time, unless a store can do better."""
        for k, arrays in pairs:
            self._push_key(k, arrays)

    def _pull_keys(self, pairs):
        """Pull ``[(key, outs)]``: a key at a time, unless a store can do better."""
        for k, arrays in pairs:
            self._pull_key(k, arrays)

    def _init_key(self, key, value):
        raise NotImplementedError()

    def _push_key(self, key, values):
        raise NotImplementedError()

    def _pull_key(self, key, outs):
        raise NotImplementedError()

    def _state_context(self, key):
        return cpu(0)
