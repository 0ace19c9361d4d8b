"""Operator dispatch: what the engine costs per operator, and what async buys.

Rows (microseconds per op on a 2x2 float32 array, best of many repeats):

* ``push``: the front end pushing ops to the threaded engine (returns
  before they run; ``N_PUSH`` ops, few enough that the worker rarely gets
  the GIL in between, with the in-flight bound lifted so the front end
  never waits);
* ``end-to-end``: push ``N`` ops, then ``waitall`` -- front end and worker
  together, divided by ``N``;
* ``naive``: the synchronous engine (kernel runs at the call site);
* the same three for ``mx.np`` arrays, against ``nd``'s (``np.ndarray`` is
  an NDArray subclass: its operators must cost what nd's do).

References: PyTorch eager on the same op, measured in this run when
``import torch`` works, and MXNet 1.9.1's threaded engine, **quoted** (about
22 us per tiny op, measured on this machine when the target was set; MXNet
is not installed here).  Then the two figures of d2l's "Asynchronous
Computation" section: ten 1000x1000 dot products with and without waitall,
and 10000 ``y = x + 1`` waiting after each vs once at the end.
"""
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
from d2lmini import engine, nd             # noqa: E402

MXNET_QUOTED_US = 22.0                     # MXNet 1.9.1, tiny op, async, quoted
N_PUSH = 2000
N = 5000
_now = time.perf_counter


def _best(fn, repeat):
    """Best (smallest) wall time of ``fn()`` over ``repeat`` calls, seconds."""
    gc.collect()
    best = float('inf')
    for _ in range(repeat):
        t = fn()
        best = min(best, t)
    return best


def _push_only(f, n):
    def once():
        nd.waitall()
        t = _now()
        for _ in range(n):
            f()
        dt = _now() - t
        nd.waitall()
        return dt
    old = engine.set_max_inflight(10 * n)
    try:
        return _best(once, 40) / n * 1e6
    finally:
        engine.set_max_inflight(old)


def _end_to_end(f, n):
    def once():
        nd.waitall()
        t = _now()
        for _ in range(n):
            f()
        nd.waitall()
        return _now() - t
    return _best(once, 25) / n * 1e6


def _plain(f, n):
    def once():
        t = _now()
        for _ in range(n):
            f()
        return _now() - t
    return _best(once, 20) / n * 1e6


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def tiny_ops(front='nd'):
    """``{op: {'push', 'e2e', 'naive', 'torch'}}`` in microseconds per op,
    for the ``nd`` front end or ``mx.np`` (``front='np'``: the same ops on
    ``np.ndarray``s, the NDArray subclass with NumPy's semantics)."""
    torch = _torch()
    if front == 'np':
        from d2lmini import np as mod
    else:
        mod = nd
    x = mod.ones((2, 2))
    x.wait_to_read()
    ops = {'x + x': lambda: x + x, 'x + 1': lambda: x + 1,
           f'{front}.exp(x)': lambda: mod.exp(x)}
    out = {}
    with engine.engine_mode('threaded'):
        for name, f in ops.items():
            f()
            out[name] = {'push': _push_only(f, N_PUSH), 'e2e': _end_to_end(f, N)}
    with engine.engine_mode('naive'):
        xn = mod.ones((2, 2))
        nops = {'x + x': lambda: xn + xn, 'x + 1': lambda: xn + 1,
                f'{front}.exp(x)': lambda: mod.exp(xn)}
        for name, f in nops.items():
            out[name]['naive'] = _plain(f, N_PUSH)
    if torch is not None:
        t = torch.ones((2, 2))
        tops = {'x + x': lambda: t + t, 'x + 1': lambda: t + 1,
                f'{front}.exp(x)': lambda: torch.exp(t)}
        for name, f in tops.items():
            out[name]['torch'] = _plain(f, N_PUSH)
    return out


def dot_figure():
    """d2l: ten 1000x1000 dot products, returning at once vs with waitall."""
    with engine.engine_mode('threaded'):
        a = nd.random.normal(shape=(1000, 1000))
        nd.waitall()

        def run(wait):
            nd.waitall()
            t = _now()
            for _ in range(10):
                y = nd.dot(a, a)
            if wait:
                nd.waitall()
            dt = _now() - t
            nd.waitall()
            del y
            return dt
        run(True)
        without = _best(lambda: run(False), 5)
        with_wait = _best(lambda: run(True), 5)
    torch = _torch()
    ref = None
    if torch is not None:
        ta = torch.randn(1000, 1000)

        def tmm():
            t = _now()
            for _ in range(10):
                torch.mm(ta, ta)
            return _now() - t
        tmm()
        ref = _best(tmm, 5)
    return without, with_wait, ref


def sync_figure(n=10000):
    """d2l: ``y = x + 1`` n times, waiting after each op vs once at the end."""
    with engine.engine_mode('threaded'):
        x = nd.ones((1, 2))
        x.wait_to_read()

        def sync():
            nd.waitall()
            t = _now()
            for _ in range(n):
                y = x + 1
                y.wait_to_read()
            return _now() - t

        def asyn():
            nd.waitall()
            t = _now()
            for _ in range(n):
                y = x + 1
            nd.waitall()
            del y
            return _now() - t
        return _best(sync, 3), _best(asyn, 3)


def run():
    torch = _torch()
    tref = f'PyTorch {torch.__version__} eager, same run' if torch else None
    rows = []

    def row(name, ours, ref, unit, digits=2):
        rows.append({'bench': 'dispatch', 'name': name, 'ours': round(ours, digits),
                     'reference': None if ref is None else round(ref, digits),
                     'ratio': None if not ref else round(ours / ref, 2), 'unit': unit})

    per_op = tiny_ops()
    unit = f'us/op (ref: {tref})' if tref else 'us/op (no PyTorch here)'
    for op, r in per_op.items():
        row(f'{op}, async push only', r['push'], r.get('torch'), unit)
        row(f'{op}, async end-to-end (push {N}, waitall)', r['e2e'], r.get('torch'), unit)
        row(f'{op}, naive engine', r['naive'], r.get('torch'), unit)
    # mx.np side by side: the same ops on np.ndarrays, against nd's figures.
    per_np = tiny_ops('np')
    for (op, r), nd_r in zip(per_np.items(), per_op.values()):
        for key, what in (('push', 'async push only'), ('e2e', 'async end-to-end'),
                          ('naive', 'naive engine')):
            row(f'np: {op}, {what}', r[key], nd_r[key],
                'us/op (ref: the same op on nd.NDArray, same run)')
    row('x + x, async end-to-end vs MXNet 1.9.1', per_op['x + x']['e2e'],
        MXNET_QUOTED_US, 'us/op (ref: MXNet 1.9.1 threaded engine, QUOTED '
        'constant, not measured in this run)')
    without, with_wait, tmm = dot_figure()
    row('ten 1000x1000 dots, with waitall', with_wait * 1e3,
        None if tmm is None else tmm * 1e3,
        f'ms (ref: {tref}, torch.mm)' if tref else 'ms')
    row('ten 1000x1000 dots, without waitall', without * 1e3, with_wait * 1e3,
        'ms (ref: the same with waitall; ratio = share the front end waited)', 3)
    sync, asyn = sync_figure()
    row('10000 x (y = x + 1), wait_to_read after each', sync * 1e3, None, 'ms')
    row('10000 x (y = x + 1), one waitall at the end', asyn * 1e3, sync * 1e3,
        'ms (ref: waiting after each op; ratio < 1: async is faster)')
    return rows


if __name__ == '__main__':
    for r in run():
        print(r)
