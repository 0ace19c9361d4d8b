"""A checkpoint that takes long: worker 1 is SLOW seconds away from the
barrier that worker 0 already waits in; then both finish at once.

usage: slow_barrier.py SLOW   (prints 'done' on each worker)
"""
import sys
import time

import d2lmini as mx
from d2lmini import nd

kv = mx.kv.create('dist_sync')
kv.init(0, nd.zeros((3,)))
if kv.rank == 1:
    time.sleep(float(sys.argv[1]))          # writing a checkpoint
kv.barrier()
print('done', flush=True)
