"""topk, sort, argsort against NumPy's stable argsort, and their gradients.

The values gradient goes through the gather op (_gather_axis), whose own
gradient check is in tests/test_grad_registry.py; here the whole path.
"""
import numpy as np
import pytest

from d2lmini import autograd, nd


def data(dtype=np.float32, seed=0):
    # distinct values, so every order is unambiguous
    a = np.random.default_rng(seed).permutation(5 ** 4).reshape(5, 5, 5, 5)
    return a.astype(dtype)


def ref_indices(a, axis, k, ascend):
    if axis is None:
        a, axis = a.reshape(-1), 0
    idx = np.argsort(a, axis=axis, kind='stable')
    idx = idx if ascend else np.flip(idx, axis)
    return np.take(idx, np.arange(k), axis=axis)


@pytest.mark.parametrize('dtype', [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize('axis,k,ascend', [(1, 3, True), (3, 2, False), (None, 21, False),
                                           (-1, 1, False), (0, 5, True)])
def test_topk_all_ret_types(ctx, dtype, axis, k, ascend):
    a = data(dtype)
    x = nd.array(a, dtype=dtype)
    idx = ref_indices(a, axis, k, ascend)
    flat = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axis
    vals = np.take_along_axis(flat, idx, axis=ax)

    r = nd.topk(x, axis=axis, k=k, ret_typ='indices', is_ascend=ascend)
    assert r.dtype == np.float32                         # MXNet's default
    np.testing.assert_array_equal(r.asnumpy(), idx)
    r = nd.topk(x, axis=axis, k=k, ret_typ='indices', is_ascend=ascend, dtype='int32')
    assert r.dtype == np.int32
    r = nd.topk(x, axis=axis, k=k, ret_typ='value', is_ascend=ascend)
    assert r.dtype == dtype
    np.testing.assert_array_equal(r.asnumpy(), vals)
    v, i = nd.topk(x, axis=axis, k=k, ret_typ='both', is_ascend=ascend, dtype='float64')
    assert i.dtype == np.float64
    np.testing.assert_array_equal(v.asnumpy(), vals)
    np.testing.assert_array_equal(i.asnumpy(), idx)
    m = nd.topk(x, axis=axis, k=k, ret_typ='mask', is_ascend=ascend)
    mask = np.zeros(flat.shape, dtype)
    np.put_along_axis(mask, idx, 1, axis=ax)
    assert m.dtype == dtype
    np.testing.assert_array_equal(m.asnumpy(), mask.reshape(a.shape))


def test_sort_and_argsort():
    a = np.array([[3, 1, 2, 1], [0, 5, -1, 4]], np.float32)
    x = nd.array(a)
    np.testing.assert_array_equal(nd.sort(x).asnumpy(), np.sort(a, axis=-1))
    np.testing.assert_array_equal(nd.sort(x, axis=0, is_ascend=False).asnumpy(),
                                  -np.sort(-a, axis=0))
    np.testing.assert_array_equal(nd.sort(x, axis=None).asnumpy(), np.sort(a, axis=None))
    # ties keep their order (stable), as in MXNet
    r = nd.argsort(x, dtype='int32')
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r.asnumpy(), np.argsort(a, axis=-1, kind='stable'))
    np.testing.assert_array_equal(nd.argsort(x, axis=None, is_ascend=False).asnumpy(),
                                  np.argsort(-a, axis=None, kind='stable'))


def test_topk_errors():
    x = nd.ones((2, 3))
    with pytest.raises(ValueError, match='ret_typ'):
        nd.topk(x, ret_typ='values')
    with pytest.raises(ValueError, match='k=4'):
        nd.topk(x, k=4)
    with pytest.raises(ValueError, match="'topk'.*axis 2"):
        nd.topk(x, axis=2)


@pytest.mark.parametrize('dtype', [np.int32, np.float32, np.float64])
def test_topk_value_gradient(dtype):
    a = np.arange(1000).astype(dtype)
    x = nd.array(a, dtype=dtype)
    x.attach_grad()
    k = 10
    with autograd.record():
        y = nd.topk(x, k=k, ret_typ='value')
    g = np.arange(1, k + 1).astype(dtype)
    y.backward(nd.array(g, dtype=dtype))
    expect = np.zeros(1000, dtype)
    expect[::-1][:k] = g                  # the k largest are the last k
    np.testing.assert_array_equal(x.grad.asnumpy(), expect)


def test_sort_gradient_is_the_inverse_permutation():
    a = np.random.default_rng(1).normal(size=(3, 5)).astype(np.float64)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    w = np.random.default_rng(2).normal(size=(3, 5))
    with autograd.record():
        loss = (nd.sort(x, axis=1, is_ascend=False) * nd.array(w, dtype='float64')).sum()
    loss.backward()
    expect = np.zeros_like(a)
    np.put_along_axis(expect, np.argsort(-a, axis=1, kind='stable'), w, axis=1)
    np.testing.assert_allclose(x.grad.asnumpy(), expect)
