"""The model server: models, workers, batchers and the HTTP API together.

:class:`ModelServer` owns one asyncio loop on which everything runs:
tornado's HTTP server (:mod:`.api`), a :class:`~.batcher.Batcher` per
model, and the :class:`~.workers.WorkerPool` with its ZeroMQ socket.  The
forward passes run elsewhere, in the worker processes, one or more per
device; they may be on this machine (started here, for each of
``devices``) or on the hosts of a hostfile (started over ssh the way the
launcher starts a parameter-server job, and connecting back to
``worker_host``).

From Python (a notebook, a test), the server runs on a thread of its own::

    server = ModelServer(['lenet'], input_shape=(1, 28, 28),
                         devices=['cpu(0)', 'cpu(1)']).start()
    server.url            # 'http://127.0.0.1:PORT'
    server.close()

From a shell: ``python -m d2lmini.serve PREFIX ...`` (:func:`main`).
"""
import argparse
import asyncio
import gc
import logging
import os
import signal
import subprocess
import sys
import threading
import time

from . import model as model_mod
from .batcher import Batcher
from .metrics import BATCH_BUCKETS, LATENCY_BUCKETS, Metrics
from .workers import WorkerPool, secret

log = logging.getLogger('d2lmini.serve')
__all__ = ['ModelServer', 'main']


class ModelServer:
    """Serve ``models`` (prefixes of exported models, or ``ModelFiles``).

    ``devices``: where the local workers run (``workers_per_device`` each),
    processes of their own, or threads of this one with ``in_process``;
    ``hosts``: ``[(host, ssh_port)]`` on which to start workers over ssh
    (each for every device), which connect back to ``worker_host``;
    ``expect_workers``: how many workers :meth:`start` waits for (the
    local and ssh ones by default; more when workers are started by hand).
    """

    def __init__(self, models, *, epoch=None, names=None, input_shape=None,
                 devices=('cpu(0)',), workers_per_device=1, host='127.0.0.1',
                 port=0, max_batch_size=32, max_batch_delay_ms=5.0,
                 queue_size=100, timeout_s=10.0, max_body=16 << 20,
                 worker_host=None, worker_port=0, hosts=(), expect_workers=None,
                 dead_after=1.0, start_timeout=60.0, wait_out_delay=False,
                 in_process=False, always_hand_off=False):
        if isinstance(models, (str, os.PathLike, model_mod.ModelFiles)):
            models = [models]
        names = list(names or [])
        self.models = {}
        for i, m in enumerate(models):
            if not isinstance(m, model_mod.ModelFiles):
                m = model_mod.load(m, epoch, names[i] if i < len(names) else None,
                                   input_shape)
            if m.name in self.models:
                raise ValueError(f'two models named {m.name!r}: give --name')
            self.models[m.name] = m
        self.devices = [str(d) for d in devices if str(d) != 'none']
        self.workers_per_device = int(workers_per_device)
        self.in_process = bool(in_process)
        self.always_hand_off = bool(always_hand_off)
        if self.in_process and hosts:
            raise ValueError('in-process workers run on this machine only: '
                             'not with workers on other hosts (-H)')
        self.hosts = list(hosts)
        self.host, self.port = host, int(port)
        self.max_batch_size, self.max_delay = int(max_batch_size), max_batch_delay_ms / 1e3
        self.wait_out_delay = wait_out_delay
        self.queue_size, self.timeout, self.max_body = int(queue_size), timeout_s, max_body
        self.worker_host = worker_host or ('127.0.0.1' if not self.hosts else None)
        if self.worker_host is None:
            raise ValueError('workers on other hosts need worker_host (--host-ip): '
                             'the address of this machine they connect to')
        self.worker_port = worker_port
        started = len(self.devices) * self.workers_per_device * max(1, len(self.hosts))
        self.expect = started if expect_workers is None else int(expect_workers)
        if self.expect < 1:
            raise ValueError('no worker would serve: give devices, or the number '
                             'of workers that connect from elsewhere (--expect-workers)')
        self.dead_after, self.start_timeout = dead_after, start_timeout
        self.metrics = Metrics()
        self.started = None
        self.url = None
        self._ssh = []
        self._thread = self._loop = None
        self.connections = 0              # HTTP connections open
        self.waiting = 0                  # of them, waiting for a prediction

    # ------------------------------------------------------------ on the loop
    async def serve(self):
        """Start workers, batchers and HTTP on the running loop."""
        import tornado.netutil
        from .api import HTTPServer, make_app
        self.pool = WorkerPool(self.models, self.worker_host, self.worker_port,
                               secret(), self.dead_after, self._gauges)
        self.pool.start()
        if self.hosts:
            self._start_ssh()
        else:
            for d in self.devices:
                for _ in range(self.workers_per_device):
                    (self.pool.add_thread if self.in_process else self.pool.spawn)(d)
        await self.pool.wait_ready(self.expect, self.start_timeout)
        self.batchers = {n: Batcher(n, self.pool, self.max_batch_size, self.max_delay,
                                    self.queue_size, self._batch_done(n),
                                    self.all_waiting, on_loop=not self.always_hand_off)
                         for n in self.models}
        self.http = HTTPServer(
            make_app(self), max_body_size=max(self.max_body, 1) * 2 + (1 << 16),
            idle_connection_timeout=60)
        socks = tornado.netutil.bind_sockets(self.port, self.host)
        self.http.add_sockets(socks)
        self.port = socks[0].getsockname()[1]
        self.url = f'http://{self.host}:{self.port}'
        self.started = time.time()
        self._gauges()

    async def shutdown(self):
        self.http.stop()
        for b in self.batchers.values():
            b.close()
        await self.pool.close()
        for p in self._ssh:
            if p.poll() is None:
                p.stdin.close()          # the remote side stops its group
        for p in self._ssh:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def _start_ssh(self):
        from ..launch.plan import _Spec
        from ..launch.ssh import _ssh_argv
        for host, ssh_port in self.hosts:
            for d in self.devices:
                for _ in range(self.workers_per_device):
                    spec = _Spec('worker', len(self._ssh), {}, host, ssh_port)
                    cmd = [sys.executable, '-m', 'd2lmini.serve.worker',
                           '--frontend', self.pool.address, '--device', d]
                    argv, stdin = _ssh_argv(spec, cmd, kill_grace=2)
                    p = subprocess.Popen(argv, stdin=subprocess.PIPE, text=True)
                    p.stdin.write(stdin)
                    p.stdin.flush()       # (kept open: closing it stops the worker)
                    self._ssh.append(p)

    # ------------------------------------------------------------ bookkeeping
    def all_waiting(self):
        """Whether every open HTTP connection waits for a prediction: then
        no other request can arrive before one of them is answered (a
        connection carries one request at a time), and a batch need not
        wait for more."""
        return not self.wait_out_delay and 0 < self.connections <= self.waiting

    def count(self, model, code, seconds):
        self.metrics.inc('requests_total', 'Requests answered, by model and '
                         'HTTP status', model=model, code=code)
        if code == 200:
            self.metrics.observe('request_latency_seconds', 'Time from the '
                                 'request read to the answer written (200s)',
                                 seconds, LATENCY_BUCKETS, model=model)

    def _batch_done(self, model):
        def done(size, seconds):
            self.metrics.observe('batch_size', 'Examples per forward pass', size,
                                 BATCH_BUCKETS, model=model)
            self.metrics.observe('batch_seconds', 'Time a batch spent on its '
                                 'worker, there and back', seconds,
                                 LATENCY_BUCKETS, model=model)
        return done

    def _gauges(self):
        pool = getattr(self, 'pool', None)
        if pool is None:
            return
        states = {'ready': 0, 'busy': 0, 'loading': 0}
        for w in pool.workers.values():
            states[w.state] = states.get(w.state, 0) + 1
        for k, v in states.items():
            self.metrics.set('workers', 'Workers by state', v, state=k)
        self.metrics.set('workers_lost', 'Workers gone since the start',
                         pool.lost_count)

    def render_metrics(self):
        self._gauges()
        for state, n in (('open', self.connections), ('waiting', self.waiting)):
            self.metrics.set('connections', 'HTTP connections open, and of them '
                             'those waiting for a prediction', n, state=state)
        for n, b in getattr(self, 'batchers', {}).items():
            self.metrics.set('queue_depth', 'Requests waiting for a worker',
                             len(b), model=n)
        return self.metrics.render()

    def describe(self, name):
        m, b = self.models[name], self.batchers[name]
        return {'modelName': name, 'modelVersion': str(m.epoch),
                'modelUrl': m.prefix, 'inputName': m.input_name,
                'inputShape': list(m.input_shape), 'outputs': m.outputs,
                'batchSize': self.max_batch_size,
                'maxBatchDelay': self.max_delay * 1e3,
                'waitOutDelay': self.wait_out_delay,
                'queueSize': self.queue_size, 'queueLength': len(b),
                'timeout': self.timeout,
                'devices': sorted({w['device'] for w in self.pool.describe()}),
                'workers': self.pool.describe(),
                'lostWorkers': list(self.pool.lost),
                'workerAddress': self.pool.address}

    # ------------------------------------------------------------ on a thread
    def start(self, timeout=None):
        """Run the server on a background thread; returns ``self`` once it
        answers (``self.url``), or raises what stopped it."""
        ready, failed = threading.Event(), []

        def run():
            loop = self._loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self.serve())
            except BaseException as e:              # noqa: BLE001 -- re-raised
                failed.append(e)
                # Clean up before start() returns: a close() called then
                # would stop the loop mid-cleanup and leave ZeroMQ open.
                try:
                    loop.run_until_complete(self.pool.close())
                except Exception:                   # noqa: BLE001
                    pass
                loop.close()
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name='d2lmini.serve', daemon=True)
        self._thread.start()
        ready.wait(timeout or self.start_timeout + 10)
        if failed:
            raise failed[0]
        return self

    def close(self):
        """Stop the background server: workers told to stop, nothing left."""
        if self._thread is not None and self._loop is not None and \
                self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(15)
        self._thread = None

    def __enter__(self):
        return self.start() if self._thread is None else self

    def __exit__(self, *exc):
        self.close()


def _parser():
    p = argparse.ArgumentParser(
        prog='python -m d2lmini.serve',
        description='Serve exported models over HTTP (the MXNet Model Server / '
                    'TorchServe API), with dynamic batching over several devices.')
    p.add_argument('prefix', nargs='+',
                   help='PREFIX of PREFIX-symbol.json and PREFIX-NNNN.params')
    p.add_argument('--epoch', type=int, help='NNNN (default: the latest)')
    p.add_argument('--name', action='append',
                   help='the model name in URLs (default: basename of PREFIX); '
                        'once per PREFIX')
    p.add_argument('--devices', default='cpu(0)',
                   help="where workers run: cpu(0),cpu(1) or gpu(0),gpu(1); 'none': "
                        "no worker here (they connect from elsewhere: "
                        "--expect-workers)")
    p.add_argument('--workers-per-device', type=int, default=1)
    p.add_argument('--in-process', action='store_true',
                   help='run the local workers as threads of the front end '
                        '(faster for small models; a worker cannot be killed alone)')
    p.add_argument('--always-hand-off', action='store_true',
                   help='with --in-process: hand every batch to a worker thread '
                        '(by default the loop runs a short batch itself when '
                        'every open connection waits for an answer)')
    p.add_argument('--host', default='127.0.0.1', help='HTTP address to bind')
    p.add_argument('--port', type=int, default=8080, help='HTTP port (0: a free one)')
    p.add_argument('--max-batch-size', type=int, default=32)
    p.add_argument('--max-batch-delay-ms', type=float, default=5.0)
    p.add_argument('--wait-out-delay', action='store_true',
                   help='wait for a batch to fill or its delay to pass even '
                        'when every open connection waits for an answer (by '
                        'default such a batch leaves at once: nobody else '
                        'can join it)')
    p.add_argument('--queue-size', type=int, default=100,
                   help='requests queued per model before 503')
    p.add_argument('--timeout-s', type=float, default=10.0,
                   help='a request not answered in this time gets 504')
    p.add_argument('--max-body-mb', type=float, default=16.0,
                   help='larger bodies get 413')
    p.add_argument('--input-shape',
                   help='one example, e.g. 1,28,28 (or a PREFIX-signature.json)')
    p.add_argument('-H', '--hostfile', help='start workers on these hosts over ssh')
    p.add_argument('--host-ip', help='the address of this machine that workers '
                                     'connect to (needed with -H)')
    p.add_argument('--worker-port', type=int, default=0,
                   help="the workers' port (default: a free one)")
    p.add_argument('--expect-workers', type=int,
                   help='wait for this many workers before serving (more than '
                        'the local or -H ones: workers started by hand)')
    p.add_argument('--start-timeout', type=float, default=60.0,
                   help='give up when the workers are not ready after this many seconds')
    return p


def main(argv=None):
    a = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='[serve] %(message)s')
    logging.getLogger('tornado.access').setLevel(logging.WARNING)   # 4xx, 5xx only
    try:
        hosts = []
        if a.hostfile:
            from ..launch.cli import _read_hostfile
            hosts = _read_hostfile(a.hostfile)
        devices = [d.strip() for d in a.devices.replace(' ', '').replace(
            '),', ');').split(';') if d.strip()]
        server = ModelServer(
            a.prefix, epoch=a.epoch, names=a.name, input_shape=a.input_shape,
            devices=devices, workers_per_device=a.workers_per_device, host=a.host,
            port=a.port, max_batch_size=a.max_batch_size,
            max_batch_delay_ms=a.max_batch_delay_ms, wait_out_delay=a.wait_out_delay,
            queue_size=a.queue_size,
            timeout_s=a.timeout_s, max_body=int(a.max_body_mb * (1 << 20)),
            worker_host=a.host_ip, worker_port=a.worker_port, hosts=hosts,
            expect_workers=a.expect_workers, start_timeout=a.start_timeout,
            in_process=a.in_process, always_hand_off=a.always_hand_off)
    except (model_mod.ModelError, ValueError, OSError) as e:
        print(f'python -m d2lmini.serve: {e}', file=sys.stderr)
        return 2

    if a.in_process and not os.environ.get('D2LMINI_ENGINE'):
        # As in a worker process: each worker thread runs its batch's
        # operations itself (this process computes nothing else).
        from ..engine import stream
        stream.set_engine('naive')
    if a.in_process and not os.environ.get('OPENBLAS_NUM_THREADS'):
        # As a worker process has (WorkerPool.spawn): one BLAS thread per
        # call.  OpenBLAS's own threads spin for a while after each call,
        # on the cores the HTTP front end and the clients need: on the
        # 2-core VM, 2,543 predictions a second against 4,102 with one
        # (benchmarks/SERVE.md).
        from ..engine.cores import set_blas_threads
        set_blas_threads(1)

    async def run():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await server.serve()
        except (TimeoutError, RuntimeError) as e:
            print(f'python -m d2lmini.serve: {e}', file=sys.stderr)
            await server.pool.close()
            return 1
        gc.collect()
        gc.freeze()     # what exists now lives as long as this process: the
        #                 collector need not scan it again (not done for a
        #                 server on a thread of another program: start())
        print(f'serving {", ".join(server.models)} at {server.url} with '
              f'{server.pool.ready_count()} workers (workers connect to '
              f'{server.pool.address})', flush=True)
        await stop.wait()
        await server.shutdown()
        return 0

    return asyncio.run(run())
