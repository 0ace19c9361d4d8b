"""A busy machine: how much two CPU-bound neighbours slow training down,
d2lmini against PyTorch on the same steps.

A learner's laptop is rarely idle: a browser, an editor, a second notebook.
Here two processes that each keep one core busy (``while True: pass``) run
beside the timed steps ("busy") or not ("quiet"); the two conditions take
turns, round after round, and every step keeps the median of its blocks in
each condition.  A row is a *slowdown*, busy time / quiet time, of

* the ReLU LeNet training step of chapter 5 (batch 256, ``cpu(0)``), ours
  and the same network in PyTorch (``d2l.torch_twin``, our weights);
* the data-parallel LeNet step of chapter 8 (a ``Trainer`` with
  ``kvstore='device'`` over ``cpu(0)`` and ``cpu(1)``, global batch 512),
  ours, against PyTorch's step at batch 512 in one process (PyTorch has no
  logical CPU devices: that is the same work on the same cores).

``ratio`` is our slowdown over PyTorch's: at most 1 means a busy machine
costs us no more than it costs PyTorch.  The quiet and busy images/s of
both are in the row's name.  Sharing 2 cores with 2 busy processes leaves a
fair share of 1 core, so a slowdown of 2 is what sharing alone explains.
"""
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import d2lmini as mx                                    # noqa: E402
from d2lmini import autograd, d2l, gluon, init, nd      # noqa: E402

NEIGHBOURS = 2          # CPU-bound processes beside the busy blocks
ROUNDS = 5              # (quiet, busy) pairs
BLOCK_S = 1.0           # seconds of steps per block


@contextlib.contextmanager
def neighbours(n=NEIGHBOURS):
    """``n`` processes that keep a core busy each, killed (and reaped) on
    leaving the block."""
    procs = [subprocess.Popen([sys.executable, '-c', 'while True: pass'],
                              stdin=subprocess.DEVNULL) for _ in range(n)]
    try:
        time.sleep(0.2)                     # running, not starting up
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=10)


def block(step, seconds=BLOCK_S):
    """Seconds per call of ``step``, over as many calls as fill ``seconds``."""
    n, start = 0, time.perf_counter()
    while True:
        step()
        n += 1
        spent = time.perf_counter() - start
        if spent >= seconds:
            return spent / n


def slowdowns(steps, rounds=ROUNDS, busy=neighbours, time_block=block):
    """``{name: (quiet s, busy s)}``, medians over ``rounds`` alternating
    quiet and busy blocks of every step in ``steps`` (``{name: step}``)."""
    times = {name: {'quiet': [], 'busy': []} for name in steps}
    for step in steps.values():
        step()                              # deferred init, first-call caches
    for _ in range(rounds):
        for condition in ('quiet', 'busy'):
            with (busy() if condition == 'busy' else contextlib.nullcontext()):
                for name, step in steps.items():
                    time.sleep(0.1)          # the last block's threads go idle
                    times[name][condition].append(time_block(step))
    return {name: (statistics.median(t['quiet']), statistics.median(t['busy']))
            for name, t in times.items()}


def _data(batch):
    rng = np.random.default_rng(0)
    return (nd.array(rng.random((batch, 1, 28, 28), dtype=np.float32)),
            nd.array(rng.integers(0, 10, batch).astype(np.float32)))


def our_step(devices, batch):
    """A Gluon training step of the ReLU LeNet on ``devices`` (chapter 5 on
    one device, chapter 8 on several), and the network."""
    X, y = _data(batch)
    mx.random.seed(0)
    net = d2l.lenet_multigpu()
    net.initialize(init.Xavier(), ctx=devices)
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1},
                            kvstore='device' if len(devices) > 1 else None)

    def step():
        Xs = gluon.utils.split_and_load(X, devices)
        ys = gluon.utils.split_and_load(y, devices)
        with autograd.record():
            ls = [loss(net(a), b) for a, b in zip(Xs, ys)]
        for l in ls:
            l.backward()
        trainer.step(batch)
        nd.waitall()
    return step, net, X, y


def torch_step(net, X, y):
    """PyTorch's training step of the same network with the same weights,
    or None without PyTorch."""
    twin = d2l.torch_twin(net, X)
    return None if twin is None else d2l.torch_steps(twin, X, y, 0.1)[0]


def rows(results, batches):
    """Result rows from ``slowdowns``' numbers: ours against PyTorch's."""
    out = []
    for name, batch in batches.items():
        q, b = results[name, 'd2lmini']
        ref = results.get((name, 'PyTorch'))
        label = f'{name}: {batch / q:,.0f} -> {batch / b:,.0f} images/s'
        if ref is not None:
            label += f' (PyTorch {batch / ref[0]:,.0f} -> {batch / ref[1]:,.0f})'
        ours, theirs = b / q, None if ref is None else ref[1] / ref[0]
        out.append({'bench': 'busy', 'name': label, 'ours': round(ours, 2),
                    'reference': None if theirs is None else round(theirs, 2),
                    'ratio': None if theirs is None else round(ours / theirs, 3),
                    'unit': f'x slower with {NEIGHBOURS} CPU-bound neighbours '
                            f'(ratio = ours / PyTorch\'s; <= 1: we suffer no more)'})
    return out


WORKLOADS = {'one': ('LeNet train step, batch 256, cpu(0)', [0], 256),
             'two': ('LeNet data-parallel step, batch 512, cpu(0)+cpu(1)',
                     [0, 1], 512)}


def measure(workload):
    """``{(name, 'd2lmini' or 'PyTorch'): (quiet s, busy s)}`` of one
    workload.  Each workload runs in a process of its own (``run``): once
    ``cpu(1)`` has a stream, the engine gives every CPU device half the
    cores, which a program using ``cpu(0)`` alone never sees."""
    name, ids, batch = WORKLOADS[workload]
    step, net, X, y = our_step([mx.cpu(i) for i in ids], batch)
    steps = {(name, 'd2lmini'): step}
    if len(ids) > 1:                        # the same net, on one device
        net, X, y = our_step([mx.cpu(0)], batch)[1:]
    reference = torch_step(net, X, y)
    if reference is not None:
        steps[name, 'PyTorch'] = reference
    return slowdowns(steps)


def run():
    results = {}
    for workload in WORKLOADS:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), workload],
                             capture_output=True, text=True, timeout=1800)
        if out.returncode != 0:
            raise RuntimeError(f'bench_busy {workload}: {out.stderr[-2000:]}')
        for line in out.stdout.splitlines():
            name, who, quiet, busy = json.loads(line)
            results[name, who] = (quiet, busy)
    return rows(results, {name: batch for name, _, batch in WORKLOADS.values()})


if __name__ == '__main__':
    if len(sys.argv) > 1:
        for (name, who), (quiet, busy) in measure(sys.argv[1]).items():
            print(json.dumps([name, who, quiet, busy]))
    else:
        for r in run():
            print(r)
