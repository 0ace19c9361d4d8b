"""The front end's side of the workers: who is there, who is free, who died.

One ZeroMQ ROUTER socket, bound by the front end, hears every worker
(:mod:`d2lmini.serve.worker`), wherever it runs: a process this front end
started for one of its devices, or one started on another host.  A worker
says ``hello``; the pool sends it every model (graph and parameters, over
the wire); once it has ``loaded`` them all it is *ready*, and
:meth:`WorkerPool.acquire` can hand it out.  :meth:`WorkerPool.run` sends
it one batch and waits for the ``result``.

A worker is gone when it stops beating (no heartbeat for ``dead_after``
seconds), when the process this front end started for it exits, or when
it answers something that cannot be true (a result for another batch, of
the wrong length).  Its in-flight batch then fails with
:class:`WorkerLost`, which the batcher answers by trying the requests once
more on another worker; it leaves :meth:`describe` (``GET /models``), and
is listed in ``lost`` (the latest 100) and counted in ``lost_count``.

A worker may also be a thread of the front end's own process
(:class:`ThreadWorker`, ``--in-process``), as a Triton model instance is:
the same states and answers, with a queue instead of ZeroMQ.  It saves
the two trips through ZeroMQ and the checks of each message (about 1 ms a
batch, chapter 15), and pays with the GIL, which its forward pass shares
with the HTTP front end, and with no isolation: it cannot be killed
alone, and a crash of the process ends it.  Its copy of the models may
also run a batch on the loop's own thread (:meth:`WorkerPool.run_here`),
which saves even the hand-off to the thread and back; the batcher decides
when (:mod:`.batcher`).

Everything else runs on the front end's asyncio loop (the same one tornado
serves HTTP on): no locks, and a worker's state changes only between two
``await``\\ s.
"""
import asyncio
import collections
import itertools
import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import zmq
import zmq.asyncio

from ..kvstore.dist import wire
from ..launch.plan import _child_pythonpath

log = logging.getLogger('d2lmini.serve')
FRONTEND = 'frontend'       # the front end's name on the wire (a message's "to")
HEARTBEAT_S = 0.1           # how often a worker says it is alive


def secret():
    """The shared secret that signs every message (``D2LMINI_PS_SECRET``,
    the parameter server's), or None."""
    s = os.environ.get('D2LMINI_PS_SECRET')
    return s.encode() if s else None

__all__ = ['WorkerPool', 'ThreadWorker', 'WorkerLost', 'WorkerError', 'NoWorkers']


class WorkerLost(RuntimeError):
    """The worker running a batch died (or lied) before answering."""


class WorkerError(RuntimeError):
    """The worker ran the batch and the forward pass raised."""


class NoWorkers(RuntimeError):
    """No worker is alive to run a batch."""


def _fits(outs, n):
    """Whether ``outs`` can be the outputs of a batch of ``n``: at least one,
    each with ``n`` rows."""
    return bool(outs) and all(a.ndim > 0 and len(a) == n for a in outs)


class Worker:
    """The front end's record of one worker."""

    def __init__(self, peer, name, device, host, pid, sid):
        self.peer, self.name, self.device = peer, name, device
        self.host, self.pid, self.sid = host, pid, sid
        self.started = time.time()
        self.seen = time.monotonic()
        self.state = 'loading'            # -> ready <-> busy; dead
        self.loaded = set()
        self.batch = None                 # (id, future, n) while busy
        self.batches = 0
        self.proc = None                  # the Popen, for a local worker

    def describe(self):
        return {'id': self.name, 'device': self.device, 'host': self.host,
                'pid': self.pid, 'status': self.state.upper(),
                'startTime': time.strftime('%Y-%m-%dT%H:%M:%S',
                                           time.localtime(self.started)),
                'batches': self.batches,
                'gpu': self.device.startswith('gpu')}


class ThreadWorker(Worker):
    """A worker that is a thread of the front end's process: it loads the
    models itself (from the pool's files, no copy over the wire) and runs
    one batch at a time from its queue, answering on the loop."""

    def __init__(self, pool, name, device):
        super().__init__(None, name, device, socket.gethostname(), os.getpid(), None)
        self.pool, self.loop = pool, asyncio.get_running_loop()
        self.jobs = queue.SimpleQueue()
        self.predictors = {}              # model name -> Predictor, once loaded
        self.on_loop = 0                  # batches run on the loop's thread
        self.thread = threading.Thread(target=self._serve, name=f'serve-{name}',
                                       daemon=True)
        self.thread.start()

    def describe(self):
        from ..engine.cores import blas_threads
        return dict(super().describe(), inProcess=True, batchesOnLoop=self.on_loop,
                    blasThreads=blas_threads())

    def _answer(self, *args):
        try:
            self.loop.call_soon_threadsafe(self.pool._answer, self, *args)
        except RuntimeError:             # the loop closed: nobody to answer
            pass

    def _serve(self):
        from ..context import _from_env
        from .model import Predictor
        ctx = _from_env(self.device)
        predictors = self.predictors
        for files in self.pool.models.values():
            try:
                predictors[files.name] = Predictor(files, ctx)
                self._answer('loaded', files.name, None)
            except Exception as e:                     # noqa: BLE001 -- told back
                self._answer('failed', files.name, f'{type(e).__name__}: {e}')
                return
        while True:
            job = self.jobs.get()
            if job is None:
                return
            bid, model, x = job
            try:
                self._answer('result', bid, predictors[model](x))
            except Exception as e:                     # noqa: BLE001 -- told back
                self._answer('error', bid, f'{type(e).__name__}: {e}')


class WorkerPool:
    """Workers for ``models`` (name -> :class:`~d2lmini.serve.model.ModelFiles`).

    ``bind``: the address workers connect to (``127.0.0.1`` unless some
    run on other hosts); ``port`` 0 picks a free one (:attr:`address`).
    """

    def __init__(self, models, bind='127.0.0.1', port=0, secret=None,
                 dead_after=1.0, on_change=None):
        self.models, self.secret = models, secret
        self.dead_after = dead_after
        self.on_change = on_change or (lambda: None)
        self.workers = {}                 # name -> Worker (alive ones)
        self.lost = collections.deque(maxlen=100)   # the latest dead: name, why
        self.lost_count = 0               # all of them since the start
        self._ids = itertools.count(1)
        self._freed = asyncio.Event()
        self._zctx = zmq.asyncio.Context()
        self._sock = wire.limit(self._zctx.socket(zmq.ROUTER))
        self._sock.linger = 0
        self._sock.router_mandatory = True       # a gone peer raises, not drops
        if port:
            self._sock.bind(f'tcp://{bind}:{port}')
        else:
            port = self._sock.bind_to_random_port(f'tcp://{bind}')
        self.address = f'tcp://{bind}:{port}'
        self._chan = wire.Channel(secret, name=FRONTEND)
        self._procs = []
        self._spawned = {}                # name given -> Popen, until its hello
        self._threads = []                # the ThreadWorkers
        self._tasks = []

    # ------------------------------------------------------------- starting
    def start(self):
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._receive()),
                       loop.create_task(self._watch())]

    def spawn(self, device, env=None):
        """Start a worker process on this machine for ``device``."""
        env = dict(os.environ if env is None else env)
        env.setdefault('OPENBLAS_NUM_THREADS', '1')   # one core per worker
        env['PYTHONPATH'] = _child_pythonpath(env.get('PYTHONPATH', ''))
        # A name nobody else knows yet: its hello, not a pid any peer could
        # claim (GET /models shows pids), ties the worker to this process.
        name = f'{socket.gethostname()}-{len(self._procs)}-{os.urandom(4).hex()}'
        proc = subprocess.Popen(
            [sys.executable, '-m', 'd2lmini.serve.worker', '--frontend',
             self.address, '--device', str(device), '--parent-pid', str(os.getpid()),
             '--name', name], env=env, stdin=subprocess.DEVNULL)
        self._procs.append(proc)
        self._spawned[name] = proc
        return proc

    def add_thread(self, device):
        """Start a worker on a thread of this process for ``device``
        (:class:`ThreadWorker`); call on the loop."""
        w = ThreadWorker(self, f'{socket.gethostname()}-thread-{len(self._threads)}',
                         device)
        self._threads.append(w)
        self.workers[w.name] = w
        self.on_change()
        return w

    async def wait_ready(self, count, timeout=60.0):
        """Wait until ``count`` workers are ready; raise ``TimeoutError``
        (naming what is missing) after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.ready_count() < count:
            exited = [p for p in self._procs if p.poll() is not None]
            if exited and len(self._procs) - len(exited) + self.ready_count() < count:
                raise RuntimeError(f'a worker process exited with status '
                                   f'{exited[0].returncode} before it was ready')
            dead = [w.name for w in self._threads if w.state == 'dead']
            if dead and len(self._threads) - len(dead) < count:
                why = next(x['reason'] for x in self.lost if x['id'] == dead[0])
                raise RuntimeError(f'worker {dead[0]} (a thread of this process) '
                                   f'did not start: {why}')
            if time.monotonic() > deadline:
                loopback = self.address.startswith(('tcp://127.', 'tcp://localhost'))
                hint = ('; a loopback address takes workers on this machine '
                        'only: bind one the others reach (--host-ip)') if loopback else ''
                raise TimeoutError(f'{self.ready_count()} of {count} workers ready '
                                   f'after {timeout:g} s (workers connect to '
                                   f'{self.address}{hint})')
            await asyncio.sleep(0.02)

    def ready_count(self):
        return sum(w.state in ('ready', 'busy') for w in self.workers.values())

    def idle_count(self, model):
        """Workers that could take a batch of ``model`` now."""
        return sum(w.state == 'ready' and model in w.loaded
                   for w in self.workers.values())

    # ------------------------------------------------------------- batches
    async def acquire(self, model):
        """The ready worker with ``model`` loaded that has been idle longest,
        now busy; waits for one.  Raises :class:`NoWorkers` when none is
        alive (or loading)."""
        while True:
            for w in self.workers.values():       # (in the order they freed up)
                if w.state == 'ready' and model in w.loaded:
                    w.state = 'busy'
                    return w
            if not self.workers:
                raise NoWorkers('no worker is alive')
            self._freed.clear()
            await self._freed.wait()

    def release(self, worker):
        if worker.state == 'busy':
            worker.state = 'ready'
            worker.batch = None
            self.workers[worker.name] = self.workers.pop(worker.name)   # to the end
            self._freed.set()

    async def run(self, worker, model, x):
        """Run the batch ``x`` of ``model`` on ``worker`` (acquired):
        the list of outputs, each with ``len(x)`` rows."""
        if worker.state == 'dead':        # died while the batch was gathered
            raise WorkerLost(f'worker {worker.name} on {worker.device} is gone')
        bid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        worker.batch = (bid, fut, len(x))
        if isinstance(worker, ThreadWorker):
            worker.jobs.put((bid, model, x))
        else:
            self._send(worker, 'batch', [x], id=bid, model=model)
        return await fut

    def run_here(self, worker, model, x):
        """Run the batch ``x`` of ``model`` on this thread (the loop's),
        with the copy of the model that thread worker ``worker`` (acquired)
        holds on its device: the outputs, or :class:`WorkerError`.  The loop
        serves nothing else meanwhile."""
        if worker.state == 'dead':
            raise WorkerLost(f'worker {worker.name} on {worker.device} is gone')
        try:
            outs = worker.predictors[model](x)
        except Exception as e:                     # noqa: BLE001 -- told back
            raise WorkerError(f'{type(e).__name__}: {e}') from None
        if not _fits(outs, len(x)):
            raise WorkerError(f'a batch of {len(x)} gave outputs of shapes '
                              f'{[a.shape for a in outs]}')
        worker.batches += 1
        worker.on_loop += 1
        return outs

    # ------------------------------------------------------------- messages
    def _send(self, worker, op, arrays=(), **meta):
        frames = self._chan.pack(op, arrays, dest=worker.sid, **meta)
        # (zmq.asyncio puts a send's error on the future it returns, never
        # raises: read it now, or when the send completes.  DONTWAIT: a
        # worker that does not read, its queue full, is dropped, not queued
        # for inside zmq.asyncio.)
        sent = self._sock.send_multipart([worker.peer] + frames, copy=False,
                                         flags=zmq.DONTWAIT)
        e = sent.exception() if sent.done() else None
        if isinstance(e, zmq.Again):             # its queue full: not reading
            self._lose(worker, 'it does not read its messages')
            return
        if e is not None:                        # gone (router_mandatory)
            self._lose(worker, f'cannot send to it ({e})')
            return
        sent.add_done_callback(lambda f: self._sent(worker, f))

    def _sent(self, worker, f):
        # zmq.asyncio reports a failed send in the future it returns (an
        # exception never read there is logged, with a traceback, whenever
        # the future is collected)
        if not f.cancelled() and f.exception() is not None:
            self._lose(worker, f'cannot send to it ({f.exception()})')

    def _model_message(self, worker, files):
        names = list(files.params)
        arrays = [np.frombuffer(files.symbol_json.encode(), np.uint8)] + \
            [files.params[k] for k in names]
        self._send(worker, 'model', arrays, model=files.name, names=names,
                   input=files.input_name, shape=list(files.input_shape),
                   dtype=files.input_dtype)

    async def _receive(self):
        while True:
            # (a message already queued is returned without yielding: let
            # HTTP and the heartbeats run between two, even under a flood)
            await asyncio.sleep(0)
            frames = await self._sock.recv_multipart(copy=False)
            peer, frames = frames[0].bytes, frames[1:]
            try:
                h, arrays = self._chan.unpack(frames)
            except wire.BadMessage as e:
                log.warning('refused a message from a worker: %s', e)
                continue
            try:
                self._handle(peer, h, arrays)
            except Exception:                          # noqa: BLE001 -- keep serving
                log.exception('could not handle a %r message', h.get('op'))

    def _handle(self, peer, h, arrays):
        op, name = h['op'], h.get('node')
        if op == 'hello':
            if not name or name in self.workers:
                log.warning('refused a hello without a new name (%r)', name)
                return
            w = Worker(peer, name, h.get('device') or '?', h.get('host') or '?',
                       h.get('pid'), h.get('sid'))
            w.proc = self._spawned.pop(name, None)
            self.workers[name] = w
            log.info('worker %s on %s says hello', name, w.device)
            for files in self.models.values():
                self._model_message(w, files)
            self.on_change()
            return
        w = self.workers.get(name)
        if w is None:
            return                      # a worker already declared dead
        if op != 'hb' and peer != w.peer:
            # (names are public: only the worker's own connection speaks for
            # it; heartbeats come from a second socket of the worker's)
            log.warning('refused a %r message for worker %s from another '
                        'connection', op, name)
            return
        w.seen = time.monotonic()
        if op in ('loaded', 'failed'):
            self._answer(w, op, h.get('model'), h.get('message'))
        elif op == 'result':
            self._answer(w, op, h.get('id'), arrays)
        elif op == 'error':
            self._answer(w, op, h.get('id'), h.get('message'))

    def _answer(self, w, op, about, what):
        """What worker ``w`` said: ``loaded``/``failed`` a model (``about``;
        ``what``: why it failed), or the ``result`` (``what``: the
        outputs) or ``error`` (``what``: the message) of batch ``about``."""
        if w.state == 'dead':
            return
        if op == 'loaded':
            w.loaded.add(about)
            if w.state == 'loading' and set(self.models) <= w.loaded:
                w.state = 'ready'
                self._freed.set()
                self.on_change()
        elif op == 'failed':
            self._lose(w, f'could not load {about}: {what}')
            self._stop(w)
        elif op in ('result', 'error'):
            if w.batch is None or w.batch[0] != about:
                self._lose(w, f'answered batch {about}, which it was not running')
                return
            _, fut, n = w.batch
            w.batch = None
            w.batches += 1
            if fut.done():
                return
            if op == 'error':
                fut.set_exception(WorkerError(what or 'error'))
            elif not _fits(what, n):
                self._lose(w, f'answered a batch of {n} with outputs of shapes '
                              f'{[a.shape for a in what]}', fut)
            else:
                fut.set_result(what)

    def _stop(self, w):
        if isinstance(w, ThreadWorker):
            w.jobs.put(None)
        else:
            self._send(w, 'stop')

    async def _watch(self):
        """Heartbeats out, and the dead found: every 0.1 s."""
        beat = 0
        while True:
            await asyncio.sleep(0.1)
            now = time.monotonic()
            beat += 1
            for w in list(self.workers.values()):
                if isinstance(w, ThreadWorker):
                    if not w.thread.is_alive():
                        self._lose(w, 'its thread ended')
                elif w.proc is not None and w.proc.poll() is not None:
                    self._lose(w, f'its process exited with status {w.proc.returncode}')
                elif now - w.seen > self.dead_after:
                    self._lose(w, f'no heartbeat for {now - w.seen:.1f} s')
                elif beat % 5 == 0:
                    self._send(w, 'hb')

    def _lose(self, w, why, fut=None):
        if self.workers.pop(w.name, None) is None:
            return
        w.state = 'dead'
        log.warning('worker %s on %s is gone: %s', w.name, w.device, why)
        self.lost_count += 1
        self.lost.append({'id': w.name, 'device': w.device, 'host': w.host,
                          'reason': why})
        fut = fut or (w.batch[1] if w.batch else None)
        w.batch = None
        if fut is not None and not fut.done():
            fut.set_exception(WorkerLost(f'worker {w.name} on {w.device}: {why}'))
        if w.proc is not None and w.proc.poll() is None:
            w.proc.kill()
        self._freed.set()                 # waiters re-check: maybe none left
        self.on_change()

    # ------------------------------------------------------------- the end
    def describe(self):
        return [w.describe() for w in self.workers.values()]

    async def close(self, grace=2.0):
        """Tell every worker to stop, wait for this front end's processes
        (killing them after ``grace`` seconds), close the socket."""
        for t in self._tasks:        # (a worker stopping now is not lost)
            t.cancel()
        for w in list(self.workers.values()):
            if not isinstance(w, ThreadWorker):
                self._send(w, 'stop')
        for w in self._threads:
            w.jobs.put(None)             # (a lost one too: its thread may run)
        await asyncio.sleep(0)
        deadline = time.monotonic() + grace
        while any(w.thread.is_alive() for w in self._threads) and \
                time.monotonic() < deadline:
            await asyncio.sleep(0.02)    # (a batch running: it ends soon)
        while any(p.poll() is None for p in self._procs) and \
                time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for p in self._procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self._sock.close()
        self._zctx.term()
