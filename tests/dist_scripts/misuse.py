"""What MXNet refuses, refused here too.

usage: misuse.py async   dist_async pushes with no optimizer on the servers
       misuse.py dup     kv.init with the same key twice in one call
Prints the error and exits 3.
"""
import sys

import d2lmini as mx
from d2lmini import nd

what = sys.argv[1]
kv = mx.kv.create('dist_async' if what == 'async' else 'dist_sync')
try:
    if what == 'dup':
        kv.init([5, 5], [nd.ones((2,)), nd.zeros((2,))])
    else:
        kv.init(5, nd.ones((2,)))
        kv.push(5, nd.ones((2,)))
        out = nd.zeros((2,))
        kv.pull(5, out=out)
        print(f'pulled {out.asnumpy()}', flush=True)
except mx.base.MXNetError as e:
    print(f'{type(e).__name__}: {e}', file=sys.stderr, flush=True)
    sys.exit(3)
