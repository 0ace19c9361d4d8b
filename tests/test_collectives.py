"""Collectives (d2lmini/collectives.py) against NumPy, on 1-4 devices.

Values are small integers, so every summation order gives the exact NumPy
result and the checks are equalities.  Ordering is shown with a *gate*, an
op that blocks its device's worker until the test opens it, so no
assertion depends on how fast anything runs.
"""
import functools
import uuid

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, engine, nd
from d2lmini import collectives as C
from d2lmini.base import MXNetError
from d2lmini.ndarray.registry import OPS, Op

from conftest import HAS_GPU

ALGS = ['naive', 'ring']
NDEV = [1, 2, 3, 4]
SHAPES = [(), (1,), (7,), (3, 5), (2, 0), (10007,)]
DTYPES = ['float32', 'int32', 'float16']


def devs(n):
    return [mx.cpu(i) for i in range(n)]


def inputs(n, shape, dtype='float32', seed=0, ctxs=None):
    rng = np.random.RandomState(seed)
    host = [rng.randint(-20, 20, size=shape).astype(dtype) for _ in range(n)]
    ctxs = ctxs or devs(n)
    return host, [nd.array(h, ctx=c, dtype=dtype) for h, c in zip(host, ctxs)]


def np_sum(host):
    return functools.reduce(np.add, host)


def check(results, expected, ctxs):
    assert [r.context for r in results] == list(ctxs)
    got = [r.asnumpy() for r in results]
    for g in got:
        assert g.shape == expected.shape and g.dtype == expected.dtype
        np.testing.assert_array_equal(g, expected)


@pytest.fixture(autouse=True)
def _sync():
    yield
    nd.waitall()


# --- values against NumPy ---------------------------------------------------------
@pytest.mark.parametrize('alg', ALGS)
@pytest.mark.parametrize('n', NDEV)
@pytest.mark.parametrize('shape', SHAPES, ids=str)
@pytest.mark.parametrize('dtype', DTYPES)
def test_allreduce(alg, n, shape, dtype):
    host, xs = inputs(n, shape, dtype)
    ys = C.allreduce(xs, algorithm=alg)
    check(ys, np_sum(host), devs(n))
    for h, x, y in zip(host, xs, ys):                 # inputs unchanged, not aliased
        np.testing.assert_array_equal(x.asnumpy(), h)
        assert y is not x


@pytest.mark.parametrize('alg', ALGS)
@pytest.mark.parametrize('n', NDEV)
@pytest.mark.parametrize('shape', [(), (5,), (4, 3), (1001,)], ids=str)
def test_allreduce_in_place(alg, n, shape):
    host, xs = inputs(n, shape)
    ys = C.allreduce(xs, algorithm=alg, out=xs)
    assert all(y is x for x, y in zip(xs, ys))
    check(xs, np_sum(host), devs(n))


@pytest.mark.parametrize('alg', ALGS)
def test_allreduce_into_other_arrays(alg):
    host, xs = inputs(3, (11,))
    outs = [nd.full((11,), 99, ctx=c) for c in devs(3)]
    ys = C.allreduce(xs, algorithm=alg, out=outs)
    assert all(y is o for y, o in zip(ys, outs))
    check(outs, np_sum(host), devs(3))
    for h, x in zip(host, xs):
        np.testing.assert_array_equal(x.asnumpy(), h)


@pytest.mark.parametrize('alg', ALGS)
def test_int8_wraps_and_bool_is_or(alg):
    # The sum is the dtype's own, as NumPy's elementwise add.
    host = [np.array([100, -100, 7], np.int8)] * 3
    xs = [nd.array(h, ctx=c, dtype='int8') for h, c in zip(host, devs(3))]
    check(C.allreduce(xs, algorithm=alg), np_sum(host), devs(3))
    host = [np.array([True, False, False]), np.array([False, False, True])]
    xs = [nd.array(h, ctx=c, dtype='bool') for h, c in zip(host, devs(2))]
    check(C.allreduce(xs, algorithm=alg), np_sum(host), devs(2))


@pytest.mark.parametrize('alg', ALGS)
def test_float_results_identical_on_every_device(alg):
    rng = np.random.RandomState(1)
    host = [rng.randn(1003).astype('float32') for _ in range(4)]
    xs = [nd.array(h, ctx=c) for h, c in zip(host, devs(4))]
    got = [y.asnumpy() for y in C.allreduce(xs, algorithm=alg)]
    np.testing.assert_allclose(got[0], np.sum(host, axis=0), rtol=1e-5, atol=1e-5)
    for g in got[1:]:                    # each chunk summed once, then copied
        np.testing.assert_array_equal(g, got[0])


@pytest.mark.parametrize('alg', ALGS)
@pytest.mark.parametrize('n', [2, 3, 4])
def test_ring_pieces(alg, n, monkeypatch):
    # Chunks cut into many pieces (the pipelined ring): 13 elements a piece.
    monkeypatch.setattr(C, 'PIECE_BYTES', 52)
    host, xs = inputs(n, (1000,))
    check(C.allreduce(xs, algorithm=alg), np_sum(host), devs(n))
    check([C.reduce(xs, root=n - 1, algorithm=alg)], np_sum(host), devs(n)[-1:])
    check(C.broadcast(xs[0], devs(n), algorithm=alg), host[0], devs(n))
    C.allreduce(xs, algorithm=alg, out=xs)
    check(xs, np_sum(host), devs(n))


@pytest.mark.parametrize('alg', ALGS)
def test_several_arrays_on_one_device(alg):
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    host, xs = inputs(5, (9, 2), ctxs=ctxs)
    check(C.allreduce(xs, algorithm=alg), np_sum(host), ctxs)
    check([C.reduce(xs, root=2, algorithm=alg)], np_sum(host), [mx.cpu(0)])
    C.allreduce(xs, algorithm=alg, out=xs)
    check(xs, np_sum(host), ctxs)


@pytest.mark.parametrize('alg', ALGS)
@pytest.mark.parametrize('n', NDEV)
@pytest.mark.parametrize('shape', [(), (7,), (3, 5), (0,)], ids=str)
def test_reduce(alg, n, shape):
    host, xs = inputs(n, shape, 'int32')
    for root in range(n):
        check([C.reduce(xs, root=root, algorithm=alg)], np_sum(host), [mx.cpu(root)])
    check([C.reduce(xs, root=-1, algorithm=alg)], np_sum(host), [mx.cpu(n - 1)])
    check([C.reduce(xs, root=mx.cpu(n - 1), algorithm=alg)], np_sum(host),
          [mx.cpu(n - 1)])
    for h, x in zip(host, xs):
        np.testing.assert_array_equal(x.asnumpy(), h)


@pytest.mark.parametrize('alg', ALGS)
def test_reduce_in_place_and_into_out(alg):
    host, xs = inputs(3, (8,))
    out = nd.zeros((8,), ctx=mx.cpu(1))
    assert C.reduce(xs, root=1, algorithm=alg, out=out) is out
    check([out], np_sum(host), [mx.cpu(1)])
    assert C.reduce(xs, root=2, algorithm=alg, out=xs[2]) is xs[2]
    check([xs[2]], np_sum(host), [mx.cpu(2)])
    for i in (0, 1):
        np.testing.assert_array_equal(xs[i].asnumpy(), host[i])


@pytest.mark.parametrize('alg', ALGS)
@pytest.mark.parametrize('n', NDEV)
def test_reduce_to_a_device_outside(alg, n):
    # A root that holds none of the arrays (a KVStore summing on the CPU).
    host, xs = inputs(n, (13,), ctxs=[mx.cpu(i + 1) for i in range(n)])
    check([C.reduce(xs, root=mx.cpu(0), algorithm=alg)], np_sum(host), [mx.cpu(0)])
    out = nd.zeros((13,), ctx=mx.cpu(0))
    assert C.reduce(xs, root=mx.cpu(0), algorithm=alg, out=out) is out
    check([out], np_sum(host), [mx.cpu(0)])


@pytest.mark.parametrize('alg', ALGS)
@pytest.mark.parametrize('n', NDEV)
@pytest.mark.parametrize('shape', [(), (7,), (3, 5), (0, 2)], ids=str)
def test_broadcast(alg, n, shape):
    host, xs = inputs(1, shape, 'float16')
    ctxs = devs(n)[::-1]                         # the source's device last
    ys = C.broadcast(xs[0], ctxs, algorithm=alg)
    check(ys, host[0], ctxs)
    assert all(y is not xs[0] for y in ys)


@pytest.mark.parametrize('alg', ALGS)
def test_broadcast_into_out(alg):
    host, xs = inputs(1, (6,))
    src = xs[0]
    outs = [nd.zeros((6,), ctx=mx.cpu(1)), src, nd.zeros((6,), ctx=mx.cpu(2)),
            nd.zeros((6,), ctx=mx.cpu(1))]
    ys = C.broadcast(src, out=outs, algorithm=alg)
    assert all(y is o for y, o in zip(ys, outs))
    check(outs, host[0], [o.context for o in outs])


@pytest.mark.parametrize('alg', ALGS)
@pytest.mark.parametrize('n', NDEV)
@pytest.mark.parametrize('axis', [0, 1, -1])
def test_allgather(alg, n, axis):
    rng = np.random.RandomState(n)
    host = []
    for i in range(n):                           # sizes differ along `axis`
        shape = [3, 4, 2]
        shape[axis] = i + 1 if i != 1 else 0     # one array empty along it
        host.append(rng.randint(0, 9, size=shape).astype('float32'))
    xs = [nd.array(h, ctx=c) for h, c in zip(host, devs(n))]
    check(C.allgather(xs, axis=axis, algorithm=alg), np.concatenate(host, axis),
          devs(n))


@pytest.mark.parametrize('alg', ALGS)
def test_in_place_into_views(alg):
    # Rows 1:3 of bigger arrays (basic slices share memory): the bases see it.
    host, bases = inputs(3, (4, 3))
    views = [b[1:3] for b in bases]
    C.allreduce(views, algorithm=alg, out=views)
    total = np_sum([h[1:3] for h in host])
    for h, b in zip(host, bases):
        expect = h.copy()
        expect[1:3] = total
        np.testing.assert_array_equal(b.asnumpy(), expect)


@pytest.mark.parametrize('alg', ALGS)
def test_non_contiguous_out(alg):
    # A result stored column-major (as a convolution's may be): written by index.
    host, xs = inputs(2, (4, 5))
    for x in xs:
        x.wait_to_read()
        x._data = np.asfortranarray(x._data)
    C.allreduce(xs, algorithm=alg, out=xs)
    check(xs, np_sum(host), devs(2))


@pytest.mark.parametrize('alg', ALGS)
def test_naive_engine(alg, engine_kind):
    host, xs = inputs(3, (257,))
    check(C.allreduce(xs, algorithm=alg), np_sum(host), devs(3))
    check([C.reduce(xs, root=2, algorithm=alg)], np_sum(host), [mx.cpu(2)])
    check(C.allgather(xs, algorithm=alg), np.concatenate(host), devs(3))
    C.allreduce(xs, algorithm=alg, out=xs)
    check(xs, np_sum(host), devs(3))


def test_auto_picks_by_size_and_count():
    assert C._choose('auto', 1, 1 << 30) == 'naive'
    assert C._choose('auto', 2, C.RING_MIN_BYTES - 1) == 'naive'
    assert C._choose('auto', 2, C.RING_MIN_BYTES) == 'ring'
    assert C._choose('auto', 4, C.RING_MIN_BYTES) == 'naive'
    assert C._choose('auto', 4, C.RING_MIN_BYTES_3) == 'ring'
    assert C._choose('naive', 4, 1 << 30) == 'naive'
    host, xs = inputs(2, (C.RING_MIN_BYTES // 4,))
    with engine.Trace() as tr:
        C.allreduce(xs)
    assert 'ring_add' in {e[1] for e in tr.events}


# --- ordering: the engine, not the caller, waits ------------------------------------
@pytest.fixture
def threaded():
    with engine.engine_mode('threaded'):
        yield


@pytest.mark.parametrize('alg', ALGS)
def test_returns_at_once_and_later_writes_do_not_leak_in(alg, threaded, gate_op):
    gated, ev = gate_op
    host, xs = inputs(3, (1000,))
    xs[0] = gated(xs[0])              # cpu(0) is blocked until ev is set
    ys = C.allreduce(xs, algorithm=alg)           # must not wait for cpu(0)
    red = C.reduce(xs, root=2, algorithm=alg)
    gat = C.allgather(xs, algorithm=alg)
    assert not ev.is_set()
    s0 = engine.stream_for(mx.cpu(0))
    assert s0.done < s0.pushed                    # truly still pending
    for x in xs:                                  # overwrite every input now
        x[:] = -1
    ev.set()
    check(ys, np_sum(host), devs(3))
    check([red], np_sum(host), [mx.cpu(2)])
    check(gat, np.concatenate(host), devs(3))
    for x in xs:
        np.testing.assert_array_equal(x.asnumpy(), -np.ones(1000, 'float32'))


@pytest.mark.parametrize('alg', ALGS)
def test_in_place_is_ordered_with_reads_before_and_after(alg, threaded, gate_op):
    gated, ev = gate_op
    host, xs = inputs(2, (500,))
    xs[1] = gated(xs[1])
    early = xs[0].as_in_context(mx.cpu(1))        # a copy of xs[0], pending
    C.allreduce(xs, algorithm=alg, out=xs)
    late = [x * 1 for x in xs]                    # reads after the write
    view = xs[0][0:5]                             # a view of a written array
    ev.set()
    np.testing.assert_array_equal(early.asnumpy(), host[0])
    for y in late:
        np.testing.assert_array_equal(y.asnumpy(), np_sum(host))
    np.testing.assert_array_equal(view.asnumpy(), np_sum(host)[:5])


@pytest.mark.parametrize('alg', ALGS)
def test_a_collective_writing_waits_for_earlier_readers(alg, threaded, gate_op):
    # cpu(1) is blocked, so its copy of x stays pending; a second collective
    # then overwrites x from cpu(0), which is free to run: the write must wait
    # for that read (take_readers), or the copy sees the new values.
    gated, ev = gate_op
    host, (x,) = inputs(1, (300,))
    gated(nd.zeros((1,), ctx=mx.cpu(1)))
    ys = C.broadcast(x, [mx.cpu(1)], algorithm=alg)
    C.broadcast(nd.full((300,), -5), out=[x], algorithm=alg)
    # The write cannot run while the read is blocked, however long we wait.
    assert not engine.stream_for(mx.cpu(0)).wait(x._seq, timeout=0.2)
    ev.set()
    check(ys, host[0], [mx.cpu(1)])
    np.testing.assert_array_equal(x.asnumpy(), np.full(300, -5, 'float32'))


def test_input_error_reaches_the_results(threaded):
    class Boom(Op):
        differentiable = False

        def infer(self, shapes, dtypes, **attrs):
            return shapes[0], dtypes[0]

        def forward(self, a):
            raise ValueError('boom: this kernel always fails')
    op = Boom()
    op.name = f'_test_boom_{uuid.uuid4().hex[:8]}'
    OPS[op.name] = op
    try:
        host, xs = inputs(2, (4,))
        xs[1] = nd.invoke(op, (xs[1],))
        ys = C.allreduce(xs, algorithm='ring')
        with pytest.raises(MXNetError, match='boom'):
            ys[0].asnumpy()
    finally:
        try:
            nd.waitall()
        except MXNetError:
            pass
        del OPS[op.name]


# --- the engine's trace shows both devices at work -----------------------------------
def test_ring_runs_steps_on_every_device(threaded):
    host, xs = inputs(2, (4096,))
    with engine.Trace() as tr:
        C.allreduce(xs, algorithm='ring', out=xs)
    ran = {(str(c), name) for c, name, *_ in tr.events}
    for c in ('cpu(0)', 'cpu(1)'):
        assert (c, 'ring_add') in ran and (c, 'ring_copy') in ran
    check(xs, np_sum(host), devs(2))


def test_naive_sums_on_the_root(threaded):
    host, xs = inputs(3, (64,))
    with engine.Trace() as tr:
        C.allreduce(xs, algorithm='naive')
    sums = [str(c) for c, name, *_ in tr.events if name == 'naive_sum']
    copies = {str(c) for c, name, *_ in tr.events if name == 'copyto'}
    assert sums == ['cpu(0)']
    assert copies == {'cpu(0)', 'cpu(1)', 'cpu(2)'}


# --- autograd: not recorded ------------------------------------------------------
def test_not_recorded_by_autograd():
    host, xs = inputs(2, (3,))
    for x in xs:
        x.attach_grad()
    with autograd.record():
        ys = C.allreduce(xs)
        with pytest.raises(MXNetError, match='recorded by autograd'):
            C.allreduce(xs, out=xs)
    assert all(y._node is None for y in ys)
    check(ys, np_sum(host), devs(2))


# --- bad input: a clear error at the call, nothing pushed ------------------------------
def _pushed():
    return {k: s.pushed for k, s in engine._STREAMS.items()}


@pytest.mark.parametrize('call, kind, match', [
    (lambda xs, b: C.allreduce([]), ValueError, 'empty list'),
    (lambda xs, b: C.allreduce(xs[0]), TypeError, 'single NDArray'),
    (lambda xs, b: C.allreduce([xs[0], np.ones(4)]), TypeError, 'item 1'),
    (lambda xs, b: C.allreduce([xs[0], b['five@1']]), ValueError,
     r'arrays\[1\] on cpu\(1\) has shape \(5,\)'),
    (lambda xs, b: C.allreduce([xs[0], b['int@1']]), TypeError, 'dtype'),
    (lambda xs, b: C.allreduce(xs, algorithm='tree'), ValueError, 'algorithm'),
    (lambda xs, b: C.allreduce(xs, out=xs[:1]), ValueError, 'out has 1 arrays'),
    (lambda xs, b: C.allreduce(xs, out=[xs[0], b['four@0'], xs[2]]),
     ValueError, r'out\[1\] is on cpu\(0\)'),
    (lambda xs, b: C.allreduce(xs, out=[xs[0], xs[1], b['three@2']]),
     ValueError, r'out\[2\] has shape \(3,\)'),
    (lambda xs, b: C.allreduce(xs, out=[xs[1], xs[0], xs[2]]), ValueError, 'out'),
    (lambda xs, b: C.allreduce([xs[0], xs[0]], out=[xs[0], xs[0]]), ValueError,
     'shares memory'),
    (lambda xs, b: C.reduce(xs, root=3), IndexError, 'root=3 is out of range'),
    (lambda xs, b: C.reduce(xs, root=mx.gpu(99)), MXNetError, 'gpu.99.'),
    (lambda xs, b: C.reduce(xs, root='0'), TypeError, 'root must be'),
    (lambda xs, b: C.reduce(xs, root=0, out=xs[1]), ValueError, 'not arrays.root.'),
    (lambda xs, b: C.reduce(xs, root=0, out=b['four@1']), ValueError,
     'out.0. is on cpu.1.'),
    (lambda xs, b: C.broadcast(xs[0], []), ValueError, 'empty list of contexts'),
    (lambda xs, b: C.broadcast(xs[0]), ValueError, 'ctxs='),
    (lambda xs, b: C.broadcast(xs[0], ['cpu(1)']), TypeError, 'not a Context'),
    (lambda xs, b: C.broadcast([xs[0]], [mx.cpu(1)]), TypeError, 'expects an NDArray'),
    (lambda xs, b: C.broadcast(xs[0], [mx.cpu(1)], out=[b['four@0']]), ValueError,
     'out.0. is on cpu.0.'),
    (lambda xs, b: C.allgather([b['0d@0'], b['0d@1']]), ValueError,
     '0-d'),
    (lambda xs, b: C.allgather(xs, axis=1), ValueError, 'axis=1'),
    (lambda xs, b: C.allgather([b['2x3@0'], b['2x4@1']]),
     ValueError, 'differ only along axis 0'),
])
def test_bad_input(call, kind, match):
    _, xs = inputs(3, (4,))
    b = {'five@1': nd.ones((5,), ctx=mx.cpu(1)), 'int@1': xs[1].astype('int32'),
         'four@0': nd.ones((4,), ctx=mx.cpu(0)), 'four@1': nd.ones((4,), ctx=mx.cpu(1)),
         'three@2': nd.ones((3,), ctx=mx.cpu(2)), '0d@0': nd.ones((), ctx=mx.cpu(0)),
         '0d@1': nd.ones((), ctx=mx.cpu(1)), '2x3@0': nd.ones((2, 3), ctx=mx.cpu(0)),
         '2x4@1': nd.ones((2, 4), ctx=mx.cpu(1))}
    nd.waitall()
    before = _pushed()
    with pytest.raises(kind, match=match) as info:
        call(xs, b)
    assert isinstance(info.value, MXNetError)
    assert _pushed() == before                   # nothing pushed anywhere


@pytest.mark.skipif(not HAS_GPU, reason='no GPU')
@pytest.mark.parametrize('alg', ALGS)
def test_gpu_and_cpu_mixed(alg):
    ctxs = [mx.gpu(0), mx.cpu(0), mx.cpu(1)] + (
        [mx.gpu(1)] if mx.num_gpus() > 1 else [])
    host, xs = inputs(len(ctxs), (1001,), ctxs=ctxs)
    check(C.allreduce(xs, algorithm=alg), np_sum(host), ctxs)
    check([C.reduce(xs, root=1, algorithm=alg)], np_sum(host), [ctxs[1]])
    check(C.allgather(xs, algorithm=alg), np.concatenate(host), ctxs)
    check(C.broadcast(xs[1], ctxs, algorithm=alg), host[1], ctxs)
    C.allreduce(xs, algorithm=alg, out=xs)
    check(xs, np_sum(host), ctxs)


# --- many calls in a row, never waiting: the engine must order them all --------------
@pytest.mark.parametrize('seed', range(4))
def test_random_program_matches_numpy(seed, monkeypatch, threaded):
    # A random mix of collectives (both algorithms, in place and not) and
    # in-place writes, pushed without a sync, against the same program on
    # NumPy; small pieces make the dependency graph dense.
    monkeypatch.setattr(C, 'PIECE_BYTES', 40)
    rng = np.random.RandomState(seed)
    ctxs = [mx.cpu(i) for i in (0, 1, 2, 3, 1)]
    host = [rng.randint(0, 50, size=(6, 7)).astype('int64') for _ in ctxs]
    xs = [nd.array(h, ctx=c, dtype='int64') for h, c in zip(host, ctxs)]
    for _ in range(40):
        alg = ALGS[rng.randint(2)]
        idx = sorted(rng.choice(len(xs), size=rng.randint(1, len(xs) + 1),
                                replace=False))
        kind = rng.randint(5)
        if kind == 0:                                  # allreduce in place
            C.allreduce([xs[i] for i in idx], algorithm=alg,
                        out=[xs[i] for i in idx])
            total = np_sum([host[i] for i in idx])
            for i in idx:
                host[i] = total.copy()
        elif kind == 1:                                # reduce into the root
            root = int(rng.choice(idx))
            C.reduce([xs[i] for i in idx], root=idx.index(root), algorithm=alg,
                     out=xs[root])
            host[root] = np_sum([host[i] for i in idx])
        elif kind == 2:                                # broadcast one to others
            src = int(rng.choice(idx))
            C.broadcast(xs[src], algorithm=alg, out=[xs[i] for i in idx])
            for i in idx:
                host[i] = host[src].copy()
        elif kind == 3:                                # results as new arrays
            ys = C.allreduce([xs[i] for i in idx], algorithm=alg)
            total = np_sum([host[i] for i in idx])
            for i, y in zip(idx, ys):
                xs[i] = y - 1
                host[i] = total - 1
        else:                                          # a plain in-place write
            i = idx[0]
            xs[i][:] = xs[i] * 3 % 101
            host[i] = host[i] * 3 % 101
    for x, h in zip(xs, host):
        np.testing.assert_array_equal(x.asnumpy(), h)
