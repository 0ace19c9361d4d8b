"""Serving an exported model over HTTP (``d2lmini.serve``): requests/s and latency.

Seven servers run side by side, each ``python -m d2lmini.serve`` in a
process of its own (its workers in theirs), each serving both models:

============  ==============================================================
batching      ``--devices 'cpu(0),cpu(1)' --max-batch-size 32
              --max-batch-delay-ms 5``
batch 1       ``--devices 'cpu(0),cpu(1)' --max-batch-size 1``
wait out      as ``batching``, with ``--wait-out-delay`` (a batch waits for
              its delay even when every open connection already waits)
1 device      ``--devices 'cpu(0)' --max-batch-size 32 --max-batch-delay-ms 5``
in-process    as ``batching``, with ``--in-process`` (the workers are threads
              of the server's process: no ZeroMQ; when every connection
              waits, the loop runs a short batch itself)
in-process    as ``batch 1``, with ``--in-process``
batch 1
in-process    as ``in-process``, with ``--always-hand-off`` (every batch
hand-off      goes to a worker thread)
============  ==============================================================

The models: MXNet 1.9.1's LeNet (``tests/fixtures/serve/mx191_lenet``, one
example 1x28x28), whose forward pass is cheap next to HTTP, and a ResNet-18
for 32x32 images (``thumbnail=True``, 10 classes; ``gluon.model_zoo``'s
``resnet18_v1`` when the package has it, else the same network built
here), whose forward pass dominates, exported to a temporary directory.
The load comes from this process (:func:`d2lmini.serve.client.load_test`,
aiohttp): every request is one example, and asks for its answer in the
body's format (``.npy`` or JSON).

Rows, per model (``.npy`` bodies; for LeNet also JSON bodies):

* **batching vs batch 1**: requests/s with 32 clients in a closed loop
  (each sends its next request when the last is answered) (target >= 2x);
* **vs POST /echo**: the same server echoing the same body, the HTTP
  layer's own ceiling (target >= 0.7x; it is a target for a model whose
  forward pass is cheap: LeNet);
* **p99 latency** of the batching server under that load (target < 100 ms);
* **2 devices vs 1**, the same load;
* **the connections rule** (LeNet): the batching server against the same
  settings with ``--wait-out-delay``, the same load;
* **open loop**: requests started at a fixed rate, a few fractions of the
  closed-loop rate, latency from when each request was due;
* **worker threads vs processes**: the ``in-process`` servers' rows, the
  same ones (batching vs batch 1, vs ``/echo`` on the same server, p99,
  low load), the batching server with threads against processes, and
  (LeNet) the loop running batches itself against ``--always-hand-off``;
* **low load**: one client (``client.Client``, a kept-alive connection),
  sequential requests: the p50 of the HTTP round
  trip less the p50 of a direct ``Predictor`` call (in a process started as
  a worker is: naive engine, one BLAS thread) on the same example (target
  <= 2 ms), the direct calls made at the same pace as the requests (one
  every HTTP round trip of the batch-1 server), and, for comparison, back
  to back.  The pace matters: a process that idles between calls finds its
  caches cold, and on the 2-core VM a LeNet call costs twice as much one
  every 2.5 ms (0.8 ms) as back to back (0.37 ms); a worker serving
  requests one by one idles as long between them.
  On the batch-1 server that is the server's own cost; on the batching one
  it includes the wait for more requests (up to the 5 ms delay), by design.

The machine is noisy (other programs share its cores), so every
comparison is measured by turns inside one run: model, echo, batch 1,
1 device, model, echo, ... (``REPEATS`` rounds), and each figure is the
median of its rounds (a ratio: of the two medians).  A server's echo is
measured right after its predictions, as the machine's speed drifts
within a round.

    python benchmarks/run.py serve          # these rows, into results.md
    python benchmarks/bench_serve.py        # the same, printed
"""
import concurrent.futures
import json
import os
import select
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from d2lmini.serve import client          # noqa: E402

LENET = os.path.join(ROOT, 'tests', 'fixtures', 'serve', 'mx191_lenet')
NPY, JSON = 'application/x-npy', 'application/json'
CLIENTS = 32
REPEATS = {'lenet': 7, 'resnet18': 3}          # rounds of closed-loop runs
SECONDS = {'lenet': 1.0, 'resnet18': 5.0}      # one closed-loop run, after
WARMUP = {'lenet': 0.3, 'resnet18': 1.5}       # (a ResNet batch of 32 takes ~1 s)
OPEN_LOOP = (0.25, 0.5, 0.8)                   # rates, x the closed-loop rate
LOW_LOAD_S = {'lenet': 0.6, 'resnet18': 1.5}   # one low-load run, each side
LATENCY_TARGET_MS, ADDED_TARGET_MS = 100.0, 2.0
SERVERS = {
    'batching': ['--devices', 'cpu(0),cpu(1)', '--max-batch-size', '32',
                 '--max-batch-delay-ms', '5'],
    'batch 1': ['--devices', 'cpu(0),cpu(1)', '--max-batch-size', '1'],
    'wait out': ['--devices', 'cpu(0),cpu(1)', '--max-batch-size', '32',
                 '--max-batch-delay-ms', '5', '--wait-out-delay'],
    '1 device': ['--devices', 'cpu(0)', '--max-batch-size', '32',
                 '--max-batch-delay-ms', '5'],
    'in-process': ['--devices', 'cpu(0),cpu(1)', '--max-batch-size', '32',
                   '--max-batch-delay-ms', '5', '--in-process'],
    'in-process batch 1': ['--devices', 'cpu(0),cpu(1)', '--max-batch-size', '1',
                           '--in-process'],
    'in-process hand-off': ['--devices', 'cpu(0),cpu(1)', '--max-batch-size', '32',
                            '--max-batch-delay-ms', '5', '--in-process',
                            '--always-hand-off'],
}
LABEL = {'lenet': 'LeNet (MXNet 1.9.1 fixture)',
         'resnet18': 'ResNet-18 (32x32, thumbnail)'}


# ------------------------------------------------------------------ models
def _resnet18():
    """ResNet-18 V1 for 32x32 images (``thumbnail``: a 3x3 first convolution,
    no max pooling), 10 classes: the model zoo's, or the same layers here."""
    try:
        from d2lmini.gluon.model_zoo.vision import resnet18_v1
        return resnet18_v1(classes=10, thumbnail=True)
    except ImportError:
        pass
    from d2lmini.gluon import nn

    class Basic(nn.HybridBlock):
        """relu(conv-bn-relu-conv-bn(x) + shortcut(x))."""

        def __init__(self, channels, stride, in_channels):
            super().__init__()
            self.body = nn.HybridSequential()
            self.body.add(nn.Conv2D(channels, 3, stride, 1, use_bias=False,
                                    in_channels=in_channels),
                          nn.BatchNorm(), nn.Activation('relu'),
                          nn.Conv2D(channels, 3, 1, 1, use_bias=False,
                                    in_channels=channels),
                          nn.BatchNorm())
            self.down = None
            if stride != 1 or channels != in_channels:
                self.down = nn.HybridSequential()
                self.down.add(nn.Conv2D(channels, 1, stride, use_bias=False,
                                        in_channels=in_channels),
                              nn.BatchNorm())

        def hybrid_forward(self, F, x):
            short = self.down(x) if self.down is not None else x
            return F.Activation(self.body(x) + short, act_type='relu')

    net = nn.HybridSequential()
    net.add(nn.Conv2D(64, 3, 1, 1, use_bias=False), nn.BatchNorm(),
            nn.Activation('relu'))
    in_channels = 64
    for channels, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        net.add(Basic(channels, stride, in_channels), Basic(channels, 1, channels))
        in_channels = channels
    net.add(nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


def export_resnet18(directory):
    """Export the ResNet-18 (random weights) with its signature file; the prefix."""
    import d2lmini as mx
    mx.random.seed(0)
    net = _resnet18()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.zeros((1, 3, 32, 32)))
    prefix = os.path.join(directory, 'resnet18')
    net.export(prefix)
    with open(prefix + '-signature.json', 'w') as f:
        json.dump({'inputs': [{'data_name': 'data',
                               'data_shape': [0, 3, 32, 32]}]}, f)
    return prefix


def examples(models, directory):
    """``{name: (prefix, one example)}`` of ``models`` (lenet, resnet18)."""
    out = {}
    for m in models:
        if m == 'lenet':
            out[m] = (LENET, np.load(LENET + '-reference.npz')['x'][0])
        elif m == 'resnet18':
            x = np.random.RandomState(0).rand(3, 32, 32).astype(np.float32)
            out[m] = (export_resnet18(directory), x)
        else:
            raise ValueError(f'unknown model {m!r} (lenet, resnet18)')
    return out


def bodies(x):
    """``{'npy': (body, content type), 'json': ...}`` of one example."""
    return {'npy': (client.npy_bytes(x), NPY),
            'json': (json.dumps(x.tolist()).encode(), JSON)}


# ------------------------------------------------------------------ servers
def start_servers(models, servers=SERVERS):
    """``{name: ServerProcess}`` of ``servers``, started side by side, each
    serving ``models`` (``{name: (prefix, example)}``)."""
    names = [a for m in models for a in ('--name', m)]

    def one(args):
        return client.ServerProcess(*[p for p, _ in models.values()], *names,
                                    *args, '--port', '0', '--queue-size', '256',
                                    start_timeout=120)
    with concurrent.futures.ThreadPoolExecutor(len(servers)) as ex:
        futures = {n: ex.submit(one, a) for n, a in servers.items()}
        started, failed = {}, None
        for n, f in futures.items():
            try:
                started[n] = f.result()
            except Exception as e:                  # noqa: BLE001 -- re-raised
                failed = failed or e
    if failed is not None:
        stop_servers(started)
        raise failed
    return started


def stop_servers(servers):
    for s in servers.values():
        s.close()


def drain(server, model, timeout=30.0):
    """Wait until ``server`` has no request of ``model`` queued or running
    (an overloaded open-loop run leaves a backlog that would slow whatever
    is measured next)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = client.get_json(f'{server.url}/models/{model}')[0]
        if not d['queueLength'] and all(w['status'] != 'BUSY' for w in d['workers']):
            return
        time.sleep(0.1)


def _median(xs):
    return float(np.median(xs)) if len(xs) else float('nan')


# ------------------------------------------------------------------ closed loop
def closed_loop(servers, models, repeats, seconds, warmup, log=print):
    """Closed-loop runs by turns, ``repeats[model]`` rounds:
    ``{(model, what): [results]}``,
    ``what`` one of ``batching``, ``echo``, ``batch 1``, ``1 device``,
    ``wait out`` and ``in-process hand-off`` (LeNet only), ``in-process``,
    ``in-process batch 1``, ``echo in-process``, ``json``, ``echo json``."""
    runs = []
    for m, (_, x) in models.items():
        b = bodies(x)
        a = servers['batching']
        turns = [('batching', a, f'/predictions/{m}', 'npy'),
                 ('echo', a, '/echo', 'npy')]               # (HTTP only: short)
        for other in ('batch 1', '1 device', 'wait out', 'in-process',
                      'in-process batch 1', 'in-process hand-off'):
            if other in servers and (m == 'lenet' or other not in (
                    'wait out', 'in-process hand-off')):
                turns.append((other, servers[other], f'/predictions/{m}', 'npy'))
            if other == 'in-process' and other in servers:   # its own HTTP
                turns.append(('echo in-process', servers[other], '/echo', 'npy'))
        if m == 'lenet':
            turns += [('json', a, f'/predictions/{m}', 'json'),
                      ('echo json', a, '/echo', 'json')]
        runs += [(m, what, s, path, b[kind]) for what, s, path, kind in turns]
    results = {}
    for r in range(max(repeats.values())):
        for m, what, server, path, (body, ctype) in runs:
            if r >= repeats[m]:
                continue
            t = 'lenet' if what.startswith('echo') else m
            res = _measured(server.url + path, server.url + path, body, ctype,
                            clients=CLIENTS, seconds=seconds[t], warmup=warmup[t])
            drain(server, m)
            results.setdefault((m, what), []).append(res)
            log(f'   round {r + 1}: {m:8s} {what:9s} {res["rps"]:7.0f} req/s  '
                f'p50 {res["p50_ms"]:7.1f} ms  p99 {res["p99_ms"]:7.1f} ms  '
                f'{_codes(res)}')
    return results


def _measured(what, url, body, ctype, seconds, warmup, **load):
    """``client.load_test``; a window that saw no answer (a busy machine
    still opening the clients' connections) is tried again, twice as long,
    up to three times."""
    for _ in range(3):
        res = client.load_test(url, body, ctype, seconds=seconds, warmup=warmup,
                               **load)
        if res['ok']:
            return res
        seconds, warmup = 2 * seconds, 2 * warmup
    raise RuntimeError(f'{what}: no request answered 200 ({res["codes"]})')


def _codes(res):
    bad = {k: v for k, v in res['codes'].items() if k != 200}
    return f'(not 200: {bad})' if bad else ''


def _paired(results, a, b, key='rps'):
    """The medians of ``a``'s and of ``b``'s rounds, and their ratio."""
    xa = _median([r[key] for r in results[a]])
    xb = _median([r[key] for r in results[b]])
    return round(xa, 1), round(xb, 1), round(xa / xb, 3) if xb else None


def closed_rows(results, models):
    rows = []
    clients = f'{CLIENTS} clients, closed loop, batch-1 requests'

    def versus(m, a, b, name, unit, spread=False):
        if (m, a) in results and (m, b) in results:
            ours, ref, ratio = _paired(results, (m, a), (m, b))
            if spread:                 # (each round's ratio: the machine drifts)
                each = sorted(x['rps'] / y['rps'] for x, y in
                              zip(results[(m, a)], results[(m, b)]) if y['rps'])
                name += (f' (each round: {each[0]:.2f} to {each[-1]:.2f}, '
                         f'median {_median(each):.2f})')
            rows.append(dict(name=f'{LABEL[m]}, {name}', ours=ours, reference=ref,
                             ratio=ratio, unit=unit))

    def p99_row(m, what, name):
        p50 = _median([r['p50_ms'] for r in results[(m, what)]])
        p99 = _median([r['p99_ms'] for r in results[(m, what)]])
        rows.append(dict(name=f'{LABEL[m]}, {name}: p99 latency (p50 {p50:.1f} ms)',
                         ours=round(p99, 2), reference=LATENCY_TARGET_MS,
                         ratio=round(p99 / LATENCY_TARGET_MS, 3),
                         unit='ms (ref: the target, 100 ms; ratio <= 1 meets it)'))

    for m in models:
        versus(m, 'batching', 'batch 1', f'2 x cpu, {clients}: dynamic batching '
               f'(max 32, 5 ms) vs --max-batch-size 1',
               'req/s (ref: --max-batch-size 1, same load; target ratio >= 2)')
        for kind, what, echo in (('.npy', 'batching', 'echo'),
                                 ('JSON', 'json', 'echo json')):
            if (m, what) not in results:
                continue
            target = '; target ratio >= 0.7' if m == 'lenet' else \
                '; the forward pass dominates: no target'
            versus(m, what, echo, f'2 x cpu, {clients}, {kind} bodies: '
                   f'predictions vs POST /echo',
                   f'req/s (ref: the same server echoing the same body, the '
                   f'HTTP ceiling{target})', spread=True)
            p99_row(m, what, f'2 x cpu, {clients}, {kind} bodies')
        versus(m, 'in-process', 'in-process batch 1', f'2 x cpu in-process, '
               f'{clients}: dynamic batching (max 32, 5 ms) vs --max-batch-size 1',
               'req/s (ref: --max-batch-size 1 --in-process, same load; target '
               'ratio >= 2)')
        if (m, 'in-process') in results:
            target = '; target ratio >= 0.7' if m == 'lenet' else \
                '; the forward pass dominates: no target'
            versus(m, 'in-process', 'echo in-process', f'2 x cpu in-process, '
                   f'{clients}, .npy bodies: predictions vs POST /echo',
                   f'req/s (ref: the same server echoing the same body{target})',
                   spread=True)
            p99_row(m, 'in-process', f'2 x cpu in-process, {clients}, .npy bodies')
        versus(m, 'in-process', 'batching', f'2 x cpu, {clients}, batching: '
               f'worker threads (--in-process) vs worker processes',
               'req/s (ref: the same settings with worker processes; higher '
               'is better)')
        versus(m, 'in-process', 'in-process hand-off', f'2 x cpu in-process, '
               f'{clients}, batching: the loop running a batch itself when every '
               f'connection waits vs --always-hand-off',
               'req/s (ref: every batch handed to a worker thread; higher is '
               'better)')
        versus(m, 'batching', '1 device', f'{clients}, batching: 2 devices '
               f'(cpu(0), cpu(1)) vs 1 (cpu(0))',
               'req/s (ref: one device, same load; higher is better)')
        versus(m, 'batching', 'wait out', f'2 x cpu, {clients}: a batch leaving '
               f'when every connection waits vs --wait-out-delay',
               'req/s (ref: the same server waiting out its 5 ms delay; '
               'higher is better)')
    return rows


# ------------------------------------------------------------------ open loop
def open_rows(server, models, results, fractions, seconds, warmup, log=print):
    """Latency at fixed request rates, fractions of the closed-loop rate."""
    rows = []
    for m, (_, x) in models.items():
        body, ctype = bodies(x)['npy']
        top = _median([r['rps'] for r in results[(m, 'batching')]])
        for f in fractions:
            rate = max(1.0, round(top * f))
            res = _measured(f'{m} at {rate} req/s', f'{server.url}/predictions/{m}',
                            body, ctype, rate=rate, seconds=seconds[m] * 0.8,
                            warmup=warmup[m])
            drain(server, m)
            log(f'   open loop: {m:8s} {rate:6.0f} req/s offered: '
                f'{res["rps"]:6.0f} served, p50 {res["p50_ms"]:.1f} ms, '
                f'p99 {res["p99_ms"]:.1f} ms {_codes(res)}')
            rows.append(dict(
                name=f'{LABEL[m]}, 2 x cpu, batching, open loop at {rate:.0f} '
                     f'req/s ({f:g} x the closed-loop rate): p50 '
                     f'{res["p50_ms"]:.1f} ms, p95 {res["p95_ms"]:.1f} ms, '
                     f'{res["rps"]:.0f} req/s served {_codes(res)}'.rstrip(),
                ours=round(res['p99_ms'], 2), reference=None, ratio=None,
                unit='ms p99 latency, from when each request was due'))
    return rows


# ------------------------------------------------------------------ low load
# The direct calls run in a process of their own, started as the server
# starts its workers (a new session, one BLAS thread, the naive engine from
# the start): in this process, which also ran the load generator, a busy
# machine gave the same calls a smaller share of a core than the workers
# got (90 ms of wall time for 28 ms of CPU), and the "added latency" came
# out negative.
DIRECT = r"""
import sys, time
import numpy as np
from d2lmini.engine import stream
stream.set_engine('naive')
import d2lmini as mx
from d2lmini.serve import model
pred = model.Predictor(model.load(sys.argv[1]), mx.cpu(0))
x = np.load(sys.argv[2])[None]
for _ in range(3):
    pred(x)                                  # plans, caches
print('ready', flush=True)
for line in sys.stdin:        # seconds to measure for, and the period
    seconds, period = map(float, line.split())
    times, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds or len(times) < 5:
        due = t0 + len(times) * period       # (0: back to back)
        if due > time.perf_counter():
            time.sleep(due - time.perf_counter())
        t = time.perf_counter()
        pred(x)
        times.append(time.perf_counter() - t)
    print(float(np.median(times)), flush=True)
"""


class DirectPredictor:
    """A ``Predictor`` of ``prefix`` on ``cpu(0)`` in a child process, run
    as a worker runs it (one BLAS thread, as worker processes and the
    threads of an in-process server have); :meth:`p50` times direct calls
    on the example ``x`` (a batch of one)."""

    def __init__(self, prefix, x, directory, timeout=120.0):
        example = os.path.join(directory, 'direct-example.npy')
        np.save(example, x)
        path = [ROOT] + ([os.environ['PYTHONPATH']] if os.environ.get('PYTHONPATH')
                         else [])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path),
                   OPENBLAS_NUM_THREADS='1')
        self.proc = subprocess.Popen([sys.executable, '-c', DIRECT, prefix, example],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, start_new_session=True)
        self._answer(timeout)                       # 'ready'

    def _answer(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ''
        if not line:
            self.close()
            raise RuntimeError('the direct Predictor process did not answer')
        return line

    def p50(self, seconds, period=0.0, timeout=120.0):
        """Median seconds of one call, over ``seconds`` of calls (5 at
        least): back to back, or one every ``period`` seconds."""
        self.proc.stdin.write(f'{seconds} {period}\n')
        self.proc.stdin.flush()
        return float(self._answer(timeout + seconds))

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def sequential(url, path, body, ctype, seconds):
    """The p50 in ms of requests sent one after another for ``seconds``
    (5 at least) by one :class:`~d2lmini.serve.client.Client`: a plain
    blocking client on one kept-alive connection, whose own cost per
    request (~0.1 ms) is not the server's."""
    times = []
    with client.Client(url) as c:
        c.post(path, body, ctype)                           # (the connection)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds or len(times) < 5:
            t = time.perf_counter()
            status, _, data = c.post(path, body, ctype)
            times.append(time.perf_counter() - t)
            if status != 200:
                raise RuntimeError(f'{url}{path}: {status} {data[:200]!r}')
    return _median(times) * 1e3


def low_load(servers, models, repeats, seconds, directory, log=print):
    """One client, sequential requests, vs direct calls, by turns:
    ``{(model, server): (http p50, direct p50 back to back, direct p50 at
    the pace of the requests of its batch-1 server)}``, in ms (the batch-1
    server of the in-process servers is ``in-process batch 1``)."""
    def pacer(n):
        key = 'in-process batch 1' if n.startswith('in-process') else 'batch 1'
        return key if key in servers else next(iter(servers))
    out = {}
    paces = sorted(set(map(pacer, servers)))
    for m, (prefix, x) in models.items():
        call = DirectPredictor(prefix, x, directory)
        try:
            body, ctype = bodies(x)['npy']
            http = {n: [] for n in servers}
            direct, paced = [], {k: [] for k in paces}
            for _ in range(repeats[m]):
                for n, s in servers.items():
                    http[n].append(sequential(s.url, f'/predictions/{m}', body,
                                              ctype, seconds[m]))
                direct.append(call.p50(seconds[m] / 2) * 1e3)
                for key in paces:
                    paced[key].append(call.p50(seconds[m] / 2,
                                               http[key][-1] / 1e3) * 1e3)
        finally:
            call.close()
        for n in servers:
            out[(m, n)] = (_median(http[n]), _median(direct),
                           _median(paced[pacer(n)]))
            log(f'   low load: {m:8s} {n:9s} HTTP p50 {out[(m, n)][0]:.2f} ms, '
                f'direct p50 {out[(m, n)][1]:.2f} ms back to back, '
                f'{out[(m, n)][2]:.2f} ms at the same pace')
    return out


def low_rows(found):
    rows = []
    for (m, n), (http, direct, paced) in found.items():
        why = {'batch 1': 'the server alone',
               'batching': 'no wait for a batch: the only connection waits',
               'wait out': 'includes the wait of 5 ms for a batch',
               'in-process batch 1': 'the server alone, worker threads',
               'in-process': 'worker threads, no wait for a batch',
               'in-process hand-off': 'worker threads, every batch handed '
                                      'to one'}.get(n, n)
        for base, how in ((paced, 'called at the same pace, one call every '
                                  'HTTP p50 of its batch-1 server: the target'),
                          (direct, 'called back to back')):
            added = http - base
            rows.append(dict(
                name=f'{LABEL[m]}, 1 client, sequential, {n} server: added latency '
                     f'(HTTP p50 {http:.2f} ms - direct Predictor p50 {base:.2f} ms '
                     f'{how}; {why})',
                ours=round(added, 3), reference=ADDED_TARGET_MS,
                ratio=round(added / ADDED_TARGET_MS, 3),
                unit='ms (ref: the target, 2 ms; ratio <= 1 meets it)'))
    return rows


# ------------------------------------------------------------------ all of it
def run(models=('lenet', 'resnet18'), repeats=None, seconds=None, warmup=None,
        fractions=OPEN_LOOP, low_load_s=None, servers=SERVERS, log=print):
    """The rows (see the module's docstring); smaller arguments, a quick check."""
    repeats = dict(REPEATS, **(repeats or {}))
    seconds = dict(SECONDS, **(seconds or {}))
    warmup = dict(WARMUP, **(warmup or {}))
    low_load_s = dict(LOW_LOAD_S, **(low_load_s or {}))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix='bench_serve-') as tmp:
        found = examples(models, tmp)
        running = start_servers(found, servers)
        try:
            log(f'   servers up in {time.perf_counter() - t0:.1f} s: '
                + ', '.join(f'{n} at {s.url}' for n, s in running.items()))
            results = closed_loop(running, found, repeats, seconds, warmup, log)
            rows = closed_rows(results, found)
            rows += open_rows(running['batching'], found, results, fractions,
                              seconds, warmup, log)
            quiet = {n: running[n] for n in ('batch 1', 'batching', 'wait out',
                                             'in-process batch 1', 'in-process',
                                             'in-process hand-off')
                     if n in running}
            rows += low_rows(low_load(quiet, found, repeats, low_load_s, tmp, log))
        finally:
            stop_servers(running)
    log(f'   bench_serve: {time.perf_counter() - t0:.0f} s')
    return [dict(r, bench='serve') for r in rows]


if __name__ == '__main__':
    for row in run():
        print(row)
