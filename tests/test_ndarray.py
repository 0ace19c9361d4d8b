"""NDArray: contexts, creation, properties, operators, printing, random.

Every value is checked against NumPy (and PyTorch where it is installed).
Tests take the ``ctx`` fixture, so they re-run on ``gpu(0)`` when one exists.
"""
import warnings

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd
from d2lmini.ndarray.registry import OPS

from conftest import HAS_GPU

from oracles import needs_torch, torch
no_gpu_only = pytest.mark.skipif(HAS_GPU, reason='checks the no-GPU error')


def rnd(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-6):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else np.asarray(a)
    np.testing.assert_allclose(a, np.asarray(b), rtol=rtol, atol=atol)


# --- contexts ------------------------------------------------------------------
def test_context_repr_eq_hash_order():
    assert repr(mx.cpu()) == 'cpu(0)' and str(mx.cpu(1)) == 'cpu(1)'
    assert repr(mx.gpu(2)) == 'gpu(2)'
    assert mx.cpu(0) == mx.Context('cpu', 0) == mx.Context(mx.cpu(0))
    assert mx.cpu(0) != mx.cpu(1) and mx.cpu(0) != mx.gpu(0)
    assert mx.cpu(0) != 'cpu(0)'
    assert len({mx.cpu(0), mx.cpu(0), mx.cpu(1), mx.gpu(0)}) == 3
    assert {mx.cpu(1): 'a'}[mx.Context('cpu', 1)] == 'a'
    assert sorted([mx.gpu(0), mx.cpu(1), mx.cpu(0)]) == [mx.cpu(0), mx.cpu(1), mx.gpu(0)]
    c = mx.gpu(3)
    assert (c.device_type, c.device_id) == ('gpu', 3)
    with pytest.raises(ValueError):
        mx.Context('tpu', 0)
    with pytest.raises(ValueError):
        mx.cpu(-1)


def test_reentering_the_same_context_object():
    default = mx.current_context()           # cpu(0), or the run's default
    c = mx.cpu(1)
    with c:
        with mx.cpu(2):
            with c:
                assert mx.current_context() == mx.cpu(1)
            assert mx.current_context() == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == default


def test_context_is_per_thread():
    import threading
    default = mx.current_context()
    seen = []
    with mx.cpu(3):
        t = threading.Thread(target=lambda: seen.append(mx.current_context()))
        t.start()
        t.join()
    assert seen == [default]


def test_with_context_sets_default():
    default = mx.context.current_context()   # cpu(0), or the run's default
    assert default == mx.context._DEFAULT[0]        # no `with` is open
    with mx.Context(mx.cpu(1)):
        assert mx.context.current_context() == mx.cpu(1)
        assert mx.current_context() == mx.cpu(1)
        x = nd.zeros((2,))
        assert x.context == mx.cpu(1)
        with mx.cpu(2):
            assert nd.ones(1).context == mx.cpu(2)
        assert mx.context.current_context() == mx.cpu(1)
    assert mx.context.current_context() == default
    assert nd.ones(1).context == default


def test_num_gpus_matches_backend():
    assert isinstance(mx.num_gpus(), int)
    assert mx.num_gpus() == (1 if HAS_GPU else 0) or mx.num_gpus() >= 1


@no_gpu_only
@pytest.mark.parametrize('make', [
    lambda: nd.zeros((2,), ctx=mx.gpu(0)),
    lambda: nd.array([1, 2], ctx=mx.gpu(0)),
    lambda: nd.random.normal(shape=(2,), ctx=mx.gpu(0)),
    lambda: nd.random.uniform(shape=(2,), ctx=mx.gpu(0)),
    lambda: nd.ones((2,)).copyto(mx.gpu(0)),
    lambda: nd.ones((2,)).as_in_context(mx.gpu(0)),
], ids=['zeros', 'array', 'normal', 'uniform', 'copyto', 'as_in_context'])
def test_gpu_without_gpu_says_how_to_install(make, engine_kind):
    assert mx.num_gpus() == 0
    with pytest.raises(RuntimeError, match=r'gpu\(0\).*pip install.*\[gpu\]'):
        make()


# --- creation ----------------------------------------------------------------------
def test_creation_values_dtypes_contexts(ctx):
    a = nd.array([[1, 2], [3, 4]])
    assert a.dtype is np.float32 and a.context == ctx       # MXNet: float32 default
    close(a, [[1, 2], [3, 4]])
    assert nd.array(np.arange(3)).dtype is np.float32       # even from int NumPy
    assert nd.array([1, 2], dtype='int32').dtype is np.int32
    assert nd.array(a).dtype is np.float32
    b = nd.array(a, dtype=np.float64)
    assert b.dtype is np.float64
    close(b, a.asnumpy())
    for fn, val in [(nd.zeros, 0), (nd.ones, 1)]:
        x = fn((2, 3), ctx=ctx, dtype='float64')
        assert x.shape == (2, 3) and x.dtype is np.float64 and x.context == ctx
        close(x, np.full((2, 3), val))
    assert nd.zeros(4).shape == (4,)
    close(nd.full((2, 2), 7.5), np.full((2, 2), 7.5))
    assert nd.full((2,), 3, dtype='int64').dtype is np.int64
    e = nd.empty((3, 2), dtype=np.float16)
    assert e.shape == (3, 2) and e.dtype is np.float16
    close(nd.arange(5), np.arange(5))
    assert nd.arange(5).dtype is np.float32
    close(nd.arange(1, 10, 2.5), np.arange(1, 10, 2.5))
    close(nd.arange(0, 3, repeat=2), [0, 0, 1, 1, 2, 2])
    assert nd.arange(3, dtype='int32').dtype is np.int32
    src = nd.array([[1, 2, 3]], dtype='float64')
    for fn, val in [(nd.zeros_like, 0), (nd.ones_like, 1)]:
        y = fn(src)
        assert y.shape == (1, 3) and y.dtype is np.float64 and y.context == ctx
        close(y, np.full((1, 3), val))
    close(nd.full_like(src, 2), np.full((1, 3), 2))
    assert nd.empty_like(src).shape == (1, 3)


def test_creation_on_another_context():
    for make in [lambda c: nd.array([1.0], ctx=c), lambda c: nd.zeros(2, ctx=c),
                 lambda c: nd.ones(2, ctx=c), lambda c: nd.full(2, 1, ctx=c),
                 lambda c: nd.arange(3, ctx=c), lambda c: nd.empty(2, ctx=c),
                 lambda c: nd.random.normal(shape=2, ctx=c)]:
        assert make(mx.cpu(1)).context == mx.cpu(1)


def test_array_copies_its_source(ctx):
    src = np.ones((2, 2), np.float32)
    x = nd.array(src)
    src[:] = 5
    close(x, np.ones((2, 2)))


# --- random -------------------------------------------------------------------------
def _draw(ctx):
    return [nd.random.normal(0, 1, shape=(3, 4), ctx=ctx).asnumpy(),
            nd.random.uniform(-2, 2, shape=(5,), ctx=ctx).asnumpy(),
            nd.random.randint(0, 10, shape=(6,), ctx=ctx).asnumpy()]


def test_random_seed_reproducible_and_per_context(ctx, engine_kind):
    mx.random.seed(7)
    a = _draw(ctx)
    mx.random.seed(7)
    b = _draw(ctx)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    mx.random.seed(8)
    assert not np.array_equal(_draw(ctx)[0], a[0])
    mx.random.seed(7)
    other = _draw(mx.cpu(1) if ctx == mx.cpu(0) else mx.cpu(0))
    assert not np.array_equal(other[0], a[0])     # contexts get their own streams


def test_random_same_numbers_in_both_engines(ctx):
    draws = []
    for kind in ['threaded', 'naive']:
        old = mx.engine.set_engine(kind)
        try:
            mx.random.seed(123)
            draws.append(_draw(ctx) + [nd.random.normal(shape=(2,), ctx=mx.cpu(1)).asnumpy()])
        finally:
            mx.engine.set_engine(old)
    for u, v in zip(*draws):
        np.testing.assert_array_equal(u, v)


def test_random_distributions(ctx):
    x = nd.random.normal(2.0, 0.5, shape=(20000,)).asnumpy()
    assert x.dtype == np.float32
    assert abs(x.mean() - 2.0) < 0.02 and abs(x.std() - 0.5) < 0.02
    u = nd.random.uniform(-1, 3, shape=(20000,)).asnumpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.05
    r = nd.random.randint(2, 5, shape=(1000,))
    assert r.dtype is np.int32
    assert set(np.unique(r.asnumpy())) == {2, 3, 4}
    assert nd.random.normal(shape=(2, 3), dtype='float64').dtype is np.float64
    assert nd.random.uniform().shape == (1,)
    out = nd.zeros((3, 3))
    assert nd.random.uniform(5, 6, out=out) is out
    assert (out.asnumpy() >= 5).all()


def test_random_shuffle_randn_exponential(ctx):
    a = np.arange(20, dtype=np.float32).reshape(10, 2)
    s = nd.random.shuffle(nd.array(a)).asnumpy()
    assert not np.array_equal(s, a)
    np.testing.assert_array_equal(s[np.argsort(s[:, 0])], a)   # rows, permuted
    r = nd.random.randn(3, 4)
    assert r.shape == (3, 4) and r.dtype is np.float32
    e = nd.random.exponential(2.0, shape=(20000,)).asnumpy()
    assert e.min() >= 0 and abs(e.mean() - 2.0) < 0.1


def test_mx_random_seed_with_ctx():
    mx.random.seed(3, ctx=mx.cpu(1))
    a = nd.random.normal(shape=(4,), ctx=mx.cpu(1)).asnumpy()
    mx.random.seed(3, ctx=mx.cpu(1))
    np.testing.assert_array_equal(nd.random.normal(shape=(4,), ctx=mx.cpu(1)).asnumpy(), a)


# --- properties and conversions --------------------------------------------------------
def test_properties(ctx):
    x = nd.zeros((2, 3, 4), dtype='float16')
    assert x.shape == (2, 3, 4) and x.size == 24 and x.ndim == 3
    assert x.dtype is np.float16 and x.dtype == np.float16
    assert x.context == x.ctx == x.device == ctx
    assert len(x) == 2
    s = nd.array(3.5)
    assert s.shape == () and s.size == 1 and s.ndim == 0
    assert s.asscalar() == 3.5
    assert nd.array([[7]], dtype='int32').asscalar() == 7
    assert float(nd.array([2.5])) == 2.5 and int(nd.array([3])) == 3


def test_asnumpy_is_a_copy(ctx):
    x = nd.ones((2,))
    a = x.asnumpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    a[:] = 9
    close(x, [1, 1])
    np.testing.assert_array_equal(np.asarray(x), [1, 1])


def test_astype_copy_copyto_as_in_context_detach(ctx):
    x = nd.array([1.7, -2.2, 3.0])
    y = x.astype('int32')
    assert y.dtype is np.int32
    np.testing.assert_array_equal(y.asnumpy(), np.array([1.7, -2.2, 3.0]).astype(np.int32))
    assert x.astype('float32', copy=False) is x
    c = x.copy()
    c[:] = 0
    close(x, [1.7, -2.2, 3.0])
    assert x.as_in_context(ctx) is x and x.as_in_ctx(ctx) is x
    other = mx.cpu(1) if ctx == mx.cpu(0) else mx.cpu(0)
    z = x.copyto(other)
    assert z.context == other and z is not x
    close(z, x.asnumpy())
    w = x.as_in_context(other)
    assert w.context == other and w is not x
    close(w, x.asnumpy())
    tgt = nd.zeros((3,), ctx=other)
    assert x.copyto(tgt) is tgt and tgt.context == other
    close(tgt, x.asnumpy())
    tgt2 = nd.zeros((3,))
    x.copyto(tgt2)
    close(tgt2, x.asnumpy())
    d = x.detach()
    assert d.shape == x.shape and d.context == ctx
    close(d, x.asnumpy())


def test_copies_are_explicit_and_independent(ctx):
    x = nd.ones((3,))
    other = mx.cpu(1) if ctx == mx.cpu(0) else mx.cpu(0)
    y = x.copyto(other)
    x[:] = 5                    # a later write to the source does not reach the copy
    close(y, [1, 1, 1])
    y += 1
    close(x, [5, 5, 5])
    close(y, [2, 2, 2])


# --- printing ---------------------------------------------------------------------------
def test_print_looks_like_mxnet(ctx, capsys):
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    print(x)
    out = capsys.readouterr().out
    assert out == f'\n{np.array([[1, 2, 3], [4, 5, 6]], np.float32)}\n<NDArray 2x3 @{ctx}>\n'
    assert repr(nd.zeros(4, ctx=mx.cpu(1))).endswith('<NDArray 4 @cpu(1)>')
    assert '[0. 0. 0. 0.]' in repr(nd.zeros(4))


# --- arithmetic -----------------------------------------------------------------------
BINARY = [('+', np.add), ('-', np.subtract), ('*', np.multiply), ('/', np.divide),
          ('**', np.power)]


@pytest.mark.parametrize('sa,sb', [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)),
                                   ((1,), (2, 2)), ((), (3,))])
def test_binary_broadcasting(ctx, sa, sb):
    a, b = rnd(*sa, seed=1, low=0.5, high=2), rnd(*sb, seed=2, low=0.5, high=2)
    x, y = nd.array(a), nd.array(b)
    for op, f in BINARY:
        r = eval(f'x {op} y')
        assert r.shape == np.broadcast_shapes(sa, sb) and r.context == ctx
        close(r, f(a, b), rtol=1e-5)
    close(nd.maximum(x, y), np.maximum(a, b))
    close(nd.minimum(x, y), np.minimum(a, b))
    close(nd.broadcast_add(x, y), a + b)
    close(nd.broadcast_mul(x, y), a * b)


def test_scalar_and_reflected(ctx):
    a = rnd(2, 3, low=0.5, high=2)
    x = nd.array(a)
    for r, e in [(x + 2, a + 2), (2 + x, 2 + a), (x - 2, a - 2), (2 - x, 2 - a),
                 (x * 3, a * 3), (3 * x, 3 * a), (x / 4, a / 4), (4 / x, 4 / a),
                 (x ** 2, a ** 2), (2 ** x, 2 ** a), (-x, -a), (abs(-x), a),
                 (x % 0.3, np.mod(a, np.float32(0.3))),
                 (np.float32(2) * x, 2 * a), (x + np.float64(1), a + 1)]:
        assert r.dtype is np.float32 and r.context == ctx
        close(r, e)
    close(nd.maximum(x, 1.0), np.maximum(a, 1))
    close(nd.minimum(1.0, x), np.minimum(a, 1))
    i = nd.array([1, 2, 3], dtype='int32')
    assert (i * 2).dtype is np.int32 and (i + i).dtype is np.int32
    np.testing.assert_array_equal((i * 2).asnumpy(), [2, 4, 6])


def test_inplace_operators_modify_the_array(ctx):
    a = rnd(2, 3)
    x = nd.array(a)
    ident = id(x)
    x += 1
    x -= 0.5
    x *= 2
    x /= 4
    x += nd.ones((3,))          # broadcast on the right
    assert id(x) == ident
    close(x, (a + 1 - 0.5) * 2 / 4 + 1)
    y = nd.array(a)
    alias = y
    y[:] = 3
    close(alias, np.full((2, 3), 3))


def test_dtypes_follow_mxnet(ctx):
    i = nd.array([1, 4, 9], dtype='int32')
    for r in [nd.sqrt(i), nd.exp(i), i / i, nd.clip(i, 2, 5), i.prod(), i.sum(),
              i * 2.5, i + 1, i.max()]:
        assert r.dtype is np.int32 and r.asnumpy().dtype == np.int32
    np.testing.assert_array_equal(nd.sqrt(i).asnumpy(), [1, 2, 3])
    np.testing.assert_array_equal((nd.array([7], dtype='int32') /
                                   nd.array([2], dtype='int32')).asnumpy(), [3])
    f32, f64 = nd.ones((2, 2)), nd.ones((2, 2), dtype='float64')
    for r in [f32 + f64, nd.dot(f32, f64), nd.concat(f32, f64), nd.stack(f32, f64),
              nd.where(f32, f32, f64), nd.batch_dot(f32.reshape((1, 2, 2)),
                                                    f64.reshape((1, 2, 2)))]:
        assert r.dtype is np.float64 and r.asnumpy().dtype == np.float64
    h = nd.ones((2,), dtype='float16')
    assert (h * 2).dtype is np.float16 and nd.exp(h).dtype is np.float16


def test_full_reduction_has_shape_1_like_mxnet(ctx):
    s = nd.ones((2, 3)).sum()
    assert s.shape == (1,) and s.asscalar() == 6 and s[0].asscalar() == 6
    assert nd.ones((2, 3)).argmax().shape == (1,)
    assert nd.ones((2, 3)).sum(axis=(0, 1), keepdims=True).shape == (1, 1)
    s[:] = 2
    assert s.asscalar() == 2
    s += 1
    assert s.asscalar() == 3
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward()
    close(x.grad, [2, 4])


def test_comparisons_return_input_dtype(ctx):
    a = np.array([[1, 5, 3], [4, 2, 6]], np.float32)
    b = np.array([3, 2, 3], np.float32)
    x, y = nd.array(a), nd.array(b)
    for r, e in [(x == y, a == b), (x != y, a != b), (x > y, a > b),
                 (x >= y, a >= b), (x < y, a < b), (x <= y, a <= b),
                 (x > 3, a > 3), (x == 5, a == 5), (3 < x, 3 < a), (3 >= x, 3 >= a)]:
        assert r.dtype is np.float32 and r.shape == e.shape
        np.testing.assert_array_equal(r.asnumpy(), e.astype(np.float32))
    i = nd.array([1, 2], dtype='int32')
    assert (i == 1).dtype is np.int32
    np.testing.assert_array_equal((i == nd.array([1, 1], dtype='int32')).asnumpy(), [1, 0])


# --- reductions -------------------------------------------------------------------------
@pytest.mark.parametrize('axis', [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize('keepdims', [False, True])
def test_reductions(ctx, axis, keepdims):
    a = rnd(3, 4, 2, seed=3, low=0.5, high=1.5)
    x = nd.array(a)
    for name in ['sum', 'mean', 'max', 'min', 'prod']:
        expect = getattr(np, name)(a, axis=axis, keepdims=keepdims)
        if expect.ndim == 0:
            expect = expect.reshape(1)             # MXNet 1.x: no 0-d results
        for r in [getattr(nd, name)(x, axis=axis, keepdims=keepdims),
                  getattr(x, name)(axis=axis, keepdims=keepdims)]:
            assert r.shape == expect.shape, name
            assert r.dtype is np.float32
            close(r, expect, rtol=1e-5)


def test_argmax_argmin(ctx):
    a = rnd(3, 5, seed=4)
    x = nd.array(a)
    for ax in [0, 1, -1]:
        r = nd.argmax(x, axis=ax)
        assert r.dtype is np.float32                        # MXNet: float indices
        np.testing.assert_array_equal(r.asnumpy(), a.argmax(axis=ax))
        np.testing.assert_array_equal(x.argmin(axis=ax).asnumpy(), a.argmin(axis=ax))
    assert x.argmax(axis=1, keepdims=True).shape == (3, 1)
    assert x.argmax().asscalar() == a.argmax()


def test_sum_exclude_and_norm(ctx):
    a = rnd(2, 3, 4)
    x = nd.array(a)
    close(nd.sum(x, axis=1, exclude=True), a.sum(axis=(0, 2)))
    close(nd.norm(x), np.linalg.norm(a.ravel()))
    close(x.norm(axis=1), np.linalg.norm(a, axis=1))


# --- linear algebra ----------------------------------------------------------------------
@pytest.mark.parametrize('sa,sb', [((3, 4), (4, 5)), ((4,), (4,)), ((3, 4), (4,)),
                                   ((2, 3, 4), (4, 5)), ((2, 3, 4), (4, 2, 5)),
                                   ((4,), (4, 2, 3))])
def test_dot_contracts_last_with_first(ctx, sa, sb):
    a, b = rnd(*sa, seed=5), rnd(*sb, seed=6)
    r = nd.dot(nd.array(a), nd.array(b))
    e = np.tensordot(a, b, axes=1)
    assert r.shape == e.shape
    close(r, e, rtol=1e-5)


def test_dot_transpose_flags(ctx):
    a, b = rnd(4, 3, seed=1), rnd(5, 4, seed=2)
    close(nd.dot(nd.array(a), nd.array(b), transpose_a=True, transpose_b=True), a.T @ b.T)
    close(nd.dot(nd.array(a.T), nd.array(b.T)), a.T @ b.T)
    close(nd.array(a.T) @ nd.array(b.T), a.T @ b.T)


def test_batch_dot(ctx):
    a, b = rnd(3, 2, 4, seed=1), rnd(3, 4, 5, seed=2)
    close(nd.batch_dot(nd.array(a), nd.array(b)), np.matmul(a, b))
    close(nd.batch_dot(nd.array(a.transpose(0, 2, 1)), nd.array(b), transpose_a=True),
          np.matmul(a, b))
    close(nd.batch_dot(nd.array(a), nd.array(b.transpose(0, 2, 1)), transpose_b=True),
          np.matmul(a, b))


# --- shapes -------------------------------------------------------------------------
@pytest.mark.parametrize('src,code,expect', [
    ((2, 3, 4), (6, 4), (6, 4)),
    ((2, 3, 4), (4, -1), (4, 6)),
    ((2, 3, 4), (0, -1), (2, 12)),
    ((2, 3, 4), (-1, 0), (8, 3)),        # MXNet: -1 consumes a dim, 0 copies the next
    ((2, 3, 4), (4, 0, -1), (4, 3, 2)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (0, -4, -1, 1, 0), (2, 3, 1, 4)),
    ((2, 3, 4), (-4, 2, -1, -2), (2, 1, 3, 4)),
    ((2, 3, 4), (-1,), (24,)),
])
def test_reshape_codes(ctx, src, code, expect):
    a = rnd(*src)
    r = nd.array(a).reshape(code)
    assert r.shape == expect
    close(r, a.reshape(expect))
    assert nd.reshape(nd.array(a), shape=code).shape == expect
    assert nd.array(a).reshape(*code).shape == expect


def test_reshape_reverse(ctx):
    a = rnd(10, 5, 4)
    assert nd.array(a).reshape((-1, 0), reverse=True).shape == (50, 4)
    assert nd.reshape(nd.array(a), (-1, 0)).shape == (40, 5)


def test_shape_ops(ctx):
    a = rnd(2, 3, 4)
    x = nd.array(a)
    close(x.T, a.T)
    close(x.transpose(), a.transpose())
    close(x.transpose((1, 0, 2)), a.transpose(1, 0, 2))
    close(nd.transpose(x, axes=(2, 0, 1)), a.transpose(2, 0, 1))
    close(nd.swapaxes(x, 0, 2), a.swapaxes(0, 2))
    f = nd.flatten(x)
    assert f.shape == (2, 12)
    close(f, a.reshape(2, 12))
    assert x.flatten().shape == (2, 12)
    assert nd.expand_dims(x, axis=1).shape == (2, 1, 3, 4)
    assert x.expand_dims(-1).shape == (2, 3, 4, 1)
    close(nd.expand_dims(x, 0), a[None])
    close(nd.squeeze(nd.array(a[:, :1])), a[:, 0])
    close(nd.broadcast_to(nd.array(a[:1]), (5, 3, 4)), np.broadcast_to(a[:1], (5, 3, 4)))
    close(x.tile((2, 1, 1)), np.tile(a, (2, 1, 1)))
    close(x.repeat(2, axis=1), np.repeat(a, 2, axis=1))
    close(nd.flip(x, axis=1), np.flip(a, 1))


def test_concat_stack_split(ctx):
    a, b = rnd(2, 3, seed=1), rnd(2, 5, seed=2)
    close(nd.concat(nd.array(a), nd.array(b)), np.concatenate([a, b], axis=1))  # dim=1
    close(nd.concat(nd.array(a), nd.array(a), dim=0), np.concatenate([a, a], 0))
    close(nd.concat(*[nd.array(a)] * 3, dim=-1), np.concatenate([a] * 3, -1))
    close(nd.stack(nd.array(a), nd.array(a) * 2), np.stack([a, 2 * a]))
    close(nd.stack(nd.array(a), nd.array(a), axis=2), np.stack([a, a], axis=2))
    c = rnd(4, 6)
    parts = nd.split(nd.array(c), num_outputs=3, axis=1)
    assert isinstance(parts, list) and len(parts) == 3
    for p, e in zip(parts, np.split(c, 3, axis=1)):
        close(p, e)
    sq = nd.split(nd.array(c), 4, axis=0, squeeze_axis=True)
    assert sq[0].shape == (6,)
    close(sq[3], c[3])
    one = nd.split(nd.array(c), 1, axis=0)
    assert isinstance(one, nd.NDArray)
    close(one, c)
    parts2 = nd.split(nd.array(c), 2, axis=0)       # after a 1-output split
    assert [p.shape for p in parts2] == [(2, 6), (2, 6)]
    close(nd.array(c).split(2, axis=1)[1], c[:, 3:])


def test_indexing(ctx):
    a = rnd(4, 5)
    x = nd.array(a)
    close(x[1], a[1])
    close(x[1:3], a[1:3])
    close(x[:, 2], a[:, 2])
    close(x[1:3, ::2], a[1:3, ::2])
    close(x[-1], a[-1])
    assert x[2, 3].asscalar() == pytest.approx(float(a[2, 3]))
    close(x[[0, 2, 2]], a[[0, 2, 2]])
    close(x[nd.array([3, 0])], a[[3, 0]])
    close(x[:, [1, 4]], a[:, [1, 4]])
    close(nd.slice_axis(x, axis=1, begin=1, end=3), a[:, 1:3])
    close(nd.slice(x, begin=(1, None), end=(3, 4)), a[1:3, :4])
    close(nd.take(x, nd.array([0, 3])), a[[0, 3]])


def test_slice_assignment_modifies_in_place(ctx):
    a = rnd(4, 5)
    x = nd.array(a)
    ident = id(x)
    x[1:3] += 1
    a[1:3] += 1
    close(x, a)
    x[0] = 0
    a[0] = 0
    close(x, a)
    x[:, 1] = nd.array([9, 8, 7, 6])
    a[:, 1] = [9, 8, 7, 6]
    close(x, a)
    x[1:3] = 0
    a[1:3] = 0
    close(x, a)
    x[3, 4] = -1
    a[3, 4] = -1
    close(x, a)
    x[:] = 2
    assert id(x) == ident
    close(x, np.full((4, 5), 2))
    x[:] = nd.arange(5)                   # broadcast assignment
    close(x, np.broadcast_to(np.arange(5), (4, 5)))
    x[:] = np.ones((4, 5))
    close(x, np.ones((4, 5)))
    x[[0, 2]] = 4
    close(x[[0, 2]], np.full((2, 5), 4))
    view = x[1:3]
    view[:] = 7                           # a write through a basic slice reaches x
    close(x[1:3], np.full((2, 5), 7))


def test_write_into_broadcast_result(ctx):
    b = nd.broadcast_to(nd.ones((3, 1)), (3, 4))
    b[:] = 2
    b += 1
    close(b, np.full((3, 4), 3))


# --- elementwise math -------------------------------------------------------------------
UNARY = [('exp', np.exp, -1, 1), ('log', np.log, 0.1, 2), ('sqrt', np.sqrt, 0, 2),
         ('abs', np.abs, -1, 1), ('square', np.square, -1, 1),
         ('sigmoid', lambda a: 1 / (1 + np.exp(-a)), -5, 5), ('tanh', np.tanh, -2, 2),
         ('relu', lambda a: np.maximum(a, 0), -1, 1), ('sin', np.sin, -3, 3),
         ('cos', np.cos, -3, 3), ('negative', np.negative, -1, 1),
         ('sign', np.sign, -1, 1), ('floor', np.floor, -3, 3), ('ceil', np.ceil, -3, 3),
         ('log1p', np.log1p, 0, 1), ('expm1', np.expm1, -1, 1),
         ('reciprocal', np.reciprocal, 0.5, 2), ('rsqrt', lambda a: 1 / np.sqrt(a), 0.5, 2)]


@pytest.mark.parametrize('name,f,lo,hi', UNARY, ids=[u[0] for u in UNARY])
def test_unary(ctx, name, f, lo, hi):
    a = rnd(3, 4, low=lo, high=hi)
    r = getattr(nd, name)(nd.array(a))
    assert r.dtype is np.float32 and r.shape == a.shape
    close(r, f(a), rtol=1e-5, atol=1e-6)
    if hasattr(nd.NDArray, name):
        close(getattr(nd.array(a), name)(), f(a), rtol=1e-5, atol=1e-6)


def test_sigmoid_is_stable(ctx):
    """MXNet's 1 / (1 + exp(-x)): exp(1000) overflows to inf and gives 0,
    the right limit, without a warning, small array or large (threaded)."""
    big = np.tile(np.array([-1000.0, 0.0, 1000.0], np.float32), 100_000)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        r = nd.sigmoid(nd.array([-1000.0, 0.0, 1000.0])).asnumpy()
        rb = nd.sigmoid(nd.array(big)).asnumpy()
    np.testing.assert_allclose(r, [0, 0.5, 1])
    assert np.isfinite(r).all()
    np.testing.assert_array_equal(rb, np.tile(r, 100_000))


def _softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.skipif('softmax' not in OPS, reason='nd has no softmax yet')
@pytest.mark.parametrize('axis', [-1, 0, 1])
def test_softmax_log_softmax(ctx, axis):
    a = rnd(3, 4, 2, low=-3, high=3)
    x = nd.array(a)
    s = nd.softmax(x, axis=axis)
    close(s, _softmax(a, axis))
    close(s.sum(axis=axis), np.ones(np.delete(a.shape, axis % 3)))
    close(nd.log_softmax(x, axis=axis), np.log(_softmax(a, axis)), atol=1e-5)
    big = nd.array([[1000.0, 0.0], [-1000.0, 1000.0]])       # no overflow
    close(nd.softmax(big), [[1, 0], [0, 1]])
    assert np.isfinite(nd.log_softmax(big).asnumpy()).all()
    if torch is not None:
        t = torch.tensor(a)
        close(s, torch.softmax(t, axis).numpy())
        close(nd.log_softmax(x, axis=axis), torch.log_softmax(t, axis).numpy(), atol=1e-5)


def test_one_hot_pick_clip_where(ctx):
    idx = nd.array([1, 0, 3])
    oh = nd.one_hot(idx, 4)
    assert oh.dtype is np.float32
    np.testing.assert_array_equal(oh.asnumpy(), np.eye(4, dtype=np.float32)[[1, 0, 3]])
    np.testing.assert_array_equal(nd.one_hot(idx, 4, on_value=5, off_value=-1).asnumpy(),
                                  np.where(np.eye(4)[[1, 0, 3]] > 0, 5, -1))
    a = rnd(3, 4)
    x = nd.array(a)
    close(nd.pick(x, idx), a[np.arange(3), [1, 0, 3]])
    close(nd.pick(x, nd.array([2, 0, 1, 1]), axis=0), a[[2, 0, 1, 1], np.arange(4)])
    assert nd.pick(x, idx, keepdims=True).shape == (3, 1)
    close(nd.clip(x, -0.3, 0.4), np.clip(a, -0.3, 0.4))
    close(x.clip(-0.3, 0.4), np.clip(a, -0.3, 0.4))
    b = rnd(3, 4, seed=9)
    cond = (a > 0).astype(np.float32)
    close(nd.where(nd.array(cond), x, nd.array(b)), np.where(cond > 0, a, b))
    close(nd.where(nd.array([1, 0, 1]), x, nd.array(b)),       # 1-D condition: rows
          np.where(np.array([1, 0, 1])[:, None] > 0, a, b))


@needs_torch
def test_against_torch(ctx):
    a, b = rnd(3, 4, seed=1), rnd(4, 5, seed=2)
    x = nd.array(a)
    close(nd.dot(x, nd.array(b)), (torch.tensor(a) @ torch.tensor(b)).numpy())
    close(nd.sigmoid(x), torch.sigmoid(torch.tensor(a)).numpy())
    close(nd.tanh(x), torch.tanh(torch.tensor(a)).numpy())
    close(x.max(axis=1), torch.tensor(a).max(dim=1).values.numpy())


# --- contexts in operators ----------------------------------------------------------------
def test_mixed_context_error_names_both(ctx):
    other = mx.cpu(1) if ctx == mx.cpu(0) else mx.cpu(0)
    x, y = nd.ones((2, 3)), nd.ones((2, 3), ctx=other)
    for f in [lambda: x + y, lambda: nd.dot(x, y.T), lambda: nd.concat(x, y, dim=0),
              lambda: nd.where(x, x, y)]:
        with pytest.raises(ValueError) as e:
            f()
        assert str(ctx) in str(e.value) and str(other) in str(e.value)
        assert 'copyto' in str(e.value) or 'as_in_context' in str(e.value)
    close(x + y.as_in_context(ctx), np.full((2, 3), 2))


def test_elementwise_out_argument_writes_in_place(ctx):
    x = nd.array([0.0, 1.0])
    y = nd.zeros((2,))
    r = nd.exp(x, out=y)
    assert r is y
    np.testing.assert_allclose(y.asnumpy(), np.exp([0.0, 1.0]), rtol=1e-6)
