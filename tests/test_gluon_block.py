"""gluon.Block / HybridBlock / Sequential: naming, registration, parameters,
deferred initialization, sharing, hooks and the errors a learner meets."""
import re
import warnings

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, init, nd
from d2lmini.gluon import nn



class MLP(nn.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = nn.Dense(8, activation='relu')
        self.output = nn.Dense(3)

    def forward(self, x):
        return self.output(self.hidden(x))


class MyDense(nn.Block):
    """The book's custom layer: parameters from self.params.get."""

    def __init__(self, units, in_units, **kwargs):
        super().__init__(**kwargs)
        self.weight = self.params.get('weight', shape=(in_units, units))
        self.bias = self.params.get('bias', shape=(units,))

    def forward(self, x):
        return nd.relu(nd.dot(x, self.weight.data(x.context)) +
                       self.bias.data(x.context))


# --- names --------------------------------------------------------------------
def test_prefixes_count_per_class_and_name_scope_nests():
    a, b = nn.Dense(2), nn.Dense(2)
    ia, ib = (int(re.fullmatch(r'dense(\d+)_', d.prefix).group(1)) for d in (a, b))
    assert ib == ia + 1 and a.name == f'dense{ia}'
    assert a.weight.name == a.prefix + 'weight'
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(4), nn.Dense(2), nn.Conv2D(3, 3), nn.MaxPool2D())
    names = [blk.prefix for blk in net]
    assert names == [net.prefix + p for p in ('dense0_', 'dense1_', 'conv0_', 'pool0_')]
    assert list(net.collect_params()) == [
        net.prefix + n for n in ('dense0_weight', 'dense0_bias', 'dense1_weight',
                                 'dense1_bias', 'conv0_weight', 'conv0_bias')]


def test_explicit_prefix_and_empty_prefix():
    d = nn.Dense(2, prefix='fc_')
    assert d.prefix == 'fc_' and d.name == 'fc' and d.weight.name == 'fc_weight'
    seq = nn.Sequential(prefix='')
    with seq.name_scope():              # an empty prefix adds no scope
        inner = nn.Dense(2, prefix='x_')
    assert inner.prefix == 'x_'
    act = nn.Dense(2, activation='relu', prefix='d_')
    assert act.act.prefix == 'd_relu_'


def test_activation_child_is_registered_but_has_no_params():
    d = nn.Dense(2, activation='tanh', in_units=3)
    assert list(d._children) == ['act']
    assert list(d.collect_params()) == [d.prefix + 'weight', d.prefix + 'bias']


# --- containers ---------------------------------------------------------------
def test_sequential_add_index_len_iter_slice():
    net = nn.Sequential()
    layers = [nn.Dense(4), nn.Dense(3), nn.Dense(2)]
    assert net.add(*layers) is None     # as MXNet: no chaining
    assert len(net) == 3 and net[0] is layers[0] and net[-1] is layers[2]
    assert list(net) == layers
    sub = net[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == layers[1:]
    net.initialize()
    y = net(nd.ones((5, 6)))
    assert y.shape == (5, 2)
    assert np.allclose(sub(net[0](nd.ones((5, 6)))).asnumpy(), y.asnumpy())
    r = repr(net)
    assert r.startswith('Sequential(\n  (0): Dense(6 -> 4, linear)')


def test_hybrid_sequential_and_hybridize_is_accepted():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation='relu'), nn.Dense(2))
    net.initialize()
    x = nd.random.uniform(shape=(3, 5))
    y0 = net(x).asnumpy()
    net.hybridize(static_alloc=True, static_shape=True)
    assert net._active and net[0]._active
    np.testing.assert_allclose(net(x).asnumpy(), y0)


def test_nested_blocks_collect_params_and_structure_names():
    class Nest(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.net = nn.Sequential()
            self.net.add(nn.Dense(4), MLP())
            self.dense = nn.Dense(2)

        def forward(self, x):
            return self.dense(self.net(x))

    n = Nest()
    assert sorted(n._collect_params_with_prefix()) == sorted([
        'net.0.weight', 'net.0.bias', 'net.1.hidden.weight', 'net.1.hidden.bias',
        'net.1.output.weight', 'net.1.output.bias', 'dense.weight', 'dense.bias'])
    assert len(n.collect_params()) == 8
    n.initialize()
    assert n(nd.ones((2, 7))).shape == (2, 2)
    r = repr(n)
    assert '(net): Sequential(' in r and '(dense): Dense(3 -> 2, linear)' in r


def test_register_child_and_book_style_custom_sequential():
    class MySequential(nn.Block):
        def add(self, block):
            self._children[block.name] = block

        def forward(self, x):
            for block in self._children.values():
                x = block(x)
            return x

    net = MySequential()
    net.add(nn.Dense(5, activation='relu'))
    net.add(nn.Dense(2))
    net.initialize()
    assert net(nd.ones((3, 4))).shape == (3, 2)
    assert len(net.collect_params()) == 4
    blk = nn.Block()
    blk.register_child(nn.Dense(1))
    blk.register_child(nn.Dense(1), 'named')
    assert list(blk._children) == ['0', 'named']
    with pytest.raises(TypeError, match='children must be Blocks'):
        blk.register_child(3)


def test_attribute_registration_rules():
    class Bad(nn.Block):
        def __init__(self):
            self.dense = nn.Dense(2)        # before super().__init__()
            super().__init__()

    with pytest.raises(AttributeError, match='super\\(\\).__init__'):
        Bad()
    m = MLP()
    with pytest.raises(TypeError, match='cannot be replaced'):
        m.hidden = 3
    m.hidden = nn.Dense(5)                  # replacing with a Block is fine
    assert m._children['hidden'] is m.hidden
    d = MyDense(2, 3)
    with pytest.raises(ValueError, match='params=...'):
        d.weight = gluon.Parameter('other', shape=(3, 2))


def test_collect_params_select_regex():
    net = nn.Sequential()
    net.add(nn.Dense(3), nn.Dense(2), nn.BatchNorm())
    w = net.collect_params('.*weight')
    assert list(w) == [net[0].weight.name, net[1].weight.name]
    both = net.collect_params(f'{net[0].prefix}weight|{net[1].prefix}bias')
    assert list(both) == [net[0].weight.name, net[1].bias.name]
    stats = net.collect_params('.*running_')
    assert [p.grad_req for p in stats.values()] == ['null', 'null']


# --- parameter dicts ----------------------------------------------------------
def test_parameter_dict_operations():
    net = MLP()
    params = net.collect_params()
    assert isinstance(params, gluon.ParameterDict)
    assert params.prefix == net.prefix
    net.initialize(init.One())
    x = nd.ones((2, 4))
    with autograd.record():
        y = net(x).sum()
    y.backward()
    name = net.hidden.weight.name
    assert name in params and params[name] is net.hidden.weight
    assert abs(params[name].grad()).sum().asscalar() > 0
    params.zero_grad()
    assert all(p.grad().sum().asscalar() == 0 for p in params.values())
    params.setattr('grad_req', 'add')
    assert all(p.grad_req == 'add' for p in params.values())
    params.setattr('grad_req', 'null')
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        net.hidden.weight.grad()
    with pytest.raises(KeyError, match='no parameter'):
        params['nope']
    text = repr(params)
    assert text.startswith(net.prefix + ' (\n  Parameter ') and 'shape=(8, 4)' in text


def test_parameter_dict_get_shares_and_checks():
    pd = gluon.ParameterDict('blk_')
    p = pd.get('w', shape=(2, 0), allow_deferred_init=True)
    assert pd.get('w', shape=(2, 5)) is p and p.shape == (2, 5)
    with pytest.raises(ValueError, match='shape'):
        pd.get('w', shape=(3, 5))
    with pytest.raises(ValueError, match='dtype'):
        pd.get('w', dtype='float64')
    with pytest.raises(TypeError, match="unknown argument.*'shap'"):
        pd.get('w2', shap=(1,))
    shared = gluon.ParameterDict('blk_', shared=pd)
    assert shared.get('w') is p
    other = gluon.ParameterDict('x_')
    other.get('w', shape=(1,))
    merged = gluon.ParameterDict()
    merged.update({'blk_w': p})
    merged.update({'blk_w': p})             # the same object again: fine
    with pytest.raises(ValueError, match='two different Parameters'):
        merged.update({'blk_w': other['x_w']})


def test_reset_ctx_moves_all_parameters():
    net = MLP()
    net.initialize(init.Normal(1.0))
    net(nd.ones((1, 4)))
    before = {k: v.data().asnumpy() for k, v in net.collect_params().items()}
    net.collect_params().reset_ctx(mx.cpu(1))
    for k, v in net.collect_params().items():
        assert v.list_ctx() == [mx.cpu(1)]
        np.testing.assert_array_equal(v.data().asnumpy(), before[k])
    assert net(nd.ones((1, 4), ctx=mx.cpu(1))).context == mx.cpu(1)


# --- hybrid_forward -----------------------------------------------------------
def test_hybrid_forward_gets_F_and_params_as_keywords():
    seen = {}

    class Scale(nn.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.w = self.params.get('w', shape=(3,), init=init.Constant(2.0))

        def hybrid_forward(self, F, x, w):
            seen['F'], seen['w'] = F, w
            return F.broadcast_mul(x, w)

    blk = Scale()
    blk.initialize()
    y = blk(nd.ones((2, 3)))
    assert seen['F'] is nd and seen['w'] is blk.w.data()
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 3), 2.0))


def test_hybrid_forward_extra_inputs_and_custom_infer_shape():
    class Affine(nn.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.scale = self.params.get('scale', shape=(0,), init=init.One(),
                                         allow_deferred_init=True)

        def infer_shape(self, x, shift):
            self.scale.shape = (x.shape[-1],)

        def hybrid_forward(self, F, x, shift, scale):
            return x * scale + shift

    blk = Affine()
    blk.initialize()
    y = blk(nd.ones((2, 4)), nd.ones((2, 4)))
    assert blk.scale.shape == (4,)
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 4), 2.0))


def test_hybrid_block_without_shape_inference_says_what_to_do():
    class NoInfer(nn.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.w = self.params.get('w', shape=(0,), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return x * w

    blk = NoInfer()
    blk.initialize()
    with pytest.raises(mx.MXNetError, match='infer_shape'):
        blk(nd.ones((2,)))


def test_hybrid_block_rejects_non_ndarray_input():
    d = nn.Dense(2, in_units=2)
    d.initialize()
    with pytest.raises(ValueError, match='at least one NDArray'):
        d(np.ones((1, 2)))


def test_forward_runs_in_the_inputs_context():
    seen = []

    class Probe(nn.Block):
        def forward(self, x):
            seen.append(mx.current_context())
            return nd.zeros((1,))           # no ctx given: follows the input

    before = tuple(mx.context._stack()), mx.current_context()
    out = Probe()(nd.ones((1,), ctx=mx.cpu(1)))
    assert seen == [mx.cpu(1)] and out.context == mx.cpu(1)
    # restored exactly: no thread-local context left behind
    assert (tuple(mx.context._stack()), mx.current_context()) == before


# --- initialization errors ----------------------------------------------------
def test_calling_an_uninitialized_net_says_initialize():
    net = MLP()
    with pytest.raises(RuntimeError, match=r'net\.initialize\(\)'):
        net(nd.ones((2, 4)))
    with pytest.raises(RuntimeError, match='has not been initialized'):
        MyDense(2, 3)(nd.ones((1, 3)))


def test_deferred_initialization_error_before_first_forward():
    net = MLP()
    net.initialize()
    with pytest.raises(gluon.DeferredInitializationError,
                       match='first batch.*in_units'):
        net.hidden.weight.data()
    assert net.hidden.weight.shape == (8, 0)
    net(nd.ones((2, 4)))
    assert net.hidden.weight.shape == (8, 4) and net.output.weight.shape == (3, 8)
    assert net.hidden.weight.data().shape == (8, 4)


def test_known_shapes_initialize_immediately():
    d = nn.Dense(3, in_units=4)
    d.initialize()
    assert d.weight.data().shape == (3, 4)
    md = MyDense(3, 5)
    md.initialize()
    assert md(nd.ones((2, 5))).shape == (2, 3)


def test_initialize_twice_warns_and_force_reinit_redraws():
    d = nn.Dense(3, in_units=4)
    d.initialize()
    w0 = d.weight.data().asnumpy()
    with pytest.warns(UserWarning, match='already initialized'):
        d.initialize()
    np.testing.assert_array_equal(d.weight.data().asnumpy(), w0)
    d.initialize(init.Normal(1.0), force_reinit=True)
    assert not np.allclose(d.weight.data().asnumpy(), w0)


def test_unknown_keyword_arguments_are_rejected_clearly():
    with pytest.raises(TypeError, match=r"Dense\(\).*'activaton'.*'activation'"):
        nn.Dense(3, activaton='relu')
    with pytest.raises(TypeError, match=r"Conv2D\(\).*'stride'.*'strides'"):
        nn.Conv2D(3, 3, stride=2)
    with pytest.raises(TypeError, match=r"MaxPool2D\(\).*'pool'"):
        nn.MaxPool2D(pool=2)
    with pytest.raises(TypeError, match=r"MLP\(\).*'units'.*prefix, params"):
        MLP(units=3)
    with pytest.raises(TypeError, match=r"Sequential\(\).*'prefx'.*'prefix'"):
        nn.Sequential(prefx='a_')
    with pytest.raises(TypeError, match='ParameterDict'):
        nn.Dense(3, params={'a': 1})
    with pytest.raises(ValueError, match='unknown activation'):
        nn.Dense(3, activation='Relu')


# --- sharing ------------------------------------------------------------------
def test_shared_parameters_are_the_same_objects_and_accumulate_grads():
    shared = nn.Dense(4, activation='relu')
    net = nn.Sequential()
    net.add(nn.Dense(4, activation='relu'), shared,
            nn.Dense(4, activation='relu', params=shared.params), nn.Dense(1))
    net.initialize()
    x = nd.random.uniform(shape=(2, 4))
    net(x)
    assert net[1].weight is net[2].weight and net[1].bias is net[2].bias
    assert len(net.collect_params()) == 6
    net[1].weight.data()[0, 0] = 100.0
    assert net[2].weight.data()[0, 0].asscalar() == 100.0

    # the gradient of a shared weight is the sum of both uses' gradients
    w = shared.weight
    with autograd.record():
        h1 = net[0](x)
        h2 = net[1](h1)
        h3 = net[2](h2)
        y = net[3](h3).sum()
    y.backward()
    total = w.grad().asnumpy().copy()
    h1, h2 = h1.detach(), h2.detach()
    a = nd.array(w.data().asnumpy())
    a.attach_grad()
    b = nd.array(shared.bias.data().asnumpy())
    with autograd.record():
        u2 = nd.relu(nd.dot(h1, a.T) + b)
        u3 = nd.relu(nd.dot(u2, a.T) + b)
        z = net[3](u3).sum()
    z.backward()
    np.testing.assert_allclose(total, a.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_sharing_a_whole_block_via_collect_params():
    class ScopedMLP(nn.Block):              # children inside name_scope: MXNet's
        def __init__(self, **kwargs):       # condition for sharing by name
            super().__init__(**kwargs)
            with self.name_scope():
                self.hidden = nn.Dense(8, activation='relu')
                self.output = nn.Dense(3)

        def forward(self, x):
            return self.output(self.hidden(x))

    a = ScopedMLP(prefix='mlp_')
    b = ScopedMLP(prefix='mlp_', params=a.collect_params())
    assert a.hidden.weight.name == 'mlp_dense0_weight'
    a.initialize()
    x = nd.ones((2, 4))
    np.testing.assert_array_equal(a(x).asnumpy(), b(x).asnumpy())
    assert b.hidden.weight is a.hidden.weight


def test_constant_parameters_are_not_trained():
    class FixedHiddenMLP(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.rand_weight = self.params.get_constant(
                'rand_weight', np.random.uniform(size=(4, 4)))
            self.dense = nn.Dense(4, activation='relu')

        def forward(self, x):
            x = self.dense(x)
            return nd.relu(nd.dot(x, self.rand_weight.data()) + 1)

    net = FixedHiddenMLP()
    net.initialize()
    c = net.rand_weight
    assert isinstance(c, gluon.Constant) and c.grad_req == 'null'
    np.testing.assert_allclose(c.data().asnumpy(), c.value.asnumpy())
    with pytest.warns(UserWarning, match='does not support'):
        c.grad_req = 'write'
    assert c.grad_req == 'null'
    with autograd.record():
        y = net(nd.ones((2, 4))).sum()
    y.backward()
    assert net.params.get_constant('rand_weight') is c
    assert repr(c).startswith('Constant ')


# --- hooks, apply, summary ----------------------------------------------------
def test_forward_hooks_apply_and_summary(capsys):
    net = nn.Sequential()
    net.add(nn.Dense(4, in_units=3), nn.Dense(2, in_units=4))
    net.initialize()
    calls = []
    pre = net[0].register_forward_pre_hook(lambda b, args: calls.append(('pre', b)))
    post = net[0].register_forward_hook(
        lambda b, args, out: calls.append(('post', out.shape)))
    net(nd.ones((5, 3)))
    assert calls == [('pre', net[0]), ('post', (5, 4))]
    pre.detach()
    post.detach()
    net(nd.ones((5, 3)))
    assert len(calls) == 2
    seen = []
    net.apply(lambda b: seen.append(type(b).__name__))
    assert seen == ['Dense', 'Dense', 'Sequential']
    net.summary(nd.ones((5, 3)))
    out = capsys.readouterr().out
    assert 'Dense-1' in out and '(5, 4)' in out and 'Total params: 26' in out


def test_cast_changes_parameter_dtype():
    d = nn.Dense(2, in_units=3)
    d.initialize()
    d.cast('float64')
    assert d.weight.dtype == np.float64 and d.weight.data().dtype == np.float64
    assert d.weight.grad().dtype == np.float64
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        y = d(nd.ones((1, 3), dtype='float64'))
    assert y.dtype == np.float64


# --- HybridBlock inputs: None, lists, and what hybridize() refuses ------------
class _AddOrPass(gluon.HybridBlock):
    """a + b, or whichever of them is not None; lists are summed first."""

    def hybrid_forward(self, F, a, b=None):
        a, b = (sum(v) if isinstance(v, list) else v for v in (a, b))
        if a is None or b is None:
            if a is None and b is None:
                raise NotImplementedError
            return b if a is None else a
        return a + b


class _Chain(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.f1, self.f2, self.f3 = _AddOrPass(), _AddOrPass(), _AddOrPass()

    def hybrid_forward(self, F, a, b):
        return self.f3(self.f2(a, self.f1(a, b)), b)


@pytest.mark.parametrize('hybridize', [False, True])
def test_hybrid_block_accepts_none_and_lists(hybridize):
    one, two = nd.ones((3,)), 2 * nd.ones((3,))
    for a, b, want in [(None, two, 2 * 2), (one, two, 1 * 2 + 2 * 2), (one, None, 2),
                       ([one, one], [two, two], 2 * 2 + 4 * 2)]:
        net = _Chain()
        if hybridize:
            net.hybridize()
        for _ in range(2):                       # the second call: the 'cached' one
            np.testing.assert_array_equal(net(a, b).asnumpy(), np.full(3, want))
    net = _Chain()
    if hybridize:
        net.hybridize()
    with pytest.raises(ValueError, match='at least one NDArray'):
        net(None, None)


def test_hybrid_block_without_hybridize_takes_python_numbers():
    f = _AddOrPass()
    np.testing.assert_array_equal(f(nd.ones((2,)), 3).asnumpy(), [4, 4])
    np.testing.assert_array_equal(f([nd.ones((2,)), nd.ones((2,))], 1).asnumpy(),
                                  [3, 3])


def test_hybrid_block_runs_on_the_context_of_the_first_ndarray():
    d = nn.Dense(2, in_units=3)
    d.initialize(ctx=mx.cpu(1))

    class Wrap(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.d = d

        def hybrid_forward(self, F, nothing, x):
            return self.d(x[0])

    out = Wrap()(None, [nd.ones((4, 3), ctx=mx.cpu(1))])
    assert out.context == mx.cpu(1) and out.shape == (4, 2)


def test_hybridized_block_refuses_what_a_cached_graph_cannot_take():
    f = _AddOrPass()
    f.hybridize()
    with pytest.raises(ValueError, match='NDArrays, None or'):
        f(nd.ones((2,)), 1)
    f = _AddOrPass()
    f.hybridize()
    with pytest.raises(ValueError, match='several contexts'):
        f(nd.ones((2,), ctx=mx.cpu(1)), nd.ones((2,), ctx=mx.cpu(2)))
    # The structure of the first call is kept; trailing Nones may come and go
    # (arguments left to their defaults), anything else differs.
    f = _AddOrPass()
    f.hybridize()
    f(nd.ones((2,)))
    f(nd.ones((2,)), None)
    with pytest.raises(ValueError, match='does not match the first call'):
        f(nd.ones((2,)), nd.ones((2,)))
    f.hybridize()                                # starts anew
    np.testing.assert_array_equal(f(nd.ones((2,)), nd.ones((2,))).asnumpy(), [2, 2])
    g = _Chain()
    g.hybridize()
    g(None, nd.ones((2,)))
    with pytest.raises(ValueError, match=r'\[0, 0\].*\[-1, 0\]'):
        g(nd.ones((2,)), nd.ones((2,)))


# --- containers of Blocks -----------------------------------------------------
def _collect_warnings(make):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        make().collect_params()
    return [str(x.message) for x in w]


def test_blocks_in_a_list_or_dict_attribute_warn_they_are_not_registered():
    class InList(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.layers = [nn.Dense(i + 1) for i in range(3)]

    class InDict(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.layers = {'a': (nn.Dense(2), nn.Dense(2))}

    class InSequential(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.layers = nn.Sequential()
            self.layers.add(*[nn.Dense(i + 1) for i in range(3)])

    class Registered(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.layers = [nn.Dense(2), nn.Dense(3)]
            for i, b in enumerate(self.layers):
                self.register_child(b, f'layer{i}')
            self.data = {'a': '4', 'b': 123}

    msg = _collect_warnings(InList)
    assert len(msg) == 1 and '"InList.layers" is an unregistered container with ' \
        'Blocks' in msg[0] and 'register_child()' in msg[0]
    assert len(_collect_warnings(InDict)) == 1
    assert _collect_warnings(InSequential) == []
    assert _collect_warnings(Registered) == []
    with pytest.warns(UserWarning, match='unregistered container'):
        assert len(InList().collect_params()) == 0     # what the warning is about


def test_sequential_of_hybrid_blocks_suggests_hybrid_sequential():
    net = nn.Sequential()
    net.add(nn.Dense(20))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        net.hybridize()
    assert len(w) == 1 and 'Consider using HybridSequential' in str(w[0].message)
    assert net[0]._active
    mixed = nn.Sequential()
    mixed.add(nn.Dense(2), MLP())
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        mixed.hybridize()


def test_summary_refuses_a_hybridized_block_and_leaves_no_hooks():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3), nn.Dense(2, in_units=4))
    net.initialize()
    net[1].hybridize()
    with pytest.raises(AssertionError, match='must not be hybridized'):
        net.summary(nd.ones((5, 3)))
    assert all(not b._forward_hooks for b in (net, net[0], net[1]))


def test_summary_prints_mxnets_table(capsys):
    net = nn.Sequential()
    net.add(nn.Embedding(40, 30), nn.Dense(30, flatten=False), nn.BatchNorm(axis=-1))
    net.add(nn.Dense(30, flatten=False, params=net[1].params))
    net.initialize()
    net.summary(nd.ones((4, 5)))
    lines = capsys.readouterr().out.splitlines()
    fmt = '{:>20}  {:>42} {:>15}'
    assert lines[1] == fmt.format('Layer (type)', 'Output Shape', 'Param #')
    assert lines[3] == fmt.format('Input', '(4, 5)', 0)
    assert lines[4] == fmt.format('Embedding-1', '(4, 5, 30)', 1200)
    assert lines[5] == fmt.format('Dense-2', '(4, 5, 30)', 930)
    assert lines[6] == fmt.format('BatchNorm-3', '(4, 5, 30)', 120)
    assert lines[7] == fmt.format('Dense-4', '(4, 5, 30)', 930)   # shares Dense-2's
    assert lines[9:15] == [
        'Parameters in forward computation graph, duplicate included',
        '   Total params: 3180', '   Trainable params: 3120',
        '   Non-trainable params: 60',            # BatchNorm's running mean and var
        'Shared params in forward computation graph: 930',
        'Unique parameters in model: 2250']


def test_hybrid_block_children_must_be_hybrid_blocks():
    net = nn.HybridSequential()
    with pytest.raises(ValueError, match='try HybridSequential'):
        net.add(MLP())
    with pytest.raises(ValueError, match='must also be HybridBlock'):
        nn.Dense(2).child = MLP()


def test_hybridize_warns_about_forward_hooks():
    d = nn.Dense(2)
    d.register_forward_hook(lambda *a: None)
    with pytest.warns(UserWarning, match='hooks will not take effect'):
        d.hybridize()


def test_hybridize_clear_false_keeps_the_recorded_input_structure():
    f = _AddOrPass()
    f.hybridize()
    f(nd.ones((2,)), nd.ones((2,)))
    f.hybridize(clear=False, static_alloc=True)
    with pytest.raises(ValueError, match='does not match'):
        f(None, nd.ones((2,)))
    f.hybridize(static_alloc=True)                  # clear=True: a new structure
    np.testing.assert_array_equal(f(None, nd.ones((2,))).asnumpy(), [1, 1])


def test_summary_of_a_net_on_another_context(capsys):
    net = nn.Sequential()
    net.add(nn.Dense(3, in_units=2))
    net.initialize(ctx=[mx.cpu(1), mx.cpu(2)])
    net.summary(nd.ones((4, 2), ctx=mx.cpu(2)))
    out = capsys.readouterr().out
    assert 'Dense-1' in out and 'Total params: 9' in out
