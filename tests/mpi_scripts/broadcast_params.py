"""broadcast_parameters with deferred initialisation, both ways Horovod
documents: (a) initialize, one forward, then broadcast; (b) broadcast while
the shapes are still unknown: the parameters take root's values when the
first forward initialises them.

    mpiexec -n N python broadcast_params.py OUTDIR
"""
import os
import sys

import numpy as np

import d2lmini as mx
import d2lmini.horovod as hvd
from d2lmini import gluon, nd

outdir = sys.argv[1]
hvd.init()
rank = hvd.rank()


def deferred_net():
    mx.random.seed(1000 + rank)               # every rank different
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(4, activation='relu'), gluon.nn.Dense(2))
    net.initialize(mx.init.Normal(1.0))       # shapes unknown until a forward
    return net


def values(net):
    return [v.data().asnumpy() for v in net.collect_params().values()]


X = nd.array(np.ones((2, 6), dtype=np.float32))
out = {}
net = deferred_net()
net(X)
for i, v in enumerate(values(net)):
    out[f'a|before|{i}'] = v
hvd.broadcast_parameters(net.collect_params(), root_rank=0)
for i, v in enumerate(values(net)):
    out[f'a|after|{i}'] = v

net = deferred_net()
hvd.broadcast_parameters(net.collect_params(), root_rank=0)
net(X)
for i, v in enumerate(values(net)):
    out[f'b|after|{i}'] = v

np.savez(os.path.join(outdir, f'params.{rank}.npz'), **out)
hvd.shutdown()
