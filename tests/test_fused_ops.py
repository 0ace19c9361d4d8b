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


FUSED = {'avg': '_conv_act_pool', 'max': '_conv_act_maxpool'}


@pytest.mark.parametrize('xshape,wshape,chwn', CASES)
@pytest.mark.parametrize('need_x', [True, False])
@pytest.mark.parametrize('pool_type', ['avg', 'max'])
def test_conv_act_pool_equals_the_three_ops(xshape, wshape, chwn, need_x, pool_type):
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
        p = nd.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type=pool_type)
    gp = nd.array(rng.standard_normal(p.shape).astype(np.float32))
    p.backward(gp)
    want = [v.grad.asnumpy().copy() for v in variables]
    with autograd.record():
        p2, y2 = invoke(OPS[FUSED[pool_type]], (x, w, b),
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


@pytest.mark.parametrize('pool_type', ['avg', 'max'])
def test_conv_act_pool_when_its_second_output_is_used_too(pool_type):
    rng = np.random.default_rng(1)
    x = _input((2, 3, 8, 8), True, rng)
    w = nd.array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    w.attach_grad()
    attrs = {'kernel': (3, 3), 'num_filter': 4}
    with autograd.record():
        y = nd.relu(nd.Convolution(x, w, no_bias=True, **attrs))
        p = nd.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type=pool_type)
        loss = (p * 3).sum() + (y * y).sum()
    loss.backward()
    want = w.grad.asnumpy().copy()
    with autograd.record():
        p2, y2 = invoke(OPS[FUSED[pool_type]], (x, w),
                        dict(attrs, act_type='relu', pool=(2, 2)))
        loss2 = (p2 * 3).sum() + (y2 * y2).sum()
    loss2.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize('xshape,wshape,chwn', CASES + [
    ((256, 1, 28, 28), (8, 1, 5, 5), False)])      # 6 bands of 4 rows
@pytest.mark.parametrize('bias', [True, False])
def test_maxpool_inference_variant_pools_first_and_gives_the_same(xshape, wshape,
                                                                  chwn, bias):
    """``forward_infer`` pools the raw GEMM output and adds the bias and the
    relu afterwards: the same values (a max commutes with both), no ``y``."""
    rng = np.random.default_rng(3)

    def raw(shape, scale=1.0):                  # on the test's device
        return nd.array(rng.standard_normal(shape).astype(np.float32) * scale)._value()
    x = _input(xshape, chwn, rng)._value()      # (CHWN: a transposed view)
    args = (x, raw(wshape, 0.3)) + ((raw(wshape[0]),) if bias else ())
    conv = {'kernel': wshape[2:], 'num_filter': wshape[0], 'act_type': 'relu',
            'pool': (2, 2)}
    op = OPS['_conv_act_maxpool']
    p, y = op.forward(*args, **conv)
    p2, y2 = op.forward_infer(*args, **conv)
    assert y2 is None and y is not None
    p, p2 = (nd.array(a).asnumpy() for a in (p, p2))
    assert (p2 >= 0).all() and (p2 == 0).any() and (p2 > 0).any()
    np.testing.assert_allclose(p2, p, rtol=RTOL, atol=ATOL)


def _lenet_like(pool_type='avg', extra_reader=False, pool=(2, 2)):
    data = mx.sym.var('data')
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name='c')
    a = mx.sym.Activation(c, act_type='relu', name='a')
    p = mx.sym.Pooling(a, kernel=pool, stride=(2, 2), pool_type=pool_type, name='p')
    out = mx.sym.FullyConnected(mx.sym.Flatten(p), num_hidden=3, name='fc')
    if extra_reader:                      # the activation read twice
        out = mx.sym.broadcast_add(out, mx.sym.sum(a, axis=(1, 2, 3)).reshape((-1, 1)))
    return out


def _plan(sym, is_train=True):
    ex = sym.simple_bind(mx.current_context(), data=(2, 1, 8, 8))
    ex.forward(is_train=is_train)
    return ex._plans[is_train]


def _plan_ops(sym, is_train=True):
    return [st.name for st in _plan(sym, is_train).steps]


@pytest.mark.parametrize('pool_type', ['avg', 'max'])
def test_the_graph_fuses_conv_relu_pool(pool_type):
    assert _plan_ops(_lenet_like(pool_type))[0] == FUSED[pool_type]


def test_the_graph_fuses_only_what_it_may():
    ops = _plan_ops(_lenet_like(pool_type='max', pool=(3, 3)))
    assert '_conv_act' in ops and 'Pooling' in ops       # overlapping windows
    ops = _plan_ops(_lenet_like(pool_type='sum'))
    assert '_conv_act' in ops and 'Pooling' in ops
    for kind in ('avg', 'max'):
        ops = _plan_ops(_lenet_like(kind, extra_reader=True))
        assert '_conv_act' in ops and FUSED[kind] not in ops
    # the relu's output is an output of the graph: nothing fuses into it
    data = mx.sym.var('data')
    a = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), num_filter=2))
    assert _plan_ops(mx.sym.Group([a, mx.sym.Pooling(
        a, kernel=(2, 2), stride=(2, 2), pool_type='avg')])) == \
        ['_conv_act', 'Pooling']


def test_only_the_inference_plan_skips_the_convolutions_output():
    op = OPS['_conv_act_maxpool']
    for is_train in (True, False):
        plan = _plan(_lenet_like('max'), is_train)
        infer = plan._run_infer.__globals__['f0']
        keep = plan._run_keep.__globals__['f0']
        assert infer == op.forward_infer and keep == op.forward
    plan = _plan(_lenet_like('avg'))                     # no such variant
    assert plan._run_infer.__globals__['f0'] == OPS['_conv_act_pool'].forward


@pytest.mark.parametrize('is_train', [True, False])
@pytest.mark.parametrize('pool_type', ['avg', 'max'])
def test_a_fused_graph_computes_what_the_ops_compute(is_train, pool_type):
    sym = _lenet_like(pool_type)
    ex = sym.simple_bind(mx.current_context(), data=(3, 1, 8, 8))
    rng = np.random.default_rng(2)
    for name, arr in ex.arg_dict.items():
        arr[:] = rng.standard_normal(arr.shape).astype(np.float32)
    out = ex.forward(is_train=is_train)[0].asnumpy()
    a = {k: v.copy() for k, v in ex.arg_dict.items()}
    ref = nd.FullyConnected(nd.Pooling(nd.relu(nd.Convolution(
        a['data'], a['c_weight'], a['c_bias'], kernel=(3, 3), num_filter=4)),
        kernel=(2, 2), stride=(2, 2), pool_type=pool_type), a['fc_weight'],
        a['fc_bias'], num_hidden=3)
    np.testing.assert_allclose(out, ref.asnumpy(), rtol=1e-6, atol=1e-6)
