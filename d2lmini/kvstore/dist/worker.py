"""A worker's connection to the job: the scheduler, every server, heartbeats.

One per process (:func:`connect`), shared by every ``dist_*`` store made in
it.  Requests go out at once and are answered asynchronously; a *wait*
polls every socket until the answers it needs have arrived, and raises as
soon as something went wrong anywhere:

* a server answered with an error (a bad request, a worker that left...);
* the scheduler said a node died (it stopped sending heartbeats);
* the scheduler itself stopped answering our heartbeats.

Heartbeats come from a thread with a socket of its own, so that a worker
busy computing for minutes still counts as alive.  ZeroMQ sockets belong
to one thread each: the main thread never touches the heartbeat socket.
"""
import atexit
import collections
import itertools
import logging
import os
import sys
import threading
import time

import zmq

from . import wire
from .config import Config, DistributedError
from .scheduler import join
from .trace import Tracer

__all__ = ['connect', 'Worker']
log = logging.getLogger('d2lmini.kvstore.dist')
_worker = None


def connect(cfg=None):
    """This process's :class:`Worker` (made, and registered, on first use)."""
    global _worker
    if _worker is None or _worker.closed:
        cfg = cfg or Config.from_env()
        if cfg.role != 'worker':
            raise DistributedError(
                f"a dist store is made by workers, but DMLC_ROLE={cfg.role!r} "
                f"(servers and the scheduler run their loop on "
                f"'import d2lmini')")
        _worker = Worker(cfg)
        atexit.register(_worker.close)
        _previous_hook = sys.excepthook

        def hook(kind, value, tb):      # a worker that dies of an exception
            if _worker is not None:     # says so, instead of goodbye
                _worker.crashed = f'{kind.__name__}: {value}'
            _previous_hook(kind, value, tb)
        sys.excepthook = hook
    return _worker


class Worker:
    def __init__(self, cfg, context=None):
        self.cfg = cfg
        self.ctx = context or zmq.Context.instance()
        self.sched = self._dealer(cfg.scheduler_address, wire.SCHEDULER_FRAME)
        self._chan = {self.sched: wire.Channel(cfg.secret)}
        info = join(cfg, self.sched, self._chan[self.sched])
        self.rank, self.name = info['rank'], info['node']
        self.num_workers, self.num_servers = info['num_worker'], info['num_server']
        self.trace = Tracer(cfg.trace_dir, self.name)
        self.addresses = [f'{h}:{p}' for h, p in info['servers']]
        self.servers = [self._dealer(f'tcp://{a}') for a in self.addresses]
        self._chan.update((s, wire.Channel(cfg.secret)) for s in self.servers)
        self._dest = dict(zip(self.servers, self.addresses))
        self._dest[self.sched] = cfg.scheduler_address
        self._poller = zmq.Poller()
        for s in [self.sched] + self.servers:
            self._poller.register(s, zmq.POLLIN)
        self._seq = itertools.count()
        self.bytes_sent = collections.Counter()   # op -> bytes of its messages
        self._replies = {}                  # seq -> (header, arrays)
        self._unsent = []                   # trackers of arrays being sent
        self.failure = None                 # set by any thread; raised by waits
        self.waiting = None                 # (what, since): told in heartbeats
        self.crashed = None                 # the uncaught exception, at exit
        self.closed = False
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True,
                                      name='d2lmini-ps-heartbeat')
        self._beat.start()
        self._hello()

    def _hello(self):
        """Make sure every server answers at the address it announced."""
        seqs = [self.request(s, 'hello') for s in range(self.num_servers)]
        limit = self.cfg.heartbeat_timeout
        try:
            self.wait(seqs, 'the first contact with the servers', timeout=limit)
        except TimeoutError:
            silent = [a for s, a in zip(seqs, self.addresses) if s not in self._replies]
            self.crashed = (f'{self}: no answer in {limit:g} s from the server(s) '
                            f'at {", ".join(silent)}: the address a server '
                            f'announces (DMLC_NODE_HOST, default 127.0.0.1) must '
                            f'be one the workers can reach')
            self.close()                 # tells the scheduler: the job stops
            raise DistributedError(self.crashed) from None

    def __str__(self):
        return f'{self.name} (pid {os.getpid()})'

    def _dealer(self, address, limit=wire.FRAME + 64):
        s = wire.limit(self.ctx.socket(zmq.DEALER), limit)
        s.setsockopt(zmq.LINGER, 2000)
        s.connect(address)
        return s

    # -- requests --------------------------------------------------------------------
    def request(self, server, op, arrays=(), **meta):
        """Send ``op`` to server number ``server`` (None: the scheduler);
        returns the sequence number its answer will carry.

        The arrays are sent from their own memory (no copy): leave them
        unchanged until :meth:`flush` returns.
        """
        self._check()
        seq = next(self._seq)
        sock = self.sched if server is None else self.servers[server]
        frames = self._chan[sock].pack(op, arrays, dest=self._dest[sock], seq=seq,
                                       rank=self.rank, **meta)
        self.bytes_sent[op] += sum(memoryview(f).nbytes for f in frames)
        tracker = wire.send(sock, frames, track=bool(arrays))
        if tracker is not None:
            self._unsent.append(tracker)
        return seq

    def flush(self):
        """Wait until ZeroMQ has finished reading every array sent."""
        while self._unsent:
            self._check()
            try:
                self._unsent[0].wait(0.1)
                self._unsent.pop(0)
            except zmq.NotDone:
                pass

    def wait(self, seqs, what, timeout=None):
        """The answers ``[(header, arrays)]`` to ``seqs``, in order.

        Raises :class:`DistributedError` when an answer is an error or the
        job failed; never waits forever (a dead node is reported by the
        scheduler within ``PS_HEARTBEAT_TIMEOUT``); ``timeout`` seconds:
        TimeoutError.
        """
        missing = [s for s in seqs if s not in self._replies]
        self.waiting = (what, time.monotonic()) if missing else None
        try:
            while missing:
                self._check()
                if timeout is not None and time.monotonic() - self.waiting[1] > timeout:
                    raise TimeoutError(what)
                for sock, _ in self._poller.poll(100):
                    while sock.poll(0):
                        self._receive(sock)
                missing = [s for s in missing if s not in self._replies]
        finally:
            self.waiting = None
        out = [self._replies.pop(s) for s in seqs]
        for h, _ in out:
            if h['op'] == 'error':
                raise DistributedError(f'{what} failed on {self}: {h.get("message")}')
        return out

    def _read(self, sock, chan=None):
        """One message: ``(header, arrays)``, or None when it was rejected.
        News of a dead node (from the scheduler) becomes ``self.failure``."""
        try:
            _, h, arrays = wire.recv(sock, chan or self._chan[sock])
        except wire.BadMessage as e:
            log.warning('%s: rejected a message: %s', self, e)
            return None
        if h['op'] == 'dead':
            self.failure = h.get('message', 'a node died')
        return h, arrays

    def _receive(self, sock):
        got = self._read(sock)
        if got is not None and got[0]['op'] != 'dead' and got[0].get('seq') is not None:
            self._replies[got[0]['seq']] = got

    def _check(self):
        if self.failure is not None:
            raise DistributedError(f'{self}: the job failed: {self.failure}')
        if self.closed:
            raise DistributedError(f'{self}: the connection is closed')

    def barrier(self):
        """Return once every worker has called ``barrier``."""
        t0 = time.time()
        self.wait([self.request(None, 'barrier')], 'kv.barrier()')
        self.trace.record('barrier', t0)

    # -- heartbeats (own thread, own socket) --------------------------------------
    def _heartbeat(self):
        sock = self._dealer(self.cfg.scheduler_address, wire.SCHEDULER_FRAME)
        chan = wire.Channel(self.cfg.secret)
        interval, timeout = self.cfg.heartbeat_interval, self.cfg.heartbeat_timeout
        last_ack = time.monotonic()
        try:
            while not self._stop.is_set():
                waiting = self.waiting
                info = {} if waiting is None else \
                    {'waiting': waiting[0], 'for_s': time.monotonic() - waiting[1]}
                wire.send(sock, chan.pack('hb', dest=self.cfg.scheduler_address,
                                          node=self.name, **info))
                deadline = time.monotonic() + interval
                while time.monotonic() < deadline and not self._stop.is_set():
                    got = self._read(sock, chan) if sock.poll(50) else None
                    if got is not None and got[0]['op'] == 'hb_ok':
                        last_ack = time.monotonic()
                silent = time.monotonic() - last_ack
                if silent > timeout and self.failure is None:
                    self.failure = (f'the scheduler at {self.cfg.scheduler_address} '
                                    f'has not answered for {silent:.0f} s '
                                    f'(PS_HEARTBEAT_TIMEOUT={timeout:g})')
        finally:
            sock.close(0)

    # -- the end -----------------------------------------------------------------------
    def close(self):
        """Say goodbye to the scheduler (when every worker has, the servers
        stop) and close the sockets.  Called at exit; safe to call twice.
        After an uncaught exception it says that instead, and the scheduler
        stops the job at once, naming this worker and the exception."""
        if self.closed:
            return
        try:
            if self.failure is None:
                seq = self.request(None, 'bye') if self.crashed is None else \
                    self.request(None, 'abort', message=self.crashed)
                deadline = time.monotonic() + self.cfg.heartbeat_timeout
                while seq not in self._replies and self.failure is None and \
                        time.monotonic() < deadline:
                    if self.sched.poll(100):
                        self._receive(self.sched)
        finally:
            self.closed = True
            self.trace.close()
            self._stop.set()
            self._beat.join(timeout=2 * self.cfg.heartbeat_interval + 1)
            for s in [self.sched] + self.servers:
                s.close()
