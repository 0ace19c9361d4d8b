"""Push and pull one key for many rounds, printing 'round i' after each.

usage: rounds.py KVTYPE ROUNDS [ROUNDS_OF_RANK_1]
Used to kill a process mid-training, or to make worker 1 stop early.
"""
import sys
import time

import d2lmini as mx
from d2lmini import nd

kv = mx.kv.create(sys.argv[1])
rounds = int(sys.argv[2])
if kv.rank == 1 and len(sys.argv) > 3:
    rounds = int(sys.argv[3])
kv.init('w', nd.zeros((64,)))
out = nd.zeros((64,))
try:
    for i in range(rounds):
        kv.pushpull('w', nd.ones((64,)), out=out)
        print(f'round {i} {float(out[0].asscalar())}', flush=True)
        time.sleep(0.02)
except mx.kv.DistributedError as e:
    print(f'DistributedError: {e}', file=sys.stderr, flush=True)
    sys.exit(3)
