"""Worker 0 waits in kv.barrier(); worker 1 pulls a key only it pushed:
each waits for the other forever (unless the job notices)."""
import sys

import d2lmini as mx
from d2lmini import nd

kv = mx.kv.create('dist_sync')
kv.init(0, nd.zeros((3,)))
try:
    if kv.rank == 0:
        kv.barrier()
    else:
        kv.pushpull(0, nd.ones((3,)))
except mx.kv.DistributedError as e:
    print(f'DistributedError: {e}', file=sys.stderr, flush=True)
    sys.exit(3)
