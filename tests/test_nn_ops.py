"""The neural-network operators against naive NumPy loops and PyTorch.

Values: each op against a reference written the slow, obvious way (loops
over output pixels), and against PyTorch when it is installed.  Gradients:
against PyTorch here (the central-difference checks of every op are in
tests/test_grad_registry.py).  Also: float32 stays float32, errors name the
op and the shapes, unknown keywords are refused, both engine modes agree.
"""
import math

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd

from oracles import needs_torch, tF, torch


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def distinct(*shape, seed=0):
    """Values with no ties (max pooling picks a unique winner)."""
    n = math.prod(shape)
    return (np.random.default_rng(seed).permutation(n) / n - 0.5).astype(
        np.float32).reshape(shape)


def grads_of(f, *arrays, ctx=None, head=None):
    """Run ``f`` on NDArrays made from ``arrays`` under record; return
    (output, [gradients])."""
    xs = [nd.array(a, ctx=ctx, dtype=a.dtype) for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = f(*xs)
    y.backward(None if head is None else nd.array(head, ctx=ctx, dtype=head.dtype))
    return y.asnumpy(), [x.grad.asnumpy() for x in xs]


def torch_grads(f, *arrays, head=None):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = f(*ts)
    y.backward(torch.ones_like(y) if head is None else torch.tensor(head))
    return y.detach().numpy(), [t.grad.numpy() for t in ts]


def close(a, b, rtol=1e-4, atol=1e-5, **kw):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, **kw)


# --- naive references ----------------------------------------------------------------
def conv_ref(x, w, b=None, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for k in range(f):
        grp = k // fg
        for i in range(oh):
            for j in range(ow):
                h0, w0 = i * stride[0], j * stride[1]
                win = xp[:, grp * cg:(grp + 1) * cg,
                         h0:h0 + dilate[0] * (kh - 1) + 1:dilate[0],
                         w0:w0 + dilate[1] * (kw - 1) + 1:dilate[1]]
                out[:, k, i, j] = (win * w[k]).sum(axis=(1, 2, 3))
    if b is not None:
        out += b[None, :, None, None]
    return out


def pool_ref(x, kernel, stride=(1, 1), pad=(0, 0), pool_type='max', full=False,
             count_include_pad=True):
    """MXNet's pooling loops (src/operator/nn/pool.h), one output at a time."""
    n, c, h, w = x.shape
    rnd_ = math.ceil if full else math.floor
    oh = int(rnd_((h + 2 * pad[0] - kernel[0]) / stride[0])) + 1
    ow = int(rnd_((w + 2 * pad[1] - kernel[1]) / stride[1])) + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        hs = i * stride[0] - pad[0]
        he = min(hs + kernel[0], h + pad[0])
        for j in range(ow):
            ws = j * stride[1] - pad[1]
            we = min(ws + kernel[1], w + pad[1])
            size = (he - hs) * (we - ws)
            h0, h1, w0, w1 = max(hs, 0), min(he, h), max(ws, 0), min(we, w)
            win = x[:, :, h0:h1, w0:w1].astype(np.float64)
            if pool_type == 'max':
                out[:, :, i, j] = win.max(axis=(2, 3))
            elif pool_type == 'sum':
                out[:, :, i, j] = win.sum(axis=(2, 3))
            else:
                if not count_include_pad:
                    size = (h1 - h0) * (w1 - w0)
                out[:, :, i, j] = win.sum(axis=(2, 3)) / size
    return out


def softmax_ref(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# --- FullyConnected ----------------------------------------------------------------
def test_fully_connected_values_and_grads(ctx):
    x, w, b = rnd(4, 3, 2), rnd(5, 6, seed=1), rnd(5, seed=2)
    y, (gx, gw, gb) = grads_of(
        lambda x, w, b: nd.FullyConnected(x, w, b, num_hidden=5), x, w, b, ctx=ctx)
    assert y.dtype == np.float32 and y.shape == (4, 5)
    x2 = x.reshape(4, 6)
    close(y, x2 @ w.T + b)
    close(gx, (np.ones((4, 5)) @ w).reshape(x.shape))
    close(gw, np.ones((4, 5)).T @ x2)
    close(gb, np.full(5, 4.0))


def test_fully_connected_no_flatten_and_no_bias(ctx):
    x, w = rnd(2, 3, 4), rnd(5, 4, seed=1)
    y = nd.FullyConnected(nd.array(x), nd.array(w), num_hidden=5, no_bias=True,
                          flatten=False)
    assert y.shape == (2, 3, 5)
    close(y.asnumpy(), x @ w.T)


@needs_torch
def test_fully_connected_vs_torch(ctx):
    x, w, b = rnd(8, 7), rnd(3, 7, seed=1), rnd(3, seed=2)
    head = rnd(8, 3, seed=3)
    ours = grads_of(lambda x, w, b: nd.FullyConnected(x, w, b, num_hidden=3),
                    x, w, b, ctx=ctx, head=head)
    ref = torch_grads(tF.linear, x, w, b, head=head)
    close(ours[0], ref[0])
    for a, r in zip(ours[1], ref[1]):
        close(a, r)


# --- Convolution -----------------------------------------------------------------------
CONVS = [  # data shape, weight shape, keywords
    ((2, 3, 7, 7), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {'stride': (2, 1), 'pad': (1, 1)}),
    ((1, 4, 9, 9), (6, 2, 3, 3), {'dilate': 2, 'pad': 1, 'num_group': 2}),
    ((3, 2, 8, 8), (5, 2, 5, 5), {'stride': 3, 'pad': 2}),
    ((2, 6, 5, 5), (6, 1, 3, 3), {'num_group': 6, 'pad': 1}),      # depthwise
    ((4, 3, 6, 6), (2, 3, 1, 1), {}),                             # 1x1
]


def _conv_kwargs(wshape, kw):
    out = {'kernel': wshape[2:], 'num_filter': wshape[0]}
    out.update(kw)
    return out


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize('dshape,wshape,kw', CONVS)
def test_convolution_matches_loops(ctx, dshape, wshape, kw):
    x, w, b = rnd(*dshape), rnd(*wshape, seed=1), rnd(wshape[0], seed=2)
    y = nd.Convolution(nd.array(x), nd.array(w), nd.array(b), **_conv_kwargs(wshape, kw))
    assert y.dtype == np.float32
    ref = conv_ref(x, w, b, _pair(kw.get('stride', 1)), _pair(kw.get('pad', 0)),
                   _pair(kw.get('dilate', 1)), kw.get('num_group', 1))
    assert y.shape == ref.shape
    close(y.asnumpy(), ref)


@needs_torch
@pytest.mark.parametrize('dshape,wshape,kw', CONVS)
def test_convolution_grads_vs_torch(ctx, engine_kind, dshape, wshape, kw):
    x, w, b = rnd(*dshape), rnd(*wshape, seed=1), rnd(wshape[0], seed=2)
    ours = grads_of(lambda x, w, b: nd.Convolution(x, w, b, **_conv_kwargs(wshape, kw)),
                    x, w, b, ctx=ctx)
    head = rnd(*ours[0].shape, seed=3)
    ours = grads_of(lambda x, w, b: nd.Convolution(x, w, b, **_conv_kwargs(wshape, kw)),
                    x, w, b, ctx=ctx, head=head)
    ref = torch_grads(lambda x, w, b: tF.conv2d(
        x, w, b, stride=kw.get('stride', 1), padding=kw.get('pad', 0),
        dilation=kw.get('dilate', 1), groups=kw.get('num_group', 1)), x, w, b, head=head)
    close(ours[0], ref[0])
    for name, a, r in zip('xwb', ours[1], ref[1]):
        assert a.dtype == np.float32, name
        close(a, r, err_msg=f'gradient of {name}')


def test_convolution_without_bias_and_1d(ctx):
    x, w = rnd(2, 3, 10), rnd(4, 3, 3, seed=1)
    y = nd.Convolution(nd.array(x), nd.array(w), kernel=3, num_filter=4, stride=2,
                       pad=1, no_bias=True)
    ref = conv_ref(x[:, :, None], w[:, :, None], None, (1, 2), (0, 1))[:, :, 0]
    assert y.shape == ref.shape == (2, 4, 5)
    close(y.asnumpy(), ref)


@needs_torch
def test_convolution_1d_grads_vs_torch(ctx):
    x, w, b = rnd(2, 4, 11), rnd(6, 2, 3, seed=1), rnd(6, seed=2)
    ours = grads_of(lambda x, w, b: nd.Convolution(
        x, w, b, kernel=(3,), num_filter=6, num_group=2, dilate=2), x, w, b, ctx=ctx)
    ref = torch_grads(lambda x, w, b: tF.conv1d(x, w, b, groups=2, dilation=2), x, w, b)
    close(ours[0], ref[0])
    for a, r in zip(ours[1], ref[1]):
        close(a, r)


def test_convolution_skips_unneeded_data_gradient(ctx):
    """The first layer's input needs no gradient: none is computed."""
    x = nd.array(rnd(2, 3, 5, 5))
    w = nd.array(rnd(4, 3, 3, 3, seed=1))
    w.attach_grad()
    with mx.engine.Trace() as tr, autograd.record():
        y = nd.Convolution(x, w, kernel=3, num_filter=4, no_bias=True)
        y.backward()
    names = [s[1] for s in tr.spans()]
    assert '_conv_weight_grad' in names and '_conv_data_grad' not in names
    xv = x.asnumpy()
    ref = np.array([[[xv[:, c, i:i + 3, j:j + 3].sum() for j in range(3)]
                     for i in range(3)] for c in range(3)])
    close(w.grad.asnumpy(), np.broadcast_to(ref, (4, 3, 3, 3)))
    x.attach_grad()                     # both wanted: one fused backward op
    with mx.engine.Trace() as tr, autograd.record():
        nd.Convolution(x, w, kernel=3, num_filter=4, no_bias=True).backward()
    names = [s[1] for s in tr.spans()]
    assert '_conv_backward' in names and '_conv_weight_grad' not in names


def test_convolution_results_are_not_scratch_buffers(ctx):
    """Scratch buffers are reused between calls; results never alias them."""
    x1, x2 = nd.array(rnd(2, 3, 6, 6)), nd.array(rnd(2, 3, 6, 6, seed=5))
    w = nd.array(rnd(4, 3, 3, 3, seed=1))
    y1 = nd.Convolution(x1, w, kernel=3, num_filter=4, no_bias=True)
    y1v = y1.asnumpy()
    y2 = nd.Convolution(x2, w, kernel=3, num_filter=4, no_bias=True)
    y2.wait_to_read()
    close(y1.asnumpy(), y1v)
    close(y2.asnumpy(), conv_ref(x2.asnumpy(), w.asnumpy()))


def test_convolution_on_a_transposed_view(ctx):
    x = rnd(3, 2, 5, 5)
    xt = nd.array(x).transpose((1, 0, 2, 3))          # non-contiguous NumPy view
    w = rnd(4, 3, 3, 3, seed=1)
    y = nd.Convolution(xt, nd.array(w), kernel=3, num_filter=4, no_bias=True)
    close(y.asnumpy(), conv_ref(x.transpose(1, 0, 2, 3), w))


def test_convolution_on_two_cpu_devices_at_once():
    """Each device's worker has its own scratch buffers."""
    outs, refs = [], []
    for i, dev in enumerate([mx.cpu(0), mx.cpu(1)] * 3):
        x, w = rnd(4, 3, 8 + i, 8, seed=i), rnd(5, 3, 3, 3, seed=10 + i)
        outs.append(nd.Convolution(nd.array(x, ctx=dev), nd.array(w, ctx=dev),
                                   kernel=3, num_filter=5, pad=1, no_bias=True))
        refs.append(conv_ref(x, w, pad=(1, 1)))
    for o, r in zip(outs, refs):
        close(o.asnumpy(), r)


def test_convolution_big_batch_in_several_bands(ctx):
    """A batch whose cols span several bands (the default band size)."""
    x, w, b = rnd(32, 16, 24, 24), rnd(8, 16, 3, 3, seed=1), rnd(8, seed=2)
    head = rnd(32, 8, 24, 24, seed=3)
    y, (gx, gw, gb) = grads_of(lambda x, w, b: nd.Convolution(
        x, w, b, kernel=3, num_filter=8, pad=1), x, w, b, ctx=ctx, head=head)
    close(y, conv_ref(x, w, b, pad=(1, 1)))
    close(gb, head.sum(axis=(0, 2, 3)), rtol=1e-3)
    if torch is not None:
        ref = torch_grads(lambda x, w, b: tF.conv2d(x, w, b, padding=1), x, w, b,
                          head=head)
        close(gx, ref[1][0], rtol=1e-3, atol=1e-4)
        close(gw, ref[1][1], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize('dshape,wshape,kw', CONVS)
def test_convolution_in_bands_of_rows_equals_all_at_once(ctx, monkeypatch, dshape,
                                                         wshape, kw):
    """cols are built a band of output rows at a time (to stay in the CPU
    cache); any band size gives the same values and gradients."""
    from d2lmini.ndarray.nn import im2col
    x, w, b = rnd(*dshape), rnd(*wshape, seed=1), rnd(wshape[0], seed=2)
    f = lambda x, w, b: nd.Convolution(x, w, b, **_conv_kwargs(wshape, kw))  # noqa
    head = rnd(*nd.Convolution(nd.array(x), nd.array(w), nd.array(b),
                               **_conv_kwargs(wshape, kw)).shape, seed=3)
    monkeypatch.setattr(im2col, '_BAND', 1 << 40)        # one band
    whole = grads_of(f, x, w, b, ctx=ctx, head=head)
    monkeypatch.setattr(im2col, '_BAND', 1)              # one row per band
    rows = grads_of(f, x, w, b, ctx=ctx, head=head)
    close(rows[0], whole[0])
    for a, r in zip(rows[1], whole[1]):
        close(a, r)


def test_convolution_float64_stays_float64(ctx):
    x, w = rnd(2, 2, 5, 5, dtype=np.float64), rnd(3, 2, 3, 3, seed=1, dtype=np.float64)
    y = nd.Convolution(nd.array(x, dtype='float64'), nd.array(w, dtype='float64'),
                       kernel=3, num_filter=3, no_bias=True)
    assert y.dtype == np.float64 and y.asnumpy().dtype == np.float64
    close(y.asnumpy(), conv_ref(x, w), rtol=1e-12, atol=1e-12)


# --- Pooling ---------------------------------------------------------------------------
POOLS = [  # data shape, keywords (MXNet's), torch call or None
    ((2, 3, 8, 8), {'kernel': 2, 'stride': 2}),
    ((2, 3, 9, 9), {'kernel': 3, 'stride': 2, 'pad': 1}),
    ((2, 3, 7, 7), {'kernel': 3, 'stride': 2, 'pooling_convention': 'full'}),
    ((2, 2, 8, 8), {'kernel': 3, 'stride': 1}),                 # MXNet's default stride 1
    ((2, 3, 8, 8), {'kernel': 2, 'stride': 2, 'pool_type': 'avg'}),
    ((2, 3, 7, 7), {'kernel': 3, 'stride': 2, 'pad': 1, 'pool_type': 'avg'}),
    ((2, 3, 7, 7), {'kernel': 3, 'stride': 2, 'pad': 1, 'pool_type': 'avg',
                    'count_include_pad': False}),
    ((2, 3, 6, 6), {'kernel': 3, 'stride': 2, 'pad': 1, 'pool_type': 'avg',
                    'pooling_convention': 'full'}),
    ((2, 3, 6, 7), {'kernel': (2, 3), 'stride': (2, 1), 'pool_type': 'sum'}),
]


def _ref_args(kw):
    return dict(kernel=_pair(kw['kernel']), stride=_pair(kw.get('stride', 1)),
                pad=_pair(kw.get('pad', 0)), pool_type=kw.get('pool_type', 'max'),
                full=kw.get('pooling_convention') == 'full',
                count_include_pad=kw.get('count_include_pad', True))


@pytest.mark.parametrize('shape,kw', POOLS)
def test_pooling_matches_loops(ctx, shape, kw):
    x = distinct(*shape)
    y = nd.Pooling(nd.array(x), **kw)
    assert y.dtype == np.float32
    ref = pool_ref(x, **_ref_args(kw))
    assert y.shape == ref.shape
    close(y.asnumpy(), ref)


def _torch_pool(kw):
    k, s, p = _pair(kw['kernel']), _pair(kw.get('stride', 1)), _pair(kw.get('pad', 0))
    ceil = kw.get('pooling_convention') == 'full'
    t = kw.get('pool_type', 'max')
    if t == 'max':
        return lambda x: tF.max_pool2d(x, k, s, p, ceil_mode=ceil)
    if t == 'avg':
        return lambda x: tF.avg_pool2d(x, k, s, p, ceil_mode=ceil,
                                       count_include_pad=kw.get('count_include_pad',
                                                                True))
    return lambda x: tF.avg_pool2d(x, k, s, p, ceil_mode=ceil) * (k[0] * k[1])


@needs_torch
@pytest.mark.parametrize('shape,kw', POOLS)
def test_pooling_grads_vs_torch(ctx, engine_kind, shape, kw):
    x = distinct(*shape)
    y0 = nd.Pooling(nd.array(x), **kw)
    head = rnd(*y0.shape, seed=3)
    ours = grads_of(lambda x: nd.Pooling(x, **kw), x, ctx=ctx, head=head)
    ref = torch_grads(_torch_pool(kw), x, head=head)
    close(ours[0], ref[0])
    assert ours[1][0].dtype == np.float32
    close(ours[1][0], ref[1][0])


def test_max_pooling_gradient_goes_to_the_first_maximum(ctx):
    """Ties (e.g. zeros after ReLU): one winner per window, the first one."""
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 2:, 2:] = [[1, 1], [0, 1]]
    _, (gx,) = grads_of(lambda x: nd.Pooling(x, kernel=2, stride=2), x, ctx=ctx)
    expect = np.zeros((4, 4))
    expect[0, 0] = expect[0, 2] = expect[2, 0] = expect[2, 2] = 1
    close(gx[0, 0], expect)
    # overlapping windows: gradients of shared winners add up
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    _, (gx,) = grads_of(lambda x: nd.Pooling(x, kernel=2, stride=1), x, ctx=ctx)
    close(gx[0, 0], [[0, 0, 0], [0, 1, 1], [0, 1, 1]])


@pytest.mark.parametrize('pool_type', ['max', 'avg', 'sum'])
def test_global_pooling(ctx, pool_type):
    x = distinct(2, 3, 5, 4)
    f = {'max': np.max, 'avg': np.mean, 'sum': np.sum}[pool_type]
    y, (gx,) = grads_of(lambda x: nd.Pooling(x, global_pool=True, pool_type=pool_type),
                        x, ctx=ctx)
    assert y.shape == (2, 3, 1, 1) and y.dtype == np.float32
    close(y, f(x, axis=(2, 3), keepdims=True))
    if pool_type == 'max':
        expect = (x == x.max(axis=(2, 3), keepdims=True)).astype(np.float32)
    else:
        expect = np.full(x.shape, 1 / 20 if pool_type == 'avg' else 1.0)
    close(gx, expect)


def test_pooling_1d(ctx):
    x = distinct(2, 3, 9)
    y = nd.Pooling(nd.array(x), kernel=3, stride=2, pool_type='avg')
    close(y.asnumpy(), pool_ref(x[:, :, None], (1, 3), (1, 2), pool_type='avg')[:, :, 0])
    g = nd.Pooling(nd.array(x), global_pool=True)
    assert g.shape == (2, 3, 1)
    close(g.asnumpy(), x.max(axis=2, keepdims=True))


# --- activations --------------------------------------------------------------------------
ACTS = {
    'relu': (lambda a: np.maximum(a, 0), lambda t: torch.relu(t)),
    'sigmoid': (lambda a: 1 / (1 + np.exp(-a)), lambda t: torch.sigmoid(t)),
    'tanh': (np.tanh, lambda t: torch.tanh(t)),
    'softrelu': (lambda a: np.log1p(np.exp(a)), lambda t: tF.softplus(t)),
    'softsign': (lambda a: a / (1 + np.abs(a)), lambda t: tF.softsign(t)),
}


@pytest.mark.parametrize('act', sorted(ACTS))
def test_activation(ctx, act):
    x = rnd(3, 5) * 3
    y = nd.Activation(nd.array(x), act_type=act)
    assert y.dtype == np.float32
    close(y.asnumpy(), ACTS[act][0](x.astype(np.float64)))
    if torch is not None:
        ours = grads_of(lambda x: nd.Activation(x, act_type=act), x, ctx=ctx)
        ref = torch_grads(ACTS[act][1], x)
        close(ours[1][0], ref[1][0])


def test_activation_large_inputs_do_not_overflow(ctx):
    x = nd.array([-1000.0, 0.0, 1000.0])
    close(nd.Activation(x, act_type='sigmoid').asnumpy(), [0, 0.5, 1])
    close(nd.Activation(x, act_type='softrelu').asnumpy(), [0, math.log(2), 1000])


@needs_torch
@pytest.mark.parametrize('act,kw,tf', [
    ('leaky', {'slope': 0.1}, lambda t: tF.leaky_relu(t, 0.1)),
    ('elu', {'slope': 0.7}, lambda t: tF.elu(t, 0.7)),
    ('selu', {}, lambda t: tF.selu(t)),
])
def test_leaky_relu_family_vs_torch(ctx, act, kw, tf):
    x = rnd(4, 6) * 2
    ours = grads_of(lambda x: nd.LeakyReLU(x, act_type=act, **kw), x, ctx=ctx)
    ref = torch_grads(tf, x)
    close(ours[0], ref[0])
    close(ours[1][0], ref[1][0])


@needs_torch
def test_prelu_vs_torch(ctx):
    x, gamma = rnd(2, 3, 4), np.array([0.1, 0.2, 0.3], np.float32)
    ours = grads_of(lambda x, g: nd.LeakyReLU(x, g, act_type='prelu'), x, gamma, ctx=ctx)
    ref = torch_grads(tF.prelu, x, gamma)
    close(ours[0], ref[0])
    for a, r in zip(ours[1], ref[1]):
        close(a, r)


# --- softmax family ----------------------------------------------------------------------
@pytest.mark.parametrize('axis', [-1, 0, 1])
def test_softmax_and_log_softmax(ctx, axis):
    x = rnd(3, 4, 5) * 4
    s = nd.softmax(nd.array(x), axis=axis)
    ls = nd.log_softmax(nd.array(x), axis=axis)
    assert s.dtype == ls.dtype == np.float32
    close(s.asnumpy(), softmax_ref(x.astype(np.float64), axis))
    close(ls.asnumpy(), np.log(softmax_ref(x.astype(np.float64), axis)))
    close(nd.array(x).softmax(axis=axis).asnumpy(), s.asnumpy())
    if torch is not None:
        head = rnd(3, 4, 5, seed=7)
        for ours_f, t_f in [(nd.softmax, torch.softmax),
                            (nd.log_softmax, torch.log_softmax)]:
            ours = grads_of(lambda x: ours_f(x, axis=axis), x, ctx=ctx, head=head)
            ref = torch_grads(lambda t: t_f(t, dim=axis), x, head=head)
            close(ours[1][0], ref[1][0])


def test_softmax_temperature_and_stability(ctx):
    x = np.array([[1000.0, 1001.0, 1002.0]], np.float32)
    close(nd.softmax(nd.array(x)).asnumpy(), softmax_ref(x - 1000))
    close(nd.log_softmax(nd.array(x)).asnumpy(), np.log(softmax_ref(x - 1000)))
    y = rnd(2, 5)
    close(nd.softmax(nd.array(y), temperature=2.0).asnumpy(), softmax_ref(y / 2))


def test_softmax_cross_entropy(ctx):
    x, label = rnd(4, 3), np.array([0, 2, 1, 2], np.float32)
    y, (gx, _) = grads_of(nd.softmax_cross_entropy, x, label, ctx=ctx)
    p = softmax_ref(x.astype(np.float64))
    assert y.shape == (1,) and y.dtype == np.float32
    close(y, [-np.log(p[range(4), label.astype(int)]).sum()])
    close(gx, p - np.eye(3)[label.astype(int)])
    if torch is not None:
        ref = tF.cross_entropy(torch.tensor(x), torch.tensor(label).long(),
                               reduction='sum')
        close(y, [ref.item()])


def test_softmax_output_forward_and_its_loss_gradient(ctx):
    x, label = rnd(4, 3), np.array([0, 2, 1, 2], np.float32)
    xs, ls = nd.array(x), nd.array(label)
    xs.attach_grad()
    with autograd.record():
        p = nd.SoftmaxOutput(xs, ls, grad_scale=2.0)
    p.backward(nd.full(p.shape, 123.0))      # the head gradient is ignored
    ref = softmax_ref(x.astype(np.float64))
    close(p.asnumpy(), ref)
    close(xs.grad.asnumpy(), 2 * (ref - np.eye(3)[label.astype(int)]))
    # ignore_label rows get no gradient; 'valid' divides by the valid count
    ls2 = nd.array([0, -1, 1, -1])
    with autograd.record():
        p = nd.SoftmaxOutput(xs, ls2, use_ignore=True, normalization='valid')
    p.backward()
    g = (ref - np.eye(3)[[0, 0, 1, 0]]) / 2
    g[[1, 3]] = 0
    close(xs.grad.asnumpy(), g)


# --- Dropout --------------------------------------------------------------------------------
def test_dropout_is_identity_when_predicting(ctx):
    x = nd.array(rnd(10, 10))
    close(nd.Dropout(x, p=0.5).asnumpy(), x.asnumpy())
    with autograd.record(train_mode=False):
        close(nd.Dropout(x, p=0.5).asnumpy(), x.asnumpy())


@pytest.mark.parametrize('p', [0.2, 0.5, 0.8])
def test_dropout_statistics_in_training(ctx, p):
    x = nd.ones((400, 500))
    with autograd.train_mode():
        y = nd.Dropout(x, p=p).asnumpy()
    assert y.dtype == np.float32
    kept = y != 0
    assert abs(1 - kept.mean() - p) < 0.01
    close(y[kept], 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean() - 1) < 0.02                       # the mean is preserved


def test_dropout_mode_always_axes_and_gradient(ctx):
    x = nd.array(rnd(50, 3, 40))
    y = nd.Dropout(x, p=0.5, mode='always', axes=(2,)).asnumpy()
    ratio = y / x.asnumpy()
    assert np.allclose(ratio, ratio[:, :, :1])            # one mask value along axis 2
    assert set(np.round(np.unique(ratio), 5)) <= {0.0, 2.0}
    x.attach_grad()
    with autograd.record():
        y = nd.Dropout(x, p=0.3)
    y.backward()
    close(x.grad.asnumpy(), (y.asnumpy() != 0) / 0.7, rtol=1e-6)


def test_dropout_reproducible_with_seed(ctx, engine_kind):
    def draw():
        mx.random.seed(7)
        with autograd.train_mode():
            return nd.Dropout(nd.ones((20, 20)), p=0.5).asnumpy()
    a, b = draw(), draw()
    np.testing.assert_array_equal(a, b)
    with autograd.train_mode():
        c = nd.Dropout(nd.ones((20, 20)), p=0.5).asnumpy()
    assert not np.array_equal(a, c)


@needs_torch
def test_dropout_statistics_like_torch():
    t = tF.dropout(torch.ones(400, 500), p=0.3, training=True).numpy()
    with autograd.train_mode():
        o = nd.Dropout(nd.ones((400, 500)), p=0.3).asnumpy()
    assert abs((t == 0).mean() - (o == 0).mean()) < 0.01
    assert set(np.unique(o).round(5)) == set(np.unique(t).round(5))


# --- BatchNorm -------------------------------------------------------------------------------
def bn_args(c, seed=0):
    r = np.random.default_rng(seed)
    return [r.uniform(0.5, 1.5, c).astype(np.float32), r.uniform(-1, 1, c).astype(
        np.float32), r.uniform(-1, 1, c).astype(np.float32),
        r.uniform(0.5, 1.5, c).astype(np.float32)]


@pytest.mark.parametrize('shape,axis', [((8, 3, 4, 4), 1), ((16, 5), 1), ((4, 3, 6), -1)])
@pytest.mark.parametrize('fix_gamma', [True, False])
def test_batchnorm_training_updates_moving_stats(ctx, engine_kind, shape, axis,
                                                fix_gamma):
    x = rnd(*shape) * 2 + 1
    c = shape[axis]
    gamma, beta, mm0, mv0 = bn_args(c)
    mm, mv = nd.array(mm0), nd.array(mv0)
    with autograd.record():
        y = nd.BatchNorm(nd.array(x), nd.array(gamma), nd.array(beta), mm, mv,
                         eps=1e-5, momentum=0.9, fix_gamma=fix_gamma, axis=axis)
    assert y.dtype == np.float32
    red = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    bs = [1] * len(shape)
    bs[axis] = -1
    mean, var = x.mean(axis=red), x.var(axis=red)
    g = np.ones(c) if fix_gamma else gamma
    ref = (x - mean.reshape(bs)) / np.sqrt(var.reshape(bs) + 1e-5) * g.reshape(bs) \
        + beta.reshape(bs)
    close(y.asnumpy(), ref)
    close(mm.asnumpy(), 0.9 * mm0 + 0.1 * mean)          # in place, MXNet's formula
    close(mv.asnumpy(), 0.9 * mv0 + 0.1 * var)           # (biased batch variance)


def test_batchnorm_inference_uses_moving_stats(ctx):
    x = rnd(4, 3, 2, 2)
    gamma, beta, mm0, mv0 = bn_args(3)
    mm, mv = nd.array(mm0), nd.array(mv0)
    y = nd.BatchNorm(nd.array(x), nd.array(gamma), nd.array(beta), mm, mv,
                     fix_gamma=False)                    # default eps=1e-3 (MXNet)
    ref = (x - mm0.reshape(1, 3, 1, 1)) / np.sqrt(mv0.reshape(1, 3, 1, 1) + 1e-3) \
        * gamma.reshape(1, 3, 1, 1) + beta.reshape(1, 3, 1, 1)
    close(y.asnumpy(), ref)
    close(mm.asnumpy(), mm0)                             # untouched
    with autograd.record():                              # use_global_stats: also
        y2 = nd.BatchNorm(nd.array(x), nd.array(gamma), nd.array(beta), mm, mv,
                          fix_gamma=False, use_global_stats=True)
    close(y2.asnumpy(), ref)
    close(mv.asnumpy(), mv0)


@needs_torch
@pytest.mark.parametrize('training', [True, False])
def test_batchnorm_vs_torch(ctx, training):
    x = rnd(6, 3, 4, 5) * 2 + 0.5
    gamma, beta, mm0, mv0 = bn_args(3)
    head = rnd(6, 3, 4, 5, seed=9)

    def ours_f(x, g, b):
        return nd.BatchNorm(x, g, b, nd.array(mm0), nd.array(mv0), eps=1e-5,
                            fix_gamma=False)
    xs = [nd.array(a) for a in (x, gamma, beta)]
    for a in xs:
        a.attach_grad()
    with autograd.record(train_mode=training):
        y = ours_f(*xs)
    y.backward(nd.array(head))
    rm, rv = torch.tensor(mm0), torch.tensor(mv0)
    ref = torch_grads(lambda x, g, b: tF.batch_norm(x, rm, rv, g, b, training=training,
                                                    momentum=0.1, eps=1e-5),
                      x, gamma, beta, head=head)
    close(y.asnumpy(), ref[0])
    for a, r in zip(xs, ref[1]):
        close(a.grad.asnumpy(), r, rtol=1e-3, atol=1e-4)


def test_batchnorm_fix_gamma_gives_gamma_zero_gradient(ctx):
    x = nd.array(rnd(4, 3))
    gamma = nd.array([2.0, 3.0, 4.0])
    gamma.attach_grad()
    with autograd.record():
        y = nd.BatchNorm(x, gamma, nd.zeros(3), nd.zeros(3), nd.ones(3))
    y.backward()
    close(gamma.grad.asnumpy(), 0)
    close(y.asnumpy().std(axis=0), 1, rtol=1e-2)          # gamma was ignored


def test_batchnorm_output_mean_var(ctx):
    x = rnd(5, 2)
    with autograd.record():
        out, mean, var = nd.BatchNorm(nd.array(x), nd.ones(2), nd.zeros(2), nd.zeros(2),
                                      nd.ones(2), output_mean_var=True)
    close(mean.asnumpy(), x.mean(0))
    close(var.asnumpy(), x.var(0))


# --- errors, keywords, dtypes -------------------------------------------------------------
@pytest.mark.parametrize('bad,words', [
    (lambda: nd.Convolution(nd.ones((2, 3, 5, 5)), nd.ones((4, 2, 3, 3)), kernel=3,
                            num_filter=4), ['Convolution', '(4, 2, 3, 3)',
                                            '(2, 3, 5, 5)', '(4, 3, 3, 3)']),
    (lambda: nd.Convolution(nd.ones((2, 3, 5, 5)), nd.ones((4, 3, 3, 3)), kernel=3,
                            num_filter=5), ['Convolution', 'num_filter']),
    (lambda: nd.Convolution(nd.ones((2, 3, 5, 5)), nd.ones((4, 3, 3, 3)),
                            nd.ones((5,)), kernel=3, num_filter=4),
     ['Convolution', 'bias', '(5,)']),
    (lambda: nd.Convolution(nd.ones((2, 3, 2, 2)), nd.ones((4, 3, 3, 3)), kernel=3,
                            num_filter=4), ['Convolution', 'larger', '(2, 3, 2, 2)']),
    (lambda: nd.Convolution(nd.ones((2, 4, 5, 5)), nd.ones((3, 2, 3, 3)), kernel=3,
                            num_filter=3, num_group=2), ['Convolution', 'num_group']),
    (lambda: nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 5)), num_hidden=4),
     ['FullyConnected', '(4, 5)', '(2, 3)', '(4, 3)']),
    (lambda: nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), nd.ones(3), num_hidden=4),
     ['FullyConnected', 'bias', '(3,)']),
    (lambda: nd.Pooling(nd.ones((1, 1, 2, 2)), kernel=3), ['Pooling', '(1, 1, 2, 2)']),
    (lambda: nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=2, pool_type='lp'),
     ['Pooling', 'lp']),
    (lambda: nd.BatchNorm(nd.ones((2, 3)), nd.ones(4), nd.ones(3), nd.ones(3), nd.ones(3)),
     ['BatchNorm', 'gamma', '(4,)', '(2, 3)']),
    (lambda: nd.Activation(nd.ones(3), act_type='swish'), ['Activation', 'swish']),
    (lambda: nd.softmax_cross_entropy(nd.ones((2, 3)), nd.ones(3)),
     ['softmax_cross_entropy', '(2, 3)', '(3,)']),
])
def test_shape_and_value_errors(engine_kind, bad, words):
    with pytest.raises(ValueError) as e:
        bad()
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    mx.nd.waitall()


@pytest.mark.parametrize('call,words', [
    (lambda: nd.Convolution(nd.ones((1, 1, 4, 4)), nd.ones((1, 1, 3, 3)), kernel=3,
                            num_filter=1, strides=2), ['Convolution', 'strides', 'stride']),
    (lambda: nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=2, pool_size=2),
     ['Pooling', 'pool_size']),
    (lambda: nd.FullyConnected(nd.ones((1, 2)), nd.ones((3, 2)), num_hidden=3, units=3),
     ['FullyConnected', 'units']),
    (lambda: nd.Dropout(nd.ones(3), rate=0.5), ['Dropout', 'rate']),
    (lambda: nd.BatchNorm(nd.ones((2, 3)), nd.ones(3), nd.ones(3), nd.ones(3), nd.ones(3),
                          epsilon=1e-5), ['BatchNorm', 'epsilon', 'eps']),
    (lambda: nd.softmax(nd.ones(3), dim=0), ['softmax', 'dim']),
    (lambda: nd.Activation(nd.ones(3), 'relu', foo=1), ['Activation', 'foo']),
])
def test_unknown_keywords(call, words):
    with pytest.raises(TypeError) as e:
        call()
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_mxnet_keywords_that_do_nothing_here_are_accepted():
    y = nd.Convolution(nd.ones((1, 1, 4, 4)), nd.ones((1, 1, 3, 3)), kernel=3,
                       num_filter=1, no_bias=True, workspace=1024, cudnn_tune='off',
                       cudnn_off=True, name='conv0')
    assert y.shape == (1, 1, 2, 2)


def test_integer_data_is_refused_up_front():
    with pytest.raises(TypeError, match='Convolution'):
        nd.Convolution(nd.ones((1, 1, 4, 4), dtype='int32'), nd.ones((1, 1, 3, 3)),
                       kernel=3, num_filter=1, no_bias=True)
    with pytest.raises(TypeError, match='FullyConnected'):
        nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3), dtype='float64'), num_hidden=4)


def test_float32_in_float32_out(ctx):
    """No silent float64 promotion anywhere (it would halve the speed)."""
    x4, x2 = nd.array(rnd(2, 3, 6, 6)), nd.array(rnd(4, 6))
    w = nd.array(rnd(4, 3, 3, 3))
    outs = [nd.Convolution(x4, w, nd.zeros(4), kernel=3, num_filter=4, pad=1),
            nd.Pooling(x4, kernel=2, stride=2, pool_type='avg'),
            nd.Pooling(x4, kernel=3, pad=1, pooling_convention='full'),
            nd.Pooling(x4, global_pool=True, pool_type='avg'),
            nd.FullyConnected(x2, nd.ones((3, 6)), nd.zeros(3), num_hidden=3),
            nd.Activation(x2, act_type='softrelu'), nd.LeakyReLU(x2, act_type='selu'),
            nd.softmax(x2), nd.log_softmax(x2, temperature=2.0),
            nd.softmax_cross_entropy(x2, nd.array([0, 1, 2, 3])),
            nd.BatchNorm(x4, nd.ones(3), nd.zeros(3), nd.zeros(3), nd.ones(3))]
    with autograd.train_mode():
        outs += [nd.Dropout(x2, p=0.5),
                 nd.BatchNorm(x4, nd.ones(3), nd.zeros(3), nd.zeros(3), nd.ones(3))]
    for o in outs:
        assert o.dtype == np.float32 and o.asnumpy().dtype == np.float32


def test_lenet_like_stack_trains_in_both_engines(engine_kind):
    """Conv -> relu -> pool -> FC -> CE: the loss goes down with plain SGD."""
    r = np.random.default_rng(0)
    X = nd.array(r.standard_normal((32, 1, 12, 12)))
    y = nd.array(r.integers(0, 4, 32))
    params = [nd.array(r.standard_normal(s) * 0.1) for s in
              [(6, 1, 3, 3), (6,), (4, 6 * 5 * 5), (4,)]]
    for p in params:
        p.attach_grad()
    losses = []
    for _ in range(25):
        with autograd.record():
            h = nd.Convolution(X, params[0], params[1], kernel=3, num_filter=6)
            h = nd.Pooling(nd.Activation(h, act_type='relu'), kernel=2, stride=2)
            out = nd.FullyConnected(h, params[2], params[3], num_hidden=4)
            loss = nd.softmax_cross_entropy(out, y) / 32
        loss.backward()
        for p in params:
            p[:] = p - 0.1 * p.grad
        losses.append(loss.asscalar())
    assert losses[-1] < 0.6 * losses[0]
    assert all(b < a for a, b in zip(losses, losses[1:]))


def _conv_relu_grads(fused, x_grad, bias, second_order=False, act='relu'):
    rng = np.random.default_rng(0)
    X, W, B, H = (rng.standard_normal(s).astype(np.float32)
                  for s in [(4, 3, 9, 8), (6, 3, 3, 3), (6,), (4, 6, 5, 6)])
    attrs = dict(kernel=(3, 3), pad=(1, 0), stride=(2, 1), num_filter=6)
    x, w = nd.array(X), nd.array(W)
    b = nd.array(B) if bias else None
    params = [a for a in (x if x_grad else None, w, b) if a is not None]
    for a in params:
        a.attach_grad()
    with autograd.record():
        y = nd._conv_act(x, w, b, act_type=act, **attrs) if fused else \
            nd.Activation(nd.Convolution(x, w, b, no_bias=not bias, **attrs),
                          act_type=act)
        if second_order:          # d/dw of |dL/dx|^2, through the backward
            gx = autograd.grad((y * nd.array(H)).sum(), [x], create_graph=True)[0]
            z = (gx * gx).sum()
    if second_order:
        z.backward()
    else:
        y.backward(nd.array(H))
    return [y.asnumpy()] + [a.grad.asnumpy() for a in params]


@pytest.mark.parametrize('x_grad,bias', [(True, True), (False, True), (True, False)],
                         ids=['all', 'first layer (no dx)', 'no bias'])
def test_fused_conv_relu_equals_the_two_ops(x_grad, bias):
    """``nd._conv_act`` (what Conv2D(activation='relu') runs) gives the values
    and gradients of Convolution followed by relu."""
    fused = _conv_relu_grads(True, x_grad, bias)
    for ours, ref in zip(fused, _conv_relu_grads(False, x_grad, bias)):
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="act_type='gelu' is not one of"):
        nd._conv_act(nd.ones((1, 3, 5, 5)), nd.ones((6, 3, 3, 3)), act_type='gelu',
                     kernel=(3, 3), num_filter=6)


@pytest.mark.parametrize('act', ['sigmoid', 'tanh', 'softrelu', 'softsign'])
def test_fused_conv_act_equals_the_two_ops_for_every_activation(act):
    """Every activation gluon's Conv2D offers runs fused; the backward pass
    takes the derivative from the output alone (softrelu: 1 - exp(-y),
    softsign: (1 - |y|)^2), and still equals the two ops' gradients."""
    fused = _conv_relu_grads(True, True, True, act=act)
    for ours, ref in zip(fused, _conv_relu_grads(False, True, True, act=act)):
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)
    net = mx.gluon.nn.Conv2D(4, kernel_size=3, activation=act)
    net.initialize()
    x = nd.ones((1, 2, 5, 5))
    net(x)                                        # deferred initialization
    with mx.engine.Trace() as tr:
        y = net(x)
        y.wait_to_read()
    assert [name for _, name, _, _ in tr.spans()] == ['_conv_act']   # one op
    ref = nd.Activation(nd.Convolution(x, net.weight.data(), net.bias.data(),
                                       kernel=(3, 3), num_filter=4), act_type=act)
    np.testing.assert_allclose(y.asnumpy(), ref.asnumpy(), rtol=1e-6, atol=1e-7)


def test_fused_conv_relu_second_order():
    """Second order through conv + relu, fused or not (here: d/dw of
    |dL/dx|^2).  With a bias this once failed: Convolution.backward appended
    the bias gradient to the output list that the tape had recorded."""
    fused = _conv_relu_grads(True, True, True, second_order=True)
    for ours, ref in zip(fused, _conv_relu_grads(False, True, True, second_order=True)):
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)
    assert np.abs(fused[2]).sum() > 0                  # w.grad: not all zeros


def test_conv2d_relu_layer_runs_one_fused_op():
    from d2lmini import gluon
    from d2lmini.engine import Trace
    net = gluon.nn.Conv2D(4, 3, activation='relu')
    net.initialize()
    x = nd.random.normal(shape=(2, 3, 6, 6))
    net(x).wait_to_read()
    with Trace() as tr:
        y = net(x)
    assert [s[1] for s in tr.spans()] == ['_conv_act']
    w, b = net.weight.data(), net.bias.data()
    ref = nd.relu(nd.Convolution(x, w, b, kernel=(3, 3), num_filter=4))
    np.testing.assert_allclose(y.asnumpy(), ref.asnumpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('act', [False, True], ids=['conv', 'conv+relu'])
@pytest.mark.parametrize('f, c, k, rows', [(10, 8, 3, 16),   # compute-bound: 16
                                           (6, 1, 5, 8),     # ragged 6 of 8: 8
                                           (4, 1, 5, 4),     # ragged 4: as is
                                           (6, 1, 3, 6)])    # 9 taps: as is
def test_padded_gemm_rows_give_the_same_convolution(act, f, c, k, rows):
    """The forward GEMM gets zero rows up to a multiple of 8 where that is
    faster (``_gemm_rows``); the extra rows never show."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3, c, 7, 6)).astype(np.float32)
    W = rng.standard_normal((f, c, k, k)).astype(np.float32)
    B = rng.standard_normal(f).astype(np.float32)
    from d2lmini.ndarray.nn.convolution import _gemm_rows
    assert _gemm_rows(f, c * k * k, 1, np) == rows
    x, w, b = nd.array(X), nd.array(W), nd.array(B)
    p = k // 2
    ref = conv_ref(X, W, B, pad=(p, p))
    if act:
        y = nd._conv_act(x, w, b, kernel=(k, k), pad=(p, p), num_filter=f)
        ref = np.maximum(ref, 0)
    else:
        y = nd.Convolution(x, w, b, kernel=(k, k), pad=(p, p), num_filter=f)
    assert y.shape == ref.shape
    close(y.asnumpy(), ref)
