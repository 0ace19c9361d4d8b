"""Gradient compression in a job: every worker pushes known gradients,
2-bit compressed, and prints what it pulled and the bytes it sent.

usage: compressed.py KVTYPE STEPS THRESHOLD SIZE...   (one key per size)
A worker's gradient of key k at step s is ``gradient(rank, k, s, size)``
(tests/test_gradient_compression.py rebuilds it).  dist_sync without an
optimizer: a pull gives the sum of the workers' decompressed pushes.
dist_async: SGD with learning rate 1 on the servers; after the barrier
the weight is minus the sum of every decompressed push.
"""
import json
import sys

import numpy as np

import d2lmini as mx
from d2lmini import nd


def gradient(rank, key, step, size):
    return (np.random.RandomState(1000 * rank + 100 * key + step)
            .randn(size).astype(np.float32) * 0.4)


if __name__ == '__main__':
    kvtype, steps, threshold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    sizes = [int(a) for a in sys.argv[4:]]
    kv = mx.kv.create(kvtype)
    kv.set_gradient_compression({'type': '2bit', 'threshold': threshold})
    kv.init(list(range(len(sizes))), [nd.zeros((n,)) for n in sizes])
    if 'async' in kvtype:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0, rescale_grad=1.0))
    pulled = []
    for s in range(steps):
        outs = [nd.zeros((n,)) for n in sizes]
        for k, n in enumerate(sizes):
            kv.push(k, nd.array(gradient(kv.rank, k, s, n)))
        for k in range(len(sizes)):
            kv.pull(k, out=outs[k])
        pulled.append([o.asnumpy().tolist() for o in outs])
    kv.barrier()
    final = [nd.zeros((n,)) for n in sizes]
    for k, o in enumerate(final):
        kv.pull(k, out=o)
    print(json.dumps({'rank': kv.rank, 'pulled': pulled,
                      'final': [o.asnumpy().tolist() for o in final],
                      'push_bytes': kv._node.bytes_sent['push']}),
          flush=True)
