"""Worker 0 throws garbage at every server, then the job runs normally.

Sent to each server: raw bytes on a plain TCP connection (not even
ZeroMQ's handshake), and over ZeroMQ: a non-JSON header, a header of the
wrong shape, an array message cut short, and a well-formed push that is
not signed (rejected only when D2LMINI_PS_SECRET is set: then it would be
a push of 1000s, so the closed-form value below would be wrong).
Prints 'values ok' if the stored values are still exactly right.
"""
import json
import socket

import numpy as np
import zmq

import d2lmini as mx
from d2lmini import nd
from peer import read_by

kv = mx.kv.create('dist_sync')
kv.init(7, nd.zeros((10,)))
dealers = []      # kept open to the end: a ROUTER drops what a closed peer left
if kv.rank == 0:
    ctx = zmq.Context.instance()
    for address in kv._node.addresses:
        host, port = address.rsplit(':', 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(np.random.RandomState(0).bytes(4096))
        d = ctx.socket(zmq.DEALER)
        d.setsockopt(zmq.LINGER, 10000)   # deliver, even on a busy machine
        d.connect(f'tcp://{address}')
        d.send_multipart([b'\xff\xfe garbage'])
        d.send_multipart([json.dumps([1, 2, 3]).encode()])
        d.send_multipart([json.dumps({'v': 1, 'op': 'push', 'seq': 1, 'key': 7,
                                      'part': 0, 'rank': 0,
                                      'arrays': [['float32', [10]]]}).encode(),
                          b'\x00' * 12])
        if kv._node.cfg.secret is not None:          # unsigned, else well-formed
            d.send_multipart([json.dumps({'v': 1, 'op': 'init', 'seq': 2,
                                          'key': 7, 'part': 0, 'rank': 0,
                                          'arrays': [['float32', [10]]]}).encode(),
                              np.full(10, 1000, np.float32).tobytes()])
        read_by(d, address, kv._node.cfg.secret, 'the garbage')
        dealers.append(d)
kv.barrier()
out = nd.zeros((10,))
kv.pushpull(7, nd.ones((10,)) * (kv.rank + 1), out=out)
expect = kv.num_workers * (kv.num_workers + 1) / 2
print('values ok' if np.all(out.asnumpy() == expect) else f'values WRONG {out}',
      flush=True)
kv.barrier()      # every server has long read the garbage: now it may go
for d in dealers:
    d.close()
