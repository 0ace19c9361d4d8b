"""gluon.utils: split_data, split_and_load, clip_global_norm."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, nd

TWO = [mx.cpu(0), mx.cpu(1)]


def test_split_data_even_and_uneven():
    x = nd.arange(24).reshape((6, 4))
    parts = gluon.utils.split_data(x, 3)
    assert [p.shape for p in parts] == [(2, 4)] * 3
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]),
                                  x.asnumpy())
    with pytest.raises(ValueError, match='evenly split.*even_split=False'):
        gluon.utils.split_data(x, 4)
    parts = gluon.utils.split_data(x, 4, even_split=False)
    assert [p.shape[0] for p in parts] == [2, 2, 1, 1]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]),
                                  x.asnumpy())
    cols = gluon.utils.split_data(x, 2, batch_axis=1)
    assert [c.shape for c in cols] == [(6, 2), (6, 2)]
    np.testing.assert_array_equal(cols[1].asnumpy(), x.asnumpy()[:, 2:])
    assert gluon.utils.split_data(x, 1)[0] is x
    with pytest.raises(ValueError, match='non-empty'):
        gluon.utils.split_data(x, 7, even_split=False)


def test_split_and_load_puts_one_slice_per_context():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = nd.array([0, 1, 2, 3, 4, 5])
    xs = gluon.utils.split_and_load(x, TWO)            # NumPy input is fine
    ys = gluon.utils.split_and_load(y, TWO)
    assert [a.context for a in xs] == TWO and [a.context for a in ys] == TWO
    np.testing.assert_array_equal(xs[1].asnumpy(), x[3:])
    np.testing.assert_array_equal(ys[0].asnumpy(), [0, 1, 2])
    one = gluon.utils.split_and_load(y, [mx.cpu(1)])
    assert len(one) == 1 and one[0].context == mx.cpu(1) and one[0].shape == (6,)
    uneven = gluon.utils.split_and_load(nd.ones((5, 1)), TWO, even_split=False)
    assert [a.shape[0] for a in uneven] == [3, 2]


def test_split_and_load_keeps_gradients_flowing_to_the_source():
    x = nd.arange(4).reshape((4, 1))
    x.attach_grad()
    with autograd.record():
        parts = gluon.utils.split_and_load(x, TWO)
        ls = [(p * (i + 1)).sum() for i, p in enumerate(parts)]
    autograd.backward(ls)
    np.testing.assert_array_equal(x.grad.asnumpy().ravel(), [1, 1, 2, 2])


@pytest.mark.filterwarnings('ignore:invalid value encountered')
def test_clip_global_norm():
    a = nd.array([3.0, 0.0])
    b = nd.array([[0.0], [4.0]], ctx=mx.cpu(1))
    norm = gluon.utils.clip_global_norm([a, b], 1.0)
    assert norm == pytest.approx(5.0)
    np.testing.assert_allclose(a.asnumpy(), [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(b.asnumpy(), [[0.0], [0.8]], rtol=1e-6)
    assert b.context == mx.cpu(1)
    c = nd.array([0.3, 0.4])
    norm = gluon.utils.clip_global_norm([c], 1.0, check_isfinite=False)
    assert isinstance(norm, nd.NDArray) and norm.asscalar() == pytest.approx(0.5)
    np.testing.assert_allclose(c.asnumpy(), [0.3, 0.4], rtol=1e-6)     # untouched
    with pytest.warns(UserWarning, match='nan or inf'):
        gluon.utils.clip_global_norm([nd.array([np.inf])], 1.0)
    nd.waitall()     # its inf * 0 warns on the engine's thread: inside this test
    with pytest.raises(ValueError, match='at least one'):
        gluon.utils.clip_global_norm([], 1.0)
