"""Property tests (hypothesis): broadcasting arithmetic and reductions agree
with NumPy over random shapes, broadcastable pairs and axes.

``max_examples`` is kept small: the whole suite must stay fast on 2 cores.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from d2lmini import autograd, nd

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

FLOATS = st.floats(-10, 10, width=32, allow_nan=False, allow_infinity=False)


@st.composite
def broadcast_pair(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0,
                                                    max_dims=3, max_side=4))
    a = draw(hnp.arrays(np.float32, shapes.input_shapes[0], elements=FLOATS))
    b = draw(hnp.arrays(np.float32, shapes.input_shapes[1], elements=FLOATS))
    return a, b


@st.composite
def array_and_axis(draw, multi=True):
    a = draw(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=4, max_side=4),
                        elements=st.floats(-2, 2, width=32)))
    n = a.ndim
    choices = [st.none(), st.integers(-n, n - 1)]
    if multi:
        choices.append(st.lists(st.integers(0, n - 1), min_size=1, max_size=n,
                                unique=True).map(tuple))
    return a, draw(st.one_of(*choices)), draw(st.booleans())


ARITH = [('add', np.add), ('subtract', np.subtract), ('multiply', np.multiply),
         ('divide', np.divide), ('maximum', np.maximum), ('minimum', np.minimum)]
COMPARE = [('equal', np.equal), ('not_equal', np.not_equal), ('greater', np.greater),
           ('greater_equal', np.greater_equal), ('lesser', np.less),
           ('lesser_equal', np.less_equal)]


@SETTINGS
@given(pair=broadcast_pair())
def test_broadcast_arithmetic(ctx, pair):
    a, b = pair
    b = np.where(np.abs(b) < 0.25, np.float32(1), b)     # keep division finite
    x, y = nd.array(a), nd.array(b)
    for name, f in ARITH:
        r = getattr(nd, name)(x, y)
        e = f(a, b)
        assert r.shape == e.shape and r.dtype is np.float32, name
        np.testing.assert_allclose(r.asnumpy(), e, rtol=1e-6, atol=1e-6, err_msg=name)
    for r, e in [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b)]:
        np.testing.assert_allclose(r.asnumpy(), e, rtol=1e-6, atol=1e-6)


@SETTINGS
@given(pair=broadcast_pair())
def test_broadcast_comparisons(ctx, pair):
    a, b = pair
    b = np.where(np.arange(b.size).reshape(b.shape) % 3 == 0, 0, b).astype(np.float32)
    x, y = nd.array(a), nd.array(b)
    for name, f in COMPARE:
        r = getattr(nd, name)(x, y)
        assert r.dtype is np.float32, name                # MXNet: 0/1 in input dtype
        np.testing.assert_array_equal(r.asnumpy(), f(a, b).astype(np.float32),
                                      err_msg=name)


@SETTINGS
@given(a=hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                    elements=FLOATS),
       s=st.floats(0.5, 4, width=32))
def test_scalar_arithmetic(ctx, a, s):
    x = nd.array(a)
    s = float(s)
    for r, e in [(x + s, a + s), (s + x, s + a), (x - s, a - s), (s - x, s - a),
                 (x * s, a * s), (x / s, a / s), (x > s, (a > s)), (s >= x, s >= a),
                 (nd.maximum(x, s), np.maximum(a, s)), (nd.minimum(x, s), np.minimum(a, s))]:
        assert r.dtype is np.float32 and r.shape == a.shape
        np.testing.assert_allclose(r.asnumpy(), np.asarray(e, np.float32),
                                   rtol=1e-6, atol=1e-6)


@SETTINGS
@given(case=array_and_axis())
def test_reductions(ctx, case):
    a, axis, keepdims = case
    x = nd.array(a)
    for name in ['sum', 'mean', 'max', 'min', 'prod']:
        e = _mx_shape(getattr(np, name)(a, axis=axis, keepdims=keepdims))
        r = getattr(nd, name)(x, axis=axis, keepdims=keepdims)
        assert r.shape == e.shape and r.dtype is np.float32, name
        np.testing.assert_allclose(r.asnumpy(), e, rtol=1e-5, atol=1e-5, err_msg=name)


def _mx_shape(e):
    """NumPy's result with MXNet 1.x's shape: a full reduction is (1,), not ()."""
    e = np.asarray(e)
    return e.reshape(1) if e.ndim == 0 else e


@SETTINGS
@given(case=array_and_axis(multi=False))
def test_argmax_argmin(ctx, case):
    a, axis, keepdims = case
    x = nd.array(a)
    for name in ['argmax', 'argmin']:
        e = _mx_shape(getattr(np, name)(a, axis=axis, keepdims=keepdims))
        r = getattr(nd, name)(x, axis=axis, keepdims=keepdims)
        assert r.shape == np.shape(e) and r.dtype is np.float32, name
        np.testing.assert_array_equal(r.asnumpy(), e, err_msg=name)


@SETTINGS
@given(pair=broadcast_pair())
def test_broadcast_gradients_sum_back(ctx, pair):
    """d/da sum(a*b) is b summed over the axes a was broadcast along."""
    a, b = pair
    x, y = nd.array(a, dtype='float64'), nd.array(b, dtype='float64')
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        z = (x * y).sum()
    z.backward()
    out = np.broadcast_shapes(a.shape, b.shape)

    def sum_to(g, shape):
        g = g.sum(axis=tuple(range(g.ndim - len(shape))))
        return g.sum(axis=tuple(i for i, s in enumerate(shape) if s == 1),
                     keepdims=True).reshape(shape)
    bb = np.broadcast_to(b.astype(np.float64), out)
    ab = np.broadcast_to(a.astype(np.float64), out)
    assert x.grad.shape == a.shape and y.grad.shape == b.shape
    np.testing.assert_allclose(x.grad.asnumpy(), sum_to(bb, a.shape), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(y.grad.asnumpy(), sum_to(ab, b.shape), rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize('shape', [(0, 3), (2, 0)])
def test_empty_arrays(ctx, shape):
    a = np.zeros(shape, np.float32)
    x = nd.array(a)
    np.testing.assert_array_equal((x + 1).asnumpy(), a + 1)
    np.testing.assert_array_equal(nd.sum(x, axis=0).asnumpy(), a.sum(axis=0))
