"""``mx.kv.create('dist_sync')`` and friends: the KVStore front end over the network.

The same :class:`~d2lmini.kvstore.kvstore.KVStore` front end as the local
stores (keys, checks, lists of values), with the four transport methods
talking to the servers:

* ``_init_key``: rank 0 sends the value (every worker then pulls it, so all
  start from rank 0's weights, as in MXNet);
* ``_push_key``: sum this worker's devices (on ``cpu(0)``; on the first
  value's device for the ``_device`` variants), then send each part to its
  server; with ``set_gradient_compression``, as 2-bit words
  (:mod:`..compression`), which the server decompresses before it sums;
* ``_pull_key``: wait for this key's pushes to be answered, ask every part
  back, copy the whole into every output;
* ``set_optimizer``: rank 0 sends the optimizer, as data, to every server.

The four names are MXNet's: ``dist_sync`` / ``dist_async`` (sum on the
CPU), ``dist_sync_device`` (alias ``dist_device_sync``) and
``dist_device_async`` (sum on the devices).

Where a key lives (:func:`partition`, as MXNet's ``EncodeDefaultKey``): an
array of fewer than ``MXNET_KVSTORE_BIGARRAY_BOUND`` elements goes whole
to server ``key * 9973 % S``; a bigger one is cut into S nearly equal parts,
part i on server i, so every server carries 1/S of its traffic.
"""
import time
import zlib

import numpy as np

from ... import backend, collectives
from ... import optimizer as opt
from ...context import cpu
from ...ndarray import ndarray as _nd
from .. import compression
from .. import states as _states
from ..kvstore import KVStore
from .config import DistributedError
from .server import optimizer_spec
from .worker import connect

__all__ = ['DistKVStore', 'NAMES', 'partition']

NAMES = ('dist_sync', 'dist_async', 'dist_sync_device', 'dist_device_sync',
         'dist_device_async', 'dist_async_device', 'dist')


def partition(key, size, num_servers, bound):
    """``[(server, start, stop)]``: where the flat elements of ``key`` live."""
    if size < bound or num_servers == 1:
        h = key if isinstance(key, int) else zlib.crc32(key.encode())
        return [(h * 9973 % num_servers, 0, size)]
    edges = np.linspace(0, size, num_servers + 1).astype(int)
    return [(s, int(edges[s]), int(edges[s + 1])) for s in range(num_servers)]


class DistKVStore(KVStore):
    """A KVStore whose values live on parameter servers (MXNet's ``KVStoreDist``)."""

    def __init__(self, name='dist_sync'):
        if name not in NAMES:
            raise ValueError(f'DistKVStore is one of {NAMES}, got {name!r}')
        super().__init__(name)
        self._sync = 'async' not in name
        self._on_devices = 'device' in name
        try:
            self._node = connect()
        except DistributedError as e:
            raise DistributedError(f'mx.kv.create({name!r}): {e}') from None
        self._parts = {}              # key -> partition(...)
        self._pending = {}            # key -> seqs of unanswered pushes/inits
        self._residuals = {}          # key -> what gradient compression kept

    def __repr__(self):
        return (f'<DistKVStore {self._type!r}: worker {self.rank} of '
                f'{self.num_workers}, {self._node.num_servers} servers, '
                f'{len(self._meta)} keys>')

    @property
    def rank(self):
        return self._node.rank

    @property
    def num_workers(self):
        return self._node.num_workers

    def barrier(self):
        """Wait until every worker has called ``barrier()``."""
        self._node.barrier()

    _barrier = barrier

    # -- init: rank 0 writes, everyone waits ---------------------------------------
    def init(self, key, value):
        super().init(key, value)
        self._settle()

    def _reinit(self, key, value):
        super()._reinit(key, value)
        self._settle()

    def _settle(self):
        """Wait for rank 0's writes to be stored, then for every worker."""
        seqs = [s for k in list(self._pending) for s in self._pending.pop(k)]
        self._node.wait(seqs, 'kv.init')
        self._node.barrier()

    def _init_key(self, key, value):
        shape = self._meta[key][0]
        self._parts[key] = partition(key, int(np.prod(shape)),
                                     self._node.num_servers,
                                     self._node.cfg.bigarray_bound)
        if self.rank == 0:
            flat = backend.to_numpy(value._value()).reshape(-1)
            self._send(key, 'init', self._cut(key, flat))
            self._node.flush()

    def _cut(self, key, flat):
        return [flat[a:b] for _, a, b in self._parts[key]]

    def _send(self, key, op, pieces, **meta):
        """Send ``pieces[i]`` (an array) to the server of part ``i`` of ``key``."""
        seqs = [self._node.request(server, op, [piece], key=key, part=part, **meta)
                for part, ((server, _, _), piece) in enumerate(zip(self._parts[key],
                                                                    pieces))]
        self._pending.setdefault(key, []).extend(seqs)

    def _compressed(self, key, flat):
        """The 2-bit words of each part of ``flat`` + the residual of ``key``
        (kept on this worker's CPU, as MXNet's): each part is packed from
        its own first element, so a server reads its part alone."""
        residual = self._residuals.get(key)
        if residual is None:
            residual = self._residuals[key] = np.zeros(flat.size, np.float32)
        t = self._compression.threshold
        return [compression.quantize_2bit(flat[a:b], residual[a:b], t)
                for _, a, b in self._parts[key]]

    # -- push and pull ----------------------------------------------------------------
    def _push_key(self, key, values):
        t0 = time.time()
        if len(values) == 1:
            total = values[0]
        else:
            root = values[0].context if self._on_devices else cpu(0)
            total = collectives.reduce(values, root=root)
        # sent from the array's own memory (a GPU array: from a host copy);
        # the push returns once ZeroMQ has read it all, so the caller may
        # write the array again (as after an engine op has read it)
        flat = backend.to_numpy(total._value()).reshape(-1)
        if self._compression is None:
            pieces, meta = self._cut(key, flat), {}
        else:
            pieces, meta = self._compressed(key, flat), self._compression.header()
        node, before = self._node, self._node.bytes_sent['push']
        self._send(key, 'push', pieces, sync=self._sync, **meta)
        node.trace.record('push', t0, key=key, bytes=node.bytes_sent['push'] - before)

    def _push_keys(self, pairs):
        super()._push_keys(pairs)
        self._node.flush()

    def _pull_key(self, key, outs):
        self._pull_keys([(key, outs)])

    def _pull_keys(self, pairs):
        # every request leaves before the first answer is awaited, so the
        # round trips of many keys overlap
        node, t0 = self._node, time.time()
        node.wait([s for k, _ in pairs for s in self._pending.pop(k, [])],
                  f'kv.push of keys {[k for k, _ in pairs]}')
        asked = [(k, outs, [node.request(server, 'pull', key=k, part=part)
                            for part, (server, _, _) in enumerate(self._parts[k])])
                 for k, outs in pairs]
        for key, outs, seqs in asked:
            parts = [a[0] for _, a in node.wait(seqs, f'kv.pull of key {key!r}')]
            value = parts[0] if len(parts) == 1 else np.concatenate(parts)
            # a received frame is writable memory of ours: share it, copy once
            value = _nd.from_numpy(np.ascontiguousarray(value).reshape(self._meta[key][0]))
            for o in outs:
                o[:] = value
            node.trace.record('pull', t0, key=key)
            t0 = time.time()

    # -- the optimizer lives on the servers -----------------------------------------
    def set_optimizer(self, optimizer):
        """Send ``optimizer`` (name and hyper-parameters, as data) to every
        server; from now on each push updates the stored weights there."""
        if not isinstance(optimizer, opt.Optimizer):
            raise TypeError(f'set_optimizer expects an Optimizer, got '
                            f'{type(optimizer).__name__}')
        spec = optimizer_spec(optimizer)
        self._updater = opt.get_updater(optimizer)    # kept for its .optimizer
        if self.rank == 0:
            node = self._node
            node.wait([node.request(s, 'set_optimizer', spec=spec,
                                    key_type=self._key_name())
                       for s in range(node.num_servers)], 'kv.set_optimizer')
        self._node.barrier()

    def _set_updater(self, updater):
        raise DistributedError(
            'a dist store updates on the servers, which cannot run a Python '
            'function sent from a worker (nothing is pickled): use '
            'kv.set_optimizer(mx.optimizer.create(...))')

    def _key_name(self):
        return 'str' if self._key_type is str else 'int'

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Gather the optimizer states from every server into ``fname`` (the
        format of ``Trainer.save_states``)."""
        upd = self._optimizer_updater('save_optimizer_states')
        node = self._node
        answers = node.wait([node.request(s, 'get_states')
                             for s in range(node.num_servers)],
                            'kv.save_optimizer_states')
        pieces, counts, num_update = {}, {}, upd.optimizer.num_update
        for h, arrays in answers:
            it = iter(arrays)
            for name, kind in h['layout'].items():
                kt, key, part = name.split(':', 2)
                key = int(key) if kt == 'int' else key
                st = _states._build(kind, (_nd.array(a, ctx=cpu(0), dtype=a.dtype)
                                           for a in it))
                pieces.setdefault(key, {})[int(part)] = (kind, st)
            for k, v in h['counts'].items():
                k = k if self._key_type is str else int(k)
                counts[k] = max(v, counts.get(k, 0))
            num_update = max(num_update, h['num_update'])
        states = {}
        for key, parts in pieces.items():
            kind = parts[0][0]
            arrays = [list(opt._states(parts[p][1])) for p in sorted(parts)]
            shape = self._meta[key][0]
            whole = [_nd.array(np.concatenate([a[i].asnumpy().reshape(-1)
                                               for a in arrays]).reshape(shape),
                               ctx=cpu(0))
                     for i in range(len(arrays[0]))]
            states[key] = _states._build(kind, iter(whole))
        o = upd.optimizer
        o.num_update = num_update
        o._all_index_update_counts = {None: counts}
        o._index_update_count = counts
        holder = opt.get_updater(o)
        holder.states = states
        _states.save(fname, holder, dump_optimizer=dump_optimizer)

    def load_optimizer_states(self, fname):
        """Read ``fname`` and send every server the states of its parts."""
        upd = self._optimizer_updater('load_optimizer_states')
        holder = opt.get_updater(upd.optimizer)
        _states.load(fname, [(holder, cpu(0))],
                     shape_of=lambda k: self._meta[k][0] if k in self._meta else None)
        o = upd.optimizer
        counts = _states.update_counts(o)
        per_server = {}
        for key, st in holder.states.items():
            kind = _states._layout(st)
            flat = [a.asnumpy().reshape(-1) for a in opt._states(st)]
            for part, (server, a, b) in enumerate(self._parts[key]):
                layout, arrays = per_server.setdefault(server, ({}, []))
                layout[f'{type(key).__name__}:{key}:{part}'] = kind
                arrays += [f[a:b] for f in flat]
        node = self._node
        if self.rank == 0:
            node.wait([node.request(s, 'set_states', arrays,
                                    layout=layout, key_type=self._key_name(),
                                    counts={str(k): v for k, v in counts.items()},
                                    num_update=o.num_update)
                       for s, (layout, arrays) in per_server.items()],
                      'kv.load_optimizer_states')
        node.barrier()
