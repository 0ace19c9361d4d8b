"""MXNet's nightly dist_sync_kvstore check, in miniature: after N rounds of
every worker pushing (rank + 1) * ones, the stored values are known exactly.

usage: closed_form.py KVTYPE ROUNDS BIG   (prints one JSON line per worker)
"""
import json
import sys

import numpy as np

import d2lmini as mx
from d2lmini import nd

kvtype, rounds, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kv = mx.kv.create(kvtype)
shapes = {3: (2, 3), 5: (big,), 'w': (4, 5)}
for k, shape in shapes.items():
    if isinstance(k, str):
        continue
    kv.init(k, nd.ones(shape))
nw, r = kv.num_workers, kv.rank
# no optimizer: a push replaces the stored value with the sum of the workers'
for k, shape in shapes.items():
    if isinstance(k, int):
        kv.push(k, nd.ones(shape) * (r + 1))
out = {k: nd.zeros(s) for k, s in shapes.items() if isinstance(k, int)}
for k in out:
    kv.pull(k, out=out[k])
expect = nw * (nw + 1) / 2
ok_plain = all(float(np.abs(o.asnumpy() - expect).max()) == 0 for o in out.values())
# with an optimizer on the servers: w -= lr * sum of pushes, every round
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=1.0))
for _ in range(rounds):
    for k in out:
        kv.push(k, nd.ones(shapes[k]) * (r + 1))
for k in out:
    kv.pull(k, out=out[k])
values = {str(k): [float(o.asnumpy().min()), float(o.asnumpy().max())]
          for k, o in out.items()}
kv.barrier()
print(json.dumps({'rank': r, 'num_workers': nw, 'plain_ok': ok_plain,
                  'values': values}), flush=True)
