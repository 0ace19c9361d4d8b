"""Memory layout: convolution results are stored as (C, H, W, N).

The GEMM of a convolution produces its result with the batch innermost;
d2lmini keeps it that way (an NCHW *view*), and pooling and elementwise ops
keep their input's memory order, so a CNN runs from one convolution to the
next without transposing.  Layout must never change a value: each op here
is run on the same numbers stored both ways, forward and backward.
"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd
from d2lmini.ndarray.layout import chwn as _chwn
from d2lmini.ndarray.nn.convolution import _conv_geom
from d2lmini.ndarray.nn.im2col import _to_chwn


def stored_chwn(x):
    """``x`` with the same values, stored as (C, H, W, N) (through a 1x1
    identity convolution, so it is differentiable and exact)."""
    c = x.shape[1]
    eye = nd.array(np.eye(c, dtype=np.float32).reshape(c, c, 1, 1), ctx=x.context)
    return nd.Convolution(x, eye, kernel=(1, 1), num_filter=c, no_bias=True)


def is_chwn(a):
    return _chwn(a._value()) is not None


def run_both(fn, shape, seed=0):
    """``fn`` on NCHW-stored and CHWN-stored copies of one input: outputs
    and input gradients (with one random head gradient)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal(shape).astype(np.float32)
    results = []
    for to_chwn in (False, True):
        x = nd.array(X)
        x.attach_grad()
        with autograd.record():
            xin = stored_chwn(x) if to_chwn else x
            assert is_chwn(xin) == to_chwn
            y = fn(xin)
        head = nd.array(np.random.default_rng(seed + 1).standard_normal(y.shape)
                        .astype(np.float32))
        y.backward(head)
        results.append((y.asnumpy(), x.grad.asnumpy()))
    return results


def test_convolution_result_is_stored_chwn(ctx):
    x = nd.random.normal(shape=(4, 3, 8, 8))
    w = nd.random.normal(shape=(5, 3, 3, 3))
    y = nd.Convolution(x, w, kernel=(3, 3), num_filter=5, no_bias=True)
    assert y.shape == (4, 5, 6, 6)
    assert is_chwn(y)
    # asnumpy gives an ordinary C-ordered array all the same
    assert y.asnumpy().flags.c_contiguous


def test_cnn_stays_chwn_without_copies():
    """conv -> relu -> pool -> conv: each result keeps the layout, and the
    second convolution reads its input in place (no transpose).

    On a GPU the activation's result is NCHW: CuPy's elementwise kernels
    write C-ordered results whatever their inputs' order (NumPy's keep it),
    so there the pooling and the next convolution see NCHW."""
    x = nd.random.normal(shape=(8, 1, 12, 12))
    w1 = nd.random.normal(shape=(4, 1, 3, 3))
    h = nd.Convolution(x, w1, kernel=(3, 3), num_filter=4, no_bias=True)
    assert is_chwn(h)
    h = nd.relu(h)
    if h.context.device_type == 'gpu':
        assert not is_chwn(h)
        assert not is_chwn(nd.Pooling(h, kernel=(2, 2), stride=(2, 2),
                                      pool_type='avg'))
        return
    assert is_chwn(h)
    h = nd.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='avg')
    assert is_chwn(h)
    h.wait_to_read()
    g = _conv_geom('Convolution', h.shape, (6, 4, 3, 3), (3, 3), (1, 1), (1, 1),
                   (0, 0), 1)
    v = h._value()
    xp = mx.backend.xp_of(v)                 # NumPy, or CuPy on a GPU
    assert xp.shares_memory(_to_chwn(v, g), v)


POOLS = [dict(kernel=(2, 2), stride=(2, 2), pool_type='max'),
         dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max'),
         dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max',
              pooling_convention='full'),
         dict(kernel=(2, 2), stride=(2, 2), pool_type='avg'),
         dict(kernel=(3, 2), stride=(2, 1), pad=(1, 0), pool_type='avg',
              count_include_pad=False),
         dict(kernel=(2, 2), pool_type='sum'),
         dict(global_pool=True, pool_type='max'),
         dict(global_pool=True, pool_type='avg')]


@pytest.mark.parametrize('attrs', POOLS, ids=lambda a: str(sorted(a.items())))
def test_pooling_same_values_either_layout(attrs):
    (y1, g1), (y2, g2) = run_both(lambda x: nd.Pooling(x, **attrs), (3, 4, 7, 7))
    # equal up to the order of a global mean's additions
    np.testing.assert_allclose(y1, y2, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g1, g2, rtol=1e-6, atol=1e-7)


CONVS = [dict(kernel=(3, 3)), dict(kernel=(3, 3), pad=(1, 1)),
         dict(kernel=(3, 2), stride=(2, 1), pad=(1, 0)),
         dict(kernel=(2, 2), dilate=(2, 2)),
         dict(kernel=(3, 3), pad=(1, 1), num_group=2)]


@pytest.mark.parametrize('attrs', CONVS, ids=lambda a: str(sorted(a.items())))
def test_convolution_same_values_either_layout(attrs):
    groups = attrs.get('num_group', 1)
    rng = np.random.default_rng(3)
    W = rng.standard_normal((6, 4 // groups) + attrs['kernel']).astype(np.float32)
    w = nd.array(W)
    b = nd.array(rng.standard_normal(6).astype(np.float32))
    (y1, g1), (y2, g2) = run_both(
        lambda x: nd.Convolution(x, w, b, num_filter=6, **attrs), (3, 4, 8, 7))
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g1, g2, rtol=1e-5, atol=1e-5)


OTHERS = {
    'relu': lambda x: nd.relu(x),
    'sigmoid': lambda x: nd.Activation(x, act_type='sigmoid'),
    'flatten+dense': lambda x: nd.FullyConnected(
        x, nd.ones((3, 4 * 5 * 5)) * 0.01, num_hidden=3, no_bias=True),
    'batchnorm': lambda x: nd.BatchNorm(x, nd.ones(4), nd.zeros(4), nd.zeros(4),
                                        nd.ones(4), fix_gamma=False),
    'add NCHW array': lambda x: x + nd.arange(4 * 5 * 5).reshape(1, 4, 5, 5),
    'sum over (0, 2, 3)': lambda x: x.sum(axis=(0, 2, 3)),
    'reshape': lambda x: x.reshape((0, -1)) * 2,
    'slice': lambda x: x[1:, :, 1:4] * 3,
    'transpose': lambda x: x.transpose((0, 2, 3, 1)) + 1,
}


@pytest.mark.parametrize('name', sorted(OTHERS))
def test_other_ops_same_values_either_layout(name):
    (y1, g1), (y2, g2) = run_both(OTHERS[name], (3, 4, 5, 5))
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g1, g2, rtol=1e-5, atol=1e-6)


def test_save_load_round_trip_of_chwn_array(tmp_path):
    y = stored_chwn(nd.random.normal(shape=(2, 3, 4, 4)))
    nd.save(str(tmp_path / 'y.npz'), {'y': y})
    z = nd.load(str(tmp_path / 'y.npz'))['y']
    np.testing.assert_array_equal(z.asnumpy(), y.asnumpy())


def test_views_write_through_on_chwn_array():
    y = stored_chwn(nd.zeros((2, 3, 4, 4)))
    y[0, 1] = 5                                     # basic slice assignment
    y[1, :, 2:] += 1
    want = np.zeros((2, 3, 4, 4), np.float32)
    want[0, 1] = 5
    want[1, :, 2:] += 1
    np.testing.assert_array_equal(y.asnumpy(), want)
    mx.nd.waitall()
