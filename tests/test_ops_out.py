"""``out=`` on the operator functions: one mechanism (``op_utils.into``)
serves unary, binary, broadcast_*, elemwise_*, reductions, dot, clip, concat, ...

Each call writes into the given array and returns that same array; a wrong
shape, dtype or context fails at the call with the op's name.
"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd

A = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
B = np.arange(6.0, 0.0, -1.0, dtype=np.float32).reshape(2, 3)

# (call taking x, y and out=, NumPy reference)
CASES = {
    'exp': (lambda x, y, out: nd.exp(x, out=out), lambda a, b: np.exp(a)),
    'tan': (lambda x, y, out: nd.tan(x / 10, out=out), lambda a, b: np.tan(a / 10)),
    'add': (lambda x, y, out: nd.add(x, y, out=out), np.add),
    'elemwise_add': (lambda x, y, out: nd.elemwise_add(x, y, out=out), np.add),
    'elemwise_mul': (lambda x, y, out: nd.elemwise_mul(x, y, out=out), np.multiply),
    'broadcast_sub': (lambda x, y, out: nd.broadcast_sub(x, y[:1], out=out),
                      lambda a, b: a - b[:1]),
    'broadcast_maximum': (lambda x, y, out: nd.broadcast_maximum(x, y, out=out),
                          np.maximum),
    'maximum-scalar': (lambda x, y, out: nd.maximum(x, 3, out=out),
                       lambda a, b: np.maximum(a, 3)),
    'clip': (lambda x, y, out: nd.clip(x, 2, 4, out=out), lambda a, b: np.clip(a, 2, 4)),
    'dot': (lambda x, y, out: nd.dot(x, y, transpose_b=True, out=out[:, :2]),
            lambda a, b: a @ b.T),
    'where': (lambda x, y, out: nd.where(x > 3, x, y, out=out),
              lambda a, b: np.where(a > 3, a, b)),
    'relu': (lambda x, y, out: nd.relu(x - 3, out=out), lambda a, b: np.maximum(a - 3, 0)),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_out_writes_and_returns_out(ctx, name):
    fn, ref = CASES[name]
    x, y = nd.array(A), nd.array(B)
    expect = ref(A, B)
    out = nd.zeros(expect.shape) if name != 'dot' else nd.zeros((2, 3))
    target = out if name != 'dot' else None
    res = fn(x, y, out)
    if target is not None:
        assert res is out
    np.testing.assert_allclose(res.asnumpy(), expect, rtol=1e-6)


@pytest.mark.parametrize('fn,shape,ref', [
    (lambda x, o: nd.sum(x, axis=1, out=o), (2,), lambda a: a.sum(1)),
    (lambda x, o: nd.mean(x, out=o), (1,), lambda a: [a.mean()]),
    (lambda x, o: nd.max(x, axis=0, keepdims=True, out=o), (1, 3),
     lambda a: a.max(0, keepdims=True)),
    (lambda x, o: nd.prod(x, axis=0, out=o), (3,), lambda a: a.prod(0)),
    (lambda x, o: nd.norm(x, ord=1, axis=1, out=o), (2,), lambda a: np.abs(a).sum(1)),
    (lambda x, o: nd.concat(x, x, dim=0, out=o), (4, 3),
     lambda a: np.concatenate([a, a], 0)),
    (lambda x, o: nd.stack(x, x, axis=1, out=o), (2, 2, 3), lambda a: np.stack([a, a], 1)),
    (lambda x, o: nd.transpose(x, out=o), (3, 2), lambda a: a.T),
    (lambda x, o: nd.reshape(x, (3, 2), out=o), (3, 2), lambda a: a.reshape(3, 2)),
    (lambda x, o: nd.batch_dot(x.reshape((1, 2, 3)), x.reshape((1, 3, 2)), out=o),
     (1, 2, 2), lambda a: a.reshape(1, 2, 3) @ a.reshape(1, 3, 2)),
    (lambda x, o: nd.take(x, nd.array([1, 0, 1]), out=o), (3, 3), lambda a: a[[1, 0, 1]]),
    (lambda x, o: nd.topk(x, k=2, ret_typ='value', out=o), (2, 2),
     lambda a: -np.sort(-a, 1)[:, :2]),
    (lambda x, o: nd.add_n(x, x, x, out=o), (2, 3), lambda a: 3 * a),
])
def test_out_on_reductions_and_shape_ops(ctx, fn, shape, ref):
    out = nd.full(shape, -7)
    res = fn(nd.array(A), out)
    assert res is out
    np.testing.assert_allclose(out.asnumpy(), ref(A), rtol=1e-6)


def test_the_ndarray_chapter_elemwise_add_into_existing(ctx):
    # from the classic d2l "ndarray" section: memory is reused, id unchanged
    X, Y = nd.array(A), nd.array(B)
    Z = Y.zeros_like()
    before = id(Z)
    nd.elemwise_add(X, Y, out=Z)
    assert id(Z) == before
    np.testing.assert_array_equal(Z.asnumpy(), A + B)


def test_out_may_be_an_input(engine_kind):
    x, y = nd.array(A), nd.array(B)
    nd.add(x, y, out=x)
    nd.elemwise_mul(x, x, out=x)
    np.testing.assert_array_equal(x.asnumpy(), (A + B) ** 2)
    np.testing.assert_array_equal(y.asnumpy(), B)


def test_out_writes_through_a_view():
    x = nd.zeros((3, 3))
    nd.exp(nd.zeros((3,)), out=x[1])
    np.testing.assert_array_equal(x.asnumpy(), [[0, 0, 0], [1, 1, 1], [0, 0, 0]])


def test_out_checks_shape_dtype_context():
    x = nd.array(A)
    with pytest.raises(ValueError, match=r"'add'.*\(3, 2\).*\(2, 3\)"):
        nd.add(x, x, out=nd.zeros((3, 2)))
    with pytest.raises(TypeError, match=r"'sum'.*float64.*float32"):
        nd.sum(x, out=nd.zeros((1,), dtype='float64'))
    with pytest.raises(ValueError, match=r"'dot'.*cpu\(1\)"):
        nd.dot(x, x.T, out=nd.zeros((2, 2), ctx=mx.cpu(1)))
    with pytest.raises(TypeError, match='out= must be an NDArray'):
        nd.exp(x, out=np.zeros((2, 3), np.float32))
    nd.waitall()


def test_elemwise_ops_do_not_broadcast():
    x = nd.array(A)
    with pytest.raises(ValueError, match=r"'elemwise_add'.*\(2, 3\).*\(3,\)"):
        nd.elemwise_add(x, nd.ones((3,)))
    np.testing.assert_array_equal(nd.broadcast_add(x, nd.ones((3,))).asnumpy(), A + 1)


def test_out_under_record_passes_gradients_through():
    x = nd.array(A)
    x.attach_grad()
    z = nd.zeros((2, 3))
    with autograd.record():
        r = nd.elemwise_mul(x, x, out=z)
        loss = (r * 3).sum()
    assert r is z
    loss.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * A, rtol=1e-6)


def test_out_in_the_graph_is_refused_under_record():
    x = nd.array(A)
    x.attach_grad()
    with autograd.record():
        with pytest.raises(RuntimeError, match='relu.*autograd'):
            nd.relu(x, out=x)
        y = x * 2
        with pytest.raises(RuntimeError, match='already in the autograd graph'):
            nd.exp(x, out=y)
    # outside record it is an ordinary in-place write
    nd.relu(x - 3, out=x)
    np.testing.assert_array_equal(x.asnumpy(), np.maximum(A - 3, 0))
