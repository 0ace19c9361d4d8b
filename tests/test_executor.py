"""Executors (``sym.bind`` / ``simple_bind``) against imperative NDArray code.

The oracle of every operator is its imperative twin: :func:`check_symbolic`
builds the same computation twice from one function of ``F`` (``F = mx.sym``
on variables, ``F = nd`` on arrays under ``autograd.record()``), runs the
executor forward and backward with random head gradients, and asks for the
same outputs and the same gradient of every input.
"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd
from d2lmini.base import MXNetError

RNG = np.random.RandomState(0)


def _value(spec):
    """An input's value from its spec: a shape (uniform in [-1, 1]), a
    ``(shape, low, high)`` triple, or a fixed NumPy array."""
    if isinstance(spec, np.ndarray):
        return spec
    if len(spec) == 3 and isinstance(spec[0], tuple):
        shape, low, high = spec
        return RNG.uniform(low, high, shape).astype(np.float32)
    return RNG.uniform(-1, 1, spec).astype(np.float32)


def check_symbolic(fn, shapes, nograd=(), rtol=1e-5, atol=1e-6):
    """``fn(F, *inputs)`` bound as a Symbol == run imperatively, values and
    gradients.  ``shapes``: {input name: spec of :func:`_value`} in the
    order of ``fn``'s inputs; ``nograd``: inputs with no gradient (indices).
    """
    names = list(shapes)
    values = {n: _value(s) for n, s in shapes.items()}
    sym = fn(mx.sym, *[mx.sym.var(n) for n in names])
    if isinstance(sym, (list, tuple)):
        sym = mx.sym.Group(list(sym))
    assert sorted(sym.list_arguments()) == sorted(names)
    reqs = {n: 'null' if n in nograd else 'write' for n in names}
    ex = sym.bind(mx.current_context(), {n: nd.array(v, dtype=v.dtype) for n, v in values.items()},
                  args_grad={n: nd.zeros(v.shape, dtype=v.dtype)
                             for n, v in values.items()},
                  grad_req=reqs)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    assert len(outs) == len(sym.list_outputs())
    heads = [RNG.uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
    ex.backward([nd.array(h) for h in heads])

    arrays = [nd.array(values[n], dtype=values[n].dtype) for n in names]
    for n, a in zip(names, arrays):
        if n not in nograd:
            a.attach_grad()
    with autograd.record():
        want = fn(nd, *arrays)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    autograd.backward(want, [nd.array(h) for h in heads])
    assert len(want) == len(outs)
    for got, w in zip(outs, want):
        np.testing.assert_allclose(got, w.asnumpy(), rtol=rtol, atol=atol)
    for n, a in zip(names, arrays):
        if n in nograd:
            assert ex.grad_dict[n] is None or not ex.grad_dict[n].asnumpy().any()
            continue
        np.testing.assert_allclose(ex.grad_dict[n].asnumpy(), a.grad.asnumpy(),
                                   rtol=rtol, atol=atol, err_msg=f'gradient of {n}')
        assert np.abs(a.grad.asnumpy()).sum() > 0, \
            f'the gradient of {n} is all zero: the check would be vacuous'
    return outs


D = (3, 5)
IMG = (2, 3, 6, 6)
POS = (D, 0.5, 2.0)
CASES = {
    # layers, with their parameters passed in
    'FullyConnected': (lambda F, x, w, b: F.FullyConnected(x, w, b, num_hidden=4),
                       {'x': D, 'w': (4, 5), 'b': (4,)}),
    'FullyConnected_nobias': (
        lambda F, x, w: F.FullyConnected(x, w, num_hidden=4, no_bias=True),
        {'x': (3, 2, 3), 'w': (4, 6)}),
    'FullyConnected_noflatten': (
        lambda F, x, w, b: F.FullyConnected(x, w, b, num_hidden=4, flatten=False),
        {'x': (3, 2, 5), 'w': (4, 5), 'b': (4,)}),
    'Convolution': (lambda F, x, w, b: F.Convolution(x, w, b, kernel=(3, 3),
                                                     num_filter=4, pad=(1, 1)),
                    {'x': IMG, 'w': (4, 3, 3, 3), 'b': (4,)}),
    'Convolution_stride_group': (
        lambda F, x, w, b: F.Convolution(x, w, b, kernel=(3, 3), num_filter=4,
                                         stride=(2, 2), num_group=1),
        {'x': IMG, 'w': (4, 3, 3, 3), 'b': (4,)}),
    'Convolution_relu': (
        lambda F, x, w, b: F.relu(F.Convolution(x, w, b, kernel=(3, 3), num_filter=4)),
        {'x': IMG, 'w': (4, 3, 3, 3), 'b': (4,)}),
    'Conv_relu_avgpool': (
        lambda F, x, w, b: F.Pooling(F.Activation(F.Convolution(
            x, w, b, kernel=(3, 3), num_filter=4, pad=(1, 1)), act_type='relu'),
            kernel=(2, 2), stride=(2, 2), pool_type='avg'),
        {'x': IMG, 'w': (4, 3, 3, 3), 'b': (4,)}),
    'Pooling_max': (lambda F, x: F.Pooling(x, kernel=(2, 2), stride=(2, 2),
                                           pool_type='max'), {'x': IMG}),
    'Pooling_avg': (lambda F, x: F.Pooling(x, kernel=(3, 3), stride=(1, 1),
                                           pool_type='avg'), {'x': IMG}),
    'Pooling_global': (lambda F, x: F.Pooling(x, kernel=(1, 1), global_pool=True,
                                              pool_type='avg'), {'x': IMG}),
    'Activation_relu': (lambda F, x: F.Activation(x, act_type='relu'), {'x': D}),
    'Activation_sigmoid': (lambda F, x: F.Activation(x, act_type='sigmoid'), {'x': D}),
    'Activation_tanh': (lambda F, x: F.Activation(x, act_type='tanh'), {'x': D}),
    'Activation_softrelu': (lambda F, x: F.Activation(x, act_type='softrelu'),
                            {'x': D}),
    'LeakyReLU': (lambda F, x: F.LeakyReLU(x, act_type='leaky', slope=0.1), {'x': D}),
    'Flatten': (lambda F, x: F.Flatten(x) * 2, {'x': IMG}),
    'Dropout_p0': (lambda F, x: F.Dropout(x, p=0.0), {'x': D}),
    'Concat': (lambda F, x, y: F.Concat(x, y, dim=1),
               {'x': D, 'y': (3, 2)}),
    'concat_axis0': (lambda F, x, y: F.concat(x, y, dim=0), {'x': D, 'y': (1, 5)}),
    'softmax': (lambda F, x: F.softmax(x, axis=-1), {'x': D}),
    'log_softmax': (lambda F, x: F.log_softmax(x), {'x': D}),
    # elementwise arithmetic: symbols and scalars
    'add': (lambda F, x, y: x + y, {'x': D, 'y': D}),
    'sub': (lambda F, x, y: x - y, {'x': D, 'y': D}),
    'mul': (lambda F, x, y: x * y, {'x': D, 'y': D}),
    'div': (lambda F, x, y: x / y, {'x': D, 'y': POS}),
    'pow': (lambda F, x, y: x ** y, {'x': POS, 'y': D}),
    'scalars': (lambda F, x: (2 - x) * 3 + x / 4 - 1, {'x': D}),
    'rscalars': (lambda F, x: 2 / x + 3 ** x + x ** 2, {'x': POS}),
    'neg_abs': (lambda F, x: -abs(x), {'x': D}),
    'chain': (lambda F, x, y: F.tanh(F.exp(x) * y + F.sqrt(y)), {'x': D, 'y': POS}),
    'unary': (lambda F, x: F.sigmoid(x) + F.square(x) + F.log(x + 2) + F.sin(x),
              {'x': D}),
    'broadcast': (lambda F, x, y: F.broadcast_mul(x, y) + F.broadcast_add(x, y),
                  {'x': D, 'y': (1, 5)}),
    # shapes and reductions
    'reshape': (lambda F, x: F.reshape(x, shape=(5, 3)) * 2, {'x': D}),
    'reshape_special': (lambda F, x: F.reshape(x, shape=(0, -1)), {'x': IMG}),
    'transpose': (lambda F, x: F.transpose(x, axes=(0, 2, 1)) * 2, {'x': (2, 3, 4)}),
    'sum': (lambda F, x: F.sum(x, axis=1), {'x': D}),
    'mean_keepdims': (lambda F, x: F.mean(x, axis=0, keepdims=True), {'x': D}),
    'max': (lambda F, x: F.max(x, axis=1), {'x': D}),
    'expand_squeeze': (lambda F, x: F.squeeze(F.expand_dims(x, axis=1) * 2, axis=1),
                       {'x': D}),
    'slice_axis': (lambda F, x: F.slice_axis(x, axis=1, begin=1, end=4), {'x': D}),
    'fluent': (lambda F, x: x.reshape((5, 3)).sum(axis=0).exp(), {'x': D}),
    'dot': (lambda F, x, y: F.dot(x, y), {'x': D, 'y': (5, 2)}),
    'dot_transpose': (lambda F, x, y: F.dot(x, y, transpose_b=True),
                      {'x': D, 'y': (2, 5)}),
    'batch_dot': (lambda F, x, y: F.batch_dot(x, y), {'x': (2, 3, 4), 'y': (2, 4, 2)}),
    'clip': (lambda F, x: F.clip(x, -0.5, 0.5), {'x': D}),
    'take': (lambda F, x, i: F.take(x, i), {'x': D, 'i': np.array([2, 0], np.float32)}),
    'pick': (lambda F, x, i: F.pick(x, i, axis=1),
             {'x': D, 'i': np.array([0, 4, 1], np.float32)}),
    # several outputs
    'split': (lambda F, x: F.split(x, num_outputs=3, axis=0), {'x': (3, 4)}),
    'split_squeeze': (lambda F, x: F.SliceChannel(x, num_outputs=2, axis=1),
                      {'x': (3, 4)}),
    'two_heads': (lambda F, x, y: [x * y, F.relu(x)], {'x': D, 'y': D}),
}
NOGRAD = {'take': ('i',), 'pick': ('i',)}


@pytest.mark.parametrize('case', sorted(CASES))
def test_executor_matches_imperative(case):
    fn, shapes = CASES[case]
    check_symbolic(fn, shapes, nograd=NOGRAD.get(case, ()))


def test_comparisons_have_values_and_no_gradient():
    x = np.array([[1, 2, 3]], np.float32)
    y = np.array([[3, 2, 1]], np.float32)
    a, b = mx.sym.var('a'), mx.sym.var('b')
    for s, want in ((a > b, x > y), (a >= b, x >= y), (a < b, x < y),
                    (a <= b, x <= y), (a == b, x == y), (a != b, x != y),
                    (a > 1.5, x > 1.5)):
        feed = {'a': nd.array(x), 'b': nd.array(y)}
        feed = {k: v for k, v in feed.items() if k in s.list_arguments()}
        ex = s.bind(mx.current_context(), feed, args_grad={k: nd.ones((1, 3)) for k in feed})
        got = ex.forward(is_train=True)[0]
        np.testing.assert_array_equal(got.asnumpy(), want.astype(np.float32))
        ex.backward(nd.ones((1, 3)))
        for k in feed:                      # a step function: zero gradient
            np.testing.assert_array_equal(ex.grad_dict[k].asnumpy(), 0)


# --- BatchNorm and Dropout: train vs predict ------------------------------------
def _bn_symbol():
    return mx.sym.BatchNorm(mx.sym.var('data'), name='bn', momentum=0.5,
                            fix_gamma=False)


def test_batchnorm_training_updates_aux_states_like_imperative():
    x = RNG.randn(8, 3, 2, 2).astype(np.float32) * 2 + 1
    sym = _bn_symbol()
    assert sym.list_arguments() == ['data', 'bn_gamma', 'bn_beta']
    assert sym.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    ex = sym.simple_bind(mx.current_context(), data=x.shape)
    ex.arg_dict['bn_gamma'][:] = 1.5
    ex.arg_dict['bn_beta'][:] = 0.25
    ex.aux_dict['bn_moving_var'][:] = 1
    out = ex.forward(is_train=True, data=nd.array(x))[0].asnumpy()
    head = RNG.randn(*x.shape).astype(np.float32)
    ex.backward(nd.array(head))

    data, gamma, beta = nd.array(x), nd.full((3,), 1.5), nd.full((3,), 0.25)
    mean, var = nd.zeros(3), nd.ones(3)
    for a in (data, gamma, beta):
        a.attach_grad()
    with autograd.record():
        y = nd.BatchNorm(data, gamma, beta, mean, var, momentum=0.5, fix_gamma=False)
    y.backward(nd.array(head))
    np.testing.assert_allclose(out, y.asnumpy(), rtol=1e-5, atol=1e-5)
    for name, a in (('data', data), ('bn_gamma', gamma), ('bn_beta', beta)):
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), a.grad.asnumpy(),
                                   rtol=1e-4, atol=1e-5)
    # the moving statistics moved, exactly as the imperative op moved them
    batch_mean = x.mean(axis=(0, 2, 3))
    np.testing.assert_allclose(ex.aux_dict['bn_moving_mean'].asnumpy(),
                               0.5 * batch_mean, rtol=1e-5)
    np.testing.assert_allclose(ex.aux_dict['bn_moving_mean'].asnumpy(),
                               mean.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(ex.aux_dict['bn_moving_var'].asnumpy(),
                               var.asnumpy(), rtol=1e-6)


def test_batchnorm_inference_uses_aux_states_and_leaves_them():
    x = RNG.randn(4, 3, 2, 2).astype(np.float32)
    ex = _bn_symbol().simple_bind(mx.current_context(), data=x.shape, grad_req='null')
    mm = np.array([0.5, -1, 2], np.float32)
    mv = np.array([4, 1, 0.25], np.float32)
    ex.copy_params_from({'bn_gamma': nd.ones(3), 'bn_beta': nd.zeros(3)},
                        {'bn_moving_mean': nd.array(mm), 'bn_moving_var': nd.array(mv)})
    out = ex.forward(is_train=False, data=nd.array(x))[0].asnumpy()
    want = (x - mm[:, None, None]) / np.sqrt(mv[:, None, None] + 1e-3)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(ex.aux_dict['bn_moving_mean'].asnumpy(), mm)
    np.testing.assert_array_equal(ex.aux_dict['bn_moving_var'].asnumpy(), mv)


def test_dropout_is_identity_in_inference_and_masks_in_training():
    x = RNG.uniform(1, 2, (50, 40)).astype(np.float32)
    sym = mx.sym.Dropout(mx.sym.var('x'), p=0.5)
    ex = sym.bind(mx.current_context(), {'x': nd.array(x)}, args_grad={'x': nd.zeros(x.shape)})
    np.testing.assert_array_equal(ex.forward(is_train=False)[0].asnumpy(), x)
    out = ex.forward(is_train=True)[0].asnumpy()
    kept = out != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(out[kept], 2 * x[kept], rtol=1e-6)
    ex.backward(nd.ones(x.shape))
    # the gradient uses the same mask as the forward pass
    np.testing.assert_allclose(ex.grad_dict['x'].asnumpy(), 2.0 * kept, rtol=1e-6)


# --- grad_req -------------------------------------------------------------------------
def _fc_executor(grad_req):
    sym = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc')
    ex = sym.simple_bind(mx.current_context(), grad_req=grad_req, data=(3, 4))
    ex.arg_dict['data'][:] = nd.array(RNG.randn(3, 4))
    ex.arg_dict['fc_weight'][:] = nd.array(RNG.randn(2, 4))
    return ex


def test_grad_req_add_accumulates_and_write_overwrites():
    ex_w, ex_a = _fc_executor('write'), _fc_executor('add')
    ex_a.copy_params_from(ex_w.arg_dict)
    for _ in range(3):
        for ex in (ex_w, ex_a):
            ex.forward(is_train=True)
            ex.backward(nd.ones((3, 2)))
    for name in ('data', 'fc_weight', 'fc_bias'):
        np.testing.assert_allclose(ex_a.grad_dict[name].asnumpy(),
                                   3 * ex_w.grad_dict[name].asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(ex_w.grad_dict['fc_bias'].asnumpy(), [3, 3])


def test_grad_req_null_dict_and_list():
    ex = _fc_executor({'fc_weight': 'write', 'fc_bias': 'add'})
    assert ex.grad_dict['data'] is None          # unnamed in the dict: null
    ex.forward(is_train=True)
    ex.backward(nd.ones((3, 2)))
    np.testing.assert_allclose(ex.grad_dict['fc_weight'].asnumpy(),
                               ex.arg_dict['data'].asnumpy().sum(0)[None].repeat(2, 0),
                               rtol=1e-5)
    ex = _fc_executor(['null', 'write', 'null'])
    assert ex.grad_dict['data'] is None and ex.grad_dict['fc_bias'] is None
    ex.forward(is_train=True)
    ex.backward(nd.ones((3, 2)))
    assert ex.grad_dict['fc_weight'].asnumpy().any()
    ex = _fc_executor('null')
    assert all(g is None for g in ex.grad_arrays)
    ex.forward(is_train=True)
    ex.backward(nd.ones((3, 2)))                  # nothing to do, no error


def test_bind_with_args_grad_list_and_missing_grad_buffer_means_null():
    x, w = mx.sym.var('x'), mx.sym.var('w')
    sym = x * w
    gx = nd.zeros(2)
    ex = sym.bind(mx.current_context(), [nd.array([1, 2]), nd.array([3, 4])],
                  args_grad={'x': gx})
    ex.forward(is_train=True)
    ex.backward(nd.ones(2))
    np.testing.assert_array_equal(gx.asnumpy(), [3, 4])   # written into our array
    assert ex.grad_dict['w'] is None


# --- the executor's other methods ------------------------------------------------
def test_forward_kwargs_outputs_and_output_dict():
    a = mx.sym.var('a')
    sym = mx.sym.Group([a + 1, a * 2])
    ex = sym.simple_bind(mx.current_context(), a=(2,))
    outs = ex.forward(a=nd.array([1, 2]))
    assert [o.asnumpy().tolist() for o in outs] == [[2, 3], [2, 4]]
    assert list(ex.output_dict) == sym.list_outputs()
    np.testing.assert_array_equal(ex.arg_dict['a'].asnumpy(), [1, 2])   # copied in
    # outputs are the executor's arrays: the next forward overwrites them
    ex.forward(a=nd.array([5, 6]))
    assert outs[0].asnumpy().tolist() == [6, 7]


def test_copy_params_from_and_reshape_share_parameters():
    sym = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    ex = sym.simple_bind(mx.current_context(), data=(2, 4))
    w = RNG.randn(3, 4).astype(np.float32)
    ex.copy_params_from({'fc_weight': nd.array(w), 'fc_bias': nd.ones(3),
                         'other': nd.ones(1)}, allow_extra_params=True)
    with pytest.raises(ValueError, match="'other'"):
        ex.copy_params_from({'other': nd.ones(1)})
    with pytest.raises(ValueError, match="'fc_weight' has shape"):
        ex.copy_params_from({'fc_weight': nd.ones((4, 3))})
    ex2 = ex.reshape(data=(5, 4), allow_up_sizing=True)
    assert ex2.arg_dict['data'].shape == (5, 4)
    assert ex2.arg_dict['fc_weight'] is ex.arg_dict['fc_weight']
    x = RNG.randn(5, 4).astype(np.float32)
    out = ex2.forward(data=nd.array(x))[0].asnumpy()
    np.testing.assert_allclose(out, x @ w.T + 1, rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError, match='allow_up_sizing'):
        ex.reshape(data=(7, 4))
    small = ex.reshape(data=(1, 4))
    assert small.outputs[0].shape == (1, 3)
    # a smaller executor shares the memory of the first (MXNet's reshape)
    small.forward(data=nd.ones((1, 4)))
    np.testing.assert_allclose(ex.outputs[0].asnumpy()[0], w.sum(1) + 1, rtol=1e-5)
    np.testing.assert_array_equal(ex.arg_dict['data'].asnumpy()[0], [1, 1, 1, 1])


def test_backward_before_forward_and_loss_head_without_out_grads():
    x = mx.sym.var('x')
    ex = (x * 2).simple_bind(mx.current_context(), x=(2,))
    with pytest.raises(MXNetError, match='forward'):
        ex.backward()
    ex.forward(is_train=True)
    ex.backward()                                  # default head gradient: ones
    np.testing.assert_array_equal(ex.grad_dict['x'].asnumpy(), [2, 2])


def test_backward_after_inference_forward_differentiates_the_inference_graph():
    # MXNet allows forward() (is_train=False) then backward(): the gradient of
    # the predict-mode graph (Dropout off, BatchNorm on its moving statistics)
    x = RNG.randn(4, 3).astype(np.float32)
    sym = mx.sym.Dropout(mx.sym.BatchNorm(mx.sym.var('data'), name='bn',
                                          fix_gamma=False), p=0.5)
    ex = sym.simple_bind(mx.current_context(), data=x.shape)
    ex.arg_dict['bn_gamma'][:] = 2
    ex.aux_dict['bn_moving_var'][:] = 4
    ex.forward(data=nd.array(x))
    ex.backward(nd.ones(x.shape))
    np.testing.assert_allclose(ex.grad_dict['data'].asnumpy(),
                               np.full(x.shape, 2 / np.sqrt(4 + 1e-3)), rtol=1e-5)
    np.testing.assert_array_equal(ex.aux_dict['bn_moving_var'].asnumpy(), [4, 4, 4])
    np.testing.assert_array_equal(ex.aux_dict['bn_moving_mean'].asnumpy(), [0, 0, 0])


def test_executor_on_cpu1_and_eval():
    sym = mx.sym.relu(mx.sym.var('x') - 1)
    ex = sym.bind(mx.cpu(1), {'x': nd.array([0, 3], ctx=mx.cpu(1))})
    assert ex.forward()[0].context == mx.cpu(1)
    assert ex.outputs[0].asnumpy().tolist() == [0, 2]
    assert sym.eval(x=nd.array([2, 4]))[0].asnumpy().tolist() == [1, 3]
    with pytest.raises(ValueError, match='cpu'):
        sym.bind(mx.cpu(0), {'x': nd.array([0, 3], ctx=mx.cpu(1))})


def test_training_a_symbolic_mlp_by_hand_matches_autograd_sgd():
    """Five SGD steps through an executor == five through autograd."""
    data = mx.sym.var('data')
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name='fc1'),
                          act_type='relu')
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name='fc2'),
                               name='softmax')
    x = RNG.randn(6, 4).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2], np.float32)
    ex = net.simple_bind(mx.current_context(), data=x.shape)
    params = {n: RNG.randn(*a.shape).astype(np.float32) * 0.5
              for n, a in ex.arg_dict.items() if n.startswith('fc')}
    ex.copy_params_from({n: nd.array(v) for n, v in params.items()})
    ws = {n: nd.array(v) for n, v in params.items()}
    for w in ws.values():
        w.attach_grad()
    lr = 0.1
    for _ in range(5):
        ex.forward(is_train=True, data=nd.array(x), softmax_label=nd.array(y))
        ex.backward()
        for n in params:
            ex.arg_dict[n][:] = ex.arg_dict[n] - lr * ex.grad_dict[n]
        with autograd.record():
            z = nd.FullyConnected(nd.relu(nd.FullyConnected(
                nd.array(x), ws['fc1_weight'], ws['fc1_bias'], num_hidden=8)),
                ws['fc2_weight'], ws['fc2_bias'], num_hidden=3)
            loss = -nd.log_softmax(z).pick(nd.array(y), axis=1).sum()
        loss.backward()
        for w in ws.values():
            w[:] = w - lr * w.grad
    for n in params:
        np.testing.assert_allclose(ex.arg_dict[n].asnumpy(), ws[n].asnumpy(),
                                   rtol=1e-4, atol=1e-5)


def _total_mb(ex):
    return int(ex.debug_str().rsplit('Total ', 1)[1].split(' MB')[0])


def test_debug_str_memory_and_zero_propagation():
    # six squarings of a 1 MB array: recording keeps all six results for
    # backward; without gradients the plan holds two at a time
    data = mx.sym.var('data')
    for _ in range(6):
        data = data * data
    shape = (256, 1024)
    train = data.simple_bind(mx.current_context(), data=shape)
    infer = data.simple_bind(mx.current_context(), data=shape, grad_req='null')
    cut = mx.sym.stop_gradient(data).simple_bind(mx.current_context(), data=shape)
    assert _total_mb(train) == 6
    assert _total_mb(infer) == _total_mb(cut) == 2
    assert train.debug_str().count('multiply') == 6       # one line a step
    # behind stop_gradient nothing is recorded; backward writes zeros
    x = nd.array(np.full(shape, 1.01, np.float32))
    cut.grad_dict['data'][:] = 5
    out = cut.forward(is_train=True, data=x)[0]
    assert out._node is None
    np.testing.assert_allclose(out.asnumpy(), 1.01 ** 64, rtol=1e-4)
    cut.backward(nd.ones(shape))
    assert not cut.grad_dict['data'].asnumpy().any()
