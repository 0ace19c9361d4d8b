"""mx.contrib.amp: the loss scaler, AMP's casts, amp.init's operators, the
graph conversion, and training in mixed precision.

Oracles: a plain-Python model of MXNet's loss-scale rule, and fixtures
written by MXNet 1.9.1 itself (tests/fixtures/amp/make_fixtures.py): the
scale MXNet's LossScaler reports step by step, the graphs MXNet's
amp.convert_symbol makes, and the list MXNet puts each operator in.

``amp.init()`` changes ``nd`` and ``mx.sym`` for the whole process, so the
tests that need it use the ``amp_on`` fixture, which undoes it afterwards.
"""
import json
import pathlib

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, nd
from d2lmini.contrib import amp
from d2lmini.contrib.amp.lists import symbol_fp16 as L
from d2lmini.gluon import nn
from d2lmini.symbol import ops as sym_ops

FIXTURES = pathlib.Path(__file__).parent / 'fixtures' / 'amp'
F16, F32, F64 = np.dtype('float16'), np.dtype('float32'), np.dtype('float64')


@pytest.fixture
def amp_on():
    amp.init()
    try:
        yield
    finally:
        amp._reset()


# --- the loss scaler ----------------------------------------------------------
def model_schedule(overflows):
    """MXNet's rule, written out: the scale each step reports, and the steps
    skipped.  The scale the check of a step decides is reported one step
    later (MXNet keeps it in a "next" slot)."""
    scale, nxt, clean, scales, skipped = 2.0 ** 16, 2.0 ** 16, 0, [], []
    for step, over in enumerate(overflows):
        scales.append(scale)
        scale = nxt
        if over:
            nxt, clean = scale / 2, 0
            skipped.append(step)
        else:
            clean += 1
        if clean == 2000:
            nxt, clean = min(2.0 ** 24, scale * 2), 0
    return scales, skipped


def run_lengths(xs):
    runs = []
    for x in xs:
        if runs and runs[-1][0] == x:
            runs[-1][1] += 1
        else:
            runs.append([x, 1])
    return runs


def scaler_schedule(overflows):
    ls = amp.LossScaler()
    scales = []
    for over in overflows:
        scales.append(ls.loss_scale)
        ls._record(over)
    return scales


def test_loss_scale_schedule_matches_mxnet():
    fx = json.loads((FIXTURES / 'loss_scale.json').read_text())
    over = np.zeros(fx['steps'], bool)
    over[fx['overflow_at']] = True
    scales, skipped = model_schedule(over)
    # the model is MXNet's rule: it reproduces MXNet's own scaler
    assert run_lengths(scales) == fx['scale_runs'] and skipped == fx['skipped']
    assert scaler_schedule(over) == scales
    assert max(scales) == 2.0 ** 19 and 2.0 ** 16 in scales
    # ... and on a random pattern, with long clean runs up to the 2**24 cap
    rng = np.random.default_rng(0)
    over = np.zeros(30000, bool)
    over[rng.choice(100, 5, replace=False)] = True
    over[rng.choice(np.arange(29500, 30000), 5, replace=False)] = True
    scales, _ = model_schedule(over)
    assert scaler_schedule(over) == scales and max(scales) == 2.0 ** 24


def _param(name, grad):
    p = gluon.Parameter(name, shape=grad.shape, dtype=grad.dtype)
    p.initialize(mx.init.Zero())
    p.grad()[:] = grad
    return p


@pytest.mark.parametrize('bad', [np.inf, -np.inf, np.nan])
def test_has_overflow_looks_at_every_gradient(bad):
    ok = [_param('a', nd.ones((3, 4))), _param('b', nd.ones(5, dtype='float16'))]
    ls = amp.LossScaler()
    assert ls.has_overflow(ok) is False
    worse = nd.ones(5, dtype='float16')
    worse[2] = bad
    assert ls.has_overflow(ok + [_param('c', worse)]) is True
    assert (ls.loss_scale, ls._next_loss_scale) == (2.0 ** 16, 2.0 ** 15)


# --- the casts ----------------------------------------------------------------
@pytest.mark.parametrize('src,to,expect', [
    ('float32', 'float16', F16), ('float16', 'float32', F32),
    ('float32', 'float32', F32),
    ('int32', 'float16', np.dtype('int32')), ('float64', 'float16', F64)])
def test_amp_cast_casts_only_float16_and_float32(src, to, expect, ctx):
    x = nd.array([1.5, -2.25, 3.0], dtype=src)
    y = nd.amp_cast(x, dtype=to)
    assert y.dtype == expect and y.asnumpy().dtype == expect
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy().astype(expect))


@pytest.mark.parametrize('dtypes,narrow,expect', [     # MXNet 1.9.1's answers
    (('float16', 'float32'), False, (F32, F32)),
    (('float16', 'float32'), True, (F16, F16)),
    (('float64', 'float16'), False, (F64, F64)),
    (('float16', 'float64'), False, (F16, F64)),
    (('float16', 'int32'), False, (F16, np.dtype('int32')))])
def test_amp_multicast_gives_the_widest_type(dtypes, narrow, expect):
    xs = [nd.ones(2, dtype=d) for d in dtypes]
    outs = nd.amp_multicast(*xs, num_outputs=2, cast_narrow=narrow)
    assert tuple(o.dtype for o in outs) == expect
    s = mx.sym.amp_multicast(*[mx.sym.var(f'x{i}') for i in range(2)], num_outputs=2,
                             cast_narrow=narrow)
    _, out_types, _ = s.infer_type(x0=dtypes[0], x1=dtypes[1])
    assert tuple(np.dtype(t) for t in out_types) == expect


def test_cast_gradients_come_back_in_the_input_type(ctx):
    w = nd.array([[0.5, -1.0], [2.0, 0.25]])
    h = nd.array([1.0, 3.0], dtype='float16')
    w.attach_grad()
    h.attach_grad()
    with autograd.record():
        a, b = nd.amp_multicast(nd.amp_cast(w, dtype='float16'), h, num_outputs=2)
        y = (a * b).sum()
    y.backward()
    assert a.dtype == F16 and w.grad.dtype == F32 and h.grad.dtype == F16
    np.testing.assert_array_equal(w.grad.asnumpy(), np.array([[1, 3], [1, 3]]))
    np.testing.assert_array_equal(h.grad.asnumpy(), np.array([2.5, -0.75]))


def test_all_finite(ctx):
    assert nd.all_finite(nd.ones(3)).asnumpy().tolist() == [1.0]
    assert nd.all_finite(nd.array([1, np.nan])).asnumpy().tolist() == [0.0]
    flag = nd.ones(1)
    nd.multi_all_finite(nd.ones(2), nd.array([np.inf]), num_arrays=2,
                        init_output=False, out=flag)
    nd.multi_all_finite(nd.ones(2), init_output=False, out=flag)     # stays 0
    assert flag.asnumpy().tolist() == [0.0]
    with pytest.raises(ValueError, match='num_arrays=3'):
        nd.multi_all_finite(nd.ones(2), num_arrays=3)


# --- amp.init: the operators cast ---------------------------------------------
def test_init_makes_operators_cast(amp_on):
    x, w = nd.ones((2, 4)), nd.ones((4, 4))
    y = nd.FullyConnected(x, w, None, num_hidden=4, no_bias=True)
    assert y.dtype == F16
    assert nd.softmax(y).dtype == F32                           # FP32_FUNCS
    assert nd.Activation(y, act_type='softrelu').dtype == F32   # conditional
    assert nd.Activation(y, act_type='sigmoid').dtype == F16    # runs as given
    assert nd.concat(y, x, dim=0).dtype == F32                  # widest
    assert nd.concat(y, y, dim=0).dtype == F16
    s = mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=4, name='fc')
    cast = [n for n in s._nodes() if n.op == 'amp_cast']
    assert len(cast) == 3 and {c.attrs['dtype'] for c in cast} == {'float16'}
    m = mx.sym.broadcast_add(s, mx.sym.var('b'))
    assert [n.op for n in m._nodes()].count('amp_multicast') == 1


def test_reset_puts_the_operators_back():
    fc = nd.FullyConnected
    amp.init()
    try:
        assert nd.FullyConnected is not fc and nd.FullyConnected.__wrapped__ is fc
    finally:
        amp._reset()
    assert nd.FullyConnected is fc and mx.sym.softmax is sym_ops.softmax


# --- errors -------------------------------------------------------------------
def _trainer(**kwargs):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    return net, gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1},
                              **kwargs)


def test_misuse_is_a_clear_error():
    _, trainer = _trainer()
    with pytest.raises(AssertionError, match='forget to call amp.init'):
        amp.init_trainer(trainer)
    for bad in ('bfloat16', 'int8', 'float32'):
        with pytest.raises(amp.AMPError, match='float16'):
            amp.init(target_dtype=bad)
    with pytest.raises(amp.AMPError, match='Common ops'):
        amp.convert_symbol(mx.sym.var('x'), target_dtype_ops=['FullyConnected'],
                           fp32_ops=['FullyConnected'])
    with pytest.raises(amp.AMPError, match='none of AMP'):
        amp.convert_symbol(mx.sym.var('x'), fp32_ops=['no_such_op'])
    with pytest.raises(mx.MXNetError, match='should be a Symbol'):
        amp.convert_symbol(nd.ones(2))


def test_misuse_after_init(amp_on):
    _, trainer = _trainer()
    with pytest.raises(AssertionError, match='forget to call amp.init_trainer'):
        with amp.scale_loss(nd.ones(1), trainer):
            pass
    with pytest.raises(TypeError, match='Gluon Trainer'):
        amp.init_trainer(mx.optimizer.SGD())
    with pytest.raises(amp.AMPError, match='update_on_kvstore=False'):
        amp.init_trainer(_trainer(update_on_kvstore=True)[1])
    with pytest.raises(amp.AMPError, match='already called'):
        amp.init(fp32_ops=['exp'])
    amp.init()                                   # the same arguments: nothing
    with pytest.raises(RuntimeError, match='hybridize'):
        amp.convert_hybrid_block(nn.Dense(2))


# --- training steps -----------------------------------------------------------
def _step(net, trainer, X):
    with autograd.record():
        out = net(X)
        with amp.scale_loss(out.sum() * 0.01, trainer) as scaled:
            autograd.backward(scaled)
    trainer.step(X.shape[0])


@pytest.mark.filterwarnings('ignore::RuntimeWarning')        # float16 overflows
@pytest.mark.parametrize('dtype', ['float32', 'float16'])
def test_overflow_skips_the_step(dtype, amp_on):
    net, trainer = _trainer(update_on_kvstore=None)
    if dtype == 'float16':                        # float16 weights, float32 masters
        net.cast('float16')
        trainer = gluon.Trainer(net.collect_params(), 'sgd',
                                {'learning_rate': 0.1, 'multi_precision': True})
    amp.init_trainer(trainer)
    X = nd.array([[1.0, 2.0, -1.0]], dtype=dtype)
    _step(net, trainer, X)                        # a clean step: the weights move
    w1 = net.weight.data().asnumpy().copy()
    assert not np.array_equal(w1, np.zeros_like(w1))
    X[0, 1] = np.inf                              # inf gradients: skipped
    _step(net, trainer, X)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), w1)
    assert trainer._amp_loss_scaler._next_loss_scale == 2.0 ** 15
    if dtype == 'float16':
        master = trainer._updaters[0].states[0][1]    # SGD's (momentum, float32)
        np.testing.assert_array_equal(master.asnumpy().astype(np.float16), w1)


@pytest.mark.filterwarnings('ignore::RuntimeWarning')
def test_two_devices_skip_together(amp_on):
    # A store on two contexts would update the weights itself, before AMP
    # looks: init_trainer makes the Trainer update on the devices instead.
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.One(), ctx=[mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1},
                            kvstore='device')
    amp.init_trainer(trainer)
    xs = [nd.array([[0.5, 1.0, -0.5]], ctx=c) for c in (mx.cpu(0), mx.cpu(1))]
    xs[1][0, 0] = np.inf                       # one device overflows
    with autograd.record():
        losses = [net(x).sum() * 0.01 for x in xs]
        with amp.scale_loss(losses, trainer) as scaled:
            autograd.backward(scaled)
    trainer.step(2)
    assert trainer._update_on_kvstore is False
    for w in net.weight.list_data():                 # both skipped
        np.testing.assert_array_equal(w.asnumpy(), np.ones((2, 3)))


@pytest.mark.filterwarnings('ignore::RuntimeWarning')
def test_scaled_gradients_are_unscaled(amp_on):
    net, trainer = _trainer()
    net.weight.set_data(nd.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]]))
    amp.init_trainer(trainer)
    X = nd.array([[0.25, 0.5, -0.25]])
    with autograd.record():
        # d loss / d out is 0.25 * 2**16 in float16 (2**16 itself is inf there)
        with amp.scale_loss(net(X).sum() * 0.25, trainer) as scaled:
            scaled.backward()
    assert net.weight.grad().asnumpy()[0, 1] == 0.5 * 0.25 * 2 ** 16   # scaled
    amp.unscale(trainer)
    grad = np.array([[0.25, 0.5, -0.25]] * 2) * 0.25
    np.testing.assert_array_equal(net.weight.grad().asnumpy(), grad)
    assert trainer._scale == 1.0
    w = net.weight.data().asnumpy()
    trainer.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), w - 0.1 * grad, rtol=1e-6)


def _train(X, y, steps, with_amp):
    mx.random.seed(7)
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation='relu'), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    if with_amp:
        amp.init_trainer(trainer)
    for _ in range(steps):
        with autograd.record():
            l = loss(net(X), y).mean()
            if with_amp:
                with amp.scale_loss(l, trainer) as scaled:
                    autograd.backward(scaled)
            else:
                l.backward()
        trainer.step(1)
    return loss(net(X), y).mean().asscalar(), net


def test_amp_trains_as_well_as_float32():
    rng = np.random.default_rng(0)
    centers = rng.normal(0, 1, (3, 10))
    labels = rng.integers(0, 3, 300)
    X = nd.array(centers[labels] + rng.normal(0, 1, (300, 10)))
    y = nd.array(labels)
    first = _train(X, y, 0, False)[0]
    loss32, _ = _train(X, y, 60, False)
    amp.init()
    try:
        loss16, net = _train(X, y, 60, True)
        assert net(X).dtype == F16
    finally:
        amp._reset()
    # measured: 0.954 -> 0.0627392 (float32) and 0.0627406 (AMP, no step
    # skipped): float16's rounding errors average out over the batch
    assert loss32 < first / 5
    assert abs(loss16 - loss32) < 1e-3


# --- conversion: MXNet's graphs -----------------------------------------------
CONVERT = json.loads((FIXTURES / 'convert_symbol.json').read_text())


def _rows(sym):
    g = json.loads(sym.tojson(remove_amp_cast=False))
    keep = ('dtype', 'num_outputs', '__dtype__')
    return {'nodes': [[n['op'], n['name'],
                       {k: v for k, v in n.get('attrs', {}).items() if k in keep},
                       [e[:2] for e in n['inputs']]] for n in g['nodes']],
            'heads': [h[:2] for h in g['heads']]}


@pytest.mark.parametrize('case', CONVERT['cases'], ids=lambda c: c['case'])
def test_convert_symbol_matches_mxnet(case):
    g = CONVERT['graphs'][case['graph']]
    doc = {'nodes': [{'op': op, 'name': name, 'attrs': attrs,
                      'inputs': [e + [0] for e in ins]} for op, name, attrs, ins in
                     g['nodes']], 'heads': [h + [0] for h in g['heads']]}
    sym = mx.sym.load_json(json.dumps(doc))      # MXNet's graph, as MXNet wrote it
    kwargs = dict(case['kwargs'])
    if 'conditional_fp32_ops' in kwargs:
        kwargs['conditional_fp32_ops'] = [tuple(c) for c in
                                          kwargs['conditional_fp32_ops']]
    assert _rows(amp.convert_symbol(sym, **kwargs)) == case['converted']
    assert _rows(sym) == _rows(mx.sym.load_json(json.dumps(doc)))    # unchanged


def test_saved_graphs_leave_the_casts_out(tmp_path):
    # MXNet's save/tojson(remove_amp_cast=True): the float32 graph is saved
    case = next(c for c in CONVERT['cases'] if c['case'] == 'lenet_params')
    g = CONVERT['graphs']['lenet']
    doc = {'nodes': [{'op': op, 'name': name, 'attrs': attrs,
                      'inputs': [e + [0] for e in ins]} for op, name, attrs, ins in
                     g['nodes']], 'heads': [h + [0] for h in g['heads']]}
    sym = mx.sym.load_json(json.dumps(doc))
    conv = amp.convert_symbol(sym, **case['kwargs'])
    conv.save(str(tmp_path / 'net.json'))
    saved = mx.sym.load(str(tmp_path / 'net.json'))
    ops = [n.op for n in saved._nodes()]
    assert 'amp_multicast' not in ops
    # only the casts of the outputs stay (the heads are not rewired)
    assert [n.name for n in saved._nodes() if n.op == 'amp_cast'] == [
        'd_output_amp_cast_float32']
    assert len(_rows(conv)['nodes']) == len(case['converted']['nodes'])  # kept


def test_lists_agree_with_mxnet():
    mxnet = json.loads((FIXTURES / 'lists.json').read_text())
    for kind in ('FP16_FUNCS', 'FP16_FP32_FUNCS', 'FP32_FUNCS', 'WIDEST_TYPE_CASTS',
                 'LOSS_OUTPUT_FUNCTIONS'):
        ours = getattr(L, kind)
        assert len(ours) == len(set(ours)), kind
        assert {L.D2LMINI_NAMES.get(n, n) for n in ours} == set(mxnet[kind]), kind
        assert all(sym_ops.has_op(n) for n in ours), kind
    assert [list(c) for c in L.CONDITIONAL_FP32_FUNCS] == \
        mxnet['CONDITIONAL_FP32_FUNCS']
    groups = [set(L.FP16_FUNCS), set(L.FP16_FP32_FUNCS), set(L.FP32_FUNCS),
              set(L.WIDEST_TYPE_CASTS), {c[0] for c in L.CONDITIONAL_FP32_FUNCS}]
    assert sum(map(len, groups)) == len(set().union(*groups))     # disjoint
    assert amp.list_lp16_ops('float16') is L.FP16_FUNCS


# --- conversion of a trained network ------------------------------------------
def _lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, activation='sigmoid'), nn.MaxPool2D(2),
            nn.Dense(16, activation='softrelu'), nn.BatchNorm(), nn.Dense(10))
    net.initialize(mx.init.Xavier())
    return net


def _internals(block, X):
    """Every node's output dtype, computed (not inferred) by the converted net."""
    graph = block._cached_graph
    outs = gluon.SymbolBlock(graph.symbol.get_internals(), [mx.sym.var('data')],
                             params=block.collect_params())(X)
    names = graph.symbol.get_internals().list_outputs()
    return {n: np.dtype(o.dtype) for n, o in zip(names, outs)}


def test_convert_hybrid_block_puts_float16_on_safe_operators():
    mx.random.seed(3)
    net = _lenet()
    X = nd.random.uniform(shape=(2, 1, 10, 10))
    net.hybridize()
    ref = net(X).asnumpy()
    c = amp.convert_hybrid_block(net)
    types = _internals(c, X)
    conv, pool, fc1, bn, fc2 = [net[i].prefix + 'fwd_output' for i in range(5)]
    assert types[conv] == F16                        # conv + sigmoid, fused
    assert types[pool] == F16 and types[fc1] == F16 and types[fc2] == F16
    assert types[net[2].act.prefix + 'fwd_output'] == F32           # softrelu
    assert types[bn] == F32
    out = c(X)
    assert out.dtype == F32
    assert {p.dtype for p in c.collect_params().values()} == {np.float32}
    # measured: max error 6e-4 to 9e-4 (seeds 0-4) on outputs up to 2.5
    np.testing.assert_allclose(out.asnumpy(), ref, atol=5e-3)
    c16 = amp.convert_hybrid_block(net, cast_optional_params=True)
    params = {k: np.dtype(p.dtype) for k, p in c16.collect_params().items()}
    assert params[net[0].weight.name] == F16 and params[net[4].weight.name] == F16
    assert params[net[3].gamma.name] == F32                          # BatchNorm's
    assert params[net[3].running_mean.name] == F32
    np.testing.assert_allclose(c16(X).asnumpy(), ref, atol=5e-3)


def test_convert_model_casts_the_parameters():
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    sym = mx.sym.softmax(mx.sym.relu(fc), name='sm')
    arg = {'fc_weight': nd.ones((3, 4)), 'fc_bias': nd.zeros(3)}
    out, arg16, aux16 = amp.convert_model(sym, arg, {}, cast_optional_params=True)
    assert {k: v.dtype for k, v in arg16.items()} == {'fc_weight': F16, 'fc_bias': F16}
    assert arg['fc_weight'].dtype == F32 and aux16 == {}         # given: untouched
    ex = out.bind(mx.current_context(), dict(data=nd.ones((2, 4)), **arg16),
                  grad_req='null')
    res = ex.forward()[0]
    assert res.dtype == F32
    np.testing.assert_allclose(res.asnumpy(), 1 / 3, rtol=1e-6)
    assert out.infer_type(data='float32')[0] == [np.float32, np.float16, np.float16]
