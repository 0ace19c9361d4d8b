"""Ranks that call one collective with different arguments (the test checks
that every rank raised, and what the errors say).

    mpiexec -n N python disagree.py CASE OUTDIR

The odd one out is rank 1; the tensor's name is 300 characters long (a
deep Gluon model's parameter names reach that), except in ``grouped``.

* dtype: float32 on every rank, int32 on rank 1.
* shape: (2, 3) on every rank, (3, 2) on rank 1 (the same size).
* size: (3,) on every rank, (5,) on rank 1.
* name: two names that differ only in their last characters.
* op: rank 1 broadcasts where the others allreduce.
* grouped: a grouped allreduce of three tensors, the second of another
  shape on rank 1.

Each rank writes the HorovodError it caught to OUTDIR/caught.<rank>.  A
disagreement is found before any data moves, so the job can go on: every
rank then allreduces its rank + 1 and writes the sum to OUTDIR/after.<rank>.
"""
import os
import sys

import numpy as np

import d2lmini.horovod as hvd
from d2lmini import nd

case, outdir = sys.argv[1:3]
hvd.init()
rank = hvd.rank()
odd = rank == 1
LONG = 'resnet152_v1_stage4_bottleneck' * 10       # 300 characters
assert len(LONG) == 300


def write(what, text):
    with open(os.path.join(outdir, f'{what}.{rank}'), 'w') as f:
        f.write(text)


try:
    if case == 'dtype':
        hvd.allreduce(nd.ones(3, dtype='int32' if odd else 'float32'), name=LONG)
    elif case == 'shape':
        hvd.allreduce(nd.ones((3, 2) if odd else (2, 3)), name=LONG)
    elif case == 'size':
        hvd.allreduce(nd.ones(5 if odd else 3), name=LONG)
    elif case == 'name':
        hvd.allreduce(nd.ones(3), name=LONG + ('_beta' if odd else '_gamma'))
    elif case == 'op':
        if odd:
            hvd.broadcast(nd.ones(3), root_rank=0, name=LONG)
        else:
            hvd.allreduce(nd.ones(3), name=LONG)
    elif case == 'grouped':
        hvd.grouped_allreduce([nd.ones(4), nd.ones((3, 3) if odd else (3, 2)),
                               nd.ones(2)], name='grads')
    else:
        raise SystemExit(f'disagree.py: no case {case!r}')
    write('caught', 'nothing raised')
except hvd.HorovodError as e:
    write('caught', f'{type(e).__name__}: {e}')
total = hvd.allreduce(nd.array([rank + 1.0]), average=False, name='after')
write('after', str(float(total.asnumpy()[0])))
hvd.shutdown()
