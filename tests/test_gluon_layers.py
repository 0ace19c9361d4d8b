"""nn layers: the same numbers as the raw nd operators with the same weights,
checked against NumPy (and PyTorch where it is installed); shape inference."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, init, nd
from d2lmini.gluon import nn


from oracles import needs_torch, tF, torch


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-5):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else a
    b = b.asnumpy() if isinstance(b, nd.NDArray) else b
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# --- Dense --------------------------------------------------------------------
def test_dense_matches_fully_connected_and_numpy(ctx):
    x = nd.array(rnd(4, 2, 3, 5))
    d = nn.Dense(7, activation='relu')
    d.initialize(init.Normal(0.5))
    y = d(x)
    assert d.weight.shape == (7, 30) and d.bias.shape == (7,)
    w, b = d.weight.data(), d.bias.data()
    close(y, nd.relu(nd.FullyConnected(x, w, b, num_hidden=7)))
    close(y, np.maximum(x.asnumpy().reshape(4, 30) @ w.asnumpy().T + b.asnumpy(), 0))


def test_dense_flatten_false_acts_on_the_last_axis(ctx):
    x = nd.array(rnd(2, 3, 5))
    d = nn.Dense(4, flatten=False, use_bias=False)
    d.initialize(init.Normal(0.5))
    y = d(x)
    assert d.bias is None and d.weight.shape == (4, 5) and y.shape == (2, 3, 4)
    w = d.weight.data()
    close(y, nd.FullyConnected(x, w, None, num_hidden=4, no_bias=True, flatten=False))
    close(y, x.asnumpy() @ w.asnumpy().T)
    assert repr(d) == 'Dense(5 -> 4, linear)'


def test_dense_gradients_match_numpy():
    x = rnd(3, 4)
    d = nn.Dense(2, in_units=4)
    d.initialize(init.Normal(1.0))
    with autograd.record():
        y = (d(nd.array(x)) ** 2).sum()
    y.backward()
    w, b = d.weight.data().asnumpy(), d.bias.data().asnumpy()
    out = x @ w.T + b
    close(d.weight.grad(), 2 * out.T @ x, rtol=1e-4)
    close(d.bias.grad(), 2 * out.sum(0), rtol=1e-4)


# --- convolution and pooling --------------------------------------------------
@pytest.mark.parametrize('kw', [
    dict(kernel_size=3),
    dict(kernel_size=(3, 2), strides=2, padding=(1, 0)),
    dict(kernel_size=3, padding=2, dilation=2),
    dict(kernel_size=1, groups=2, use_bias=False),
])
def test_conv2d_matches_convolution(kw):
    x = nd.array(rnd(2, 4, 9, 8))
    conv = nn.Conv2D(6, **kw)
    conv.initialize(init.Xavier())
    y = conv(x)
    k = kw['kernel_size']
    k = (k, k) if isinstance(k, int) else k
    assert conv.weight.shape == (6, 4 // kw.get('groups', 1)) + k
    args = (x, conv.weight.data()) + ((conv.bias.data(),) if conv.bias else ())
    s, p, d = (kw.get(n, v) for n, v in (('strides', 1), ('padding', 0),
                                          ('dilation', 1)))
    pair = lambda v: v if isinstance(v, tuple) else (v, v)      # noqa: E731
    ref = nd.Convolution(*args, kernel=k, stride=pair(s), pad=pair(p),
                         dilate=pair(d), num_filter=6,
                         num_group=kw.get('groups', 1), no_bias=conv.bias is None)
    close(y, ref)
    if torch is not None:
        t = tF.conv2d(torch.tensor(x.asnumpy()), torch.tensor(conv.weight.data().asnumpy()),
                      None if conv.bias is None else torch.tensor(conv.bias.data().asnumpy()),
                      stride=pair(s), padding=pair(p), dilation=pair(d),
                      groups=kw.get('groups', 1))
        close(y, t.numpy(), rtol=1e-4, atol=1e-5)


def test_conv_activation_1d_3d_and_repr():
    c = nn.Conv2D(3, kernel_size=3, padding=1, activation='relu', in_channels=2)
    c.initialize()
    assert c.weight.shape == (3, 2, 3, 3)
    x = nd.array(rnd(1, 2, 5, 5))
    y = c(x)
    assert y.shape == (1, 3, 5, 5) and y.asnumpy().min() >= 0
    assert repr(c) == ('Conv2D(2 -> 3, kernel_size=(3, 3), stride=(1, 1), '
                       'padding=(1, 1), Activation(relu))')
    c1 = nn.Conv1D(4, kernel_size=3, strides=2)
    c1.initialize()
    assert c1(nd.array(rnd(2, 3, 11))).shape == (2, 4, 5)
    assert c1.weight.shape == (4, 3, 3)
    c2 = nn.Conv2D(2, 3)
    c2.initialize()
    with pytest.raises(ValueError, match='4-D input'):
        c2(nd.ones((1, 5, 5)))
    with pytest.raises(ValueError, match='divisible by groups'):
        nn.Conv2D(4, 3, groups=3)
    with pytest.raises(ValueError, match='kernel_size must be'):
        nn.Conv2D(4, (3, 3, 3))


@pytest.mark.parametrize('layer, kwargs', [
    (nn.MaxPool2D, dict()),
    (nn.MaxPool2D, dict(pool_size=3, strides=2, padding=1)),
    (nn.MaxPool2D, dict(pool_size=3, strides=2, ceil_mode=True)),
    (nn.AvgPool2D, dict(pool_size=3, strides=1, padding=1)),
    (nn.AvgPool2D, dict(pool_size=3, strides=1, padding=1, count_include_pad=False)),
])
def test_pooling_matches_the_operator(layer, kwargs):
    x = nd.array(rnd(2, 3, 7, 7))
    pool = layer(**kwargs)
    y = pool(x)
    ks = kwargs.get('pool_size', 2)
    ks = (ks, ks)
    st = kwargs.get('strides') or ks
    st = st if isinstance(st, tuple) else (st, st)
    pd = kwargs.get('padding', 0)
    extra = {} if layer is nn.MaxPool2D else \
        {'count_include_pad': kwargs.get('count_include_pad', True)}
    ref = nd.Pooling(x, kernel=ks, stride=st, pad=(pd, pd),
                     pool_type='max' if layer is nn.MaxPool2D else 'avg',
                     global_pool=False,
                     pooling_convention='full' if kwargs.get('ceil_mode') else 'valid',
                     **extra)
    close(y, ref)
    if torch is not None:
        t = torch.tensor(x.asnumpy())
        if layer is nn.MaxPool2D:
            r = tF.max_pool2d(t, ks, st, pd, ceil_mode=kwargs.get('ceil_mode', False))
        else:
            r = tF.avg_pool2d(t, ks, st, pd,
                              count_include_pad=kwargs.get('count_include_pad', True))
        close(y, r.numpy())


def test_global_pooling_and_flatten():
    x = rnd(2, 3, 4, 5)
    close(nn.GlobalAvgPool2D()(nd.array(x)), x.mean(axis=(2, 3), keepdims=True))
    close(nn.GlobalMaxPool2D()(nd.array(x)), x.max(axis=(2, 3), keepdims=True))
    close(nn.GlobalAvgPool1D()(nd.array(x[:, :, 0])), x[:, :, 0].mean(2, keepdims=True))
    close(nn.Flatten()(nd.array(x)), x.reshape(2, 60))
    assert repr(nn.MaxPool2D(3, 2)) == (
        'MaxPool2D(size=(3, 3), stride=(2, 2), padding=(0, 0), ceil_mode=False, '
        'global_pool=False, pool_type=max, layout=NCHW)')


# --- batch normalization ------------------------------------------------------
def test_batchnorm_training_normalizes_and_updates_running_stats(ctx):
    x = rnd(8, 3, 4, 4) * 3 + 1
    bn = nn.BatchNorm(momentum=0.8)
    bn.initialize()
    with autograd.record():
        y = bn(nd.array(x))
    assert bn.gamma.shape == (3,) and bn.running_mean.shape == (3,)
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    ref = (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    close(y, ref, rtol=1e-4, atol=1e-4)
    close(bn.running_mean.data(), 0.2 * mean, rtol=1e-4)
    close(bn.running_var.data(), 0.8 + 0.2 * var, rtol=1e-4)
    # prediction uses the running statistics
    rm, rv = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
    y2 = bn(nd.array(x))
    close(y2, (x - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1) + 1e-5),
          rtol=1e-4, atol=1e-4)
    close(bn.running_mean.data(), rm)          # no update outside training


def test_batchnorm_matches_the_operator_and_learns_gamma_beta():
    x = nd.array(rnd(6, 4) * 2)
    bn = nn.BatchNorm(in_channels=4, epsilon=1e-3)
    bn.initialize()
    bn.gamma.set_data(nd.array([1., 2., 3., 4.]))
    bn.beta.set_data(nd.array([0., 1., 0., 1.]))
    rm, rv = nd.zeros(4), nd.ones(4)
    with autograd.record():
        y = bn(x)
        ref = nd.BatchNorm(x, bn.gamma.data(), bn.beta.data(), rm, rv, eps=1e-3,
                           momentum=0.9, fix_gamma=False, use_global_stats=False,
                           axis=1)
        loss = (y * nd.array(rnd(6, 4, seed=1))).sum()
    close(y, ref, rtol=1e-5)
    close(bn.running_mean.data(), rm)
    loss.backward()
    assert np.abs(bn.gamma.grad().asnumpy()).sum() > 0
    assert np.abs(bn.beta.grad().asnumpy()).sum() > 0
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        bn.running_mean.grad()
    assert 'in_channels=4' in repr(bn) and 'scale=True' in repr(bn)


def test_batchnorm_scale_false_and_other_axis():
    bn = nn.BatchNorm(axis=-1, scale=False, center=False)
    bn.initialize()
    x = rnd(10, 5)
    with autograd.record():
        y = bn(nd.array(x))
    close(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-4)
    assert bn.gamma.grad_req == 'null' and bn.beta.grad_req == 'null'


# --- dropout and activations --------------------------------------------------
def test_dropout_train_and_predict(ctx):
    x = nd.ones((200, 100))
    drop = nn.Dropout(0.3)
    np.testing.assert_array_equal(drop(x).asnumpy(), x.asnumpy())
    with autograd.record():
        y = drop(x).asnumpy()
    zero = (y == 0).mean()
    assert abs(zero - 0.3) < 0.02
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-6)
    with autograd.train_mode():
        assert nn.Dropout(0)(x) is x
    np.testing.assert_array_equal(nn.Dropout(1.0)(x).asnumpy(), x.asnumpy())
    with pytest.raises(ValueError, match='rate'):
        nn.Dropout(1.5)
    assert repr(drop) == 'Dropout(p = 0.3, axes=())'


@pytest.mark.parametrize('act, ref', [
    ('relu', lambda x: np.maximum(x, 0)),
    ('sigmoid', lambda x: 1 / (1 + np.exp(-x))),
    ('tanh', np.tanh),
    ('softrelu', lambda x: np.log1p(np.exp(x))),
    ('softsign', lambda x: x / (1 + np.abs(x))),
])
def test_activation_layer(act, ref, ctx):
    x = rnd(3, 4) * 3
    a = nn.Activation(act)
    close(a(nd.array(x)), ref(x), rtol=1e-5)
    close(a(nd.array(x)), nd.Activation(nd.array(x), act_type=act))
    assert repr(a) == f'Activation({act})' and a.name.startswith(act)


def test_parametric_and_other_activations():
    x = rnd(2, 3, 4) * 3
    close(nn.LeakyReLU(0.1)(nd.array(x)), np.where(x > 0, x, 0.1 * x))
    close(nn.ELU(0.5)(nd.array(x)), np.where(x > 0, x, 0.5 * (np.exp(x) - 1)))
    a, s = 1.6732632423543772, 1.0507009873554805
    close(nn.SELU()(nd.array(x)), s * np.where(x > 0, x, a * (np.exp(x) - 1)))
    close(nn.Swish(2.0)(nd.array(x)), x / (1 + np.exp(-2 * x)))
    p = nn.PReLU()
    p.initialize()
    close(p(nd.array(x)), np.where(x > 0, x, 0.25 * x))
    pc = nn.PReLU(init.Constant(0.5), in_channels=3)
    pc.initialize()
    close(pc(nd.array(x)), np.where(x > 0, x, 0.5 * x))
    with autograd.record():
        y = p(nd.array(x)).sum()
    y.backward()
    close(p.alpha.grad(), [np.minimum(x, 0).sum()], rtol=1e-5)
    # big negative inputs: no overflow, finite gradients
    big = nd.array([-1000.0, 1000.0])
    big.attach_grad()
    with autograd.record():
        z = nn.ELU()(big).sum()
    z.backward()
    assert np.all(np.isfinite(big.grad.asnumpy()))


def test_lambda_layers():
    x = rnd(2, 3)
    close(nn.Lambda('tanh')(nd.array(x)), np.tanh(x))
    close(nn.Lambda(lambda v: v * 2)(nd.array(x)), 2 * x)
    close(nn.HybridLambda('relu')(nd.array(x)), np.maximum(x, 0))
    close(nn.HybridLambda(lambda F, v: F.exp(v))(nd.array(x)), np.exp(x))
    with pytest.raises(ValueError, match='no function'):
        nn.Lambda('nope')


# --- embedding and layer norm -------------------------------------------------
def test_embedding_rows_and_gradient():
    emb = nn.Embedding(10, 4)
    emb.initialize(init.Normal(1.0))
    idx = nd.array([[1, 3], [3, 9]])
    with autograd.record():
        y = emb(idx)
    w = emb.weight.data().asnumpy()
    close(y, w[np.array([[1, 3], [3, 9]])])
    y.backward()
    g = np.zeros((10, 4))
    g[1] = 1
    g[3] = 2
    g[9] = 1
    close(emb.weight.grad(), g)


def test_layer_norm_matches_numpy():
    x = rnd(4, 6) * 3 + 2
    ln = nn.LayerNorm()
    ln.initialize()
    y = ln(nd.array(x))
    assert ln.gamma.shape == (6,)
    close(y, (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5),
          rtol=1e-4, atol=1e-4)


# --- a whole LeNet: deferred shapes all the way down --------------------------
def test_lenet_shapes_are_inferred():
    net = nn.Sequential()
    net.add(nn.Conv2D(6, kernel_size=5, padding=2, activation='sigmoid'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=5, activation='sigmoid'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation='sigmoid'), nn.Dense(84, activation='sigmoid'),
            nn.Dense(10))
    net.initialize(init.Xavier())
    x = nd.random.uniform(shape=(2, 1, 28, 28))
    shapes = []
    for layer in net:
        x = layer(x)
        shapes.append(x.shape)
    assert shapes == [(2, 6, 28, 28), (2, 6, 14, 14), (2, 16, 10, 10), (2, 16, 5, 5),
                      (2, 120), (2, 84), (2, 10)]
    assert net[2].weight.shape == (16, 6, 5, 5) and net[4].weight.shape == (120, 400)
    assert mx.nd.waitall() is None
