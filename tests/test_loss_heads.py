"""Loss heads (SoftmaxOutput, the regression outputs, MakeLoss, BlockGrad):
their gradient is a loss's, whatever head gradient arrives; checked against
NumPy formulas, imperatively (autograd) and symbolically (an executor)."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd

RNG = np.random.RandomState(0)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def both_ways(op, x, label=None, head=None, **attrs):
    """(output, gradient of data) imperatively and symbolically, for
    ``op(data, label, **attrs)``; ``head``: a head gradient to pass (it must
    be ignored by a loss head)."""
    fn = getattr(nd, op)
    data = nd.array(x)
    data.attach_grad()
    args = (data,) if label is None else (data, nd.array(label))
    with autograd.record():
        y = fn(*args, **attrs)
    y.backward(None if head is None else nd.array(head))
    imperative = (y.asnumpy(), data.grad.asnumpy())

    sd = mx.sym.var('data')
    sym = getattr(mx.sym, op)(sd, name='head', **attrs) if label is None else \
        getattr(mx.sym, op)(sd, mx.sym.var('label'), name='head', **attrs)
    feed = {'data': nd.array(x)}
    if label is not None:
        feed['label'] = nd.array(label)
    ex = sym.bind(mx.current_context(), feed, args_grad={'data': nd.zeros(x.shape)},
                  grad_req={'data': 'write'})
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(None if head is None else [nd.array(head)])
    symbolic = (out, ex.grad_dict['data'].asnumpy())
    for a, b in zip(imperative, symbolic):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    return imperative


@pytest.mark.parametrize('normalization, divisor', [('null', 1), ('batch', 4),
                                                    ('valid', 4)])
def test_softmax_output_gradient_is_p_minus_onehot(normalization, divisor):
    x = RNG.randn(4, 5).astype(np.float32)
    label = np.array([0, 3, 4, 1], np.float32)
    out, grad = both_ways('SoftmaxOutput', x, label, grad_scale=2.0,
                          normalization=normalization,
                          head=RNG.randn(4, 5).astype(np.float32))
    p = _softmax(x, -1)
    np.testing.assert_allclose(out, p, rtol=1e-5)
    np.testing.assert_allclose(grad, (p - np.eye(5)[label.astype(int)]) * 2 / divisor,
                               rtol=1e-5, atol=1e-6)


def test_softmax_output_ignore_label_and_valid_normalization():
    x = RNG.randn(5, 3).astype(np.float32)
    label = np.array([0, -1, 2, -1, 1], np.float32)
    _, grad = both_ways('SoftmaxOutput', x, label, use_ignore=True,
                        ignore_label=-1, normalization='valid')
    keep = label != -1
    want = (_softmax(x, -1) - np.eye(3)[np.where(keep, label, 0).astype(int)])
    want = want * keep[:, None] / keep.sum()
    np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-6)
    assert not grad[~keep].any()
    # without use_ignore, the label -1 is a (wrong) class index, not ignored
    _, grad = both_ways('SoftmaxOutput', x, np.array([0, 1, 2, 0, 1], np.float32))
    assert grad[1].any()


def test_softmax_output_multi_output_and_preserve_shape():
    x = RNG.randn(2, 3, 4).astype(np.float32)        # classes on axis 1
    label = RNG.randint(0, 3, (2, 4)).astype(np.float32)
    out, grad = both_ways('SoftmaxOutput', x, label, multi_output=True)
    p = _softmax(x, 1)
    np.testing.assert_allclose(out, p, rtol=1e-5)
    onehot = np.moveaxis(np.eye(3)[label.astype(int)], -1, 1)
    np.testing.assert_allclose(grad, p - onehot, rtol=1e-5, atol=1e-6)

    label = RNG.randint(0, 4, (2, 3)).astype(np.float32)   # classes on the last axis
    out, grad = both_ways('SoftmaxOutput', x, label, preserve_shape=True)
    p = _softmax(x, -1)
    np.testing.assert_allclose(out, p, rtol=1e-5)
    np.testing.assert_allclose(grad, p - np.eye(4)[label.astype(int)], rtol=1e-5,
                               atol=1e-6)


def test_softmax_output_flattens_trailing_axes_by_default():
    x = RNG.randn(3, 2, 2).astype(np.float32)
    label = np.array([0, 3, 1], np.float32)
    out, grad = both_ways('SoftmaxOutput', x, label)
    p = _softmax(x.reshape(3, 4), -1)
    np.testing.assert_allclose(out, p.reshape(x.shape), rtol=1e-5)
    np.testing.assert_allclose(grad, (p - np.eye(4)[[0, 3, 1]]).reshape(x.shape),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('op, forward, grad_of', [
    ('LinearRegressionOutput', lambda x: x, lambda o, y: o - y),
    ('LogisticRegressionOutput', lambda x: 1 / (1 + np.exp(-x)), lambda o, y: o - y),
    ('MAERegressionOutput', lambda x: x, lambda o, y: np.sign(o - y)),
])
def test_regression_outputs_scale_by_outputs_per_example(op, forward, grad_of):
    x = RNG.randn(4, 3).astype(np.float32)
    y = RNG.uniform(0, 1, (4, 3)).astype(np.float32)
    out, grad = both_ways(op, x, y, grad_scale=6.0,
                          head=RNG.randn(4, 3).astype(np.float32))
    want_out = forward(x)
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, grad_of(want_out, y) * 6.0 / 3, rtol=1e-5,
                               atol=1e-6)


def test_regression_label_may_be_flat():
    x = RNG.randn(5, 1).astype(np.float32)
    y = RNG.randn(5).astype(np.float32)
    _, grad = both_ways('LinearRegressionOutput', x, y)
    np.testing.assert_allclose(grad, x - y[:, None], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('normalization, divisor', [('null', 1), ('batch', 4),
                                                    ('valid', 6)])
def test_make_loss_sends_grad_scale(normalization, divisor):
    x = np.array([[1, -2, 3], [0.5, -1, 2], [0, 0, 4], [-3, 1, -1]], np.float32)
    out, grad = both_ways('MakeLoss', x, grad_scale=3.0, normalization=normalization,
                          head=RNG.randn(4, 3).astype(np.float32))
    np.testing.assert_array_equal(out, x)
    # 'valid' divides by the number of elements above valid_thresh (0): 6
    np.testing.assert_allclose(grad, np.full(x.shape, 3.0 / divisor), rtol=1e-6)


def test_block_grad_cuts_the_graph():
    x = RNG.randn(3).astype(np.float32)
    a = nd.array(x)
    a.attach_grad()
    with autograd.record():
        y = nd.BlockGrad(a * 2) + a * 3
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), [3, 3, 3])
    s = mx.sym.var('a')
    sym = mx.sym.BlockGrad(s * 2) + s * 3
    ex = sym.simple_bind(mx.current_context(), a=(3,))
    out = ex.forward(is_train=True, a=nd.array(x))[0]
    np.testing.assert_allclose(out.asnumpy(), 5 * x, rtol=1e-6)
    ex.backward(nd.ones(3))
    np.testing.assert_allclose(ex.grad_dict['a'].asnumpy(), [3, 3, 3])
    # nothing but BlockGrad: a 'write' gradient is written, with zeros
    ex = mx.sym.BlockGrad(s * 2).bind(mx.current_context(), {'a': nd.array(x)},
                                      args_grad={'a': nd.ones(3)})
    ex.forward(is_train=True)
    ex.backward(nd.ones(3))
    np.testing.assert_array_equal(ex.grad_dict['a'].asnumpy(), [0, 0, 0])


def test_loss_head_in_a_network_trains_without_head_gradients():
    """MakeLoss over a symbolic squared error == the same loss through autograd."""
    x = RNG.randn(6, 2).astype(np.float32)
    y = RNG.randn(6, 1).astype(np.float32)
    data, label = mx.sym.var('data'), mx.sym.var('label')
    pred = mx.sym.FullyConnected(data, num_hidden=1, name='fc')
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(pred - label)), name='loss')
    net = mx.sym.Group([loss, mx.sym.BlockGrad(pred)])
    ex = net.simple_bind(mx.current_context(), data=x.shape, label=y.shape)
    ex.copy_params_from({'fc_weight': nd.array([[0.5, -1]]), 'fc_bias': nd.array([0.1])})
    ex.forward(is_train=True, data=nd.array(x), label=nd.array(y))
    ex.backward()
    w, b = nd.array([[0.5, -1]]), nd.array([0.1])
    for a in (w, b):
        a.attach_grad()
    with autograd.record():
        l2 = ((nd.FullyConnected(nd.array(x), w, b, num_hidden=1) - nd.array(y)) ** 2)
        l2 = l2.sum()
    l2.backward()
    np.testing.assert_allclose(ex.grad_dict['fc_weight'].asnumpy(), w.grad.asnumpy(),
                               rtol=1e-5)
    np.testing.assert_allclose(ex.grad_dict['fc_bias'].asnumpy(), b.grad.asnumpy(),
                               rtol=1e-5)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), l2.asnumpy(), rtol=1e-5)


def test_bad_normalization_and_label_shape_are_named():
    with pytest.raises(ValueError, match="normalization='sum'"):
        nd.SoftmaxOutput(nd.zeros((2, 3)), nd.zeros(2), normalization='sum')
    with pytest.raises(Exception, match=r"label shape \(3,\) does not match"):
        nd.SoftmaxOutput(nd.zeros((2, 3)), nd.zeros(3))
    with pytest.raises(Exception, match=r"label shape \(4, 1\) does not match"):
        nd.LinearRegressionOutput(nd.zeros((2, 3)), nd.zeros((4, 1)))
