"""Operator functions of ``nd`` against NumPy: the math family, norm,
broadcasting helpers, shape and slicing functions, MXNet's legacy names.

Gradients of every op in the table are checked by central differences in
tests/test_grad_registry.py; here the values, shapes, dtypes and errors.
"""
import math

import numpy as np
import pytest

from d2lmini import autograd, nd


def rnd(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-6):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else np.asarray(a)
    np.testing.assert_allclose(a, np.asarray(b), rtol=rtol, atol=atol)


def _erfinv_ref(a):
    # bisection on math.erf: slow, simple, exact to float64
    out = []
    for v in np.asarray(a, np.float64).ravel():
        lo, hi = -6.0, 6.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        out.append((lo + hi) / 2)
    return np.array(out).reshape(np.shape(a))


# name, NumPy reference, input range
MATH = [('tan', np.tan, (-1, 1)), ('arcsin', np.arcsin, (-0.9, 0.9)),
        ('arccos', np.arccos, (-0.9, 0.9)), ('arctan', np.arctan, (-3, 3)),
        ('sinh', np.sinh, (-2, 2)), ('cosh', np.cosh, (-2, 2)),
        ('arcsinh', np.arcsinh, (-3, 3)), ('arccosh', np.arccosh, (1.1, 3)),
        ('arctanh', np.arctanh, (-0.9, 0.9)), ('log2', np.log2, (0.1, 8)),
        ('log10', np.log10, (0.1, 100)), ('cbrt', np.cbrt, (-8, 8)),
        ('rcbrt', lambda a: 1 / np.cbrt(a), (0.1, 8)),
        ('degrees', np.degrees, (-4, 4)), ('radians', np.radians, (-360, 360)),
        ('trunc', np.trunc, (-3, 3)), ('rint', np.rint, (-3, 3)), ('fix', np.fix, (-3, 3)),
        ('erf', np.vectorize(math.erf), (-2, 2)),
        ('erfinv', lambda a: _erfinv_ref(a), (-0.99, 0.99)),
        ('logical_not', lambda a: (a == 0).astype(a.dtype), (-1, 1))]


@pytest.mark.parametrize('name,ref,rng', MATH, ids=[m[0] for m in MATH])
def test_unary_math_family(ctx, name, ref, rng):
    a = rnd(3, 4, low=rng[0], high=rng[1])
    a[0, 0] = 0.0 if name == 'logical_not' else a[0, 0]
    r = getattr(nd, name)(nd.array(a))
    assert r.dtype == np.float32 and r.shape == (3, 4)
    close(r, ref(a).astype(np.float32), rtol=2e-5, atol=1e-5)


def test_rounding_family_on_halves():
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.7, 1.7], np.float32)
    close(nd.rint(nd.array(a)), np.rint(a))          # half to even, as NumPy
    close(nd.trunc(nd.array(a)), np.trunc(a))
    close(nd.fix(nd.array(a)), np.fix(a))


def test_math_keeps_integer_dtype():
    x = nd.array([1, 8, 27], dtype='int32')
    r = nd.cbrt(x)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r.asnumpy(), [1, 2, 3])


def test_rounding_has_no_gradient_and_erf_has_one():
    x = nd.array([0.3, -0.2])
    x.attach_grad()
    with autograd.record():
        y = nd.erf(x).sum() + nd.trunc(x * 10).sum()
    y.backward()
    close(x.grad, 2 / np.sqrt(np.pi) * np.exp(-np.array([0.3, -0.2]) ** 2), rtol=1e-5)


# --- norm ------------------------------------------------------------------------------
@pytest.mark.parametrize('ord', [1, 2])
@pytest.mark.parametrize('axis', [None, 0, 2, (1, 2), (0, 3)])
@pytest.mark.parametrize('keepdims', [False, True])
def test_norm_ord_axis_keepdims(ord, axis, keepdims):
    a = rnd(2, 3, 4, 5)
    if axis is None:
        ref = np.abs(a).sum() if ord == 1 else np.sqrt((a * a).sum())
        ref = np.reshape(ref, (1, 1, 1, 1) if keepdims else (1,))
    else:
        ref = np.abs(a).sum(axis=axis, keepdims=keepdims) if ord == 1 else \
            np.sqrt((a * a).sum(axis=axis, keepdims=keepdims))
    r = nd.norm(nd.array(a), ord=ord, axis=axis, keepdims=keepdims)
    assert r.shape == ref.shape
    close(r, ref, rtol=1e-5)


def test_norm_rejects_other_orders():
    with pytest.raises(ValueError, match="'norm'.*ord.*3"):
        nd.norm(nd.ones((2,)), ord=3)


# --- broadcasting ------------------------------------------------------------------------
@pytest.mark.parametrize('lshape,rshape,la,ra,expect', [
    ((1, 2, 1, 3), (5, 6, 7, 8), (0, 2), (1, 3), (6, 2, 8, 3)),
    ((1,), (5,), (0,), (-1,), (5,)),
    ((1, 7, 9, 1, 1), (9,), (-2,), (0,), (1, 7, 9, 9, 1)),
    ((1, 7, 9, 1, 1), (9, 1), (-2, -1), (-2, -1), (1, 7, 9, 9, 1)),
    ((2, 1), (1, 7, 9, 1, 1), (1,), (-3,), (2, 9)),
])
def test_broadcast_like_axes(lshape, rshape, la, ra, expect):
    a = rnd(*lshape)
    r = nd.broadcast_like(nd.array(a), nd.ones(rshape), lhs_axes=la, rhs_axes=ra)
    assert r.shape == expect
    close(r, np.broadcast_to(a, expect))


def test_broadcast_like_whole_and_errors():
    a = rnd(3, 1)
    close(nd.broadcast_like(nd.array(a), nd.ones((2, 3, 4))), np.broadcast_to(a, (2, 3, 4)))
    with pytest.raises(ValueError, match="broadcast_like"):
        nd.broadcast_like(nd.array(a), nd.ones((3, 4)), lhs_axes=(), rhs_axes=())
    with pytest.raises(ValueError, match="broadcast_like"):
        nd.broadcast_like(nd.array(a), nd.ones((3, 4)), lhs_axes=(1,), rhs_axes=(0, 1))


def test_broadcast_axis():
    a = rnd(2, 1, 1)
    close(nd.broadcast_axis(nd.array(a), axis=(1, 2), size=(3, 4)),
          np.broadcast_to(a, (2, 3, 4)))
    close(nd.broadcast_axes(nd.array(a), axis=2, size=5), np.broadcast_to(a, (2, 1, 5)))


# --- shapes ------------------------------------------------------------------------------
@pytest.mark.parametrize('src,dst', [(0, 2), (2, 0), (0, -1), (-1, 0), (1, 1),
                                     ([0, 1], [2, 3]), ([2, 3], [0, 1]),
                                     ([0, 1, 2], [2, 3, 0]), ([3, 0], [1, 0]),
                                     (range(4), range(4))])
def test_moveaxis_as_numpy(src, dst):
    a = rnd(4, 1, 2, 3)
    close(nd.moveaxis(nd.array(a), src, dst), np.moveaxis(a, src, dst))


@pytest.mark.parametrize('src,dst', [(3, 0), (-4, 0), (0, 5), ([0, 0], [0, 1]),
                                     ([0, 1], [1, 1]), (0, [0, 1]), ([0, 1], [0])])
def test_moveaxis_errors(src, dst):
    with pytest.raises(ValueError, match='moveaxis'):
        nd.moveaxis(nd.zeros((1, 2, 3)), src, dst)


def test_reshape_like_and_slice_like():
    a = rnd(2, 3, 4)
    close(nd.reshape_like(nd.array(a), nd.zeros((4, 6))), a.reshape(4, 6))
    close(nd.slice_like(nd.array(a), nd.zeros((1, 2, 3))), a[:1, :2, :3])
    close(nd.slice_like(nd.array(a), nd.zeros((1, 2, 9)), axes=(0, -2)), a[:1, :2])
    with pytest.raises(ValueError, match='slice_like'):
        nd.slice_like(nd.array(a), nd.zeros((3, 3, 3)))


def test_slice_and_crop_copy_with_steps():
    a = rnd(5, 6)
    x = nd.array(a)
    close(nd.slice(x, begin=(1, None), end=(4, None)), a[1:4])
    close(nd.slice(x, begin=(4, 1), end=(None, 5), step=(-2, 2)), a[4::-2, 1:5:2])
    y = nd.crop(x, begin=(0, 0), end=(2, 3))
    close(y, a[:2, :3])
    x[:] = 0                          # a slice is a copy (not a view) in MXNet
    close(y, a[:2, :3])
    with pytest.raises(ValueError, match="'slice'.*step"):
        nd.slice(x, begin=(0,), end=(2,), step=(0,))
    with pytest.raises(ValueError, match="'slice'"):
        nd.slice(x, begin=(0, 0, 0), end=(1, 1, 1))


def test_concatenate_mxnet_signature():
    arrs = [rnd(2, k, 4, seed=k) for k in (3, 2, 1)]
    close(nd.concatenate([nd.array(a) for a in arrs], axis=1), np.concatenate(arrs, 1))
    close(nd.concatenate([nd.array(a) for a in arrs[:1]] * 2), np.concatenate(arrs[:1] * 2))
    one = nd.array(arrs[0])
    assert nd.concatenate([one], always_copy=False) is one
    assert nd.concatenate([one]) is not one


# --- legacy indexing names ------------------------------------------------------------
def test_choose_fill_onehot_encode():
    a = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    idx = np.array([0, 2, 1, 2])
    close(nd.choose_element_0index(nd.array(a), nd.array(idx)), a[np.arange(4), idx])
    val = np.array([-1, -2, -3, -4], np.float32)
    ref = a.copy()
    ref[np.arange(4), idx] = val
    close(nd.fill_element_0index(nd.array(a), nd.array(val), nd.array(idx)), ref)
    out = nd.full((4, 3), 9)
    assert nd.onehot_encode(nd.array(idx), out) is out
    close(out, np.eye(3)[idx])


# --- creation ---------------------------------------------------------------------------
@pytest.mark.parametrize('N,M,k', [(3, 0, 0), (3, 5, 1), (4, 2, -1), (2, 3, 7), (0, 0, 0)])
def test_eye(ctx, N, M, k):
    r = nd.eye(N, M, k)
    assert r.dtype == np.float32 and r.context == ctx
    close(r, np.eye(N, M or N, k))
    assert nd.eye(2, dtype='int32').dtype == np.int32


@pytest.mark.parametrize('start,stop,num', [(0, 1, 5), (3.5, -2, 7), (1, 2, 1), (0, 5, 0)])
def test_linspace(start, stop, num):
    close(nd.linspace(start, stop, num), np.linspace(start, stop, num).astype(np.float32))
    close(nd.linspace(start, stop, num, endpoint=False),
          np.linspace(start, stop, num, endpoint=False).astype(np.float32))
    r = nd.linspace(start, stop, num, dtype='int32')
    assert r.dtype == np.int32
    # MXNet casts each float value (truncation); NumPy 2 floors: equal when >= 0
    ref = np.linspace(start, stop, num).astype(np.int32)
    np.testing.assert_array_equal(r.asnumpy(), ref)
    if min(start, stop) >= 0:
        np.testing.assert_array_equal(ref, np.linspace(start, stop, num, dtype='int32'))


def test_relu_gradient_propagates_nan():
    a = np.array([1.0, np.nan, -1.0, np.inf, 0.0], np.float32)
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = nd.relu(x)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [1, np.nan, 0, 1, 0])


def test_internal_slice_assign():
    x = nd.ones((2, 3, 4))
    assert nd._internal._crop_assign(x, nd.zeros((2, 1, 3)), begin=(0, 0, 0),
                                     end=(2, 1, 3), out=x) is x
    ref = np.ones((2, 3, 4), np.float32)
    ref[:, :1, :3] = 0
    close(x, ref)
    y = nd._internal._slice_assign_scalar(x, scalar=5, begin=(1,), end=(2,))
    ref2 = ref.copy()
    ref2[1] = 5
    close(y, ref2)
    close(x, ref)                       # without out=, x is unchanged


def test_nansum_nanprod_and_their_gradients():
    a = np.array([[1.0, np.nan, 2.0], [3.0, 4.0, np.nan]], np.float32)
    x = nd.array(a)
    close(nd.nansum(x, axis=1), np.nansum(a, axis=1))
    close(nd.nanprod(x, axis=0), np.nanprod(a, axis=0))
    close(nd.nansum(x), [np.nansum(a)])
    x.attach_grad()
    with autograd.record():
        y = nd.nansum(x) + nd.nanprod(x, axis=1).sum()
    y.backward()
    expect = np.where(np.isnan(a), 0, 1 + np.nanprod(a, axis=1, keepdims=True) / a)
    close(x.grad, expect)


def test_argmax_channel_shape_size_arrays():
    a = rnd(2, 3, 4)
    r = nd.argmax_channel(nd.array(a))
    assert r.dtype == np.float32
    close(r, a.argmax(-1))
    r = nd.shape_array(nd.array(a))
    assert r.dtype == np.int64
    np.testing.assert_array_equal(r.asnumpy(), [2, 3, 4])
    np.testing.assert_array_equal(nd.size_array(nd.array(a)).asnumpy(), [24])


@pytest.mark.parametrize('ios,axis,squeeze', [(3, 2, False), ((1, 3, 5), 2, False),
                                              ((2,), 0, False), (6, 2, True)])
def test_split_v2_as_numpy(ios, axis, squeeze):
    a = rnd(5, 4, 6)
    parts = nd.split_v2(nd.array(a), ios, axis=axis, squeeze_axis=squeeze)
    ref = np.split(a, ios, axis=axis)
    assert len(parts) == len(ref)
    for p, r in zip(parts, ref):
        close(p, r.squeeze(axis) if squeeze else r)


def test_reset_arrays_zeroes_in_place():
    a, b = nd.ones((2, 3)), nd.full((4,), 7)
    nd.reset_arrays(a, b, num_arrays=2)
    assert a.asnumpy().sum() == 0 and b.asnumpy().sum() == 0
    with pytest.raises(ValueError, match='num_arrays'):
        nd.reset_arrays(a, num_arrays=2)


@pytest.mark.parametrize('fn', [
    lambda x: nd.transpose(x), lambda x: x.T, lambda x: nd.swapaxes(x, 0, 1),
    lambda x: nd.flip(x, 1), lambda x: nd.slice_axis(x, 0, 0, 2),
    lambda x: nd.split(x, 2, axis=1)[1], lambda x: nd.broadcast_to(x[:1], (3, 4)),
    lambda x: nd.slice(x, (1,), (3,)), lambda x: nd.moveaxis(x, 0, 1),
], ids=['transpose', 'T', 'swapaxes', 'flip', 'slice_axis', 'split', 'broadcast_to',
        'slice', 'moveaxis'])
def test_copying_ops_do_not_follow_later_writes(engine_kind, fn):
    """As MXNet: these return new arrays, not views of their input."""
    a = rnd(3, 4)
    x = nd.array(a)
    y = fn(x)
    before = fn(nd.array(a)).asnumpy()
    x[:] = 0                              # an in-place write to the source ...
    x += 1
    np.testing.assert_array_equal(y.asnumpy(), before)     # ... leaves y alone
    y[:] = 5                              # and a write to y leaves x alone
    np.testing.assert_array_equal(x.asnumpy(), np.ones((3, 4)))


def test_erfinv_edges():
    r = nd.erfinv(nd.array([1.0, -1.0, 1.5, 0.0])).asnumpy()
    assert r[0] == np.inf and r[1] == -np.inf and np.isnan(r[2]) and r[3] == 0
