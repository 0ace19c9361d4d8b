"""mx.np against NumPy: values, shapes, dtypes (MXNet's rules), 0-d
semantics, masks, autograd through np functions, np.random, np.linalg."""
import numpy as onp
import pytest

import d2lmini as mx
from d2lmini import autograd, np

A = onp.arange(1, 7, dtype=onp.float32).reshape(2, 3)


@pytest.mark.parametrize('name,fn,ref', [
    ('sum', lambda x: x.sum(), lambda a: a.sum()),
    ('mean0', lambda x: np.mean(x, axis=0), lambda a: a.mean(0)),
    ('std', lambda x: x.std(), lambda a: a.std()),
    ('var1', lambda x: np.var(x, axis=1, ddof=1), lambda a: a.var(1, ddof=1)),
    ('cumsum', lambda x: np.cumsum(x, axis=1), lambda a: a.cumsum(1)),
    ('concat', lambda x: np.concatenate([x, x], axis=1), lambda a: onp.concatenate([a, a], 1)),
    ('stack', lambda x: np.stack([x, x], -1), lambda a: onp.stack([a, a], -1)),
    ('dot', lambda x: np.dot(x, x.T), lambda a: a @ a.T),
    ('matmul', lambda x: np.matmul(np.stack([x, x]), x.T), lambda a: onp.stack([a, a]) @ a.T),
    ('einsum', lambda x: np.einsum('ij,kj->ik', x, x), lambda a: a @ a.T),
    ('tensordot', lambda x: np.tensordot(x, x, ([1], [1])), lambda a: a @ a.T),
    ('roll', lambda x: np.roll(x, 1, 1), lambda a: onp.roll(a, 1, 1)),
    ('rot90', lambda x: np.rot90(x), lambda a: onp.rot90(a)),
    ('pad', lambda x: np.pad(x, 1), lambda a: onp.pad(a, 1)),
    ('tril', lambda x: np.tril(x), lambda a: onp.tril(a)),
    ('diag', lambda x: np.diag(np.diag(x)), lambda a: onp.diag(onp.diag(a))),
    ('split', lambda x: np.array_split(x, 2, 1)[1], lambda a: onp.array_split(a, 2, 1)[1]),
    ('flip', lambda x: np.flip(x), lambda a: onp.flip(a)),
    ('sort', lambda x: np.sort(-x, axis=1), lambda a: onp.sort(-a, 1)),
    ('where', lambda x: np.where(x > 2, x, 0), lambda a: onp.where(a > 2, a, 0)),
    ('arctan2', lambda x: np.arctan2(x - 3, -x + 2.5), lambda a: onp.arctan2(a - 3, -a + 2.5)),
    ('norm', lambda x: np.linalg.norm(x, axis=1), lambda a: onp.linalg.norm(a, axis=1)),
    ('moveaxis', lambda x: np.moveaxis(x[None], 0, -1), lambda a: onp.moveaxis(a[None], 0, -1)),
])
def test_against_numpy(name, fn, ref):
    got = fn(np.array(A))
    want = ref(A)
    assert type(got) is np.ndarray
    assert got.shape == want.shape
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_mxnet_dtype_rules_and_0d():
    x = np.array(A)
    xi = np.array([[1, 2, 3]], dtype='int32')
    assert x.sum().shape == () and x[0, 1].shape == ()
    assert x.argmax().dtype == onp.int64 and int(x.argmax()) == 5
    assert (xi / 2).dtype == onp.float32 and (xi + 1.5).dtype == onp.int32
    assert (xi + np.array([1.])).dtype == onp.float32      # not float64
    assert xi.mean().dtype == onp.float32 and xi.sum().dtype == onp.int32
    assert (x > 2).dtype == onp.bool_ and x[x > 2].shape == (4,)
    assert np.arange(5).dtype == onp.float32 and np.array([1, 2]).dtype == onp.float32
    assert repr(np.array([1., 2.], ctx=mx.cpu())) == 'array([1., 2.])'
    assert f'{x.sum():.1f}' == '21.0'


def test_reshape_numpy_rules():
    x = np.arange(6)
    assert x.reshape(2, 3).shape == x.reshape((2, 3)).shape == (2, 3)
    assert x.reshape(-1, 2).shape == (3, 2)
    with pytest.raises(ValueError, match='at most one -1'):
        x.reshape(-1, -1)
    with pytest.raises(ValueError, match=r'size 6 into shape \(4, 2\)'):
        x.reshape(4, 2)


def test_setitem_mask_and_advanced():
    x = np.array(A)
    x[x > 4] = 0
    x[0, [0, 2]] = -1
    want = onp.where(A > 4, 0, A)
    want[0, [0, 2]] = -1
    onp.testing.assert_array_equal(x.asnumpy(), want)


def _central(f, a, eps=1e-3):
    g = onp.zeros_like(a)
    for i in onp.ndindex(a.shape):
        d = onp.zeros_like(a)
        d[i] = eps
        g[i] = (f(a + d) - f(a - d)) / (2 * eps)
    return g


@pytest.mark.parametrize('fn', [
    lambda x: (np.std(x, axis=0) * np.arange(3)).sum(),
    lambda x: np.linalg.norm(x),
    lambda x: np.linalg.det(np.dot(x, x.T) + np.eye(2)),
    lambda x: np.einsum('ij,ij->', x, x * x),
    lambda x: np.sort(x, axis=1)[:, 0].sum() + x[x > 0.5].sum(),
    lambda x: np.cumsum(x, axis=1).max(),
])
def test_autograd_through_np(fn):
    a = onp.random.default_rng(0).uniform(-1, 1, (2, 3))
    x = np.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = fn(x)
    y.backward()
    assert type(x.grad) is np.ndarray
    want = _central(lambda v: float(fn(np.array(v, dtype='float64'))), a)
    onp.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-4, atol=1e-6)


def test_random_statistics_and_seed():
    mx.random.seed(7)
    a = np.random.normal(1.0, 2.0, size=(20000,))
    mx.random.seed(7)
    b = np.random.normal(1.0, 2.0, size=(20000,))
    onp.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert a.dtype == onp.float32 and np.random.uniform().shape == ()
    # 20000 samples: the mean's standard error is 2/sqrt(20000) = 0.014
    assert abs(float(a.mean()) - 1.0) < 0.06 and abs(float(a.std()) - 2.0) < 0.06
    r = np.random.randint(0, 5, (1000,))
    assert r.dtype == onp.int64 and 0 <= int(r.min()) and int(r.max()) <= 4
    c = np.random.multinomial(100, [0.5, 0.5], size=3)
    assert c.shape == (3, 2) and (c.sum(axis=1) == 100).all()


def test_linalg_against_numpy():
    rng = onp.random.default_rng(1)
    m = rng.uniform(-1, 1, (3, 3))
    spd = m @ m.T + 3 * onp.eye(3)
    x = np.array(spd, dtype='float64')
    onp.testing.assert_allclose(np.linalg.inv(x).asnumpy(), onp.linalg.inv(spd), rtol=1e-10)
    onp.testing.assert_allclose(np.linalg.cholesky(x).asnumpy(), onp.linalg.cholesky(spd))
    onp.testing.assert_allclose(float(np.linalg.det(x)), onp.linalg.det(spd), rtol=1e-10)
    b = rng.uniform(size=(3,))
    onp.testing.assert_allclose(np.linalg.solve(x, np.array(b, dtype='float64')).asnumpy(),
                                onp.linalg.solve(spd, b), rtol=1e-10)
    with pytest.raises(ValueError, match=r'\(\.\.\., n, n\).*\(2, 3\)'):
        np.linalg.inv(np.ones((2, 3)))


def test_clear_shape_errors():
    with pytest.raises(ValueError, match=r'\(2, 3\).*\(2, 4\)'):
        np.concatenate([np.ones((2, 3)), np.ones((2, 4))], axis=0)
    with pytest.raises(ValueError, match=r'\(2, 2, 3\) and \(2, 3\)'):
        np.matmul(np.ones((2, 2, 3)), np.ones((2, 3)).T.T)


@pytest.mark.parametrize('shape,target', [((0,), (1, 0)), ((2, 0, 1), (-1,)),
                                          ((3, 0), (0, 5)), ((0, 0), (0,))])
def test_reshape_zero_size_is_literal(shape, target):
    """A 0 in mx.np's reshape is a zero-length axis (not MXNet's copy code),
    forward and backward, as NumPy."""
    x = np.zeros(shape)
    x.attach_grad()
    with autograd.record():
        y = x.reshape(target)
    y.backward()
    assert y.shape == onp.zeros(shape).reshape(target).shape
    assert x.grad.shape == shape
    assert np.zeros((2, 0, 1)).flatten().shape == (0,)


@pytest.mark.parametrize('fn', ['sum', 'prod', 'max', 'min', 'mean', 'all', 'any'])
def test_reduce_over_no_axis(fn):
    """axis=() reduces nothing (NumPy's rule), keeping the op's dtype rule."""
    a = onp.array([[0, 1, 2], [3, 4, 5]], dtype=onp.int32)
    ref = getattr(onp, fn)(a, axis=())
    res = getattr(np, fn)(np.array(a), axis=())
    assert res.shape == ref.shape
    onp.testing.assert_allclose(res.asnumpy(), ref)
    x = np.array(A)
    x.attach_grad()
    with autograd.record():
        y = np.sum(x * x, axis=())
    y.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), 2 * A)


def test_empty_and_0d_reductions():
    """max/min/argmax of a zero-size axis raise at once (MXNet: MXNetError);
    all/any of nothing are True/False; a 0-d array takes axis 0 or -1."""
    for shape in [(0,), (2, 0), (0, 2, 1)]:
        for fn in ('max', 'min', 'argmax', 'argmin'):
            with pytest.raises(mx.MXNetError, match='zero-size'):
                getattr(np, fn)(np.zeros(shape))
    assert np.zeros((2, 0)).max(axis=0).shape == (0,)
    e = onp.zeros((2, 0))
    for fn in ('all', 'any'):
        onp.testing.assert_array_equal(getattr(np, fn)(np.array(e), axis=1).asnumpy(),
                                       getattr(onp, fn)(e, axis=1))
        assert bool(getattr(np, fn)(np.array(A > 2))) == bool(getattr(onp, fn)(A > 2))
    z = np.array(3.0)
    assert int(np.argmin(z, axis=-1)) == 0
    assert np.squeeze(z, -1).shape == () and float(np.max(z, axis=0)) == 3.0


def test_float_reductions_accumulate_wide():
    """sum/mean/prod/cumsum of floats accumulate in at least float32, then give
    the asked dtype (MXNet's accumulation type), so float16 results are the
    correctly rounded float32 ones."""
    x = onp.random.RandomState(0).uniform(-1, 1, (64, 32)).astype(onp.float32)
    ref = x.astype(onp.float64).sum(0).astype(onp.float16)
    res = np.sum(np.array(x), axis=0, dtype='float16')
    assert res.dtype == onp.float16
    onp.testing.assert_array_equal(res.asnumpy(), ref)
    h = np.array(x, dtype='float16')
    assert np.mean(h).dtype == onp.float16 and np.sum(h).dtype == onp.float16
    onp.testing.assert_allclose(np.cumsum(np.array(x), dtype='float16').asnumpy(),
                                x.astype(onp.float64).cumsum().astype(onp.float16),
                                rtol=1e-3, atol=1e-4)   # (through BLAS: measured 8e-6)


@pytest.mark.parametrize('name,dz', [
    ('exponential', lambda y, a: y / a),                       # y = a z
    ('rayleigh', lambda y, a: y / a),
    ('weibull', lambda y, a: -y * onp.log(y) / a),             # y = z ** (1/a)
    ('pareto', lambda y, a: -(y + 1) * onp.log1p(y) / a)])     # y = exp(z/a) - 1
def test_random_pathwise_gradients(name, dz):
    """Array parameters of these samplers get the reparameterised gradient
    (MXNet's), the size comes positionally after them, and bad scalars raise
    ValueError at once."""
    a = np.full((3, 4), 2.0)
    a.attach_grad()
    with autograd.record():
        y = getattr(np.random, name)(a, (3, 4))
    y.backward()
    onp.testing.assert_allclose(a.grad.asnumpy(), dz(y.asnumpy(), 2.0), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        getattr(np.random, name)(-1.0)
    assert np.random.lognormal(sigma=0.5, size=(2,)).shape == (2,)


def test_clip_method_keywords():
    """x.clip takes NumPy's min=/max=; no bound at all is an error (MXNet's)."""
    a = onp.arange(6.0)
    onp.testing.assert_array_equal(np.array(a).clip(min=2).asnumpy(), a.clip(min=2))
    onp.testing.assert_array_equal(np.array(a).clip(1, max=3).asnumpy(), a.clip(1, 3))
    with pytest.raises(ValueError, match='both be None'):
        np.clip(np.array(a), None, None)


def test_diagflat_and_ediff1d():
    """np.diagflat and np.ediff1d against NumPy, and ediff1d's gradient
    (each element's difference to its neighbours: central differences' kin)."""
    x = onp.arange(6.0).reshape(2, 3)
    onp.testing.assert_array_equal(np.diagflat(np.array(x), -1).asnumpy(), onp.diagflat(x, -1))
    onp.testing.assert_array_equal(
        np.ediff1d(np.array(x), to_end=np.array([7.0, 8.0]), to_begin=-1).asnumpy(),
        onp.ediff1d(x, to_end=[7, 8], to_begin=-1))
    a = np.array(x ** 2)
    a.attach_grad()
    with autograd.record():
        y = (np.ediff1d(a) ** 2).sum()
    y.backward()
    d = onp.ediff1d(x ** 2)
    ref = onp.concatenate([[0], 2 * d]) - onp.concatenate([2 * d, [0]])
    onp.testing.assert_allclose(a.grad.asnumpy().ravel(), ref)


def test_dot_zero_size_and_mismatch():
    """dot/tensordot with a zero-length axis (forward and gradient, as NumPy),
    and a shape mismatch is a ValueError that is also an MXNetError (MXNet's)."""
    a, b = np.ones((3, 0)), np.ones((0, 4))
    a.attach_grad()
    with autograd.record():
        y = np.dot(a, b)
    y.backward()
    assert y.shape == (3, 4) and float(y.sum()) == 0 and a.grad.shape == (3, 0)
    assert np.tensordot(np.ones((2, 0, 3)), np.ones((0, 3, 5)), 2).shape == (2, 5)
    with pytest.raises(mx.MXNetError):
        np.dot(np.ones((4, 5)), np.ones((2, 3)))
    with pytest.raises(ValueError):
        np.dot(np.ones(3), np.ones(2))


def test_gradients_of_zero_size_inputs():
    """sum/mean/take over a zero-size input give an empty gradient of the
    input's shape (legacy broadcast_to would read its 0 as 'keep')."""
    a = np.ones((3, 0))
    a.attach_grad()
    with autograd.record():
        y = a.sum() + a.mean(axis=0).sum() + np.take(a, np.array([0, 2]), axis=0).sum()
    y.backward()
    assert float(y) == 0 and a.grad.shape == (3, 0)


def test_reshape_gives_a_new_array_as_mxnet():
    # MXNet 1.9.1 (unlike NumPy): writing into x.reshape(...) leaves x alone,
    # as d2l.ai's ndarray chapter shows (X = x.reshape(3, 4); X[:2, :] = 12).
    x = np.arange(12)
    X = x.reshape(3, 4)
    X[:2, :] = 12
    onp.testing.assert_array_equal(x.asnumpy(), onp.arange(12, dtype='float32'))
    assert x.reshape(12) is not x


def test_repr_and_format_as_mxnet():
    # MXNet 1.9.1's printed forms: float32 unnamed even where NumPy would put
    # the dtype on a line of its own, other dtypes named (int64 too).
    cpu = mx.cpu()
    assert repr(np.arange(12, ctx=cpu)) == ('array([ 0.,  1.,  2.,  3.,  4.,  5.,  '
                                            '6.,  7.,  8.,  9., 10., 11.])')
    assert repr(np.array([1, 2], dtype='int64', ctx=cpu)) == 'array([1, 2], dtype=int64)'
    assert f'{np.array(2.5):.2f}' == '2.50'
    with pytest.raises(TypeError, match='cannot format'):
        f'{np.ones(2):.2f}'
