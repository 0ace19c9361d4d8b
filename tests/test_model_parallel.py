"""Model parallelism: a network whose layers live on two devices.

The oracle is the same network on one device (and NumPy for the forward):
values, gradients and a few training steps must agree to float32 rounding,
and every gradient must land on the device of its Parameter.
"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, nd
from d2lmini.gluon import nn

# Two devices: two CPUs always; two GPUs, or a GPU and the CPU, when present.
PAIRS = [(mx.cpu(0), mx.cpu(1)),
         pytest.param((mx.gpu(0), mx.gpu(1)), marks=pytest.mark.skipif(
             mx.num_gpus() < 2, reason='needs two GPUs')),
         pytest.param((mx.cpu(0), mx.gpu(0)), marks=pytest.mark.skipif(
             mx.num_gpus() < 1, reason='needs a GPU'))]


@pytest.fixture(params=PAIRS, ids=lambda p: f'{p[0]}+{p[1]}')
def pair(request):
    yield request.param
    mx.nd.waitall()


class SplitMLP(nn.Block):
    """Two halves of an MLP; ``forward`` copies the activation across."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.bottom = nn.Sequential()
        self.bottom.add(nn.Dense(16, activation='relu', in_units=8),
                        nn.Dense(12, activation='tanh', in_units=16))
        self.top = nn.Sequential()
        self.top.add(nn.Dense(12, activation='relu', in_units=12),
                     nn.Dense(3, in_units=12))

    def forward(self, x):
        dev0 = self.bottom[0].weight.list_ctx()[0]
        dev1 = self.top[0].weight.list_ctx()[0]
        h = self.bottom(x.as_in_context(dev0))
        return self.top(h.as_in_context(dev1))


def _numpy_forward(net, x):
    h = x
    acts = [lambda v: np.maximum(v, 0), np.tanh, lambda v: np.maximum(v, 0),
            lambda v: v]
    layers = list(net.bottom) + list(net.top)
    for layer, act in zip(layers, acts):
        w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
        h = act(h @ w.T + b)
    return h


def _grads(net):
    return {name: p.grad(p.list_ctx()[0]).asnumpy().copy()
            for name, p in net.collect_params().items()}


def _forward_backward(net, X, y):
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        out = net(X)
        lv = loss(out, y.as_in_context(out.context))
    lv.backward()
    return out.asnumpy(), lv.asnumpy()


def test_copy_gradient_goes_back_to_the_source_device(pair):
    d0, d1 = pair
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    x = nd.array(a, ctx=d0)
    x.attach_grad()
    with autograd.record():
        y = x.as_in_context(d1)
        z = (y * y * nd.array(w, ctx=d1)).sum()
    assert y.context == d1
    with mx.engine.Trace() as trace:
        z.backward()
    assert x.grad.context == d0
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * a * w, rtol=1e-5)
    # the gradient's copy back is an operation on the source device's stream
    assert any(n == 'copyto' for _, n, _, _ in trace.spans(d0))


def test_split_network_equals_one_device(pair):
    d0, d1 = pair
    mx.random.seed(1)
    net = SplitMLP()
    net.initialize(mx.init.Xavier(), ctx=d0)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((10, 8)).astype(np.float32)
    X, y = nd.array(a, ctx=d0), nd.array(rng.integers(0, 3, 10), ctx=d0)
    out1, loss1 = _forward_backward(net, X, y)
    grads1 = _grads(net)
    np.testing.assert_allclose(out1, _numpy_forward(net, a), rtol=1e-4, atol=1e-5)

    before = {k: p.data().asnumpy() for k, p in net.collect_params().items()}
    net.top.collect_params().reset_ctx(d1)       # the top half moves to d1
    top = set(net.top.collect_params().keys())
    for k, p in net.collect_params().items():
        assert p.list_ctx() == [d1 if k in top else d0]
        np.testing.assert_array_equal(p.data().asnumpy(), before[k])
    out2, loss2 = _forward_backward(net, X, y)
    grads2 = _grads(net)
    np.testing.assert_allclose(out2, out1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss2, loss1, rtol=1e-5, atol=1e-6)
    for k, g in grads1.items():
        np.testing.assert_allclose(grads2[k], g, rtol=1e-4, atol=1e-6, err_msg=k)
    for k, p in net.collect_params().items():          # each grad on its device
        assert p.grad(p.list_ctx()[0]).context == p.list_ctx()[0]


def test_split_training_equals_one_device(pair):
    """Three SGD steps with momentum, one Trainer per device vs one Trainer."""
    d0, d1 = pair
    rng = np.random.default_rng(3)
    X = nd.array(rng.standard_normal((16, 8)), ctx=d0)
    y = nd.array(rng.integers(0, 3, 16), ctx=d0)
    nets = []
    for split in (False, True):
        mx.random.seed(4)
        net = SplitMLP()
        net.initialize(mx.init.Xavier(), ctx=d0)
        opt = {'learning_rate': 0.1, 'momentum': 0.9}
        init = [p.data().asnumpy() for p in net.collect_params().values()]
        if split:
            net.top.collect_params().reset_ctx(d1)
            trainers = [gluon.Trainer(half.collect_params(), 'sgd', opt)
                        for half in (net.bottom, net.top)]
        else:
            trainers = [gluon.Trainer(net.collect_params(), 'sgd', opt)]
        for _ in range(3):
            _forward_backward(net, X, y)
            for t in trainers:
                t.step(16)
        nets.append(net)
    # the names differ (new layers, new counters): compare in the nets' order
    one, two = ([(k, p.data().asnumpy()) for k, p in n.collect_params().items()]
                for n in nets)
    assert len(one) == len(two) == 8
    for (_, v1), (k2, v2), v0 in zip(one, two, init):
        np.testing.assert_allclose(v2, v1, rtol=1e-4, atol=1e-6, err_msg=k2)
        assert np.abs(v2 - v0).max() > 1e-3, k2          # it did train


def test_data_on_the_wrong_device_is_a_clear_error():
    layer = nn.Dense(3, in_units=4)
    layer.initialize(ctx=mx.cpu(1))
    with pytest.raises(RuntimeError, match=r'as_in_context\(cpu\(1\)\)'):
        layer(nd.ones((2, 4), ctx=mx.cpu(0)))
