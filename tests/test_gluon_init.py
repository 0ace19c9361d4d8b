"""Initializers: statistics against theory, precedence rules, reproducibility."""
import json

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import gluon, init, initializer, nd
from d2lmini.gluon import nn



def draw(initr, shape, name='weight'):
    p = gluon.Parameter(name, shape=shape)
    p.initialize(initr)
    return p.data().asnumpy().astype(np.float64)


def test_init_is_initializer():
    assert init.Xavier is initializer.Xavier and mx.init.Normal is init.Normal
    assert set(initializer.__all__) <= set(dir(init))


# Statistics of 120,000+ draws: the sample std is within ~0.5% of the true
# one (4 sigma is ~1.3%), the mean within a few std / sqrt(n).
@pytest.mark.parametrize('initr, shape, std, bound', [
    (init.Uniform(), (300, 400), 0.07 / np.sqrt(3), 0.07),
    (init.Uniform(0.5), (300, 400), 0.5 / np.sqrt(3), 0.5),
    (init.Normal(), (300, 400), 0.01, None),
    (init.Normal(2.0), (300, 400), 2.0, None),
    (init.Xavier(), (300, 400), np.sqrt(3 / 350) / np.sqrt(3), np.sqrt(3 / 350)),
    (init.Xavier('gaussian'), (300, 400), np.sqrt(3 / 350), None),
    (init.Xavier('uniform', 'in', 2), (300, 400), np.sqrt(2 / 400) / np.sqrt(3),
     np.sqrt(2 / 400)),
    (init.Xavier('gaussian', 'out', 2), (300, 400), np.sqrt(2 / 300), None),
    # conv weights: fan_in = in * kh * kw, fan_out = out * kh * kw
    (init.Xavier(), (64, 32, 5, 5), np.sqrt(3 / ((800 + 1600) / 2)) / np.sqrt(3),
     np.sqrt(3 / 1200)),
    (init.MSRAPrelu(), (256, 512), np.sqrt(2 / 1.0625 / 384), None),
    (init.MSRAPrelu('in', 0.0), (64, 32, 3, 3), np.sqrt(2 / 288), None),
])
def test_random_initializer_statistics(initr, shape, std, bound, ctx):
    a = draw(initr, shape)
    n = a.size
    assert a.shape == shape
    assert abs(a.mean()) < 5 * std / np.sqrt(n)
    assert abs(a.std() / std - 1) < 0.015, (a.std(), std)
    if bound is not None:
        assert a.min() >= -bound and a.max() <= bound
        assert a.max() > 0.99 * bound and a.min() < -0.99 * bound
    else:                       # gaussian: about 4.55% beyond 2 sigma
        frac = np.mean(np.abs(a) > 2 * std)
        assert abs(frac - 0.0455) < 0.005


def test_constant_zero_one(ctx):
    assert np.all(draw(init.Zero(), (3, 4)) == 0)
    assert np.all(draw(init.One(), (3, 4)) == 1)
    assert np.all(draw(init.Constant(42), (3, 4)) == 42)
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(draw(init.Constant(nd.array(v)), (2, 3)), v)
    np.testing.assert_array_equal(draw(init.Constant(v), (2, 3)), v)
    with pytest.raises(ValueError, match='shape'):
        draw(init.Constant(v), (3, 2))


def test_orthogonal_rows_are_orthonormal():
    a = draw(init.Orthogonal(scale=1.0), (20, 30))
    np.testing.assert_allclose(a @ a.T, np.eye(20), atol=1e-5)


def test_create_by_name_and_dumps():
    assert isinstance(initializer.create('xavier'), init.Xavier)
    assert isinstance(initializer.create('zeros'), init.Zero)
    assert isinstance(initializer.create('ones'), init.One)
    assert isinstance(initializer.create(init.Normal), init.Normal)
    x = init.Xavier('gaussian', 'in', 2)
    y = initializer.create(x.dumps())
    assert (y.rnd_type, y.factor_type, y.magnitude) == ('gaussian', 'in', 2.0)
    with pytest.raises(ValueError, match="unknown initializer 'nope'"):
        initializer.create('nope')
    with pytest.raises(ValueError, match='rnd_type'):
        init.Xavier('normal')
    with pytest.raises(ValueError, match='factor_type'):
        init.Xavier(factor_type='mean')


def test_xavier_refuses_vectors():
    with pytest.raises(ValueError, match='at least 2 dimensions'):
        draw(init.Xavier(), (10,), name='foo')


def test_layers_own_initializers_win_over_the_global_one():
    net = nn.Sequential()
    net.add(nn.Dense(8, activation='relu'), nn.BatchNorm(), nn.Dense(2))
    net.initialize(init.Constant(7.0))
    net(nd.ones((4, 3)))
    assert np.all(net[0].weight.data().asnumpy() == 7)
    assert np.all(net[0].bias.data().asnumpy() == 0)       # bias_initializer='zeros'
    bn = net[1]
    assert np.all(bn.gamma.data().asnumpy() == 1) and np.all(bn.beta.data().asnumpy() == 0)
    assert np.all(bn.running_var.data().asnumpy() == 1)
    assert np.all(bn.running_mean.data().asnumpy() == 0)
    d = nn.Dense(3, in_units=2, weight_initializer=init.One(),
                 bias_initializer=init.Constant(0.5))
    d.initialize(init.Normal())
    assert np.all(d.weight.data().asnumpy() == 1) and np.all(d.bias.data().asnumpy() == .5)
    # the book's re-initialization of one layer
    net[2].initialize(init=init.Constant(42), force_reinit=True)
    assert np.all(net[2].weight.data().asnumpy() == 42)
    assert np.all(net[2].bias.data().asnumpy() == 0)


def test_custom_initializer_book_style(capsys):
    class MyInit(init.Initializer):
        def _init_weight(self, name, data):
            print('Init', name, data.shape)
            data[:] = nd.random.uniform(low=-10, high=10, shape=data.shape)
            data *= data.abs() >= 5

    net = nn.Sequential()
    net.add(nn.Dense(8, activation='relu', prefix='a_'), nn.Dense(2, prefix='b_'))
    net.initialize(MyInit())
    net(nd.ones((2, 4)))
    assert capsys.readouterr().out.splitlines() == [
        'Init a_weight (8, 4)', 'Init b_weight (2, 8)']
    w = net[0].weight.data().asnumpy()
    assert np.all((w == 0) | (np.abs(w) >= 5)) and np.any(w != 0)


def test_custom_parameters_get_the_global_initializer_whatever_their_name():
    blk = nn.Block()
    bias = blk.params.get('bias', shape=(1000,))       # no init=: the global one
    blk.initialize(init.Uniform(1.0))
    assert bias.data().asnumpy().std() > 0.5


def test_name_dispatch_when_called_directly():
    arr = nd.ones((2, 3))
    init.Xavier()(init.InitDesc('fc_bias'), arr)
    assert np.all(arr.asnumpy() == 0)
    init.Xavier()(init.InitDesc('bn_gamma'), arr)
    assert np.all(arr.asnumpy() == 1)
    init.Xavier()(init.InitDesc('bn_running_mean'), arr)
    assert np.all(arr.asnumpy() == 0)
    init.Xavier()(init.InitDesc('fc_weight'), arr)
    assert arr.asnumpy().std() > 0
    with pytest.raises(ValueError, match="don't know how to initialize"):
        init.Xavier()(init.InitDesc('foo'), arr)
    # A plain name: MXNet's deprecated legacy path, same dispatch
    with pytest.warns(DeprecationWarning, match='InitDesc'):
        init.Xavier()('bn_beta', arr)
    assert np.all(arr.asnumpy() == 0)
    up = nd.zeros((1, 1, 4, 4))
    with pytest.warns(DeprecationWarning):
        init.Zero()('upsampling0_weight', up)       # legacy: bilinear kernel
    assert up.asnumpy()[0, 0, 1, 1] == 0.5625


def test_subclass_fillers_are_used_by_name():
    class BiasTwo(init.Uniform):
        def _init_bias(self, _, arr):
            arr[:] = 2.0

        def _init_gamma(self, _, arr):
            arr[:] = 3.0

    arr = nd.zeros((3,))
    BiasTwo()(init.InitDesc('fc_bias'), arr)
    assert np.all(arr.asnumpy() == 2)
    BiasTwo()(init.InitDesc('bn_gamma'), arr)
    assert np.all(arr.asnumpy() == 3)


def test_mixed_and_load():
    m = init.Mixed(['.*bias', '.*'], [init.Constant(3.0), init.One()])
    blk = nn.Block()
    w = blk.params.get('weight', shape=(2,))
    b = blk.params.get('bias', shape=(2,))
    blk.initialize(m)
    assert np.all(w.data().asnumpy() == 1) and np.all(b.data().asnumpy() == 3)
    src = {w.name: nd.array([5.0, 6.0])}
    b.initialize(init.Load(src, default_init=init.Zero()), force_reinit=True)
    w.initialize(init.Load(src), force_reinit=True)
    np.testing.assert_array_equal(w.data().asnumpy(), [5, 6])
    np.testing.assert_array_equal(b.data().asnumpy(), [0, 0])


def test_seed_makes_initialization_reproducible(ctx):
    def build():
        net = nn.Sequential()
        net.add(nn.Dense(16, activation='relu'), nn.Dense(4))
        net.initialize(init.Xavier())
        net(nd.ones((1, 8)))
        return [p.data().asnumpy() for p in net.collect_params().values()]

    mx.random.seed(123)
    a = build()
    mx.random.seed(123)
    b = build()
    c = build()
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0])


def test_verbose_initialization_prints(capsys):
    d = nn.Dense(2, in_units=3, prefix='v_')
    d.initialize(init.Normal(), verbose=True)
    out = capsys.readouterr().out
    assert 'Initialized v_weight' in out


def test_initializers_compare_equal_by_value():
    assert init.Constant(-10) == init.Constant(-10.0)
    assert init.Constant(-10) != init.Constant(-9)
    assert init.Constant(nd.ones((2, 3))) == init.Constant(np.ones((2, 3)))
    assert init.Constant(nd.ones((2, 3))) != init.Constant(np.ones((3, 2)))
    assert init.Xavier(magnitude=2) == init.Xavier(magnitude=2)
    assert init.Xavier(magnitude=2) != init.Xavier(magnitude=3)
    assert init.Zero() != init.One() and init.Uniform() != 'uniform'
    # Mixed and Load keep their state outside _kwargs: equal only to themselves
    m = init.Mixed(['.*'], [init.One()])
    assert m == m and m != init.Mixed(['.*'], [init.Zero()])
    assert init.Load({'w': nd.ones(2)}) != init.Load({'w': nd.zeros(2)})


def test_sharing_with_an_equal_but_not_identical_init():
    class MyBlock(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.param = self.params.get('param', shape=(1,),
                                             init=init.Constant(-10.0))

    a = MyBlock()
    b = MyBlock(params=a.collect_params())      # get() sees a new Constant(-10)
    assert a.param is b.param
    c = MyBlock()
    assert c.param is not a.param and c.param.init == a.param.init
    with pytest.raises(ValueError, match='init'):
        a.params.get('param', init=init.Constant(3.0))


def test_constant_dumps_arrays_as_lists():
    c = init.Constant(nd.arange(6).reshape(2, 3))
    assert c.dumps() == '["constant", {"value": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]}]'
    assert c.dumps() == json.dumps(['constant', c._kwargs])
    assert init.Constant(1).dumps() == '["constant", {"value": 1}]'
    back = initializer.create(init.Constant(np.ones((2, 2))).dumps())
    np.testing.assert_array_equal(draw(back, (2, 2)), 1)


def _bilinear_reference(shape):
    """The upsampling kernel, one element at a time from its definition."""
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    w = np.zeros(shape)
    for idx in np.ndindex(*shape):
        y, x = idx[2], idx[3]
        w[idx] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return w


@pytest.mark.parametrize('shape', [(1, 1, 4, 4), (2, 3, 3, 3), (1, 2, 5, 6)])
def test_bilinear_upsampling_kernel(shape):
    w = nd.empty(shape)
    init.Bilinear()._init_weight('up_weight', w)
    np.testing.assert_allclose(w.asnumpy(), _bilinear_reference(shape), rtol=1e-6)
    if shape == (1, 1, 4, 4):
        k = np.array([0.25, 0.75, 0.75, 0.25])
        np.testing.assert_array_equal(w.asnumpy()[0, 0], np.outer(k, k))
    assert initializer.create('bilinear') == init.Bilinear()
    with pytest.raises(ValueError, match='4-D'):
        init.Bilinear()._init_weight('w', nd.empty((4, 4)))


def test_lstm_bias_sets_the_forget_gate():
    b = draw(init.LSTMBias(forget_bias=2.5), (12,), name='lstm_i2h_bias')
    np.testing.assert_array_equal(b, [0] * 3 + [2.5] * 3 + [0] * 6)
