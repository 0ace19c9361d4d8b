"""mx.npx: the nn operators under their npx names (against nd, NumPy and
values MXNet 1.9.1 printed), their gradients, npx.reshape's codes,
npx.save/load (MXNet-written files) and npx.random."""
import base64

import numpy as onp
import pytest

import d2lmini as mx
from d2lmini import autograd, nd, np, npx
from d2lmini.numpy.multiarray import ndarray


@pytest.fixture(autouse=True)
def np_mode():
    npx.set_np()
    yield
    npx.reset_np()


def a(x, dtype=None):
    return np.array(onp.asarray(x), dtype=dtype)


def test_activations_match_nd_and_give_np_arrays():
    x = a([[-1.5, 0.5, 2.0], [0.1, -0.2, 3.0]])
    xn = x.as_nd_ndarray()
    for got, want in [(npx.relu(x), nd.relu(xn)), (npx.sigmoid(x), nd.sigmoid(xn)),
                      (npx.softmax(x, axis=0), nd.softmax(xn, axis=0)),
                      (npx.log_softmax(x), nd.log_softmax(xn)),
                      (npx.activation(x, act_type='tanh'), nd.tanh(xn)),
                      (npx.leaky_relu(x, slope=0.1), nd.LeakyReLU(xn, slope=0.1)),
                      (npx.erf(x), nd.erf(xn)), (npx.batch_flatten(x), xn)]:
        assert type(got) is ndarray
        onp.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)


def test_values_printed_by_mxnet():
    # each right-hand side is what MXNet 1.9.1's npx printed for the call
    got = npx.softmax(np.ones((2, 3)), length=a([1, 2], 'int32'), use_length=True)
    onp.testing.assert_allclose(got.asnumpy(), [[1, 0, 0], [.5, .5, 0]], rtol=1e-6)
    onp.testing.assert_array_equal(
        npx.arange_like(np.ones((2, 3)), start=1, step=2, repeat=2).asnumpy(),
        [[1, 1, 3], [3, 5, 5]])
    onp.testing.assert_array_equal(npx.arange_like(np.ones((2, 3)), axis=1).asnumpy(),
                                   [0, 1, 2])
    onp.testing.assert_array_equal(
        npx.sequence_mask(np.ones((3, 2)), a([1, 2]), use_sequence_length=True,
                          value=-1, axis=0).asnumpy(), [[1, 1], [-1, 1], [-1, -1]])
    onp.testing.assert_array_equal(
        npx.gather_nd(a([[0, 1, 2], [3, 4, 5]]), a([[0, 1], [2, 0]])).asnumpy(), [2, 3])
    onp.testing.assert_allclose(npx.smooth_l1(a([-2, -.5, .1, 3]), scalar=2.).asnumpy(),
                                [1.875, 0.375, 0.02, 2.875], rtol=1e-6)
    onp.testing.assert_array_equal(npx.pick(a([[1., 2], [3, 4]]), a([1, 0])).asnumpy(),
                                   [2, 3])
    onp.testing.assert_array_equal(
        npx.embedding(a([1, 0]), a([[0, 1], [2, 3], [4, 5]]), input_dim=3,
                      output_dim=2).asnumpy(), [[2, 3], [0, 1]])
    onp.testing.assert_allclose(
        npx.layer_norm(a([[0, 1, 2], [3, 4, 5.]]), np.ones(3), np.zeros(3)).asnumpy(),
        [[-1.2247356, 0, 1.2247356]] * 2, rtol=1e-5)
    onp.testing.assert_array_equal(npx.nonzero(a([[0, 1], [2, 0]])).asnumpy(),
                                   [[0, 1], [1, 0]])
    both = npx.topk(a([1., 3, 2]), k=2, ret_typ='both')
    assert isinstance(both, list) and all(type(t) is ndarray for t in both)
    onp.testing.assert_array_equal(both[0].asnumpy(), [3, 2])
    onp.testing.assert_array_equal(npx.one_hot(a([0, 2]), 3).asnumpy(),
                                   [[1, 0, 0], [0, 0, 1]])


def test_layers_match_nd():
    rng = onp.random.default_rng(0)
    x, w, b = (a(rng.normal(size=s)) for s in [(2, 3, 6, 6), (4, 3, 3, 3), (4,)])
    got = npx.convolution(x, w, b, kernel=(3, 3), num_filter=4, pad=(1, 1))
    want = nd.Convolution(x.as_nd_ndarray(), w.as_nd_ndarray(), b.as_nd_ndarray(),
                          kernel=(3, 3), num_filter=4, pad=(1, 1))
    assert type(got) is ndarray and got.shape == (2, 4, 6, 6)
    onp.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    p = npx.pooling(got, kernel=(2, 2), stride=(2, 2), pool_type='avg')
    assert p.shape == (2, 4, 3, 3) and type(p) is ndarray
    assert npx.pooling(got, pool_type='max', global_pool=True).shape == (2, 4, 1, 1)
    fc = npx.fully_connected(x, a(rng.normal(size=(5, 108))), a(rng.normal(size=5)),
                             num_hidden=5)
    assert fc.shape == (2, 5) and type(fc) is ndarray
    assert npx.fully_connected(x, a(rng.normal(size=(5, 108))), num_hidden=5,
                               no_bias=True).shape == (2, 5)
    assert npx.batch_dot(np.ones((3, 2, 4)), np.ones((3, 4, 5))).shape == (3, 2, 5)
    assert type(npx.dropout(x, p=0.5)) is ndarray


@pytest.mark.parametrize('shape, code, want', [
    # (input shape, npx.reshape's newshape, what MXNet 1.9.1 gave)
    ((2, 3, 4), (-2, -1), (2, 12)), ((2, 3, 4), (-4,), (2, 3, 4)),
    ((2, 3, 4), (-5, -4), (6, 4)), ((2, 3, 4), (-6, 1, 2, -4), (1, 2, 3, 4)),
    ((2, 3, 4), (-1, 4), (6, 4)), ((2, 1, 4), (-2, -3, -2), (2, 4))])
def test_reshape_codes(shape, code, want):
    assert npx.reshape(np.zeros(shape), code).shape == want


def test_reshape_reverse_and_errors():
    assert npx.reshape(np.zeros((2, 3, 4)), (-1, 3, 2), reverse=True).shape == (4, 3, 2)
    with pytest.raises(ValueError, match='cannot reshape'):
        npx.reshape(np.zeros((2, 3, 4)), (0, -1))       # MXNet refuses it too
    with pytest.raises(ValueError, match='-3 drops an axis of size 1'):
        npx.reshape(np.zeros((2, 3)), (-3, -2))


def _grad(f, x):
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        y = f(x)
    y.backward()
    return x.grad.asnumpy()


@pytest.mark.parametrize('name, f', [
    ('sequence_mask', lambda x: (npx.sequence_mask(x, a([1, 3]), True, axis=1, value=2.)
                                 * x).sum()),
    ('layer_norm', lambda x: (npx.layer_norm(x, a([1., 2, 3]), a([0., 1, 2])) ** 2
                              * a([1., 2, 3])).sum()),
    ('smooth_l1', lambda x: npx.smooth_l1(x, scalar=1.5).sum()),
    ('gather_nd', lambda x: (npx.gather_nd(x, a([[0, 1, 1], [2, 0, 2]])) ** 2).sum()),
    ('masked_softmax', lambda x: (npx.softmax(x, length=a([2, 3], 'int32'),
                                              use_length=True) * x).sum())])
def test_composed_ops_gradients_against_central_differences(name, f):
    rng = onp.random.default_rng(1)
    x0 = rng.uniform(-1, 1, (2, 3))
    got = _grad(f, a(x0, 'float64'))
    num = onp.zeros_like(x0)
    for i in onp.ndindex(x0.shape):
        for s in (1, -1):
            xs = x0.copy()
            xs[i] += s * 1e-6
            num[i] += s * f(a(xs, 'float64')).asnumpy().sum() / 2e-6
    onp.testing.assert_allclose(got, num, rtol=1e-4, atol=1e-6)


# Written by MXNet 1.9.1: npx.save('list.npx', [np.array([[1., 2.], [3., 4.]]),
# np.array(3.5), np.arange(3, dtype='int32'), np.zeros((0, 2))]) and
# npx.save('dict.npx', {'w': np.array([1., 2., 3.]), 'b': np.array(7, dtype='int64')})
MX_LIST = ('EgEAAAAAAAAAAAAAAAAAAAQAAAAAAAAAyvqT+QAAAAACAAAAAgAAAAAAAAACAAAAAAAAAAEAAAAAAAAA'
           'AAAAAAAAgD8AAABAAABAQAAAgEDK+pP5AAAAAAAAAAABAAAAAAAAAAAAAAAAAGBAyvqT+QAAAAABAAAA'
           'AwAAAAAAAAABAAAAAAAAAAQAAAAAAAAAAQAAAAIAAADK+pP5AAAAAAIAAAAAAAAAAAAAAAIAAAAAAAAA'
           'AQAAAAAAAAAAAAAAAAAAAAAAAAA=')
MX_DICT = ('EgEAAAAAAAAAAAAAAAAAAAIAAAAAAAAAyvqT+QAAAAABAAAAAwAAAAAAAAABAAAAAAAAAAAAAAAAAIA/'
           'AAAAQAAAQEDK+pP5AAAAAAAAAAABAAAAAAAAAAYAAAAHAAAAAAAAAAIAAAAAAAAAAQAAAAAAAAB3AQAA'
           'AAAAAABi')


def test_load_mxnet_files_and_save_the_same_bytes(tmp_path):
    for blob in (MX_LIST, MX_DICT):
        raw = base64.b64decode(blob)
        (tmp_path / 'mx.npx').write_bytes(raw)
        loaded = npx.load(str(tmp_path / 'mx.npx'))
        npx.save(str(tmp_path / 'ours.npx'), loaded)
        assert (tmp_path / 'ours.npx').read_bytes() == raw
    lst = npx.load(str(tmp_path / 'ours.npx'))
    assert set(lst) == {'w', 'b'} and lst['b'].shape == () and lst['b'].dtype == onp.int64
    (tmp_path / 'l.npx').write_bytes(base64.b64decode(MX_LIST))
    x = npx.load(str(tmp_path / 'l.npx'))
    assert [v.shape for v in x] == [(2, 2), (), (3,), (0, 2)]
    assert all(type(v) is ndarray for v in x) and float(x[1].asnumpy()) == 3.5


def test_save_load_refuse_legacy_arrays_and_mode(tmp_path):
    with pytest.raises(TypeError, match='only mx.np arrays'):
        npx.save(str(tmp_path / 'x'), [nd.ones(2)])
    npx.reset_np()
    with pytest.raises(ValueError, match='npx.set_np'):
        npx.save(str(tmp_path / 'x'), np.ones(2))


def test_random_shapes_and_seed():
    npx.random.seed(3)
    u1 = npx.random.uniform_n(0, 1, batch_shape=(4,))
    npx.random.seed(3)
    u2 = npx.random.uniform_n(0, 1, batch_shape=(4,))
    onp.testing.assert_array_equal(u1.asnumpy(), u2.asnumpy())
    assert npx.random.normal_n(np.zeros(3), 1, batch_shape=(2,)).shape == (2, 3)
    b = npx.random.bernoulli(0.5, size=(100,))
    assert type(b) is ndarray and set(onp.unique(b.asnumpy())) <= {0.0, 1.0}
    with pytest.raises(ValueError, match='exactly one'):
        npx.random.bernoulli()


def test_contexts():
    assert npx.current_context() == mx.current_context()
    assert npx.num_gpus() == mx.context.num_gpus()
    assert npx.is_np_array() and npx.is_np_shape()


def test_random_seed_keyword():
    """npx.random.seed takes MXNet's keyword ``seed=`` and repeats the draws."""
    npx.random.seed(seed=7)
    a = np.random.uniform(size=(4,)).asnumpy()
    npx.random.seed(7)
    onp.testing.assert_array_equal(np.random.uniform(size=(4,)).asnumpy(), a)
