"""Train a small symbolic MLP with Module.fit; print its parameters as JSON.

usage: module_fit.py KVTYPE EPOCHS
  KVTYPE 'none' trains in one process on batches of 20 (the reference);
  otherwise each of the job's workers trains on its 20 / num_workers rows of
  every batch through the dist store (Module: rescale_grad =
  1 / (batch * num_workers), updates on the servers).
"""
import json
import sys

import numpy as np

import d2lmini as mx
from d2lmini import nd

BATCH, NUM_BATCHES = 20, 3


def symbol():
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=8,
                                                name='fc1'), act_type='relu')
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name='fc2'),
                                name='softmax')


def fit(kvtype, epochs):
    rng = np.random.RandomState(0)
    X = rng.randn(NUM_BATCHES * BATCH, 5).astype('float32')
    y = rng.randint(0, 3, NUM_BATCHES * BATCH).astype('float32')
    init = {'fc1_weight': rng.randn(8, 5) * 0.3, 'fc1_bias': np.zeros(8),
            'fc2_weight': rng.randn(3, 8) * 0.3, 'fc2_bias': np.zeros(3)}
    if kvtype == 'none':
        rank, parts, kv = 0, 1, None
    else:
        kv = mx.kv.create(kvtype)
        rank, parts = kv.rank, kv.num_workers
    n = BATCH // parts            # this worker's rows of every joined batch
    mine = lambda a: a.reshape((NUM_BATCHES, parts, n) + a.shape[1:])[:, rank] \
        .reshape((NUM_BATCHES * n,) + a.shape[1:])
    it = mx.io.NDArrayIter(mine(X), mine(y), batch_size=n)
    mod = mx.mod.Module(symbol())
    mod.fit(it, num_epoch=epochs, kvstore=kv or 'local',
            arg_params={k: nd.array(v) for k, v in init.items()},
            optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    arg, _ = mod.get_params()
    return rank, mod, {k: v.asnumpy().ravel().tolist() for k, v in sorted(arg.items())}


if __name__ == '__main__':
    rank, mod, params = fit(sys.argv[1], int(sys.argv[2]))
    print(json.dumps({'rank': rank, 'update_on_kvstore': mod._update_on_kvstore,
                      'rescale_grad': mod._optimizer.rescale_grad, 'params': params}),
          flush=True)
