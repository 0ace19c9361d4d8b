"""The scheduler: rendezvous, barriers, and the one who notices deaths.

It is the only address everybody knows (``DMLC_PS_ROOT_URI:PORT``).  It

1. waits until S servers and W workers have registered, gives each a rank,
   and tells every node where the servers listen;
2. answers ``kv.barrier()`` once every worker has asked;
3. watches heartbeats: a node silent for ``PS_HEARTBEAT_TIMEOUT`` seconds
   is dead, and every other node is told who it was (then the job ends:
   MXNet's parameter server cannot continue without a node either, but it
   hangs; this one fails in bounded time, with a name), and when every
   live worker has been blocked for long (a deadlock);
4. when every worker has said goodbye, tells the servers to stop and exits.

It is one loop on one ROUTER socket: no threads.  A message it cannot
use (unsigned, malformed, from nobody it knows) is logged and answered
with an error when its sender waits for an answer; no message stops it.
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
        self.beats = 0                # heartbeats received
        self.released = float('-inf')  # when its last barrier was released
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
        self.sock = wire.limit(self.ctx.socket(zmq.ROUTER), wire.SCHEDULER_FRAME)
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.chan = wire.Channel(cfg.secret, name=cfg.scheduler_address)
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
        self.sid_of = {}              # socket identity -> its Channel's sid
        self.refused = {}             # identity -> why its signature failed
        self.suspect = None           # a possible deadlock, to confirm

    # -- sending -------------------------------------------------------------------
    def _send(self, ident, op, **meta):
        wire.send(self.sock, self.chan.pack(op, dest=self.sid_of.get(ident), **meta),
                  to=ident)

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
        refused = ''
        if self.refused:
            refused = (f'; {len(self.refused)} peer(s) sent messages whose '
                       f'signature was refused ({next(iter(self.refused.values()))}): '
                       f'D2LMINI_PS_SECRET must be the same on every node')
        return (f'the scheduler waited {waited:.0f} s (PS_START_TIMEOUT) but only '
                f'{nw} of {self.cfg.num_worker} workers and {ns} of '
                f'{self.cfg.num_server} servers registered: did every process '
                f'start, with the same DMLC_PS_ROOT_URI/PORT and '
                f'DMLC_NUM_WORKER/SERVER?{refused}')

    def _check_heartbeats(self, now):
        timeout = self.cfg.heartbeat_timeout
        for n in self.servers + self.workers:
            if not n.done and now - n.last_seen > timeout:
                self._fail(f'{n} sent no heartbeat for '
                           f'{now - n.last_seen:.0f} s (PS_HEARTBEAT_TIMEOUT='
                           f'{timeout:g}): it died or hangs; '
                           f'the job cannot go on without it')
        self._check_deadlock(now, 2 * timeout)

    def _check_deadlock(self, now, limit):
        """Every worker alive, and every one blocked for more than ``limit``
        seconds: nobody will ever push what the others wait for (MXNet would
        hang here).

        A heartbeat says what its worker waited for when it was sent, so the
        picture may be up to a heartbeat old: a wait may just have ended
        (an answer arrived) and another worker have left since.  The verdict
        is therefore confirmed first: the same workers must stay blocked
        while each of them sends two more heartbeats, which no ended wait
        can do (a new wait cannot be ``limit`` old two heartbeats later).
        """
        live = [w for w in self.workers if not w.done]
        if not (live and all(w.waiting and now - w.waiting[1] > limit for w in live)):
            self.suspect = None
            return
        ranks = tuple(w.rank for w in live)
        if self.suspect is None or self.suspect[0] != ranks:
            self.suspect = (ranks, [w.beats for w in live])
            return
        if any(w.beats < b + 2 for w, b in zip(live, self.suspect[1])):
            return
        waits = '; '.join(f'worker {w.rank} in {w.waiting[0]}' for w in live)
        self._fail(f'deadlock: every worker has been waiting for more than '
                   f'{limit:g} s ({waits}): in dist_sync every worker '
                   f'must push the same keys and call barrier() equally often')

    def _receive(self):
        try:
            ident, h, _ = wire.recv(self.sock, self.chan, routed=True)
        except wire.BadMessage as e:
            log.warning('scheduler: rejected a message: %s', e)
            if isinstance(e, wire.BadSignature) and e.peer not in self.refused \
                    and len(self.refused) < 1000:
                # unsigned, so that a node with another secret can read why
                # it will never be registered (it cannot trust more than that)
                self.refused[e.peer] = str(e)
                wire.send(self.sock, wire.pack(
                    'rejected', message=f'the scheduler at '
                    f'{self.cfg.scheduler_address} refused {e}'), to=e.peer)
            return
        except zmq.ZMQError as e:
            log.warning('scheduler: receive failed: %s', e)
            return
        if h.get('sid') is not None:
            self.sid_of[ident] = h['sid']
        try:
            self._handle(ident, h)
        except DistributedError:
            raise                           # the job fails (_fail said so)
        except Exception as e:              # never die of a message
            log.warning('scheduler: bad %r message: %s: %s', h['op'],
                        type(e).__name__, e)
            if h.get('seq') is not None:
                self._send(ident, 'error', seq=h['seq'],
                           message=f'the scheduler refused a bad {h["op"]!r} '
                                   f'message: {e}')

    def _handle(self, ident, h):
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
            node.beats += 1
            w = h.get('waiting')
            since = None if w is None else now - (h.get('for_s') or 0)
            # a wait that began before its barrier was released has ended
            node.waiting = None if w is None or since < node.released else (w, since)
        elif op == 'barrier':
            if h.get('seq') is None:
                raise ValueError('a barrier without seq')
            self.waiting.append((ident, h['seq']))
            if len(self.waiting) == len(self.workers):
                for i, seq in self.waiting:
                    self._send(i, 'ok', seq=seq)
                    released = self.by_ident.get(i)
                    if released is not None:
                        released.released, released.waiting = now, None
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
        why = None
        if group is None:
            why = f'unknown role {role!r}'
        elif ident in self.by_ident:
            why = 'this socket has registered already'
        elif self.started is not None or len(group) >= limit:
            why = (f'all {limit} {role}s have registered already (DMLC_NUM_'
                   f'{role.upper()}={limit})')
        elif role == 'server' and (h.get('host') is None or h.get('port') is None):
            why = 'a server must say where it listens (host and port)'
        if why is not None:
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


def join(cfg, sock, chan, port=None):
    """Register this node through ``sock`` (a DEALER connected to the
    scheduler; ``chan`` its :class:`~.wire.Channel`) and wait for the job
    to start: returns the ``registered`` header (``rank``, ``node``,
    ``servers``, ``num_worker``...)."""
    wire.send(sock, chan.pack('register', dest=cfg.scheduler_address,
                              role=cfg.role, host=cfg.node_host, port=port,
                              pid=os.getpid(), wish=cfg.rank_wish))
    deadline = time.monotonic() + cfg.start_timeout
    while time.monotonic() < deadline:
        if not sock.poll(100):
            continue
        try:
            _, h, _ = wire.recv(sock, chan)
        except wire.BadMessage as e:
            refused = wire.notice(e.frames)
            if refused is not None:
                raise DistributedError(f'{cfg.role} (pid {os.getpid()}): '
                                       f'{refused}') from None
            log.warning('%s: rejected a message: %s', cfg.role, e)
            continue
        if h['op'] == 'registered':
            return h
        if h['op'] in ('error', 'dead', 'rejected'):
            raise DistributedError(f'{cfg.role} (pid {os.getpid()}): '
                                   f'{h.get("message")}')
    raise DistributedError(
        f'{cfg.role} (pid {os.getpid()}): the job did not start within '
        f'{cfg.start_timeout:g} s (PS_START_TIMEOUT): no answer from the '
        f'scheduler at {cfg.scheduler_address}, or not every node registered')
