"""One script for every process of a real dist_sync job, for test_launch.

The scheduler and the server run their loop inside ``import d2lmini``; a
worker pushes ``rank + 1`` for key 3 and pulls: every worker must read
``W (W + 1) / 2``.  It prints ``result {json}``.  With ``fail-after-init``
as argument, worker 1 dies with status 3 after ``init`` (``os._exit``:
no goodbye to the scheduler, as in a crash).
"""
import json
import os
import sys

import numpy as np

import d2lmini as mx
from d2lmini import nd

kv = mx.kv.create('dist_sync')
kv.init(3, nd.ones((2, 3)))
if 'fail-after-init' in sys.argv and kv.rank == 1:
    os._exit(3)
kv.push(3, nd.ones((2, 3)) * (kv.rank + 1))
out = nd.zeros((2, 3))
kv.pull(3, out=out)
w = kv.num_workers
print('result', json.dumps({
    'rank': kv.rank, 'num_workers': w,
    'worker_id': int(os.environ['DMLC_WORKER_ID']),
    'ok': bool(np.all(out.asnumpy() == w * (w + 1) / 2))}))
