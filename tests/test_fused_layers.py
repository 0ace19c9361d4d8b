"""Fused layer ops equal the op chains they replace: gluon's Dense with an
activation (``_fc_act``) and SoftmaxCrossEntropyLoss (``_softmax_ce_loss``),
in values and gradients; the loss bit for bit."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, nd

ACTS = ['relu', 'sigmoid', 'tanh', 'softrelu', 'softsign']


def _ops(fn):
    with mx.engine.Trace() as tr:
        out = fn()
        out.wait_to_read()
    return [name for _, name, _, _ in tr.spans()]


@pytest.mark.parametrize('act', ACTS)
def test_dense_with_activation_is_one_op_equal_to_the_two(act):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 2, 5)).astype(np.float32)
    H = rng.standard_normal((6, 4)).astype(np.float32)
    net = gluon.nn.Dense(4, activation=act)
    net.initialize(mx.init.Xavier())
    x = nd.array(X)
    net(x)                                              # deferred init
    assert _ops(lambda: net(x)) == ['_fc_act']
    w, b = net.weight.data(), net.bias.data()
    grads = []
    for fused in (True, False):
        x.attach_grad()
        for p in (w, b):
            p.attach_grad()
        with autograd.record():
            y = net(x) if fused else nd.Activation(
                nd.FullyConnected(x, w, b, num_hidden=4), act_type=act)
        y.backward(nd.array(H))
        grads.append([a.asnumpy() for a in (y, x.grad, w.grad, b.grad)])
    for ours, ref in zip(*grads):
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
    if act in ('relu', 'sigmoid', 'tanh'):              # same kernels: same bits
        for ours, ref in zip(*grads):
            assert np.array_equal(ours, ref)


def test_hybridized_dense_keeps_mxnets_two_nodes():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(3, activation='tanh'))
    net.initialize()
    net.hybridize()
    x = nd.ones((2, 5))
    ref = net(x).asnumpy()
    ops = [n['op'] for n in __import__('json').loads(
        net(mx.sym.var('data')).tojson())['nodes']]
    assert 'FullyConnected' in ops and 'Activation' in ops and '_fc_act' not in ops
    np.testing.assert_allclose(net(x).asnumpy(), ref)


@pytest.mark.parametrize('label_shape', ['(N,)', '(N, 1)'])
def test_softmax_ce_loss_is_the_op_chain_bit_for_bit(label_shape):
    rng = np.random.default_rng(1)
    X = (rng.standard_normal((64, 10)) * 4).astype(np.float32)
    Y = rng.integers(0, 10, 64).astype(np.float32)
    Y[:3] = [12, -1, 9.7]                 # out of range: pick clips, one_hot drops
    y = nd.array(Y if label_shape == '(N,)' else Y[:, None])
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    out = []
    for fused in (True, False):
        x = nd.array(X)
        x.attach_grad()
        with autograd.record():
            if fused:
                l = loss(x, y)
            else:                          # what the loss ran before the fusion
                l = (-nd.pick(nd.log_softmax(x), y.reshape((-1,)), keepdims=True)
                     ).mean(axis=1)
        l.backward(nd.array(np.linspace(0.5, 2, 64).astype(np.float32)))
        out.append((l.asnumpy(), x.grad.asnumpy()))
    (lf, gf), (lr, gr) = out
    assert lf.shape == (64,)
    assert np.array_equal(lf, lr) and np.array_equal(gf, gr)
    assert np.array_equal(np.signbit(gf), np.signbit(gr))
    x = nd.array(X)
    assert _ops(lambda: loss(x, y)) == ['_softmax_ce_loss']


def test_softmax_ce_loss_other_cases_keep_the_general_path():
    """Weights, dense labels, logits input, another axis: the op chain."""
    x = nd.array(np.random.default_rng(2).standard_normal((4, 3, 5)).astype(np.float32))
    y = nd.array([[0, 1, 2]] * 4)
    loss = gluon.loss.SoftmaxCrossEntropyLoss(axis=2)
    assert '_softmax_ce_loss' not in _ops(lambda: loss(x, y))
    x2, y2 = nd.ones((4, 3)), nd.array([0, 1, 2, 0])
    weighted = gluon.loss.SoftmaxCrossEntropyLoss(weight=0.5)
    plain = gluon.loss.SoftmaxCrossEntropyLoss()
    np.testing.assert_allclose(weighted(x2, y2).asnumpy(),
                               0.5 * plain(x2, y2).asnumpy(), rtol=1e-6)
    with pytest.raises(ValueError, match='_softmax_ce_loss'):
        mx.ndarray.invoke(mx.ndarray.registry.OPS['_softmax_ce_loss'],
                          (nd.ones((4, 3)), nd.ones((5,))))


def test_second_order_gradient_through_the_fused_loss_equals_the_op_chain():
    """d/dx |dL/dx|^2 through ``_softmax_ce_loss`` (its gradient op is
    differentiable) equals the same through the op chain."""
    X = np.random.default_rng(3).standard_normal((5, 4))
    y = nd.array([0, 3, 1, 2, 7])                 # 7: out of range, dropped
    grads = []
    for fused in (True, False):
        x = nd.array(X)
        x.attach_grad()
        with autograd.record():
            if fused:
                l = gluon.loss.SoftmaxCrossEntropyLoss()(x, y)
            else:
                l = (-nd.pick(nd.log_softmax(x), y, keepdims=True)).mean(axis=1)
            g = autograd.grad(l.sum(), [x], create_graph=True)[0]
            z = (g * g).sum()
        z.backward()
        grads.append(x.grad.asnumpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)
    assert np.abs(grads[0]).max() > 1e-3                 # not trivially zero
