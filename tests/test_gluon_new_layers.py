"""The gluon layers issue 15 adds: GELU, InstanceNorm, GroupNorm,
ReflectionPad2D, the transposed convolutions, Conv1D/Conv3D and pooling in
channels-last layouts.  Each layer against the nd operator it calls (or a
PyTorch module), and its gradient flowing to the input and weights."""
import numpy as np
import pytest

from d2lmini import autograd, init, nd
from d2lmini.gluon import nn

from oracles import needs_torch, torch


def run(layer, x, hybridize=False):
    """``layer(x)`` and ``x``'s gradient (of the sum), after initializing."""
    layer.initialize(init.Xavier())
    if hybridize:
        layer.hybridize()
    x = nd.array(x)
    x.attach_grad()
    with autograd.record():
        y = layer(x)
    y.backward()
    return y.asnumpy(), x.grad.asnumpy()


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_gelu_layer():
    x = rnd(3, 4)
    y, dx = run(nn.GELU(), x)
    np.testing.assert_allclose(y, nd.LeakyReLU(nd.array(x), act_type='gelu').asnumpy())
    assert repr(nn.GELU()) == 'GELU()'


@needs_torch
def test_instance_norm_layer_matches_torch_and_mxnet_defaults():
    x = rnd(2, 3, 5, 4)
    layer = nn.InstanceNorm()                     # in_channels inferred
    y, dx = run(layer, x)
    assert layer.gamma.shape == (3,) and layer.gamma.grad_req == 'null'  # scale=False
    assert layer.beta.grad_req == 'write'
    t = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.instance_norm(t, eps=1e-5)
    ty.sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dx, t.grad.numpy(), atol=1e-4)
    # another axis: the channels are moved to axis 1 and back
    y2, _ = run(nn.InstanceNorm(axis=2), x)
    ref = nd.InstanceNorm(nd.swapaxes(nd.array(x), 1, 2), nd.ones(5), nd.zeros(5),
                          eps=1e-5)
    np.testing.assert_allclose(y2, nd.swapaxes(ref, 1, 2).asnumpy(), atol=1e-6)


def test_group_norm_layer_has_one_gamma_per_group():
    x = rnd(2, 10, 3, 3)
    layer = nn.GroupNorm(num_groups=5)
    y, dx = run(layer, x, hybridize=True)
    assert layer.gamma.shape == (5,) and layer.beta.shape == (5,)
    xg = x.reshape(2, 5, -1)
    ref = (xg - xg.mean(axis=2, keepdims=True)) / np.sqrt(xg.var(axis=2, keepdims=True)
                                                         + 1e-5)
    np.testing.assert_allclose(y, ref.reshape(x.shape), rtol=1e-4, atol=1e-5)
    assert np.abs(dx).max() < 1e-4       # d sum(normalized)/dx = 0
    assert 'num_groups=5' in repr(layer)


def test_reflection_pad_layer():
    x = rnd(2, 3, 6, 6)
    y, dx = run(nn.ReflectionPad2D(3), x)
    np.testing.assert_allclose(y, np.pad(x, ((0, 0), (0, 0), (3, 3), (3, 3)), 'reflect'))
    ones = np.ones((3, 6, 6))                 # cells copied by the border count more
    assert dx.shape == x.shape and (dx >= ones).all() and dx.max() > 1
    y, _ = run(nn.ReflectionPad2D((0, 0, 0, 0, 1, 0, 0, 2)), x)
    assert y.shape == (2, 3, 7, 8)
    with pytest.raises(ValueError, match='8 ints'):
        nn.ReflectionPad2D((1, 1))


@needs_torch
@pytest.mark.parametrize('cls,tcls,shape,kw', [
    (nn.Conv1DTranspose, torch.nn.ConvTranspose1d if torch else None, (2, 4, 7),
     dict(kernel_size=3, strides=2, padding=1, output_padding=1, groups=2)),
    (nn.Conv2DTranspose, torch.nn.ConvTranspose2d if torch else None, (2, 4, 5, 6),
     dict(kernel_size=(3, 4), strides=4, output_padding=3)),
    (nn.Conv3DTranspose, torch.nn.ConvTranspose3d if torch else None, (1, 4, 3, 4, 5),
     dict(kernel_size=3, strides=(2, 1, 1), padding=1, dilation=(1, 2, 1)))])
def test_transposed_convolution_layers_match_torch(cls, tcls, shape, kw):
    layer = cls(6, in_channels=4, **kw)
    x = rnd(*shape)
    y, dx = run(layer, x)
    assert layer.weight.shape == (4, 6 // kw.get('groups', 1)) + layer._kwargs['kernel']
    t = tcls(4, 6, kw['kernel_size'], stride=kw['strides'], padding=kw.get('padding', 0),
             output_padding=kw.get('output_padding', 0), groups=kw.get('groups', 1),
             dilation=kw.get('dilation', 1)).double()
    with torch.no_grad():
        t.weight.copy_(torch.tensor(layer.weight.data().asnumpy()))
        t.bias.copy_(torch.tensor(layer.bias.data().asnumpy()))
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ty = t(tx)
    ty.sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert 'output_padding' in repr(layer) or 'output_padding' not in kw


def test_conv1d_and_conv3d_layers_compute_the_nd_convolution():
    for layer, shape in [(nn.Conv1D(6, 3, strides=2, groups=2, in_channels=4), (2, 4, 9)),
                         (nn.Conv3D(6, (2, 3, 2), padding=1, in_channels=4,
                                    activation='relu'), (1, 4, 4, 5, 3))]:
        x = rnd(*shape)
        y, dx = run(layer, x)
        ref = nd.Convolution(nd.array(x), layer.weight.data(), layer.bias.data(),
                             **{k: v for k, v in layer._kwargs.items()})
        if layer.act is not None:
            ref = nd.relu(ref)
        np.testing.assert_allclose(y, ref.asnumpy(), rtol=1e-5, atol=1e-5)
        assert np.abs(dx).sum() > 0


@pytest.mark.parametrize('n,layout', [(1, 'NWC'), (2, 'NHWC'), (3, 'NDHWC')])
def test_channels_last_layers_equal_the_channels_first_ones(n, layout):
    x = rnd(*((2,) + (6,) * n + (3,)))
    first = np.moveaxis(x, -1, 1)
    conv = {1: nn.Conv1D, 2: nn.Conv2D, 3: nn.Conv3D}[n]
    cl, cf = conv(4, 3, layout=layout, in_channels=3), conv(4, 3, in_channels=3)
    cl.initialize()
    cf.initialize()
    assert cl.weight.shape == (4,) + (3,) * n + (3,)
    cf.weight.set_data(nd.array(np.moveaxis(cl.weight.data().asnumpy(), -1, 1)))
    np.testing.assert_allclose(np.moveaxis(cl(nd.array(x)).asnumpy(), -1, 1),
                               cf(nd.array(first)).asnumpy(), rtol=1e-5, atol=1e-5)
    pools = {1: (nn.MaxPool1D, nn.AvgPool1D, nn.GlobalMaxPool1D),
             2: (nn.MaxPool2D, nn.AvgPool2D, nn.GlobalMaxPool2D),
             3: (nn.MaxPool3D, nn.AvgPool3D, nn.GlobalMaxPool3D)}[n]
    for last, pfirst in [(pools[0](3, 2, layout=layout), pools[0](3, 2)),
                         (pools[1](padding=1, count_include_pad=False, layout=layout,
                                   ceil_mode=True),
                          pools[1](padding=1, count_include_pad=False, ceil_mode=True)),
                         (pools[2](layout=layout), pools[2]())]:
        y, dx = run(last, x)
        np.testing.assert_allclose(np.moveaxis(y, -1, 1),
                                   pfirst(nd.array(first)).asnumpy(), rtol=1e-6)
        assert dx.shape == x.shape


def test_ctc_loss_layouts_and_lengths():
    from d2lmini import gluon
    lab = np.array([[1, 0, -1, -1], [2, 1, 1, -1]], np.float32)
    expect = [18.82820702, 16.50581741]
    ntc = gluon.loss.CTCLoss()
    np.testing.assert_allclose(ntc(nd.ones((2, 20, 4)), nd.array(lab)).asnumpy(), expect,
                               rtol=1e-6)
    tnc = gluon.loss.CTCLoss(layout='TNC', label_layout='TN')
    np.testing.assert_allclose(tnc(nd.ones((20, 2, 4)), nd.array(lab.T)).asnumpy(), expect,
                               rtol=1e-6)
    # lengths: 20 of 25 steps, 2 and 3 labels (the rest is never read)
    got = ntc(nd.ones((2, 25, 4)), nd.array([[2, 1, 3, 3], [3, 2, 2, 3]]),
              nd.array([20, 20]), nd.array([2, 3]))
    np.testing.assert_allclose(got.asnumpy(), expect, rtol=1e-6)
    weighted = gluon.loss.CTCLoss(weight=0.5)(nd.ones((2, 20, 4)), nd.array(lab))
    np.testing.assert_allclose(weighted.asnumpy(), np.array(expect) / 2, rtol=1e-6)
    # it trains: the gradient reaches the scores
    x = nd.array(rnd(2, 20, 4))
    x.attach_grad()
    with autograd.record():
        loss = ntc(x, nd.array(lab))
    loss.backward()
    g = x.grad.asnumpy()
    np.testing.assert_allclose(g.sum(axis=2), 0, atol=1e-5)  # softmax - occupancy
    with pytest.raises(ValueError, match="layout must be 'NTC' or 'TNC'"):
        gluon.loss.CTCLoss(layout='NCT')
