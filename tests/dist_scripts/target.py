"""The job a hostile peer attacks: worker 0 prints where everybody listens,
waits until the file GO exists (the attack is over), then the job runs
normally.  Prints 'values ok' if the stored values are exactly right.

usage: target.py GO [replay]
With 'replay', worker 0 also keeps a copy of the frames of its first push
and sends them again, from sockets of its own, to the server it was meant
for and to the other one (an eavesdropper replaying a signed push).
"""
import json
import os
import sys
import time

import numpy as np
import zmq

import d2lmini as mx
from d2lmini import nd
from d2lmini.kvstore.dist import wire
from peer import read_by

go, replay = sys.argv[1], 'replay' in sys.argv[2:]
sent = []
if replay:
    _send = wire.send

    def send(sock, frames, to=None, track=False):     # a tap on the wire
        sent.append([bytes(f) for f in frames])
        return _send(sock, frames, to, track)
    wire.send = send

kv = mx.kv.create('dist_sync')
kv.init(7, nd.zeros((10,)))
if kv.rank == 0:
    print('ADDR ' + json.dumps(kv._node.addresses), flush=True)
    deadline = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.05)
kv.barrier()
out = nd.zeros((10,))
expect = kv.num_workers * (kv.num_workers + 1) / 2
ok = True
for step in range(3):
    kv.pushpull(7, nd.ones((10,)) * (kv.rank + 1), out=out)
    ok &= bool(np.all(out.asnumpy() == expect))
    if step == 0 and replay and kv.rank == 0:
        pushes = [f for f in sent if b'"op":"push"' in f[0]]
        ctx = zmq.Context()
        for address in kv._node.addresses:      # to every server
            d = ctx.socket(zmq.DEALER)
            d.setsockopt(zmq.LINGER, 0)
            d.connect(f'tcp://{address}')
            d.send_multipart(pushes[0])
            read_by(d, address, kv._node.cfg.secret, 'the copy')
            d.close()
        ctx.term()
        print(f'replayed {len(pushes[0])} frames', flush=True)
    kv.barrier()
print('values ok' if ok else f'values WRONG {out}', flush=True)
kv.barrier()
