"""Automatic parallelism: one Python thread keeps two devices busy at once.

These check behaviour in the engine's trace, never speed: two chains of
matrix products on cpu(0) and cpu(1) run at the same time, and copies of a
chain's results to the other device run on that device's stream, each after
the product it reads and while the next product is computed.  A machine
busy with other work may run the two worker threads one after the other
for a while, so each check gets a few tries.
"""
import numpy as np

import d2lmini as mx
from d2lmini import nd
from d2lmini.engine import Trace

D0, D1 = mx.cpu(0), mx.cpu(1)
TRIES = 5


def chain(x, n):
    """``n`` dependent products; the rescale keeps the values finite."""
    ys = []
    for _ in range(n):
        x = nd.dot(x, x) / x.shape[0]
        ys.append(x)
    return ys


def test_two_devices_compute_at_the_same_time():
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(500, 500)).astype(np.float32)
    xs = [nd.array(a, ctx=D0), nd.array(a, ctx=D1)]
    for _ in range(TRIES):
        with Trace() as tr:
            outs = [chain(x, 8) for x in xs]      # pushed from this one thread
        if tr.overlap(D0, D1) > 0:
            break
    assert tr.overlap(D0, D1) > 0
    assert {n for _, n, _, _ in tr.spans(D0)} >= {'dot'}
    assert {n for _, n, _, _ in tr.spans(D1)} >= {'dot'}
    ref = a
    for _ in range(8):
        ref = ref @ ref / 500
    for ys in outs:                               # and the answers are right
        np.testing.assert_allclose(ys[-1].asnumpy(), ref, rtol=1e-4)


def test_copies_overlap_the_computation_they_follow():
    rng = np.random.default_rng(1)
    a = rng.uniform(size=(500, 500)).astype(np.float32)
    x = nd.array(a, ctx=D0)
    for _ in range(TRIES):
        with Trace() as tr:
            ys = chain(x, 8)
            copies = [y.copyto(D1) for y in ys]
        dots = [s for s in tr.spans(D0) if s[1] == 'dot']
        cps = [s for s in tr.spans(D1) if s[1] == 'copyto']
        if tr.overlap(D0, D1) > 0:
            break
    assert len(dots) == len(cps) == 8
    for d, c in zip(dots, cps):                   # a copy never reads too early
        assert c[2] >= d[3]
    assert tr.overlap(D0, D1) > 0                 # ... but runs beside the next dot
    for y, c in zip(ys, copies):
        assert c.context == D1
        np.testing.assert_array_equal(c.asnumpy(), y.asnumpy())
