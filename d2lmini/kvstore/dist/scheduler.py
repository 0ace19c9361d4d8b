"""The scheduler: rendezvous, barriers, and the one who notices deaths.

It is the only address everybody knows (``DMLC_PS_ROOT_URI:PORT``).  It

1. waits until S servers and W workers have registered, gives each a rank,
   and tells every node where the servers listen;
2. answers ``kv.barrier()`` once every worker has asked;
3. watches heartbeats: a node silent for ``PS_HEARTBEAT_TIMEOUT`` seconds
   is dead, and every other node is told who it was (then the job ends:
   MXNet's parameter server cannot continue without a node either, but it
   hangs; this one fails in bounded time, with a name);
4. when every worker has said goodbye, tells the servers to stop and exits.

It is one loop on one ROUTER socket: no threads.
"""
import logging
import os
import time

import zmq

from . import wire
from .config import DistributedError

__all__ = ['Scheduler']
log = logging.getLogger('d2lmini.kvstore.dist')


class _Node:
    def __init__(self, ident, role, host, port, pid, wish):
        self.ident, self.role, self.host, self.port = ident, role, host, port
        self.pid, self.wish, self.rank = pid, wish, None
        self.hb_ident = None          # a worker heartbeats from its own socket
        self.waiting = None           # (what, since): a worker blocked in a call
        self.last_seen = time.monotonic()
        self.done = False

    @property
    def name(self):
        return f'{self.role} {self.rank}'

    def __str__(self):
        return f'{self.role} {self.rank} (pid {self.pid} on {self.host})'


def _assign_ranks(nodes):
    """Ranks as asked (DMLC_*_ID) when every node asked for a distinct one in
    range, else in the order the nodes registered."""
    wishes = [n.wish for n in nodes]
    if all(w is not None for w in wishes) and sorted(wishes) == list(range(len(nodes))):
        for n in nodes:
            n.rank = n.wish
    else:
        for r, n in enumerate(nodes):
            n.rank = r
    return sorted(nodes, key=lambda n: n.rank)


class Scheduler:
    def __init__(self, cfg, context=None):
        self.cfg = cfg
        self.ctx = context or zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 2000)
        try:
            self.sock.bind(cfg.scheduler_address)
        except zmq.ZMQError as e:
            self.sock.close(0)
            raise DistributedError(
                f'the scheduler cannot listen on {cfg.scheduler_address}: {e} '
                f'(is DMLC_PS_ROOT_URI an address of this machine, and the port '
                f'free?)') from None
        self.by_ident = {}            # socket identity -> _Node
        self.workers, self.servers = [], []
        self.waiting = []             # (ident, seq) in kv.barrier()
        self.started = None           # monotonic time ranks were given

    # -- sending -------------------------------------------------------------------
    def _send(self, ident, op, **meta):
        wire.send(self.sock, wire.pack(op, self.cfg.secret, **meta), to=ident)

    def _tell_all(self, op, **meta):
        for n in self.servers + self.workers:
            if not n.done:
                for ident in {n.ident, n.hb_ident} - {None}:
                    self._send(ident, op, **meta)

    def _fail(self, message):
        """Tell everyone, then stop with ``message``."""
        log.error('%s', message)
        self._tell_all('dead', message=message)
        raise DistributedError(message)

    # -- the loop --------------------------------------------------------------------
    def run(self):
        """Serve until the workers are done (returns) or a node fails (raises)."""
        t0 = time.monotonic()
        try:
            while True:
                if self.sock.poll(100):
                    self._receive()
                now = time.monotonic()
                if self.started is None:
                    if now - t0 > self.cfg.start_timeout:
                        self._fail(self._missing(now - t0))
                    continue
                self._check_heartbeats(now)
                if all(w.done for w in self.workers):
                    self._tell_all('stop')
                    log.info('all %d workers finished; servers told to stop',
                             len(self.workers))
                    return
        finally:
            self.sock.close()

    def _missing(self, waited):
        nw = sum(n.role == 'worker' for n in self.by_ident.values())
        ns = len(self.by_ident) - nw
        return (f'the scheduler waited {waited:.0f} s (PS_START_TIMEOUT) but only '
                f'{nw} of {self.cfg.num_worker} workers and {ns} of '
                f'{self.cfg.num_server} servers registered: did every process '
                f'start, with the same DMLC_PS_ROOT_URI/PORT and '
                f'DMLC_NUM_WORKER/SERVER?')

    def _check_heartbeats(self, now):
        timeout = self.cfg.heartbeat_timeout
        for n in self.servers + self.workers:
            if not n.done and now - n.last_seen > timeout:
                self._fail(f'{n} sent no heartbeat for '
                           f'{now - n.last_seen:.0f} s (PS_HEARTBEAT_TIMEOUT='
                           f'{timeout:g}): it died or hangs; '
                           f'the job cannot go on without it')
        # every worker alive, and every one blocked for long: nobody will
        # ever push what the others wait for (MXNet would hang here)
        live = [w for w in self.workers if not w.done]
        if live and all(w.waiting and now - w.waiting[1] > 2 * timeout for w in live):
            waits = '; '.join(f'worker {w.rank} in {w.waiting[0]}' for w in live)
            self._fail(f'deadlock: every worker has been waiting for more than '
                       f'{2 * timeout:g} s ({waits}): in dist_sync every worker '
                       f'must push the same keys and call barrier() equally often')

    def _receive(self):
        try:
            ident, h, _ = wire.recv(self.sock, self.cfg.secret, routed=True)
        except wire.BadMessage as e:
            log.warning('scheduler: rejected a message: %s', e)
            return
        op = h['op']
        node = self.by_ident.get(ident)
        if op == 'register':
            return self._register(ident, h)
        if op == 'hb':            # may come from a worker's heartbeat socket
            node = next((n for n in self.workers + self.servers
                         if n.name == h.get('node')), None)
            if node is None:
                return
            if ident != node.ident:
                node.hb_ident = ident
        if node is None:
            log.warning('scheduler: %r from an unknown node ignored', op)
            return
        node.last_seen = now = time.monotonic()
        if op == 'hb':
            self._send(ident, 'hb_ok')
            w = h.get('waiting')
            node.waiting = None if w is None else (w, now - float(h.get('for_s', 0)))
        elif op == 'barrier':
            self.waiting.append((ident, h.get('seq')))
            if len(self.waiting) == len(self.workers):
                for i, seq in self.waiting:
                    self._send(i, 'ok', seq=seq)
                self.waiting = []
        elif op == 'abort':
            node.done = True
            self._send(ident, 'ok', seq=h.get('seq'))
            self._fail(f'{node} failed: {h.get("message")}')
        elif op == 'bye':
            node.done = True
            self._send(ident, 'ok', seq=h.get('seq'))
            for s in self.servers:
                self._send(s.ident, 'left', rank=node.rank)
            if self.waiting and not all(w.done for w in self.workers):
                self._fail(f'{node} finished while other workers wait in '
                           f'kv.barrier(): every worker must call barrier() '
                           f'equally often')
        else:
            log.warning('scheduler: unknown op %r from %s', op, node)

    def _register(self, ident, h):
        role = h.get('role')
        group = {'worker': self.workers, 'server': self.servers}.get(role)
        limit = {'worker': self.cfg.num_worker, 'server': self.cfg.num_server}.get(role)
        if group is None or self.started is not None or len(group) >= limit:
            why = (f'unknown role {role!r}' if group is None else
                   f'all {limit} {role}s have registered already (DMLC_NUM_'
                   f'{role.upper()}={limit})')
            log.error('scheduler: refused a registration: %s', why)
            self._send(ident, 'error', message=f'registration refused: {why}')
            return
        node = _Node(ident, role, h.get('host'), h.get('port'), h.get('pid'),
                     h.get('wish'))
        group.append(node)
        self.by_ident[ident] = node
        if len(self.workers) == self.cfg.num_worker and \
                len(self.servers) == self.cfg.num_server:
            self._start()

    def _start(self):
        self.servers = _assign_ranks(self.servers)
        self.workers = _assign_ranks(self.workers)
        addresses = [[s.host, s.port] for s in self.servers]
        now = time.monotonic()
        for n in self.servers + self.workers:
            n.last_seen = now
            self._send(n.ident, 'registered', rank=n.rank, node=n.name,
                       servers=addresses, num_worker=len(self.workers),
                       num_server=len(self.servers))
        self.started = now
        log.info('scheduler: %d servers and %d workers registered',
                 len(self.servers), len(self.workers))


def join(cfg, sock, port=None):
    """Register this node through ``sock`` (a DEALER connected to the
    scheduler) and wait for the job to start: returns the ``registered``
    header (``rank``, ``node``, ``servers``, ``num_worker``...)."""
    wire.send(sock, wire.pack('register', cfg.secret, role=cfg.role,
                              host=cfg.node_host, port=port, pid=os.getpid(),
                              wish=cfg.rank_wish))
    deadline = time.monotonic() + cfg.start_timeout
    while time.monotonic() < deadline:
        if not sock.poll(100):
            continue
        try:
            _, h, _ = wire.recv(sock, cfg.secret)
        except wire.BadMessage as e:
            log.warning('%s: rejected a message: %s', cfg.role, e)
            continue
        if h['op'] == 'registered':
            return h
        if h['op'] in ('error', 'dead'):
            raise DistributedError(f'{cfg.role} (pid {os.getpid()}): '
                                   f'{h.get("message")}')
    raise DistributedError(
        f'{cfg.role} (pid {os.getpid()}): the job did not start within '
        f'{cfg.start_timeout:g} s (PS_START_TIMEOUT): no answer from the '
        f'scheduler at {cfg.scheduler_address}, or not every node registered')
