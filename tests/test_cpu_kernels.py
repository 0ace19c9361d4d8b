"""The threaded, chunked elementwise kernels (d2lmini/ndarray/cpu_kernels.py).

Their claim: splitting a large float array over ``engine.cpu_threads()``
threads and walking each range in chunks gives results BIT-IDENTICAL to the
plain NumPy expression.  Every kernel is checked against its formula written
out here, on the threaded path (ragged ranges and chunks), on one thread,
in float32 and float64, on a transposed (dense, not C-contiguous) layout and
with special values; then the thread split itself, the fallbacks, error
propagation, the ufunc wrapper, and the public operators that use them.
No timing is measured anywhere.
"""
import threading

import numpy as np
import pytest

from d2lmini import autograd, engine, nd
from d2lmini.ndarray import cpu_kernels as ck

# All of it is about the NumPy kernels (the public operators' bits included:
# on a GPU the operators never reach them), so cpu(0) is the default context
# here even in the GPU runs.
pytestmark = pytest.mark.cpu_context

BIG = 3 * ck.MIN_SPLIT + 7          # > 2 * MIN_SPLIT, odd: ragged ranges and chunks
SMALL = 1001                        # one thread
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 100.0, -100.0, 1e30, -1e30,
           1e-30, -1e-30, 1.0, -1.0, 0.5, -0.5]


# --- oracles: the plain NumPy formulas ----------------------------------------------
def o_sigmoid(x):
    return 1 / (1 + np.exp(-x))          # MXNet's formula (mshadow_op::sigmoid)


def o_softrelu(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


# name: (kernel, scratch, number of inputs, oracle)
KERNELS = {
    'sigmoid': (ck.sigmoid, 0, 1, o_sigmoid),
    'sigmoid_backward': (ck.sigmoid_backward, 1, 2, lambda g, y: g * y * (1 - y)),
    'tanh': (ck.tanh, 0, 1, np.tanh),
    'tanh_backward': (ck.tanh_backward, 0, 2, lambda g, y: g * (1 - y * y)),
    'relu': (ck.relu, 0, 1, lambda x: np.maximum(x, 0)),
    'relu_backward': (ck.relu_backward, 0, 2, lambda g, y: g * (y > 0)),
    'softrelu': (ck.softrelu, 1, 1, o_softrelu),
    'softsign': (ck.softsign, 1, 1, lambda x: x / (1 + np.abs(x))),
}


def oracle(fn, *inputs):
    with np.errstate(all='ignore'):
        return fn(*inputs)


def assert_bits(got, want):
    """Same dtype, shape and bits (so -0.0 != 0.0), NaN where the oracle has NaN.

    A NaN's sign bit is not compared: plain NumPy itself gives NaN's sign
    differently for the same value depending on where the element falls in
    its SIMD loop (body or tail), i.e. on the array's length and offset."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    g, w = np.ascontiguousarray(got).ravel(), np.ascontiguousarray(want).ravel()
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), 'NaN in different places'
    u = np.dtype(f'u{got.dtype.itemsize}')
    bad = np.flatnonzero(g.view(u) != w.view(u)) if got.dtype.kind == 'f' else \
        np.flatnonzero(g != w)
    bad = bad[~nan[bad]]
    assert bad.size == 0, (f'{bad.size} elements differ, first at {bad[0]}: '
                           f'{g[bad[0]]!r} vs {w[bad[0]]!r}')


def _data(rng, n, dtype, special=True):
    """Values over a wide range, with the special values spread through."""
    x = (rng.standard_normal(n) * rng.choice([0.1, 1.0, 10.0, 60.0], n)).astype(dtype)
    if special and n >= len(SPECIAL):
        idx = rng.choice(n, size=min(n, 20 * len(SPECIAL)), replace=False)
        x[idx] = np.resize(np.array(SPECIAL, dtype), idx.size)
        x[:len(SPECIAL)] = SPECIAL             # in the first range ...
        x[-len(SPECIAL):] = SPECIAL            # ... and the last
    return x


def _inputs(name, rng, n, dtype):
    """The kernel's inputs: x; or (g, y) with y in the forward op's range."""
    _, _, n_in, _ = KERNELS[name]
    if n_in == 1:
        return [_data(rng, n, dtype)]
    g = _data(rng, n, dtype)
    y = _data(rng, n, dtype, special=False)
    y = {'sigmoid_backward': oracle(o_sigmoid, y), 'tanh_backward': np.tanh(y),
         'relu_backward': np.maximum(y, 0)}[name].astype(dtype)
    y[:len(SPECIAL)] = SPECIAL                  # and the special values in y too
    y[-len(SPECIAL):] = SPECIAL[::-1]
    return [g, y]


@pytest.fixture
def threads(monkeypatch):
    """Fix ``engine.cpu_threads()`` (what cpu_kernels reads) for a test."""
    def set_(n):
        monkeypatch.setattr(engine, 'cpu_threads', lambda: n)
    return set_


# --- 1. every kernel, bit for bit -------------------------------------------------------
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('name', sorted(KERNELS))
def test_kernel_bits(name, dtype, threads):
    kernel, scratch, _, fn = KERNELS[name]
    rng = np.random.default_rng(len(name))
    threads(3)
    for n, chunk in [(BIG, ck.CHUNK), (BIG, 1000), (BIG, None), (SMALL, ck.CHUNK),
                     (SMALL, 100)]:
        xs = _inputs(name, rng, n, dtype)
        want = oracle(fn, *xs)
        with np.errstate(all='ignore'):
            got = ck.apply(kernel, *xs, scratch=scratch, chunk=chunk)
        assert_bits(got, want)


@pytest.mark.parametrize('name', sorted(KERNELS))
def test_kernel_bits_special_values(name, threads):
    """sigmoid(+-100) is 1 / 0 exactly; inf and NaN go through as the formula's."""
    kernel, scratch, n_in, fn = KERNELS[name]
    threads(2)
    for dtype in (np.float32, np.float64):
        s = np.array(SPECIAL, dtype)
        xs = [s] if n_in == 1 else [s, s[::-1].copy()]
        with np.errstate(all='ignore'):
            got = ck.apply(kernel, *xs, scratch=scratch)
        assert_bits(got, oracle(fn, *xs))
    if name == 'sigmoid':
        with np.errstate(all='ignore'):
            r = ck.apply(ck.sigmoid, np.array([100.0, -100.0, 800.0, -800.0]))
        assert r[0] == 1.0 and r[2] == 1.0 and r[3] == 0.0 and 0 < r[1] < 1e-40


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('name', sorted(KERNELS))
def test_kernel_bits_transposed_layout(name, dtype, threads):
    """A dense transposed view (CHWN memory seen as NCHW) runs threaded and
    its result keeps the input's layout."""
    kernel, scratch, n_in, fn = KERNELS[name]
    rng = np.random.default_rng(7)
    threads(2)
    shape = (6, 28, 28, 64)
    xs = [a.reshape(shape).transpose(3, 0, 1, 2)
          for a in _inputs(name, rng, int(np.prod(shape)), dtype)]
    assert not xs[0].flags.c_contiguous and ck._flat(xs) is not None
    want = oracle(fn, *xs)
    walked = []
    real = ck._walk

    def walk(*a):
        walked.append(threading.get_ident())
        return real(*a)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ck, '_walk', walk)
        with np.errstate(all='ignore'):
            got = ck.apply(kernel, *xs, scratch=scratch, chunk=1000)
    assert len(set(walked)) == 2                  # the threaded path, not the fallback
    assert got.strides == xs[0].strides           # laid out like the input
    assert_bits(got, want)


# --- 2. the threads are really used ------------------------------------------------------
def _thread_ids(n, meet=None, **kw):
    """The threads that ran a kernel over ``n`` elements.  ``meet``: that
    many threads must be inside the kernel at the same time (a barrier),
    which shows they run side by side, not one after the other."""
    ids, lock = set(), threading.Lock()
    barrier = meet and threading.Barrier(meet, timeout=10)

    def kernel(o, x):
        with lock:
            new = threading.get_ident() not in ids
            ids.add(threading.get_ident())
        if barrier and new:
            barrier.wait()
        np.multiply(x, 2, out=o)
    x = np.arange(n, dtype=np.float32)
    out = ck.run(kernel, np.empty_like(x), x, **kw)
    assert_bits(out, x * 2)
    return ids


def test_threads_used_on_large_arrays(threads):
    threads(2)
    assert len(_thread_ids(BIG)) == 2
    assert len(_thread_ids(BIG, chunk=1000)) == 2
    assert threading.get_ident() in _thread_ids(BIG)     # the caller runs a range too
    assert len(_thread_ids(BIG, meet=2, chunk=1000)) == 2
    threads(3)
    assert len(_thread_ids(BIG, meet=3)) == 3            # three at once


def test_one_thread_when_policy_says_one_or_array_small(threads):
    threads(1)
    assert _thread_ids(BIG) == {threading.get_ident()}
    threads(2)
    assert _thread_ids(SMALL) == {threading.get_ident()}
    # under MIN_SPLIT elements per thread: fewer threads than the policy allows
    assert _thread_ids(2 * ck.MIN_SPLIT - 1) == {threading.get_ident()}
    threads(8)                                           # BIG has 3 * MIN_SPLIT + 7
    assert len(_thread_ids(BIG, meet=3)) == 3


def test_walk_ranges_cover_everything_once(threads, monkeypatch):
    """The per-thread ranges tile [0, n) exactly, starting on 16-element blocks."""
    threads(3)
    seen = []
    real = ck._walk

    def walk(kernel, arrays, lo, hi, *rest):
        seen.append((lo, hi))
        return real(kernel, arrays, lo, hi, *rest)
    monkeypatch.setattr(ck, '_walk', walk)
    with np.errstate(all='ignore'):
        x = _data(np.random.default_rng(0), BIG, np.float32)
        assert_bits(ck.apply(ck.sigmoid, x), oracle(o_sigmoid, x))
    seen.sort()
    assert len(seen) == 3 and seen[0][0] == 0 and seen[-1][1] == BIG
    assert all(a[1] == b[0] for a, b in zip(seen, seen[1:]))
    assert all(lo % 16 == 0 for lo, _ in seen)


# --- 3. layouts that differ: one whole-array call ----------------------------------------
def test_differing_layouts_fall_back(threads):
    threads(2)
    rng = np.random.default_rng(3)
    shape = (6, 28, 28, 64)
    g = rng.standard_normal(shape).astype(np.float32).transpose(3, 0, 1, 2)
    y = np.ascontiguousarray(oracle(o_sigmoid, rng.standard_normal(g.shape)
                                    .astype(np.float32)))
    assert ck._flat([g, y]) is None and ck._flat([y, g]) is None
    for args in [(g, y), (y, g)]:
        calls = []

        def kernel(*a):
            calls.append((threading.get_ident(), a[0].shape))
            ck.sigmoid_backward(*a)
        got = ck.apply(kernel, *args, scratch=1)
        assert calls == [(threading.get_ident(), g.shape)]     # one whole-array call
        assert_bits(got, args[0] * args[1] * (1 - args[1]))
    # an out C-contiguous with a transposed input; and a strided (not dense) input
    out = np.empty(g.shape, np.float32)
    calls = []

    def kernel(o, x):
        calls.append(o.shape)
        ck.sigmoid(o, x)
    with np.errstate(all='ignore'):
        assert ck.run(kernel, out, g) is out
    assert calls == [g.shape]
    assert_bits(out, oracle(o_sigmoid, g))
    x = _data(rng, 2 * BIG, np.float32)[::2]
    with np.errstate(all='ignore'):
        assert_bits(ck.apply(ck.softrelu, x, scratch=1), oracle(o_softrelu, x))


# --- 4. errors ----------------------------------------------------------------------------
def test_error_in_worker_thread_propagates(threads):
    threads(2)
    main = threading.get_ident()

    def kernel(o, x):
        if threading.get_ident() != main:
            raise ValueError('boom in a worker')
        np.copyto(o, x)
    x = np.ones(BIG, np.float32)
    with pytest.raises(ValueError, match='boom in a worker'):
        ck.run(kernel, np.empty_like(x), x)

    def kernel_main(o, x):
        if threading.get_ident() == main:
            raise KeyError('boom in the caller')
        np.copyto(o, x)
    with pytest.raises(KeyError):
        ck.run(kernel_main, np.empty_like(x), x)
    # the pool still works afterwards, on two threads
    assert len(_thread_ids(BIG)) == 2
    assert_bits(ck.apply(ck.relu, x - 2), np.maximum(x - 2, 0))


def test_a_pool_that_refuses_work_runs_the_ranges_here(threads, monkeypatch):
    """At interpreter exit concurrent.futures' pools refuse new work ("cannot
    schedule new futures after interpreter shutdown"); an op pushed then (by
    an exit hook) runs every range on the calling thread instead of failing."""
    from concurrent.futures import ThreadPoolExecutor
    threads(3)
    shut = ThreadPoolExecutor(2)
    shut.shutdown()
    monkeypatch.setattr(ck, '_pool', lambda n: shut)
    assert _thread_ids(BIG) == {threading.get_ident()}
    x = _data(np.random.default_rng(5), BIG, np.float32)
    with np.errstate(all='ignore'):
        assert_bits(ck.apply(ck.sigmoid, x), oracle(o_sigmoid, x))


def test_workers_follow_the_callers_numpy_errstate(threads):
    """np.errstate is context-local: the worker ranges run in the caller's
    context, so 'raise' raises and 'ignore' stays silent wherever the bad
    element is, as the one-thread expression does."""
    import warnings
    threads(2)
    a = np.ones(BIG, np.float32)
    b = np.ones_like(a)
    b[-1] = 0                                            # in the last (a worker's) range
    div = ck.ufunc(np.divide)
    with np.errstate(all='raise'), pytest.raises(FloatingPointError):
        div(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        with np.errstate(all='ignore'):
            assert_bits(div(a, b), a / b)
            x = a / b                                    # inf at the end: inf / inf
            assert_bits(ck.apply(ck.softsign, x, scratch=1), x / (1 + np.abs(x)))
    with pytest.warns(RuntimeWarning):                   # NumPy's default: a warning
        div(a, b)


# --- 5. the ufunc wrapper -----------------------------------------------------------------
@pytest.fixture
def count_runs(monkeypatch):
    calls = []
    real = ck.run

    def run(*a, **kw):
        calls.append(1)
        return real(*a, **kw)
    monkeypatch.setattr(ck, 'run', run)
    return calls


@pytest.mark.parametrize('f', [np.add, np.subtract, np.multiply, np.true_divide,
                               np.maximum, np.power])
def test_ufunc_bits_threaded(f, threads, count_runs):
    threads(2)
    rng = np.random.default_rng(5)
    a = _data(rng, BIG, np.float32)
    b = _data(rng, BIG, np.float32)
    g = ck.ufunc(f)
    assert g.__name__ == f.__name__
    with np.errstate(all='ignore'):
        for other in [b, 2.0, 3, -0.5]:
            got = g(a, other)
            assert_bits(got, f(a, other))
            assert got.dtype == np.float32
        got = g(a.astype(np.float64), b.astype(np.float64))
        assert_bits(got, f(a.astype(np.float64), b.astype(np.float64)))
    assert len(count_runs) == 5                            # every call threaded
    with np.errstate(all='ignore'):
        assert_bits(ck.ufunc(np.exp)(a), np.exp(a))
        assert_bits(ck.ufunc(np.tanh)(a), np.tanh(a))


def test_ufunc_falls_back(threads, count_runs):
    threads(2)
    rng = np.random.default_rng(6)
    add = ck.ufunc(np.add)
    a = rng.standard_normal(BIG).astype(np.float32)
    cases = [
        (rng.integers(-5, 5, BIG).astype(np.int32), rng.integers(-5, 5, BIG).astype(np.int32)),
        (rng.integers(-5, 5, BIG).astype(np.int64), 2),
        (a, np.float32(1.5)),                            # a NumPy scalar: not a Python number
        (a, np.float64(1.5)),                            # NumPy 2 promotes to float64
        (a, a[:1]),                                      # broadcasting
        (rng.standard_normal((512, 512)).astype(np.float32),
         rng.standard_normal(512).astype(np.float32)),  # broadcasting, large
        (a, a.astype(np.float64)),                       # mixed dtypes
        (a, True),                                       # bool: not int or float
        (a[:SMALL], 2.0),                                # small
    ]
    for x, y in cases:
        got, want = add(x, y), np.add(x, y)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert_bits(got, want)
    assert count_runs == []
    assert add(a, np.float64(1.5)).dtype == np.float64
    threads(1)                                           # one thread: NumPy's own call
    assert_bits(add(a, a), np.add(a, a))
    assert count_runs == []


# --- 6. the public operators ---------------------------------------------------------------
SHAPE = (64, 6, 28, 28)
BITS_BACKWARD = {'sigmoid': lambda g, x, y: g * y * (1 - y),
                 'tanh': lambda g, x, y: g * (1 - y * y),
                 'relu': lambda g, x, y: g * (y > 0)}
FORWARD = {'sigmoid': o_sigmoid, 'tanh': np.tanh, 'relu': lambda x: np.maximum(x, 0),
           'softrelu': o_softrelu, 'softsign': lambda x: x / (1 + np.abs(x))}


def _big(rng):
    x = (rng.standard_normal(SHAPE) * 4).astype(np.float32)
    x.reshape(-1)[::997] = 0.0                      # relu's kink: gradient 0 there
    return x


@pytest.mark.parametrize('threaded', [1, 2])
@pytest.mark.parametrize('act', sorted(FORWARD))
def test_activation_forward_and_backward(act, threaded, threads):
    threads(threaded)
    rng = np.random.default_rng(11)
    xn, gn = _big(rng), rng.standard_normal(SHAPE).astype(np.float32)
    want_y = oracle(FORWARD[act], xn).astype(np.float32)
    fns = [lambda x: nd.Activation(x, act_type=act)]
    if act in ('sigmoid', 'tanh', 'relu'):
        fns.append(getattr(nd, act))
    for fn in fns:
        x = nd.array(xn)
        x.attach_grad()
        with autograd.record():
            y = fn(x)
        y.backward(nd.array(gn))
        assert_bits(y.asnumpy(), want_y)
        if act in BITS_BACKWARD:
            assert_bits(x.grad.asnumpy(),
                        BITS_BACKWARD[act](gn, xn, want_y).astype(np.float32))
        else:
            want = gn * oracle(o_sigmoid, xn) if act == 'softrelu' else \
                gn / np.square(1 + np.abs(xn))
            np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_public_elementwise_ops_bits(threads):
    threads(2)
    rng = np.random.default_rng(12)
    an = rng.standard_normal(SHAPE).astype(np.float32)
    bn = rng.standard_normal(SHAPE).astype(np.float32)
    a, b = nd.array(an), nd.array(bn)
    assert_bits(nd.tanh(a).asnumpy(), np.tanh(an))
    assert_bits(nd.exp(a).asnumpy(), np.exp(an))
    assert_bits(nd.sigmoid(a).asnumpy(), oracle(o_sigmoid, an))
    assert_bits((a + b).asnumpy(), an + bn)
    assert_bits((a * b).asnumpy(), an * bn)
    assert_bits((a - b).asnumpy(), an - bn)
    assert_bits((a / b).asnumpy(), an / bn)
    assert_bits((a * 2.0).asnumpy(), an * 2.0)
    assert_bits((a + 1).asnumpy(), an + 1)


# --- 7. the thread policy -------------------------------------------------------------------
def test_cpu_threads_follows_set_blas_threads():
    old = engine.set_blas_threads(1)
    try:
        assert engine.cpu_threads() == 1
        assert engine.set_blas_threads(3) == 1
        assert engine.cpu_threads() == 3
        engine.set_blas_threads(None)
        assert 1 <= engine.cpu_threads() <= engine._cores()
    finally:
        engine.set_blas_threads(old)


def test_set_blas_threads_one_means_one_kernel_thread():
    old = engine.set_blas_threads(1)
    try:
        assert _thread_ids(BIG) == {threading.get_ident()}
        engine.set_blas_threads(2)
        assert len(_thread_ids(BIG)) == 2
    finally:
        engine.set_blas_threads(old)


# --- relu against shared zeros --------------------------------------------------------
@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64, np.int32])
def test_maximum0_is_maximum_with_a_scalar_zero_bit_for_bit(dtype, monkeypatch):
    """``maximum0`` compares with a view of shared zeros (NumPy's SIMD loop)
    instead of a scalar 0: the same bits, on any layout, and the shared
    zeros are never written; past ``ZEROS_MAX`` it takes the scalar."""
    rng = np.random.default_rng(7)
    monkeypatch.setattr(ck, '_ZEROS', {})
    monkeypatch.setattr(ck, 'ZEROS_MAX', 5000)
    with np.errstate(over='ignore'):                 # (1e30 in float16: inf)
        s = np.array(SPECIAL if np.dtype(dtype).kind == 'f' else [0, -3, 7], dtype)
    base = np.concatenate([s, (rng.standard_normal(4000) * 10).astype(dtype)])
    m = base[:4000].reshape(40, 100)
    for x in (base, m, m.T, m[::2, 1::3], base[:7000:2], s[:1],
              np.tile(base, 2)):                     # the last: past ZEROS_MAX
        want = np.maximum(x, 0)
        with np.errstate(invalid='ignore'):
            got = ck.maximum0(x)
            out = np.empty_like(x)
            assert ck.maximum0(x, out=out) is out
            inplace = x.copy()
            ck.maximum0(inplace, out=inplace)
        for r in (got, out, inplace):
            assert_bits(r, want)
    for buf in ck._ZEROS.values():
        assert not buf.flags.writeable and not buf.any()
    # laid out as the array is (a CHWN result seen as NCHW; a transpose):
    # the ufunc then walks both in memory order
    chwn = np.zeros((3, 4, 5, 6), dtype).transpose(3, 0, 1, 2)
    for x in (chwn, m.T):
        z = ck.zeros_as(x)
        assert z.shape == x.shape
        assert list(np.argsort(z.strides)) == list(np.argsort(x.strides))
    assert np.isscalar(ck.zeros_as(np.ones(5001, dtype)))
