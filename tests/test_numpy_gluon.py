"""Gluon in NumPy mode: np Parameters, layers, losses and Trainer; F.np and
F.npx in hybrid_forward (imperative against hybridized); export/imports;
DataLoader batches; both modes in one process."""
import warnings

import numpy as onp
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, init, nd, np, npx
from d2lmini.gluon import nn
from d2lmini.numpy.multiarray import ndarray


@pytest.fixture(autouse=True)
def np_mode():
    npx.set_np()
    yield
    npx.reset_np()


def rand(*shape, seed=0):
    return np.array(onp.random.default_rng(seed).normal(size=shape))


def test_parameters_layers_losses_trainer_give_np_arrays_and_learn():
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation='relu'), nn.Dense(3))
    net.initialize(init.Normal(0.1))
    X = rand(16, 4)
    y = np.array(X.asnumpy()[:, :3].argmax(axis=1))     # learnable labels
    out = net(X)
    assert type(out) is ndarray and out.shape == (16, 3)
    w = net[0].weight
    assert type(w.data()) is ndarray and type(w.list_data()[0]) is ndarray
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5})
    losses = []
    for _ in range(20):
        with autograd.record():
            loss = loss_fn(net(X), y)
        loss.backward()
        trainer.step(16)
        losses.append(loss.asnumpy().mean())
    assert type(loss) is ndarray and loss.shape == (16,)
    assert type(w.grad()) is ndarray and type(w.data()) is ndarray
    assert losses[-1] < 0.7 * losses[0]
    l2 = gluon.loss.L2Loss()(out, np.zeros((16, 3)))
    assert type(l2) is ndarray and l2.shape == (16,)


def test_conv_pool_batchnorm_dropout_flatten_embedding():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.MaxPool2D(2),
            nn.Dropout(0.5), nn.Flatten(), nn.Dense(2))
    net.initialize()
    with autograd.record():
        out = net(rand(2, 1, 6, 6))
    assert type(out) is ndarray and out.shape == (2, 2)
    emb = nn.Embedding(5, 3)
    emb.initialize()
    e = emb(np.array([1, 4]))
    assert type(e) is ndarray and e.shape == (2, 3)


class NpDense(nn.HybridBlock):
    """d2l's custom layer, written with F.np and F.npx."""

    def __init__(self, units, in_units, **kwargs):
        super().__init__(**kwargs)
        self.weight = self.params.get('weight', shape=(in_units, units))
        self.bias = self.params.get('bias', shape=(units,))

    def hybrid_forward(self, F, x, weight, bias):
        y = F.npx.relu(F.np.dot(x, weight) + bias)
        return F.npx.sequence_mask(y.T, np.array([1, 2]) if F is nd else None,
                                   use_sequence_length=False).reshape(-1, 2).T


class NpxOnly(nn.HybridBlock):
    """Runs on what mx.npx and np.ndarray's methods give (no mx.np functions)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = nn.Dense(6, in_units=4)

    def hybrid_forward(self, F, x):
        y = F.npx.relu(self.dense(x)) * 2 + 1
        y = npx_reshape(F, y)
        return F.npx.softmax(y.T, axis=0).reshape(3, -1)


def npx_reshape(F, y):
    return F.npx.reshape(y, (-2, -6, 2, 3))


def _hybrid_matches_imperative(net, x):
    with warnings.catch_warnings():
        warnings.simplefilter('error')     # a fallback to imperative would warn
        with autograd.record():
            y1 = net(x)
        y1.backward()
        g1 = [p.grad().asnumpy().copy() for p in net.collect_params().values()]
        net.hybridize()
        net(x)                             # traced here
        with autograd.record():
            y2 = net(x)
        y2.backward()
    assert net._cached_graph, 'the block was not traced'
    assert type(y2) is ndarray and y2.shape == y1.shape
    onp.testing.assert_allclose(y2.asnumpy(), y1.asnumpy(), rtol=1e-5, atol=1e-6)
    for p, g in zip(net.collect_params().values(), g1):
        onp.testing.assert_allclose(p.grad().asnumpy(), g, rtol=1e-5, atol=1e-6)
    return y1


def test_F_npx_and_methods_hybridized_equal_imperative(tmp_path):
    net = NpxOnly()
    net.initialize()
    x = rand(5, 4)
    y1 = _hybrid_matches_imperative(net, x)
    sym_file, params_file = net.export(str(tmp_path / 'npx'))
    back = gluon.SymbolBlock.imports(sym_file, ['data'], params_file)
    y3 = back(x)
    assert type(y3) is ndarray
    onp.testing.assert_allclose(y3.asnumpy(), y1.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not hasattr(mx.np, 'dot'), reason='mx.np.dot is not there yet')
def test_F_np_hybridized_equal_imperative(tmp_path):
    net = NpDense(4, 3)
    net.initialize(init.Normal(1))
    _hybrid_matches_imperative(net, rand(2, 3))


def test_both_modes_in_one_process_and_wrong_array_type():
    net = nn.Dense(2)
    net.initialize()
    with pytest.raises(TypeError, match='as_np_ndarray'):
        net(nd.ones((1, 3)))
    assert type(net(np.ones((1, 3)))) is ndarray
    npx.reset_np()
    with pytest.raises(TypeError, match='npx.set_np'):
        net(np.ones((1, 3)))
    legacy = nn.Dense(2)
    legacy.initialize()
    out = legacy(nd.ones((1, 3)))
    assert type(out) is nd.NDArray and type(legacy.weight.data()) is nd.NDArray


def test_save_load_parameters_and_dataloader(tmp_path):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.save_parameters(str(tmp_path / 'p'))
    net2 = nn.Dense(2, in_units=3)
    net2.load_parameters(str(tmp_path / 'p'))
    assert type(net2.weight.data()) is ndarray
    onp.testing.assert_array_equal(net2.weight.data().asnumpy(),
                                   net.weight.data().asnumpy())
    ds = gluon.data.ArrayDataset(onp.ones((10, 3), 'float32'), onp.arange(10))
    X, y = next(iter(gluon.data.DataLoader(ds, batch_size=4)))
    assert type(X) is ndarray and type(y) is ndarray and X.shape == (4, 3)
    parts = gluon.utils.split_and_load(np.ones((4, 2)), [mx.cpu()])
    assert type(parts[0]) is ndarray
