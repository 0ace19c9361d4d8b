"""Data-parallel LeNet on two CPU devices vs the same code on one.

The multi-GPU chapter's LeNet trained at a global batch of 512, in the two
versions the book teaches:

* from scratch (chapter 07): ``d2l.get_lenet_params`` / ``d2l.get_params``,
  ``d2l.lenet``, ``d2l.split_batch``, the chapter's ``allreduce``
  (``data[0][:] += data[i].copyto(...)``, then copies back) and ``d2l.sgd``;
* concise (chapter 08): ``d2l.lenet_multigpu()`` initialized on every
  device, ``gluon.utils.split_and_load`` and a ``Trainer`` with
  ``kvstore='device'``.

Each version runs on ``[cpu(0)]`` and on ``[cpu(0), cpu(1)]``, the same code
with the same global batch; the row of two devices gives the speed-up
(2 devices / 1 device).  BLAS threads: the engine gives each of k CPU
devices ``cores // k`` OpenBLAS threads (``mx.engine.blas_threads()``), so
on a 2-core machine one device runs every GEMM on 2 threads and two devices
one thread each; both numbers are in the row names.  The two configurations
are timed in alternating blocks within one process (6 steps, one sync per
block), and each keeps its best block, so other jobs on a shared CPU slow
both alike.

Where the time goes (from-scratch version, 2-core development machine,
best of alternating blocks in one process, ms per step of 512 images):
one device, 2 BLAS threads: 98-105.  Two devices: one device's half batch
(256, 1 BLAS thread) alone takes 70; both devices each training their own
half with no exchange take 78 (+12%: the memory-bound operators, ReLU and
pooling and their gradients on 14 MB activations, slow down most when both
cores stream memory, and the front end's ~2.7 ms of Python per step shares
the two cores); the data-parallel step takes 83 (+6%: one device waiting
at the allreduce for the other, the 8 small copy/add round trips, the
SGD).  Hence 1.2-1.3x: about 70% of the work is GEMM, which one device
already runs on both cores.  Not the cause (measured, no change): the
GIL switch interval, the number of GIL round trips in col2im, the
convolution's band size, the relu gradient's passes.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import d2lmini as mx                                    # noqa: E402
from d2lmini import autograd, gluon, nd, d2l, init      # noqa: E402

BATCH = 512
LR = 0.2


def allreduce(data):
    """The chapter's allreduce: sum onto data[0], then copy back."""
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].context)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def scratch(devices, X, y):
    """One from-scratch training step on ``devices`` (a closure)."""
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    mx.random.seed(0)
    params = d2l.get_lenet_params(mx.cpu(0))
    device_params = [d2l.get_params(params, d) for d in devices]

    def step():
        X_shards, y_shards = d2l.split_batch(X, y, devices)
        with autograd.record():
            ls = [loss(d2l.lenet(X_shard, W), y_shard)
                  for X_shard, y_shard, W in zip(X_shards, y_shards, device_params)]
        for l in ls:
            l.backward()
        for i in range(len(device_params[0])):
            allreduce([device_params[c][i].grad for c in range(len(devices))])
        for param in device_params:
            d2l.sgd(param, LR, X.shape[0])
    return step


def concise(devices, X, y):
    """One Gluon training step on ``devices`` (a closure)."""
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    mx.random.seed(0)
    net = d2l.lenet_multigpu()
    net.initialize(init.Normal(0.01), ctx=devices)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': LR},
                            kvstore='device')

    def step():
        Xs = gluon.utils.split_and_load(X, devices)
        ys = gluon.utils.split_and_load(y, devices)
        with autograd.record():
            ls = [loss(net(X_shard), y_shard) for X_shard, y_shard in zip(Xs, ys)]
        for l in ls:
            l.backward()
        trainer.step(BATCH)
    return step


def _blas_for(ndev):
    """The BLAS threads the engine's policy gives ``ndev`` CPU devices.

    In this process both streams exist once the 2-device run has started,
    so the 1-device blocks fix the count a process using only cpu(0) gets.
    """
    return max(1, mx.engine._cores() // ndev)


def _best_alternating(configs, rounds=5, number=6):
    """Best seconds per step of each ``(ndev, step)``, in alternating blocks."""
    best = [float('inf')] * len(configs)
    threads = [None] * len(configs)
    for rnd in range(rounds + 1):
        for k, (ndev, step) in enumerate(configs):
            mx.engine.set_blas_threads(_blas_for(ndev))
            threads[k] = mx.engine.blas_threads()
            if rnd == 0:                            # warm-up block
                step()
                step()
                nd.waitall()
                continue
            time.sleep(0.2)          # the other block's workers go idle
            t = time.perf_counter()
            for _ in range(number):
                step()
            nd.waitall()
            best[k] = min(best[k], (time.perf_counter() - t) / number)
    mx.engine.set_blas_threads(None)
    return best, threads


def run():
    rng = np.random.default_rng(0)
    X = nd.array(rng.random((BATCH, 1, 28, 28), dtype=np.float32))
    y = nd.array(rng.integers(0, 10, BATCH).astype(np.float32))
    one, two = [mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]
    rows = []
    for label, make in (('from scratch (ch. 07)', scratch),
                        ('Gluon + Trainer(kvstore=device) (ch. 08)', concise)):
        (t1, t2), (b1, b2) = _best_alternating([(1, make(one, X, y)),
                                                (2, make(two, X, y))])
        ips1, ips2 = BATCH / t1, BATCH / t2
        rows.append({'name': f'LeNet {label}, batch {BATCH}: cpu(0), '
                             f'{b1} BLAS threads',
                     'ours': round(ips1), 'reference': None, 'ratio': None,
                     'unit': 'images/s'})
        rows.append({'name': f'LeNet {label}, batch {BATCH}: cpu(0)+cpu(1), '
                             f'{b2} BLAS thread(s) each',
                     'ours': round(ips2), 'reference': round(ips1),
                     'ratio': round(ips2 / ips1, 3),
                     'unit': 'images/s (ref: the same on cpu(0) alone; ratio = '
                             'speed-up, target >= 1.3 on 2 cores)'})
    return rows


if __name__ == '__main__':
    for r in run():
        print(r)
