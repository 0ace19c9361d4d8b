"""Worker 1 raises after two rounds; worker 0 goes on pushing."""
import sys

import d2lmini as mx
from d2lmini import nd

kv = mx.kv.create('dist_sync')
kv.init(0, nd.zeros((3,)))
for i in range(100000):
    if kv.rank == 1 and i == 2:
        raise ValueError('the data file is corrupt')
    try:
        kv.pushpull(0, nd.ones((3,)))
    except mx.kv.DistributedError as e:
        print(f'DistributedError: {e}', file=sys.stderr, flush=True)
        sys.exit(3)
