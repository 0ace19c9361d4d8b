"""Train a small net for a few steps; print its final parameters as JSON.

usage: train_net.py KVTYPE OPTIMIZER UPDATE_ON_KVSTORE STEPS [SAVE_AT]
  KVTYPE 'none' trains in one process on the whole batch (the reference);
  otherwise each worker trains on its share of every batch with a
  dist store, and trainer.step is given the whole batch size.
  UPDATE_ON_KVSTORE: 1, 0 or auto.  SAVE_AT: save the trainer's states
  after that step, and load them back (a round trip through the servers).
"""
import json
import os
import sys
import tempfile

import numpy as np

import d2lmini as mx
from d2lmini import autograd, gluon, nd
from d2lmini.gluon import nn


def net_and_data(steps, batch=16):
    mx.random.seed(0)
    net = nn.Sequential()
    net.add(nn.Dense(8, activation='relu'), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    rng = np.random.RandomState(42)
    X = rng.randn(steps, batch, 5).astype('float32')
    y = rng.randint(0, 3, size=(steps, batch)).astype('float32')
    return net, X, y


def train(kvtype, optimizer, update, steps, save_at=None):
    net, X, y = net_and_data(steps)
    params = {'learning_rate': 0.1}
    if optimizer == 'sgd':
        params['momentum'] = 0.9
    kw = {} if update == 'auto' else {'update_on_kvstore': update == '1'}
    if kvtype == 'none':
        trainer = gluon.Trainer(net.collect_params(), optimizer, params,
                                kvstore=None)
        rank, parts = 0, 1
    else:
        kv = mx.kv.create(kvtype)
        trainer = gluon.Trainer(net.collect_params(), optimizer, params,
                                kvstore=kv, **kw)
        rank, parts = kv.rank, kv.num_workers
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    n = X.shape[1] // parts
    for s in range(steps):
        xb = nd.array(X[s, rank * n:(rank + 1) * n])
        yb = nd.array(y[s, rank * n:(rank + 1) * n])
        with autograd.record():
            l = loss(net(xb), yb)
        l.backward()
        trainer.step(X.shape[1])
        if save_at is not None and s == save_at:
            fname = os.path.join(tempfile.mkdtemp(), f'states{rank}')
            trainer.save_states(fname)
            trainer.load_states(fname)
    out = [p.data().asnumpy().ravel().tolist()
           for p in net.collect_params().values()]
    return rank, out, trainer


if __name__ == '__main__':
    kvtype, optimizer, update, steps = sys.argv[1:5]
    save_at = int(sys.argv[5]) if len(sys.argv) > 5 else None
    rank, out, trainer = train(kvtype, optimizer, update, int(steps), save_at)
    print(json.dumps({'rank': rank, 'update_on_kvstore':
                      trainer._update_on_kvstore, 'params': out}), flush=True)
