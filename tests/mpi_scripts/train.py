"""DistributedTrainer / DistributedOptimizer on a rank's part of each batch.

    mpiexec -n N python train.py OUTDIR trainer|optimizer sgd|adam

Every rank starts from a different seed; broadcast_parameters makes them
equal; rank 0 saves the trained weights in OUTDIR/<mode>-<opt>.npz and each
rank the digests of its weights.
"""
import json
import os
import sys

import numpy as np

import d2lmini.horovod as hvd
from d2lmini import gluon, optimizer
from _data import digest
from _net import BATCH, OPTIMIZERS, make_net, train

outdir, mode, opt = sys.argv[1:4]
hvd.init()
rank, size = hvd.rank(), hvd.size()
net = make_net(seed=100 + rank)           # different on every rank ...
params = net.collect_params()
hvd.broadcast_parameters(params, root_rank=0)   # ... until rank 0's win
if mode == 'trainer':
    trainer = hvd.DistributedTrainer(params, opt, dict(OPTIMIZERS[opt]))
else:
    dopt = hvd.DistributedOptimizer(optimizer.create(opt, **OPTIMIZERS[opt]))
    trainer = gluon.Trainer(params, dopt, kvstore=None)
local = BATCH // size
weights = train(net, trainer.step, slice(rank * local, (rank + 1) * local))
with open(os.path.join(outdir, f'{mode}-{opt}.{rank}.json'), 'w') as f:
    json.dump([digest(v) for v in weights], f)
if rank == 0:
    np.savez(os.path.join(outdir, f'{mode}-{opt}.npz'), *weights)
hvd.shutdown()
