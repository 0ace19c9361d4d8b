"""The neural-network ops MXNet 1.x has and issue 15 adds: values against
NumPy / PyTorch, MXNet's argument rules and errors.  (Every op's gradient is
also checked by central differences in tests/test_grad_registry.py.)"""
import math

import numpy as np
import pytest

from d2lmini import autograd, nd

from oracles import needs_torch, tF, torch


def rnd(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def grads_of(f, *arrays, head=None):
    xs = [nd.array(a, dtype=a.dtype) for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = f(*xs)
    y.backward(None if head is None else nd.array(head, dtype=head.dtype))
    return y.asnumpy(), [x.grad.asnumpy() for x in xs]


def torch_grads(f, *arrays, head=None):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = f(*ts)
    y.backward(torch.ones_like(y) if head is None else torch.tensor(head))
    return y.detach().numpy(), [t.grad.numpy() for t in ts]


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# --- relu: NaN in, NaN gradient out (MXNet's relu_grad) ------------------------------
RELUS = {'nd.relu': nd.relu,
         'Activation': lambda x: nd.Activation(x, act_type='relu')}


@pytest.mark.parametrize('name', sorted(RELUS))
def test_relu_gradient_propagates_nan(name):
    x = nd.array([np.nan, -1.0, 0.0, 2.0, np.inf])
    x.attach_grad()
    with autograd.record():
        y = RELUS[name](x)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), [np.nan, 0, 0, 2, np.inf])
    np.testing.assert_array_equal(x.grad.asnumpy(), [np.nan, 0, 0, 1, 1])


def test_fused_conv_relu_gradient_propagates_nan():
    from d2lmini.ndarray import _conv_act
    x = np.ones((1, 1, 3, 3), np.float32)
    x[0, 0, 1, 1] = np.nan
    w = np.ones((1, 1, 1, 1), np.float32)
    _, (dx, dw) = grads_of(lambda x, w: _conv_act(x, w, kernel=(1, 1), num_filter=1,
                                                   no_bias=True), x, w)
    assert np.isnan(dx[0, 0, 1, 1]) and np.isnan(dw).all()
    assert (dx[~np.isnan(x)] == 1).all()


# --- GELU (LeakyReLU act_type='gelu') and softmin --------------------------------------
@needs_torch
def test_gelu_is_the_exact_erf_form():
    x = np.linspace(-5, 5, 41)
    y, (dx,) = grads_of(lambda a: nd.LeakyReLU(a, act_type='gelu'), x)
    ty, (tdx,) = torch_grads(lambda a: tF.gelu(a), x)          # approximate='none'
    close(y, ty, 1e-12, 1e-14)
    close(dx, tdx, 1e-12, 1e-14)


def test_gelu_keeps_float32():
    y = nd.LeakyReLU(nd.array([-1.0, 0.5]), act_type='gelu')
    assert y.dtype == np.float32
    close(y.asnumpy(), [-1 * 0.5 * (1 + math.erf(-1 / math.sqrt(2))),
                        0.5 * 0.5 * (1 + math.erf(0.5 / math.sqrt(2)))], 1e-6)


def test_softmin_is_softmax_of_minus_x():
    x = rnd(3, 4)
    close(nd.softmin(nd.array(x), axis=0).asnumpy(),
          nd.softmax(nd.array(-x), axis=0).asnumpy())
    # MXNet's docstring example
    close(nd.softmin(nd.array([[1., 2, 3], [3, 2, 1]]), axis=0).asnumpy(),
          [[0.88079703, 0.5, 0.11920292], [0.11920292, 0.5, 0.88079703]])
    y, (dx,) = grads_of(lambda a: nd.softmin(a, temperature=2.0), x, head=rnd(3, 4, seed=1))
    _, (ref,) = grads_of(lambda a: nd.softmax(-a / 2.0), x, head=rnd(3, 4, seed=1))
    close(dx, ref)


# --- pad ---------------------------------------------------------------------------------
PADS = [((2, 3, 3, 5), (0, 0, 0, 0, 1, 2, 3, 4)),
        ((2, 3, 3, 5, 4), (0, 0, 0, 0, 1, 2, 3, 4, 3, 1))]


@pytest.mark.parametrize('mode', ['constant', 'edge', 'reflect'])
@pytest.mark.parametrize('shape,pad_width', PADS)
def test_pad_matches_numpy(mode, shape, pad_width):
    x = rnd(*shape)
    pairs = list(zip(pad_width[::2], pad_width[1::2]))
    kw = {'constant_values': 1.5} if mode == 'constant' else {}
    y = nd.pad(nd.array(x, dtype=x.dtype), mode=mode, pad_width=pad_width,
               constant_value=1.5)
    close(y.asnumpy(), np.pad(x, pairs, mode=mode, **kw))


@needs_torch
@pytest.mark.parametrize('mode,tmode', [('constant', 'constant'), ('edge', 'replicate'),
                                        ('reflect', 'reflect')])
def test_pad_gradient_matches_torch(mode, tmode):
    x = rnd(2, 3, 4, 5)
    head = rnd(2, 3, 7, 9, seed=1)
    _, (dx,) = grads_of(lambda a: nd.pad(a, mode=mode, pad_width=(0, 0, 0, 0, 1, 2, 3, 1)),
                        x, head=head)
    _, (tdx,) = torch_grads(lambda a: tF.pad(a, (3, 1, 1, 2), mode=tmode), x, head=head)
    close(dx, tdx)


def test_pad_follows_mxnets_rules():
    x = nd.ones((1, 2, 3, 3))
    with pytest.raises(ValueError, match='batch and channel'):
        nd.pad(x, mode='constant', pad_width=(0, 1, 0, 0, 1, 1, 1, 1))
    with pytest.raises(ValueError, match='4-D or 5-D'):
        nd.pad(nd.ones((2, 3, 4)), mode='edge', pad_width=(0, 0, 0, 0, 1, 1))
    with pytest.raises(ValueError, match='needs 8 numbers'):
        nd.pad(x, mode='edge', pad_width=(0, 0, 0, 0, 1, 1))
    with pytest.raises(ValueError, match='smaller than its size'):
        nd.pad(x, mode='reflect', pad_width=(0, 0, 0, 0, 3, 0, 0, 0))
    with pytest.raises(ValueError, match="mode='wrap'"):
        nd.pad(x, mode='wrap', pad_width=(0, 0, 0, 0, 1, 1, 1, 1))
    assert nd.Pad is nd.pad


# --- InstanceNorm, GroupNorm -------------------------------------------------------------
@needs_torch
def test_instance_norm_matches_torch():
    x, g, b = rnd(2, 3, 4, 5), rnd(3, seed=1), rnd(3, seed=2)
    head = rnd(2, 3, 4, 5, seed=3)
    y, grads = grads_of(lambda x, g, b: nd.InstanceNorm(x, g, b, eps=1e-5), x, g, b,
                        head=head)
    ty, tgrads = torch_grads(lambda x, g, b: tF.instance_norm(x, weight=g, bias=b,
                                                               eps=1e-5), x, g, b,
                             head=head)
    close(y, ty)
    for a, t in zip(grads, tgrads):
        close(a, t)


@needs_torch
def test_group_norm_has_one_gamma_per_group_as_mxnet_1x():
    x, g, b = rnd(2, 6, 3, 2), rnd(3, seed=1), rnd(3, seed=2)
    head = rnd(2, 6, 3, 2, seed=3)
    y, grads = grads_of(lambda x, g, b: nd.GroupNorm(x, g, b, num_groups=3), x, g, b,
                        head=head)
    # torch has one gamma per channel: repeat ours over each group's channels
    ty, (tdx, tdg, tdb) = torch_grads(
        lambda x, g, b: tF.group_norm(x, 3, g.repeat_interleave(2),
                                      b.repeat_interleave(2), eps=1e-5),
        x, g, b, head=head)
    close(y, ty)
    close(grads[0], tdx)
    close(grads[1], tdg)
    close(grads[2], tdb)


def test_group_norm_mxnet_docstring_example_and_errors():
    x = nd.arange(24).reshape((2, 3, 4))
    y = nd.GroupNorm(x, nd.ones(1), nd.zeros(1))
    close(y.asnumpy()[0, 0], [-1.5932543, -1.3035717, -1.0138891, -0.7242065], 1e-5)
    res, mean, std = nd.GroupNorm(x, nd.ones(1), nd.zeros(1), output_mean_var=True)
    close(mean.asnumpy(), [[5.5], [17.5]])
    close(std.asnumpy(), np.sqrt(np.var(np.arange(12)) + 1e-5) * np.ones((2, 1)), 1e-5)
    with pytest.raises(ValueError, match='not divisible by num_groups=2'):
        nd.GroupNorm(x, nd.ones(2), nd.zeros(2), num_groups=2)
    with pytest.raises(ValueError, match=r'gamma shape \(3,\) != \(1,\)'):
        nd.GroupNorm(x, nd.ones(3), nd.zeros(1))


# --- 3-D convolution, Deconvolution, channels-last layouts ---------------------------------
def _check_against_torch(ours, theirs, arrays, head_seed=9):
    y, grads = grads_of(ours, *arrays)
    head = rnd(*y.shape, seed=head_seed)
    y, grads = grads_of(ours, *arrays, head=head)
    ty, tgrads = torch_grads(theirs, *arrays, head=head)
    close(y, ty, 1e-10, 1e-10)
    for a, t in zip(grads, tgrads):
        close(a, t, 1e-10, 1e-10)


@needs_torch
def test_convolution_3d_matches_torch():
    x, w, b = rnd(2, 4, 6, 7, 5), rnd(6, 2, 3, 2, 3, seed=1), rnd(6, seed=2)
    _check_against_torch(
        lambda x, w, b: nd.Convolution(x, w, b, kernel=(3, 2, 3), stride=(2, 1, 2),
                                       dilate=(1, 2, 1), pad=(1, 1, 0), num_filter=6,
                                       num_group=2),
        lambda x, w, b: tF.conv3d(x, w, b, stride=(2, 1, 2), padding=(1, 1, 0),
                                  dilation=(1, 2, 1), groups=2), [x, w, b])


DECONVS = [  # (data, weight, bias?, our keywords, torch keywords)
    (1, (2, 4, 5), (4, 3, 3), True, dict(kernel=3, stride=2, pad=1, adj=1, num_filter=3),
     dict(stride=2, padding=1, output_padding=1)),
    (2, (2, 4, 5, 6), (4, 3, 3, 2), True,
     dict(kernel=(3, 2), stride=(2, 3), pad=(1, 0), adj=(1, 2), num_group=2, num_filter=6),
     dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2)),
    (2, (2, 4, 5, 6), (4, 3, 3, 2), False,
     dict(kernel=(3, 2), stride=2, dilate=(2, 1), pad=(2, 1), num_filter=3),
     dict(stride=2, padding=(2, 1), dilation=(2, 1))),
    (3, (2, 4, 3, 4, 5), (4, 3, 3, 2, 2), True,
     dict(kernel=(3, 2, 2), stride=(2, 2, 1), dilate=(2, 1, 1), pad=(1, 1, 0),
          adj=(1, 0, 0), num_group=2, num_filter=6),
     dict(stride=(2, 2, 1), padding=(1, 1, 0), dilation=(2, 1, 1),
          output_padding=(1, 0, 0), groups=2)),
    (3, (1, 2, 2, 3, 3), (2, 2, 2, 2, 2), False, dict(kernel=2, stride=3, adj=2, num_filter=2),
     dict(stride=3, output_padding=2)),
]


@needs_torch
@pytest.mark.parametrize('n,xs,ws,bias,kw,tkw', DECONVS)
def test_deconvolution_matches_torch_conv_transpose(n, xs, ws, bias, kw, tkw):
    arrays = [rnd(*xs), rnd(*ws, seed=1)] + ([rnd(ws[1] * kw.get('num_group', 1), seed=2)]
                                             if bias else [])
    tf = {1: tF.conv_transpose1d, 2: tF.conv_transpose2d, 3: tF.conv_transpose3d}[n]
    _check_against_torch(lambda *a: nd.Deconvolution(*a, no_bias=not bias, **kw),
                         lambda *a: tf(*a, **tkw), arrays)


def test_deconvolution_follows_mxnet_arguments():
    x, w = nd.ones((1, 2, 3, 3)), nd.ones((2, 4, 3, 3))
    # target_shape sets pad and adj (MXNet's InferPad)
    assert nd.Deconvolution(x, w, kernel=3, stride=2, target_shape=(6, 6),
                            num_filter=4).shape == (1, 4, 6, 6)
    assert nd.Deconvolution(x, w, kernel=3, stride=2, target_shape=(5, 7),
                            num_filter=4).shape == (1, 4, 5, 7)
    with pytest.raises(ValueError, match='target_shape'):
        nd.Deconvolution(x, w, kernel=3, stride=2, target_shape=(8, 8), num_filter=4)
    with pytest.raises(ValueError, match='smaller than stride'):
        nd.Deconvolution(x, w, kernel=3, stride=2, adj=2, num_filter=4)
    # no_bias defaults to True, as in MXNet: a given bias is ignored
    y = nd.Deconvolution(x, w, nd.ones(4), kernel=3, num_filter=4)
    close(y.asnumpy(), nd.Deconvolution(x, w, kernel=3, num_filter=4).asnumpy())
    with pytest.raises(ValueError, match='num_filter=5'):
        nd.Deconvolution(x, w, kernel=3, num_filter=5)


@pytest.mark.parametrize('shape,layout', [((2, 7, 3), 'NWC'), ((2, 7, 6, 3), 'NHWC'),
                                          ((2, 5, 6, 4, 3), 'NDHWC')])
def test_channels_last_layouts_equal_transposed_channels_first(shape, layout):
    n = len(shape) - 2
    x = rnd(*shape)
    first = np.moveaxis(x, -1, 1)
    w = rnd(*((4, 3) + (2,) * n), seed=1)
    wl = np.moveaxis(w, 1, -1)
    conv = dict(kernel=(2,) * n, num_filter=4, no_bias=True)
    close(np.moveaxis(nd.Convolution(nd.array(x, dtype=x.dtype), nd.array(wl, dtype=x.dtype),
                                     layout=layout, **conv).asnumpy(), -1, 1),
          nd.Convolution(nd.array(first, dtype=x.dtype), nd.array(w, dtype=x.dtype),
                         **conv).asnumpy())
    wd = rnd(*((3, 4) + (2,) * n), seed=2)
    close(np.moveaxis(nd.Deconvolution(nd.array(x, dtype=x.dtype),
                                       nd.array(np.moveaxis(wd, 1, -1), dtype=x.dtype),
                                       layout=layout, kernel=(2,) * n, stride=2,
                                       num_filter=4).asnumpy(), -1, 1),
          nd.Deconvolution(nd.array(first, dtype=x.dtype), nd.array(wd, dtype=x.dtype),
                           kernel=(2,) * n, stride=2, num_filter=4).asnumpy())
    for pool in [dict(kernel=(2,) * n, stride=(2,) * n, pool_type='max'),
                 dict(kernel=(3,) * n, pad=(1,) * n, pool_type='avg',
                      count_include_pad=False),
                 dict(global_pool=True, pool_type='avg')]:
        close(np.moveaxis(nd.Pooling(nd.array(x, dtype=x.dtype), layout=layout,
                                     **pool).asnumpy(), -1, 1),
              nd.Pooling(nd.array(first, dtype=x.dtype), **pool).asnumpy())
    with pytest.raises(ValueError, match='does not fit'):
        nd.Pooling(nd.array(x), kernel=(2,) * n, layout='NCHW' if n != 2 else 'NCW')


POOL3D = [(dict(kernel=(3, 2, 3), stride=(2, 2, 1), pad=(1, 1, 0)),
           lambda t: tF.max_pool3d(t, (3, 2, 3), (2, 2, 1), (1, 1, 0))),
          (dict(kernel=(3, 2, 3), stride=(2, 2, 1), pad=(1, 1, 1), pool_type='avg'),
           lambda t: tF.avg_pool3d(t, (3, 2, 3), (2, 2, 1), (1, 1, 1))),
          (dict(kernel=(3, 2, 3), stride=(2, 2, 1), pad=(1, 1, 1), pool_type='avg',
                count_include_pad=False),
           lambda t: tF.avg_pool3d(t, (3, 2, 3), (2, 2, 1), (1, 1, 1),
                                   count_include_pad=False)),
          (dict(kernel=3, stride=2, pad=1, pooling_convention='full'),
           lambda t: tF.max_pool3d(t, 3, 2, 1, ceil_mode=True))]


@needs_torch
@pytest.mark.parametrize('kw,tf', POOL3D)
def test_pooling_3d_matches_torch(kw, tf):
    x = np.random.default_rng(0).permutation(2 * 3 * 7 * 6 * 8).reshape(
        2, 3, 7, 6, 8).astype(np.float64)            # no ties: one max per window
    _check_against_torch(lambda a: nd.Pooling(a, **kw), tf, [x])


def test_max_pooling_3d_gradient_goes_to_the_first_maximum():
    x = nd.ones((1, 1, 2, 2, 2))
    x.attach_grad()
    with autograd.record():
        y = nd.Pooling(x, kernel=(2, 2, 2), pool_type='max')
    y.backward()
    expect = np.zeros((1, 1, 2, 2, 2))
    expect[0, 0, 0, 0, 0] = 1
    np.testing.assert_array_equal(x.grad.asnumpy(), expect)


# --- CTCLoss ------------------------------------------------------------------------------
CTC_LABELS = np.array([[1, 2, 2, 0], [3, 1, 4, 2], [4, 0, 0, 0]])   # blank 0 pads


@needs_torch
@pytest.mark.parametrize('use_data_lengths', [False, True])
@pytest.mark.parametrize('use_label_lengths', [False, True])
@pytest.mark.parametrize('blank_label', ['first', 'last'])
def test_ctc_loss_matches_torch(use_data_lengths, use_label_lengths, blank_label):
    t, n, a = 12, 3, 5
    x = rnd(t, n, a)
    dl, ll = np.array([12, 9, 5]), np.array([3, 4, 1])
    lab = CTC_LABELS.copy()
    if blank_label == 'last':            # symbols 0..A-2, blank A-1, padding -1
        lab = np.where(np.arange(4) < ll[:, None], lab - 1, -1)
    if use_label_lengths:                # padding is then never read
        lab = np.where(np.arange(4) < ll[:, None], lab, 2)
    head = rnd(n, seed=1)
    y, (dx,) = grads_of(
        lambda x: nd.CTCLoss(x, nd.array(lab), nd.array(dl), nd.array(ll),
                             use_data_lengths=use_data_lengths,
                             use_label_lengths=use_label_lengths,
                             blank_label=blank_label), x, head=head)
    blank = 0 if blank_label == 'first' else a - 1
    tlen = torch.tensor(dl if use_data_lengths else [t] * n)
    ty, (tdx,) = torch_grads(
        lambda x: tF.ctc_loss(x.log_softmax(2), torch.tensor(np.maximum(lab, 0)), tlen,
                              torch.tensor(ll), blank=blank, reduction='none'),
        x, head=head)
    close(y, ty, 1e-10, 1e-10)
    close(dx, tdx, 1e-10, 1e-10)
    if use_data_lengths:                 # no gradient past a sample's length
        assert not dx[9:, 1].any() and not dx[5:, 2].any()


def test_ctc_loss_values_and_errors():
    # MXNet's values: uniform scores, 20 steps, alphabet 4 (blank last)
    lab = nd.array([[1, 0, -1, -1], [2, 1, 1, -1]])
    close(nd.ctc_loss(nd.ones((20, 2, 4)), lab, blank_label='last').asnumpy(),
          [18.82820702, 16.50581741], 1e-6)
    # an impossible alignment (3 symbols, 2 steps) has probability 0
    assert np.isinf(nd.CTCLoss(nd.zeros((2, 1, 3)), nd.array([[1, 2, 1]])).asnumpy()[0])
    with pytest.raises(ValueError, match='needs data_lengths'):
        nd.CTCLoss(nd.ones((3, 1, 2)), nd.array([[1]]), use_data_lengths=True)
    with pytest.raises(ValueError, match=r'needs data \(T, N, A\) and label \(N, L\)'):
        nd.CTCLoss(nd.ones((3, 2, 2)), nd.array([[1]]))
    with pytest.raises(ValueError, match="blank_label='middle'"):
        nd.CTCLoss(nd.ones((3, 1, 2)), nd.array([[1]]), blank_label='middle')
    with pytest.raises(Exception, match=r'label values must lie in \[0, 2\)'):
        nd.CTCLoss(nd.ones((3, 1, 2)), nd.array([[5]])).asnumpy()
