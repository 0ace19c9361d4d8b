"""The graph's fusions (d2lmini/symbol/graph.py, ndarray/nn/fused.py).

A fused op must give what the ops it replaces give, values and gradients,
whatever the memory layout of its input (NCHW for a network's input, CHWN
after a convolution) and whichever gradients are needed; and the graph
must fuse only where nothing else reads the intermediate result.
"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd
from d2lmini.ndarray.ndarray import invoke
from d2lmini.ndarray.registry import OPS

RTOL, ATOL = 2e-5, 1e-5


def _input(shape, chwn, rng):
    x = nd.array(rng.standard_normal(shape).astype(np.float32))
    if not chwn:
        return x
    # a 1x1 convolution's result: the same kind of values, stored CHWN
    eye = nd.array(np.eye(shape[1], dtype=np.float32).reshape(shape[1], shape[1], 1, 1))
    return invoke(OPS['Convolution'], (x, eye), {'kernel': (1, 1),
                                                  'num_filter': shape[1]})


CASES = [((4, 3, 12, 12), (5, 3, 3, 3), True),
         ((3, 4, 13, 13), (6, 4, 5, 5), False),    # odd: a row and column left out
         ((2, 2, 9, 8), (3, 2, 2, 3), True),
         ((64, 1, 28, 28), (8, 1, 3, 3), False)]   # several bands


@pytest.mark.parametrize('xshape,wshape,chwn', CASES)
@pytest.mark.parametrize('need_x', [True, False])
def test_conv_act_pool_equals_the_three_ops(xshape, wshape, chwn, need_x):
    rng = np.random.default_rng(0)
    x = _input(xshape, chwn, rng)
    w = nd.array(rng.standard_normal(wshape).astype(np.float32) * 0.3)
    b = nd.array(rng.standard_normal(wshape[0]).astype(np.float32))
    conv = {'kernel': wshape[2:], 'num_filter': wshape[0]}
    variables = (x, w, b) if need_x else (w, b)
    for v in variables:
        v.attach_grad()
    with autograd.record():
        y = nd.relu(nd.Convolution(x, w, b, **conv))
        p = nd.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type='avg')
    gp = nd.array(rng.standard_normal(p.shape).astype(np.float32))
    p.backward(gp)
    want = [v.grad.asnumpy().copy() for v in variables]
    with autograd.record():
        p2, y2 = invoke(OPS['_conv_act_pool'], (x, w, b),
                        dict(conv, act_type='relu', pool=(2, 2)))
    # Not bit for bit: on a GPU the fused op takes bands of whole pooling
    # windows (8 + 1 output rows for 13x13), the convolution one GEMM of all
    # 9 rows; other GEMM widths, other bits (reported from an AVX-512
    # machine: 6 of these 288 pooled values 1 ulp apart).  Measured over
    # OpenBLAS kernels (Haswell, Sandybridge, Nehalem, Prescott, 1 thread,
    # NumPy without AVX2), CPU and stand-in: each side up to 2.9e-6 from
    # itself under another kernel, |values| up to 10.
    np.testing.assert_allclose(p2.asnumpy(), p.asnumpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(y2.asnumpy(), y.asnumpy(), rtol=RTOL, atol=ATOL)
    p2.backward(gp)
    for v, g in zip(variables, want):
        np.testing.assert_allclose(v.grad.asnumpy(), g, rtol=RTOL, atol=ATOL)


def test_conv_act_pool_when_its_second_output_is_used_too():
    rng = np.random.default_rng(1)
    x = _input((2, 3, 8, 8), True, rng)
    w = nd.array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    w.attach_grad()
    attrs = {'kernel': (3, 3), 'num_filter': 4}
    with autograd.record():
        y = nd.relu(nd.Convolution(x, w, no_bias=True, **attrs))
        p = nd.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type='avg')
        loss = (p * 3).sum() + (y * y).sum()
    loss.backward()
    want = w.grad.asnumpy().copy()
    with autograd.record():
        p2, y2 = invoke(OPS['_conv_act_pool'], (x, w),
                        dict(attrs, act_type='relu', pool=(2, 2)))
        loss2 = (p2 * 3).sum() + (y2 * y2).sum()
    loss2.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), want, rtol=RTOL, atol=ATOL)


def _lenet_like(pool_type='avg', extra_reader=False):
    data = mx.sym.var('data')
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name='c')
    a = mx.sym.Activation(c, act_type='relu', name='a')
    p = mx.sym.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type=pool_type, name='p')
    out = mx.sym.FullyConnected(mx.sym.Flatten(p), num_hidden=3, name='fc')
    if extra_reader:                      # the activation read twice
        out = mx.sym.broadcast_add(out, mx.sym.sum(a, axis=(1, 2, 3)).reshape((-1, 1)))
    return out


def _plan_ops(sym, is_train=True):
    ex = sym.simple_bind(mx.current_context(), data=(2, 1, 8, 8))
    ex.forward(is_train=is_train)
    return [st.name for st in ex._plans[is_train].steps]


def test_the_graph_fuses_conv_relu_avgpool():
    assert _plan_ops(_lenet_like())[0] == '_conv_act_pool'


def test_the_graph_fuses_only_what_it_may():
    ops = _plan_ops(_lenet_like(pool_type='max'))
    assert '_conv_act' in ops and 'Pooling' in ops       # conv+relu only
    ops = _plan_ops(_lenet_like(extra_reader=True))
    assert '_conv_act' in ops and '_conv_act_pool' not in ops
    # the relu's output is an output of the graph: nothing fuses into it
    data = mx.sym.var('data')
    a = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), num_filter=2))
    assert _plan_ops(mx.sym.Group([a, mx.sym.Pooling(
        a, kernel=(2, 2), stride=(2, 2), pool_type='avg')])) == \
        ['_conv_act', 'Pooling']


@pytest.mark.parametrize('is_train', [True, False])
def test_a_fused_graph_computes_what_the_ops_compute(is_train):
    sym = _lenet_like()
    ex = sym.simple_bind(mx.current_context(), data=(3, 1, 8, 8))
    rng = np.random.default_rng(2)
    for name, arr in ex.arg_dict.items():
        arr[:] = rng.standard_normal(arr.shape).astype(np.float32)
    out = ex.forward(is_train=is_train)[0].asnumpy()
    a = {k: v.copy() for k, v in ex.arg_dict.items()}
    ref = nd.FullyConnected(nd.Pooling(nd.relu(nd.Convolution(
        a['data'], a['c_weight'], a['c_bias'], kernel=(3, 3), num_filter=4)),
        kernel=(2, 2), stride=(2, 2), pool_type='avg'), a['fc_weight'], a['fc_bias'],
        num_hidden=3)
    np.testing.assert_allclose(out, ref.asnumpy(), rtol=1e-6, atol=1e-6)
