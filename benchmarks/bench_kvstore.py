"""The KVStore: does 2-device training equal 1-device training, and how fast
is an all-reduce of a LeNet's parameters?

Rows:

* ``2 vs 1 device, <store>, update_on_kvstore=<b>``: the chapter's LeNet
  (``d2l.lenet_classic``) trained ``STEPS`` SGD-momentum steps at global
  batch ``BATCH`` on cpu(0)+cpu(1) through the store, and on cpu(0) alone
  from the same initial weights and data; ``ours`` is the max |difference|
  over all weights after the last step (float32 rounding: the two sum the
  batch's gradients in a different order), ``reference`` the max |weight|.
* ``pushpull LeNet params, 2 devices, <store>``: ``kv.pushpull`` of the
  multi-GPU chapter's 8 LeNet parameters (``d2l.get_lenet_params``, 0.52 MB)
  from cpu(0) and cpu(1) into arrays on both; GB/s of parameter bytes all-reduced per
  second (algorithm bandwidth), best of several rounds; ``reference``:
  NumPy memcpy of the same bytes in the same run.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import d2lmini as mx                        # noqa: E402
from d2lmini import autograd, d2l, gluon, nd  # noqa: E402

STEPS, BATCH = 5, 128
ROUNDS, REPEAT = 20, 5
CTX2 = [mx.cpu(0), mx.cpu(1)]
_now = time.perf_counter


def _train(ctxs, X, Y, init_values, **kw):
    net = d2l.lenet_classic()
    net.initialize(ctx=ctxs)
    net(nd.zeros((1, 1, 28, 28), ctx=ctxs[0]))
    for p, v in zip(net.collect_params().values(), init_values or []):
        p.set_data(v)
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': 0.5, 'momentum': 0.9}, **kw)
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    for X_b, y_b in zip(X, Y):
        xs = gluon.utils.split_and_load(X_b, ctxs)
        ys = gluon.utils.split_and_load(y_b, ctxs)
        with autograd.record():
            ls = [loss(net(a), b) for a, b in zip(xs, ys)]
        for l_ in ls:
            l_.backward()
        trainer.step(BATCH)
    return [p.list_data() for p in net.collect_params().values()]


def equivalence_rows():
    rng = np.random.default_rng(0)
    X = [nd.array(rng.random((BATCH, 1, 28, 28), dtype=np.float32))
         for _ in range(STEPS)]
    Y = [nd.array(rng.integers(0, 10, BATCH)) for _ in range(STEPS)]
    mx.random.seed(0)
    net = d2l.lenet_classic()
    net.initialize(ctx=mx.cpu(0), init=mx.init.Xavier())
    net(X[0][:1])
    init_values = [p.data().copy() for p in net.collect_params().values()]
    one = [d[0].asnumpy() for d in _train([mx.cpu(0)], X, Y, init_values)]
    rows = []
    for store in ('local', 'device'):
        for uok in (True, False):
            two = _train(CTX2, X, Y, init_values, kvstore=store,
                         update_on_kvstore=uok)
            diff = max(float(np.abs(c.asnumpy() - w).max())
                       for copies, w in zip(two, one) for c in copies)
            scale = max(float(np.abs(w).max()) for w in one)
            rows.append({'name': f'2 vs 1 device, {store}, update_on_kvstore={uok}',
                         'ours': float(f'{diff:.3g}'), 'reference': round(scale, 3),
                         'ratio': float(f'{diff / scale:.3g}'),
                         'unit': f'max |w2 - w1| after {STEPS} steps, batch {BATCH} '
                                 f'(reference: max |w|)'})
    return rows


def _best(fn):
    best = float('inf')
    for _ in range(REPEAT):
        best = min(best, fn())
    return best


def pushpull_rows():
    base = d2l.get_lenet_params(mx.cpu(0))
    nbytes = sum(p.size * 4 for p in base)
    src = np.concatenate([p.asnumpy().ravel() for p in base])
    dst = np.empty_like(src)

    def memcpy():
        t = _now()
        for _ in range(ROUNDS):
            np.copyto(dst, src)
        return (_now() - t) / ROUNDS
    t_copy = _best(memcpy)
    rows = []
    for store in ('local', 'device'):
        kv = mx.kv.create(store)
        keys = list(range(len(base)))
        kv.init(keys, base)
        vals = [[p.copyto(c) for c in CTX2] for p in base]
        outs = [[p.copyto(c) for c in CTX2] for p in base]   # in place would
        # double the values every round, into overflow after ~120 rounds

        def allreduce():
            nd.waitall()
            t = _now()
            for _ in range(ROUNDS):
                kv.pushpull(keys, vals, out=outs)
            nd.waitall()
            return (_now() - t) / ROUNDS
        allreduce()                                  # warm up
        t = _best(allreduce)
        rows.append({'name': f'pushpull LeNet params ({nbytes / 1e6:.2f} MB), '
                             f'2 devices, {store}',
                     'ours': round(nbytes / t / 1e9, 3),
                     'reference': round(nbytes / t_copy / 1e9, 3),
                     'ratio': round(t_copy / t, 3),
                     'unit': 'GB/s all-reduced (reference: NumPy memcpy of the '
                             'same bytes)'})
    return rows


def run():
    return [dict(r, bench='kvstore') for r in equivalence_rows() + pushpull_rows()]


if __name__ == '__main__':
    for r in run():
        print(r)
