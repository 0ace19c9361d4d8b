"""Short real training runs with a hand-written SGD: the losses must fall."""
import numpy as np

import d2lmini as mx
from d2lmini import autograd, gluon, init, nd
from d2lmini.gluon import loss as gloss
from d2lmini.gluon import nn

from conftest import needs_devices


def sgd(params, lr, batch_size):
    for param in params.values():
        if param.grad_req != 'null':
            param.data()[:] -= lr * param.grad() / batch_size


def blobs(n=200, seed=0):
    """Three Gaussian blobs in 2-D: an easy 3-class problem."""
    rng = np.random.default_rng(seed)
    centers = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    y = rng.integers(0, 3, n)
    x = centers[y] + 0.6 * rng.standard_normal((n, 2))
    return x.astype(np.float32), y.astype(np.float32)


def test_mlp_classifier_learns(ctx):
    x, y = blobs()
    X, Y = nd.array(x), nd.array(y)
    net = nn.Sequential()
    net.add(nn.Dense(16, activation='relu'), nn.Dense(3))
    net.initialize(init.Xavier())
    loss = gloss.SoftmaxCrossEntropyLoss()
    params = net.collect_params()
    lr, batch_size, losses = 0.5, 20, []
    for epoch in range(5):
        total = 0.0
        for i in range(0, len(x), batch_size):
            with autograd.record():
                l = loss(net(X[i:i + batch_size]), Y[i:i + batch_size])
            l.backward()
            sgd(params, lr, batch_size)
            total += l.sum().asscalar()
        losses.append(total / len(x))
    assert losses[-1] < 0.5 * losses[0], losses
    acc = (net(X).argmax(axis=1) == Y).mean().asscalar()
    assert acc > 0.9


def test_linear_regression_recovers_the_weights():
    rng = np.random.default_rng(1)
    true_w, true_b = np.array([2.0, -3.4]), 4.2
    x = rng.standard_normal((500, 2)).astype(np.float32)
    y = (x @ true_w + true_b + 0.01 * rng.standard_normal(500)).astype(np.float32)
    X, Y = nd.array(x), nd.array(y)
    net = nn.Sequential()
    net.add(nn.Dense(1))
    net.initialize(init.Normal(sigma=0.01))
    loss = gloss.L2Loss()
    for epoch in range(3):
        for i in range(0, 500, 10):
            with autograd.record():
                l = loss(net(X[i:i + 10]), Y[i:i + 10])
            l.backward()
            sgd(net.collect_params(), 0.1, 10)
    np.testing.assert_allclose(net[0].weight.data().asnumpy().ravel(), true_w, atol=0.02)
    np.testing.assert_allclose(net[0].bias.data().asnumpy(), [true_b], atol=0.02)
    assert loss(net(X), Y).mean().asscalar() < 1e-3


@needs_devices(2)
def test_data_parallel_step_equals_single_device_step():
    """Two logical devices, gradients summed by hand: the same update as one."""
    x, y = blobs(40, seed=3)
    kind = mx.current_context().device_type      # cpu(0)+cpu(1) or gpu(0)+gpu(1)
    ctxs = [mx.Context(kind, 0), mx.Context(kind, 1)]

    def build(ctx):
        mx.random.seed(7)
        net = nn.Sequential()
        net.add(nn.Dense(8, activation='relu'), nn.Dense(3))
        net.initialize(init.Xavier(), ctx=ctx)
        net(nd.ones((1, 2), ctx=ctx if isinstance(ctx, mx.Context) else ctx[0]))
        return net

    loss = gloss.SoftmaxCrossEntropyLoss()
    single, multi = build(ctxs[0]), build(ctxs)
    with autograd.record():
        l = loss(single(nd.array(x)), nd.array(y))
    l.backward()
    sgd(single.collect_params(), 0.1, len(x))

    xs = gluon.utils.split_and_load(x, ctxs)
    ys = gluon.utils.split_and_load(y, ctxs)
    with autograd.record():
        ls = [loss(multi(a), b) for a, b in zip(xs, ys)]
    autograd.backward(ls)
    for p in multi.collect_params().values():           # a naive allreduce
        total = p.list_grad()[0] + p.list_grad()[1].as_in_context(ctxs[0])
        for d in p.list_data():
            d[:] -= 0.1 * total.as_in_context(d.context) / len(x)
    for p, q in zip(single.collect_params().values(), multi.collect_params().values()):
        a, b = q.list_data()
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
        np.testing.assert_allclose(a.asnumpy(), p.data().asnumpy(), rtol=1e-5,
                                   atol=1e-6)


def test_dropout_mlp_trains_and_predicts_deterministically():
    x, y = blobs(120, seed=4)
    X, Y = nd.array(x), nd.array(y)
    net = nn.Sequential()
    net.add(nn.Dense(32, activation='relu'), nn.Dropout(0.2), nn.Dense(3))
    net.initialize(init.Xavier())
    loss = gloss.SoftmaxCrossEntropyLoss()
    first = loss(net(X), Y).mean().asscalar()
    for epoch in range(4):
        for i in range(0, 120, 12):
            with autograd.record():
                l = loss(net(X[i:i + 12]), Y[i:i + 12])
            l.backward()
            sgd(net.collect_params(), 0.5, 12)
    a, b = net(X).asnumpy(), net(X).asnumpy()
    np.testing.assert_array_equal(a, b)            # no dropout at prediction
    assert loss(net(X), Y).mean().asscalar() < 0.5 * first
