"""Every collective of d2lmini.horovod on deterministic inputs.

    mpiexec -n N python collectives.py OUTDIR

Rank 0 saves every result in OUTDIR/results.npz; every rank saves the
digest of each of its results in OUTDIR/digests.<rank>.json, so that the
test can check that all ranks got the same bits and compare rank 0's
values with NumPy.
"""
import json
import os
import sys

import numpy as np

import d2lmini.horovod as hvd
from d2lmini import nd
from d2lmini.horovod.ring import ring_allreduce
from _data import (ALGORITHMS, DTYPES, GROUP_SHAPES, SIZES, digest, gathered,
                   normals, quarters)

outdir = sys.argv[1]
hvd.init()
rank, size = hvd.rank(), hvd.size()
res = {}

for algo in ALGORITHMS:
    for dtype in DTYPES:
        for n in SIZES:
            x = quarters(rank, n, dtype)
            for avg in (True, False):
                key = f'allreduce/{algo}/{dtype}/{n}/{"avg" if avg else "sum"}'
                y = hvd.allreduce(nd.array(x, dtype=dtype), average=avg,
                                  name=key, algorithm=algo)
                res[key] = y.asnumpy()
    x = normals(rank, 1000)
    res[f'normals/{algo}'] = hvd.allreduce(
        nd.array(x, dtype='float64'), average=False, name=f'normals/{algo}',
        algorithm=algo).asnumpy()

    # in place: the same NDArray comes back, holding the average
    t = nd.array(quarters(rank, 1000, 'float32', salt=2))
    back = hvd.allreduce_(t, average=True, name=f'inplace/{algo}',
                          algorithm=algo)
    res[f'allreduce_/{algo}'] = t.asnumpy()
    res[f'allreduce_/{algo}/same'] = np.array(back is t)

    # the from-scratch ring on NumPy buffers, with the raw communicator
    from mpi4py import MPI
    for n in (1, 3, 1000, 1_000_003):
        buf = quarters(rank, n, 'float32', salt=3)
        ring_allreduce(MPI.COMM_WORLD, buf, op='sum')
        res[f'ring_allreduce/{n}'] = buf

# fusion: many small tensors in one call
ts = [nd.array(quarters(rank, int(np.prod(s)), 'float32', salt=10 + i)
               .reshape(s)) for i, s in enumerate(GROUP_SHAPES)]
for avg in (True, False):
    outs = hvd.grouped_allreduce(ts, average=avg,
                                 name=f'grouped/{"avg" if avg else "sum"}')
    for i, o in enumerate(outs):
        res[f'grouped/{"avg" if avg else "sum"}/{i}'] = o.asnumpy()

res['allgather'] = hvd.allgather(nd.array(gathered(rank)),
                                 name='gather').asnumpy()

root = 1 if size > 1 else 0
res['broadcast'] = hvd.broadcast(
    nd.array(quarters(rank, 7, 'float32', salt=4)), root, name='bc').asnumpy()
t = nd.array(quarters(rank, 7, 'float64', salt=5))
back = hvd.broadcast_(t, root, name='bc_')
res['broadcast_'] = t.asnumpy()
res['broadcast_/same'] = np.array(back is t)

with open(os.path.join(outdir, f'digests.{rank}.json'), 'w') as f:
    json.dump({k: digest(v) for k, v in res.items()}, f)
if rank == 0:
    np.savez(os.path.join(outdir, 'results.npz'),
             **{k.replace('/', '|'): v for k, v in res.items()})
print('collectives: done', rank, size, flush=True)
hvd.shutdown()
