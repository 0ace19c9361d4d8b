"""MXNet's nightly dist_sync_kvstore check, in miniature: every worker
pushes (rank + 1) from each of its devices, so the stored values are known
exactly.

usage: closed_form.py KVTYPE ROUNDS BIG   (prints one JSON line per worker)
CLOSED_FORM_DEVICES=n: push from n devices of the default context's kind,
cpu(0)..cpu(n-1) or gpu(0)..gpu(n-1) (default 1).
"""
import json
import os
import sys

import numpy as np

import d2lmini as mx
from d2lmini import nd

kvtype, rounds, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kind = mx.current_context().device_type
devices = [mx.Context(kind, i)
           for i in range(int(os.environ.get('CLOSED_FORM_DEVICES', 1)))]
kv = mx.kv.create(kvtype)
shapes = {3: (2, 3), 5: (big,), 9: (3, 2)}   # key 5: split over the servers when big
dtypes = {3: 'float32', 5: 'float32', 9: 'float16'}
kv.init(list(shapes), [nd.ones(s, dtype=dtypes[k]) for k, s in shapes.items()])
r = kv.rank


def push_all():
    for k, s in shapes.items():
        kv.push(k, [nd.ones(s, ctx=c, dtype=dtypes[k]) * (r + 1) for c in devices])


def pull_all():
    outs = {k: [nd.zeros(s, ctx=c, dtype=dtypes[k]) for c in devices]
            for k, s in shapes.items()}
    for k in shapes:
        kv.pull(k, out=outs[k])
    for k in shapes:                     # every device got the same value
        assert all(np.array_equal(o.asnumpy(), outs[k][0].asnumpy()) for o in outs[k])
    return {k: o[0].asnumpy() for k, o in outs.items()}


# no optimizer: a dist_sync push replaces the stored value by the sum of all
# the workers' pushes (dist_async: by each push as it arrives, so the value
# depends on who came last: not checked)
plain_ok = None
if 'async' not in kvtype:
    push_all()
    expect = len(devices) * kv.num_workers * (kv.num_workers + 1) / 2
    plain_ok = all(bool(np.all(v == expect)) for v in pull_all().values())
# with an optimizer on the servers: w -= lr * (sum of pushes), every round
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=1.0))
for _ in range(rounds):
    push_all()
pull_all()          # our pushes are answered; after the barrier, everyone's are
kv.barrier()
final = pull_all()
print(json.dumps({'rank': r, 'num_workers': kv.num_workers, 'plain_ok': plain_ok,
                  'values': {str(k): [float(v.min()), float(v.max())]
                             for k, v in final.items()}}), flush=True)
