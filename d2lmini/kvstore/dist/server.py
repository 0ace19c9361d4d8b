"""A server: holds a share of the keys, sums the workers' pushes, updates.

Each key (or, for a big array, each *part* of it, see
:func:`d2lmini.kvstore.dist.store.partition`) lives on one server.  What a
push does depends on the mode the worker's store was created with:

* ``sync`` (``dist_sync``): pushes of a key are summed until every worker
  has pushed it once; then the sum updates the stored value (the optimizer,
  or a plain replace without one) and only then are the pushes answered.
  A worker's pull waits for its push's answer, so every worker pulls the
  same, updated value.  A worker that pushes a key twice before the others
  pushed it once has its second push kept for the next round.
* ``async`` (``dist_async``): every push updates at once and is answered at
  once; workers read whatever the value is when their pull arrives.

A push compressed by the worker (``kv.set_gradient_compression``) says so
in its header and is decompressed as it arrives, before it is summed or
applied, as MXNet's server does.

The optimizer comes from a worker as *data* (its name and
hyper-parameters, :func:`optimizer_spec`), never as pickled code, and its
state stays on the server.  The server is one loop over two sockets: a
ROUTER for the workers' requests and a DEALER to the scheduler
(registration, heartbeats, news of dead nodes).  A request it cannot use
(unsigned, replayed, malformed, or asking for what cannot be) is logged and
answered with an error, which the worker raises; no request stops it.
"""
import collections
import logging
import os
import time

import numpy as np
import zmq

from ... import lr_scheduler as _lrs
from ... import optimizer as opt
from ...context import cpu
from ...ndarray import ndarray as _nd
from .. import states as _states
from ..compression import decompress_push
from . import wire
from .config import DistributedError
from .scheduler import join
from .trace import Tracer

__all__ = ['Server', 'optimizer_spec', 'optimizer_from_spec']
log = logging.getLogger('d2lmini.kvstore.dist')


# -- the optimizer as data ---------------------------------------------------------
def _jsonable(v):
    return v is None or isinstance(v, (bool, int, float, str)) or \
        isinstance(v, (list, tuple)) and all(_jsonable(x) for x in v)


def optimizer_spec(o):
    """What a server needs to rebuild optimizer ``o``: JSON-able data only."""
    sched = o.lr_scheduler
    if sched is not None and type(sched).__module__ != _lrs.__name__:
        raise DistributedError(
            f'set_optimizer: the servers can rebuild only the schedulers of '
            f'mx.lr_scheduler, not {type(sched).__name__} (nothing is pickled)')
    mults = {}
    for i, p in o.param_dict.items():
        mults[str(i)] = [float(getattr(p, 'lr_mult', 1.0)),
                         float(getattr(p, 'wd_mult', 1.0))]
    return {'name': type(o).__name__.lower(), 'hyper': o._hyper(),
            'num_update': o.num_update, 'mults': mults,
            'lr_mult': {str(k): v for k, v in o.lr_mult.items()},
            'wd_mult': {str(k): v for k, v in o.wd_mult.items()},
            'lr_scheduler': None if sched is None else
            {'class': type(sched).__name__,
             'state': {k: v for k, v in vars(sched).items() if _jsonable(v)}}}


def _check_spec(spec):
    """Raise ValueError unless ``spec`` has the form :func:`optimizer_spec`
    gives (it comes from the network: nothing in it is trusted)."""
    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    def mapping(name, ok):
        d = spec.get(name, {})
        if not isinstance(d, dict) or not all(ok(v) for v in d.values()):
            raise ValueError(f'optimizer spec: {name!r} must map keys to '
                             f'numbers, got {str(d)[:60]}')
    if not isinstance(spec, dict) or not isinstance(spec.get('name'), str) or \
            not isinstance(spec.get('hyper'), dict) or 'lr' not in spec['hyper']:
        raise ValueError(f'not an optimizer spec: {str(spec)[:80]}')
    for k, v in spec['hyper'].items():
        if not (v is None or isinstance(v, (bool, str)) or number(v)):
            raise ValueError(f'optimizer spec: hyper-parameter {k}={str(v)[:40]}')
    if not (spec.get('num_update') is None or isinstance(spec['num_update'], int)):
        raise ValueError('optimizer spec: num_update must be an int')
    mapping('lr_mult', number)
    mapping('wd_mult', number)
    mapping('mults', lambda v: isinstance(v, list) and len(v) == 2 and
            all(number(x) for x in v))
    s = spec.get('lr_scheduler')
    if s is not None and not (isinstance(s, dict) and isinstance(s.get('class'), str)
                              and isinstance(s.get('state'), dict)):
        raise ValueError(f'optimizer spec: bad lr_scheduler {str(s)[:60]}')


def optimizer_from_spec(spec, key_type=int):
    """The optimizer :func:`optimizer_spec` described."""
    _check_spec(spec)
    hyper = dict(spec['hyper'])
    hyper['learning_rate'] = hyper.pop('lr')
    o = opt.create(spec['name'], **hyper)
    s = spec.get('lr_scheduler')
    if s is not None:
        cls = getattr(_lrs, s['class'], None)
        if not (isinstance(cls, type) and issubclass(cls, _lrs.LRScheduler)):
            raise DistributedError(f'unknown lr_scheduler {s["class"]!r}')
        o.lr_scheduler = cls.__new__(cls)
        o.lr_scheduler.__dict__.update(s['state'])
    o.num_update = spec.get('num_update', o.num_update)
    k = (lambda s: s) if key_type is str else int
    o.set_lr_mult({k(i): v for i, v in spec.get('lr_mult', {}).items()})
    o.set_wd_mult({k(i): v for i, v in spec.get('wd_mult', {}).items()})
    for i, (lr, wd) in spec.get('mults', {}).items():
        o.lr_mult[k(i)], o.wd_mult[k(i)] = lr, wd
    return o


class _Round:
    """The pushes of one key in the current dist_sync round."""

    def __init__(self, value):
        # a received frame is ours to write: no copy unless it is read-only
        self.total = value if value.flags.writeable else np.array(value)
        self.pushed = set()                   # worker ranks
        self.waiting = []                     # (ident, seq) to answer


class Server:
    def __init__(self, cfg, context=None):
        self.cfg = cfg
        self.ctx = context or zmq.Context.instance()
        self.router = wire.limit(self.ctx.socket(zmq.ROUTER))
        self.router.setsockopt(zmq.LINGER, 2000)
        try:
            self.port = self.router.bind_to_random_port(f'tcp://{cfg.node_host}')
        except zmq.ZMQError as e:
            self.router.close(0)
            raise DistributedError(f'server: cannot listen on {cfg.node_host}: '
                                   f'{e} (is DMLC_NODE_HOST an address of this '
                                   f'machine?)') from None
        self.sched = wire.limit(self.ctx.socket(zmq.DEALER), wire.SCHEDULER_FRAME)
        self.sched.setsockopt(zmq.LINGER, 2000)
        self.sched.connect(cfg.scheduler_address)
        # the workers address it as host:port; the scheduler by its sid
        self.chan = wire.Channel(cfg.secret, name=f'{cfg.node_host}:{self.port}')
        self.sched_chan = wire.Channel(cfg.secret)
        self.sid_of = {}                      # a worker socket's identity -> sid
        info = join(cfg, self.sched, self.sched_chan, self.port)
        self.rank, self.name = info['rank'], info['node']
        self.num_worker = info['num_worker']
        self.trace = Tracer(cfg.trace_dir, self.name)
        self.store = {}                       # (key, part) -> NDArray on cpu(0)
        self.rounds = {}                      # (key, part) -> _Round
        self.backlog = collections.defaultdict(collections.deque)
        self.left = set()                     # ranks of workers that finished
        self.sending = collections.defaultdict(list)  # (key, part) -> trackers
        self.updater = None
        self._ready = []                      # (kp, total, [(ident, seq)]) to apply
        self.failure = None
        self._acked = None                    # when the scheduler last answered

    def __str__(self):
        return f'{self.name} (pid {os.getpid()} on {self.cfg.node_host})'

    def _send(self, ident, op, arrays=(), **meta):
        frames = self.chan.pack(op, arrays, dest=self.sid_of.get(ident), **meta)
        return wire.send(self.router, frames, to=ident, track=bool(arrays))

    # -- the loop ------------------------------------------------------------------
    def run(self):
        """Serve until the scheduler says stop (returns) or a failure (raises)."""
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.sched, zmq.POLLIN)
        interval = self.cfg.heartbeat_interval
        last_hb = last_ack = time.monotonic()
        try:
            while True:
                events = dict(poller.poll(int(interval * 250)))
                if self.sched in events and self._from_scheduler():
                    return
                if self.router in events:
                    for _ in range(256):              # drain, update, heartbeat
                        self._from_worker()
                        if not self.router.poll(0):
                            break
                    self._apply_ready()
                now = time.monotonic()
                if self._acked is not None:
                    last_ack, self._acked = self._acked, None
                if now - last_hb >= interval:
                    wire.send(self.sched, self.sched_chan.pack(
                        'hb', dest=self.cfg.scheduler_address, node=self.name))
                    last_hb = now
                if now - last_ack > self.cfg.heartbeat_timeout:
                    self._fail(f'{self}: the scheduler at '
                               f'{self.cfg.scheduler_address} has not answered '
                               f'for {now - last_ack:.0f} s')
        finally:
            self.trace.close()
            self.router.close()               # (its last answers still leave)
            # the loop ends when the scheduler said stop or dead, or fell
            # silent: a heartbeat still queued for it is not worth a wait
            self.sched.close(linger=0)

    def _fail(self, message):
        """Answer every waiting push with the error, then raise it."""
        self.failure = message
        waiting = [w for rnd in self.rounds.values() for w in rnd.waiting]
        waiting += [w for _, _, ws in self._ready for w in ws]
        for ident, seq in waiting:
            self._send(ident, 'error', seq=seq, message=message)
        self.rounds.clear()
        self._ready = []
        raise DistributedError(message)

    def _from_scheduler(self):
        try:
            _, h, _ = wire.recv(self.sched, self.sched_chan)
        except wire.BadMessage as e:
            log.warning('%s: rejected a message from the scheduler: %s', self, e)
            return False
        op = h['op']
        if op == 'left' and h.get('rank') is None:
            log.warning('%s: rejected a left message without a rank', self)
            return False
        if op == 'hb_ok':
            self._acked = time.monotonic()
        elif op == 'stop':
            return True
        elif op == 'dead':
            self._fail(h.get('message', 'a node died'))
        elif op == 'left':
            self.left.add(h['rank'])
            for kp, rnd in list(self.rounds.items()):
                self._check_complete(kp, rnd)
        return False

    def _check_complete(self, kp, rnd):
        """A round that waits for a worker who has finished never completes."""
        gone = sorted(self.left - rnd.pushed)
        if gone:
            self._fail(f'worker {gone[0]} finished without pushing key {kp[0]!r} '
                       f'while the others did (dist_sync needs every worker to '
                       f'push every key equally often: give the workers the same '
                       f'number of batches)')

    def _from_worker(self):
        try:
            ident, h, arrays = wire.recv(self.router, self.chan, routed=True)
        except wire.BadMessage as e:
            log.warning('%s: rejected a message: %s', self, e)
            return
        except zmq.ZMQError as e:
            log.warning('%s: receive failed: %s', self, e)
            return
        if h.get('sid') is not None:
            self.sid_of[ident] = h['sid']
        seq, t0 = h.get('seq'), time.time()
        try:
            handler = getattr(self, '_op_' + h['op'], None)
            if handler is None:
                raise DistributedError(f'unknown op {h["op"]!r}')
            if seq is None:
                raise ValueError('a request without seq')
            handler(ident, h, arrays)
            self.trace.record(h['op'], t0, key=h.get('key'), rank=h.get('rank'))
        except DistributedError as e:
            self._send(ident, 'error', seq=seq, message=f'{self}: {e}')
        except Exception as e:                # never die of a request
            log.warning('%s: bad %r request: %s: %s', self, h['op'],
                        type(e).__name__, e)
            self._send(ident, 'error', seq=seq,
                       message=f'{self}: bad {h["op"]!r} request: '
                               f'{type(e).__name__}: {e}')

    # -- the operations ------------------------------------------------------------
    def _kp(self, h):
        if h.get('key') is None or h.get('part') is None:
            raise ValueError(f'{h["op"]!r} needs a key and a part')
        return h['key'], h['part']

    @staticmethod
    def _one(arrays, op):
        if len(arrays) != 1:
            raise ValueError(f'{op!r} carries one array, not {len(arrays)}')
        return arrays[0]

    def _stored(self, kp):
        if kp not in self.store:
            raise DistributedError(f'key {kp[0]!r} (part {kp[1]}) was never '
                                   f'initialized on this server: call kv.init first')
        return self.store[kp]

    def _op_hello(self, ident, h, arrays):
        self._send(ident, 'ok', seq=h['seq'])

    def _op_init(self, ident, h, arrays):
        value = self._one(arrays, 'init')
        self.store[self._kp(h)] = _nd.array(value, ctx=cpu(0), dtype=value.dtype)
        self._send(ident, 'ok', seq=h['seq'])

    def _op_pull(self, ident, h, arrays):
        kp = self._kp(h)
        # ZeroMQ reads the stored array in place while it sends (no copy);
        # an update of this key first waits until it has finished (_apply)
        tracker = self._send(ident, 'value', [self._stored(kp)._value()], seq=h['seq'])
        self.sending[kp] = [t for t in self.sending[kp] if not t.done] + [tracker]

    def _op_push(self, ident, h, arrays):
        value = self._one(arrays, 'push')
        kp = self._kp(h)
        stored = self._stored(kp)
        if h.get('compression') is not None:     # 2-bit words: decompress first
            if stored.dtype != np.float32:
                raise DistributedError(f'a compressed push to key {kp[0]!r}, which '
                                       f'holds {stored.dtype.__name__}: only float32 '
                                       f'values are compressed')
            value = decompress_push(h['compression'], h.get('threshold'), value,
                                    stored.size).reshape(stored.shape)
        if value.shape != stored.shape or value.dtype != stored.dtype:
            raise DistributedError(f'push of {value.dtype}{list(value.shape)} to '
                                   f'key {kp[0]!r}, which holds {stored.dtype.__name__}'
                                   f'{list(stored.shape)}')
        if h.get('sync', True):
            rank = h.get('rank')
            if rank is None or rank >= self.num_worker:
                raise ValueError(f'push from rank {rank!r} (there are '
                                 f'{self.num_worker} workers)')
            self._push_sync(kp, rank, ident, h['seq'], value)
        elif self.updater is None:
            # MXNet's server: "Updater needs to be set for async mode"
            raise DistributedError(
                'dist_async needs an optimizer on the servers (a push is '
                'applied as it arrives, so there is no sum to store): call '
                'kv.set_optimizer(mx.optimizer.create(...)) before the first push')
        else:
            self._ready.append((kp, value, [(ident, h['seq'])]))

    def _push_sync(self, kp, rank, ident, seq, value):
        rnd = self.rounds.get(kp)
        if rnd is not None and rank in rnd.pushed:     # early: the next round
            self.backlog[kp].append((rank, ident, seq, np.array(value)))
            return
        if rnd is None:
            rnd = self.rounds[kp] = _Round(value)
        else:
            rnd.total += value
        rnd.pushed.add(rank)
        rnd.waiting.append((ident, seq))
        if len(rnd.pushed) < self.num_worker:
            self._check_complete(kp, rnd)
            return
        del self.rounds[kp]
        self._ready.append((kp, rnd.total, rnd.waiting))
        queued, self.backlog[kp] = self.backlog[kp], collections.deque()
        for item in queued:
            self._push_sync(kp, *item)

    def _apply_ready(self):
        """Apply every update that is ready, then answer its pushes.

        Called once the requests that had arrived are handled, so that the
        updates of all the keys a step pushed run as one fused optimizer
        call (one engine operation, not one per key).  A key twice in the
        list (dist_async, or a backlog round) is applied in order.
        """
        while self._ready:
            batch, later, seen = [], [], set()
            for item in self._ready:
                (later if item[0] in seen else batch).append(item)
                seen.add(item[0])
            self._ready = later
            op, why = 'ok', {}
            try:
                self._apply([(kp, total) for kp, total, _ in batch])
            except Exception as e:       # e.g. an optimizer that cannot update
                log.error('%s: the update of keys %s failed: %s: %s', self,
                          [kp[0] for kp, _, _ in batch], type(e).__name__, e)
                op, why = 'error', {'message': f'{self}: the update failed: '
                                               f'{type(e).__name__}: {e}'}
            for _, _, waiting in batch:
                for ident, seq in waiting:
                    self._send(ident, op, seq=seq, **why)

    def _apply(self, updates):
        t0 = time.time()
        if self.updater is None:                  # the sum becomes the value
            for kp, total in updates:
                self.store[kp] = _nd.from_numpy(total, zero_copy=True)
                self.sending.pop(kp, None)
            return
        for kp, _ in updates:
            for tracker in self.sending.pop(kp, []):  # answers still being sent
                try:
                    tracker.wait(self.cfg.heartbeat_timeout)
                except zmq.NotDone:
                    log.warning('%s: an answer for key %r is still unsent after '
                                '%g s', self, kp[0], self.cfg.heartbeat_timeout)
        self.updater([kp[0] for kp, _ in updates],
                     [_nd.from_numpy(total, zero_copy=True) for _, total in updates],
                     [self.store[kp] for kp, _ in updates])
        if self.trace:
            for kp, _ in updates:
                self.store[kp].wait_to_read()
            self.trace.record('update', t0, keys=[kp[0] for kp, _ in updates])

    def _op_set_optimizer(self, ident, h, arrays):
        if h.get('spec') is None:
            raise ValueError('set_optimizer without a spec')
        o = optimizer_from_spec(h['spec'], str if h.get('key_type') == 'str' else int)
        self.updater = opt.get_updater(o)
        self._send(ident, 'ok', seq=h['seq'])

    def _op_get_states(self, ident, h, arrays):
        """Every optimizer state of this server: layouts as data, arrays as frames."""
        if self.updater is None:
            raise DistributedError('no optimizer on the servers: call '
                                   'kv.set_optimizer first')
        layout, flat = {}, []
        for key, st in self.updater.states.items():
            part = next(p for (k, p) in self.store if k == key)
            layout[f'{type(key).__name__}:{key}:{part}'] = _states._layout(st)
            flat += [a.asnumpy() for a in opt._states(st)]
        o = self.updater.optimizer
        self._send(ident, 'states', flat, seq=h['seq'], layout=layout,
                   counts={str(k): v for k, v in _states.update_counts(o).items()},
                   num_update=o.num_update)

    def _op_set_states(self, ident, h, arrays):
        """States (for this server's parts) and counters, as ``get_states`` sent."""
        if self.updater is None:
            raise DistributedError('no optimizer on the servers: call '
                                   'kv.set_optimizer first')
        if h.get('layout') is None or h.get('counts') is None or \
                h.get('num_update') is None:
            raise ValueError('set_states needs layout, counts and num_update')
        o, it = self.updater.optimizer, iter(arrays)
        counts = {(int(k) if h.get('key_type') != 'str' else k): int(v)
                  for k, v in h['counts'].items()}
        states = {}                   # (built whole before anything changes)
        for name, kind in h['layout'].items():
            kt, key, _ = name.split(':', 2)
            key = int(key) if kt == 'int' else key
            states[key] = _states._build(kind, (_nd.array(a, ctx=cpu(0), dtype=a.dtype) for a in it))
        if next(it, None) is not None:
            raise ValueError('set_states: more arrays than the layout lists')
        self.updater.states = states
        o._all_index_update_counts = {None: counts, cpu(0): dict(counts)}
        o._index_update_count = counts
        o.num_update = h['num_update']
        self._send(ident, 'ok', seq=h['seq'])
