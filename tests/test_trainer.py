"""gluon.Trainer: one and several contexts, KVStore seam, checkpoints."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, init, nd

CTX2 = [mx.cpu(0), mx.cpu(1)]


def _params(ctxs, seed=0):
    """A linear model's parameters, identical values on every context."""
    rng = np.random.default_rng(seed)
    w = gluon.Parameter('dense0_weight', shape=(4, 3))
    b = gluon.Parameter('dense0_bias', shape=(3,))
    for p in (w, b):
        p.initialize(init.Zero(), ctx=ctxs)
        p.set_data(nd.array(rng.normal(size=p.shape)))
    return [w, b]


def _data(n=8, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 4)), rng.normal(size=(n, 3))


def _backward(params, X, Y, ctxs):
    """Forward/backward of sum((XW + b - Y)^2)/2, the batch split over ctxs."""
    w, b = params
    parts = np.array_split(np.arange(len(X)), len(ctxs))
    losses = []
    with autograd.record():
        for c, idx in zip(ctxs, parts):
            x, y = nd.array(X[idx], ctx=c), nd.array(Y[idx], ctx=c)
            out = nd.dot(x, w.data(c)) + b.data(c)
            losses.append(((out - y) ** 2).sum() / 2)
    for loss in losses:
        loss.backward()


def _train(ctxs, optimizer='sgd', opt_params=None, steps=3, **trainer_kw):
    params = _params(ctxs)
    trainer = gluon.Trainer(params, optimizer, dict(opt_params or
                                                    {'learning_rate': 0.1}),
                            **trainer_kw)
    for s in range(steps):
        X, Y = _data(seed=s)
        _backward(params, X, Y, ctxs)
        trainer.step(len(X))
    return params, trainer


def _values(params):
    return [[d.asnumpy() for d in p.list_data()] for p in params]


def test_one_context_sgd_matches_numpy(ctx):
    params = _params([ctx])
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.5, 'wd': 0.01})
    assert trainer.learning_rate == pytest.approx(0.5)
    w0, b0 = (p.data().asnumpy().astype(np.float64) for p in params)
    X, Y = _data()
    _backward(params, X, Y, [ctx])
    trainer.step(8)
    gw = X.T @ (X @ w0 + b0 - Y)
    gb = (X @ w0 + b0 - Y).sum(0)
    np.testing.assert_allclose(params[0].data().asnumpy(),
                               w0 - 0.5 * (gw / 8 + 0.01 * w0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params[1].data().asnumpy(),
                               b0 - 0.5 * (gb / 8 + 0.01 * b0), rtol=1e-5, atol=1e-6)
    assert trainer._kvstore is None          # nothing to reduce on one device


@pytest.mark.parametrize('optimizer,opt_params', [
    ('sgd', {'learning_rate': 0.1}),
    ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.01}),
    ('adam', {'learning_rate': 0.05, 'clip_gradient': 0.5}),
])
def test_two_contexts_equal_one_context_on_the_full_batch(engine_kind, optimizer,
                                                          opt_params):
    one, _ = _train([mx.cpu(0)], optimizer, opt_params)
    two, trainer = _train(CTX2, optimizer, opt_params)
    assert isinstance(trainer._kvstore, mx.kv.KVStore)
    assert trainer._kvstore.type == 'device' and trainer._update_on_kvstore
    for p1, p2 in zip(_values(one), _values(two)):
        np.testing.assert_array_equal(p2[0], p2[1])           # copies identical
        np.testing.assert_allclose(p2[0], p1[0], rtol=1e-5, atol=1e-6)


def test_update_on_kvstore_gives_the_same_result():
    ref, _ = _train(CTX2, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9},
                    update_on_kvstore=False)
    kv, trainer = _train(CTX2, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9},
                         update_on_kvstore=True)
    for a, b in zip(_values(ref), _values(kv)):
        np.testing.assert_allclose(b[0], a[0], rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(b[0], b[1])
    with pytest.raises(RuntimeError, match='update_on_kvstore'):
        trainer.allreduce_grads()
    with pytest.raises(RuntimeError, match='update_on_kvstore'):
        trainer.update(8)
    with pytest.raises(AssertionError):         # what MXNet raises there
        trainer.allreduce_grads()


def test_allreduce_then_update_equals_step():
    ref, _ = _train(CTX2, 'adam', {'learning_rate': 0.1})
    params = _params(CTX2)
    trainer = gluon.Trainer(params, 'adam', {'learning_rate': 0.1},
                            update_on_kvstore=False)
    for s in range(3):
        X, Y = _data(seed=s)
        _backward(params, X, Y, CTX2)
        trainer.allreduce_grads()
        g = [p.list_grad() for p in params]
        for g0, g1 in g:                              # sum written back everywhere
            np.testing.assert_array_equal(g0.asnumpy(), g1.asnumpy())
        trainer.update(len(X))
    for a, b in zip(_values(ref), _values(params)):
        np.testing.assert_allclose(b[0], a[0], rtol=1e-6, atol=1e-7)


def test_without_kvstore_each_context_follows_its_own_gradient():
    params, trainer = _train(CTX2, 'sgd', {'learning_rate': 0.1}, kvstore=None)
    assert trainer._kvstore is None
    w = params[0].list_data()
    assert not np.allclose(w[0].asnumpy(), w[1].asnumpy())


def test_a_custom_kvstore_is_used():
    calls = []

    class Recording(mx.kv.LocalStore):
        def pushpull(self, key, value, out=None, priority=0):
            calls.append((key, len(value)))
            super().pushpull(key, value, out, priority)
    _train(CTX2, steps=1, kvstore=Recording('device'))
    assert calls == [(0, 2), (1, 2)]


# MXNet 1.9.1's text (gluon/trainer.py, Trainer._update), word for word.
_STALE = ('Gradient of Parameter `{}` on context {} has not been updated by '
          'backward since last `step`. This could mean a bug in your model that '
          'made it only use a subset of the Parameters (Blocks) for this '
          'iteration. If you are intentionally only using a subset, call step '
          'with ignore_stale_grad=True to suppress this warning and skip '
          'updating of Parameters with stale gradient')


def test_stale_gradients_are_reported(engine_kind):
    params = _params([mx.cpu(0)])
    extra = gluon.Parameter('unused_weight', shape=(2,))
    extra.initialize(init.One(), ctx=mx.cpu(0))
    trainer = gluon.Trainer(params + [extra], 'sgd', {'learning_rate': 0.1})
    X, Y = _data()
    _backward(params, X, Y, [mx.cpu(0)])
    with pytest.raises(UserWarning) as e:      # the first step too
        trainer.step(8)
    assert str(e.value) == _STALE.format('unused_weight', 'cpu(0)')
    before = params[0].data().asnumpy()
    trainer.step(8, ignore_stale_grad=True)
    assert not np.allclose(params[0].data().asnumpy(), before)
    after = params[0].data().asnumpy()
    with pytest.raises(UserWarning, match='dense0_weight.*ignore_stale_grad'):
        trainer.step(8)                        # consumed: stale now
    trainer.step(8, ignore_stale_grad=True)    # all stale now: nothing moves
    np.testing.assert_array_equal(params[0].data().asnumpy(), after)
    np.testing.assert_array_equal(extra.data().asnumpy(), [1, 1])


@pytest.mark.parametrize('kvstore, update_on_kvstore', [
    (None, None), ('device', True), ('device', False), ('local', True)])
def test_step_before_any_backward_raises(engine_kind, kvstore, update_on_kvstore):
    """MXNet: a gradient no backward has written is stale, so a step before
    the first backward raises instead of updating with zero gradients."""
    params = _params(CTX2)
    before = _values(params)
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.1, 'wd': 0.5},
                            kvstore=kvstore, update_on_kvstore=update_on_kvstore)
    with pytest.raises(UserWarning) as e:
        trainer.step(8)
    assert str(e.value) == _STALE.format('dense0_weight', 'cpu(0)')
    trainer.step(8, ignore_stale_grad=True)    # skips every parameter
    for got, want in zip(_values(params), before):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)  # wd would have moved them
    X, Y = _data()
    _backward(params, X, Y, CTX2)              # now it steps
    trainer.step(8)
    assert not np.allclose(params[0].list_data()[0].asnumpy(), before[0][0])


def test_one_context_without_backward_is_named(engine_kind):
    # One context has a gradient, the other not: the message names the other.
    params = _params(CTX2)
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.1}, kvstore=None)
    X, Y = _data()
    _backward(params, X, Y, [mx.cpu(0)])
    with pytest.raises(UserWarning) as e:
        trainer.step(8)
    assert str(e.value) == _STALE.format('dense0_weight', 'cpu(1)')


def test_allreduce_then_update_checks_stale_gradients(engine_kind):
    params = _params(CTX2)
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.1},
                            update_on_kvstore=False)
    trainer.allreduce_grads()                  # reduces nothing, checks nothing
    with pytest.raises(UserWarning, match='dense0_weight'):
        trainer.update(8)
    X, Y = _data()
    _backward(params, X, Y, CTX2)
    trainer.allreduce_grads()
    trainer.update(8)
    with pytest.raises(UserWarning, match='dense0_weight'):
        trainer.update(8)


def test_grad_req_null_is_skipped():
    params = _params([mx.cpu(0)])
    params[1].grad_req = 'null'
    b = params[1].data().asnumpy()
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.1})
    X, Y = _data()
    _backward(params, X, Y, [mx.cpu(0)])
    trainer.step(8)
    np.testing.assert_array_equal(params[1].data().asnumpy(), b)


def test_learning_rate_and_errors():
    params = _params([mx.cpu(0)])
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.1})
    trainer.set_learning_rate(0.02)
    assert trainer.learning_rate == pytest.approx(0.02)
    with pytest.raises(ValueError, match='list or dict of Parameters'):
        gluon.Trainer(params[0], 'sgd')
    with pytest.raises(ValueError, match='list or dict of Parameters'):
        gluon.Trainer([nd.ones((2,))], 'sgd')
    with pytest.raises(ValueError, match='optimizer_params must be None'):
        gluon.Trainer(params, mx.optimizer.SGD(), {'learning_rate': 0.1})
    with pytest.raises(ValueError, match="unknown kvstore 'bogus'"):
        gluon.Trainer(_params(CTX2), 'sgd', kvstore='bogus').step(1)
    mixed = _params([mx.cpu(0)]) + _params(CTX2)[1:]
    mixed[1].name = 'other_bias'
    with pytest.raises(ValueError, match='same set of contexts'):
        gluon.Trainer(mixed, 'sgd').step(1)
    # A dict (collect_params()) works, and an Optimizer instance too.
    o = mx.optimizer.Adam(learning_rate=0.3)
    t = gluon.Trainer({p.name: p for p in params}, o)
    assert t.optimizer is o and t.learning_rate == pytest.approx(0.3)


@pytest.mark.parametrize('optimizer,opt_params', [
    ('sgd', {'learning_rate': 0.1, 'momentum': 0.9}),
    ('adam', {'learning_rate': 0.05}),
])
def test_save_and_load_states_round_trip(tmp_path, optimizer, opt_params):
    fname = str(tmp_path / 'trainer.states')

    def run(params, trainer, seeds):
        for s in seeds:
            X, Y = _data(seed=s)
            _backward(params, X, Y, params[0].list_ctx())
            trainer.step(len(X))

    # Reference: 5 uninterrupted steps.
    ref = _params([mx.cpu(0)])
    t_ref = gluon.Trainer(ref, optimizer, dict(opt_params))
    run(ref, t_ref, range(5))
    # Interrupted: 3 steps, save weights and states, then resume elsewhere.
    params = _params([mx.cpu(0)])
    t = gluon.Trainer(params, optimizer, dict(opt_params))
    run(params, t, range(3))
    t.save_states(fname)
    weights = [p.data().asnumpy() for p in params]
    for ctxs, kw in (([mx.cpu(0)], {}), (CTX2, {}),          # resume elsewhere
                     (CTX2, {'update_on_kvstore': True})):
        resumed = _params(ctxs)
        for p, w in zip(resumed, weights):
            p.set_data(nd.array(w))
        t2 = gluon.Trainer(resumed, optimizer, {'learning_rate': 123.0}, **kw)
        t2.load_states(fname)
        assert t2.learning_rate == pytest.approx(opt_params['learning_rate'])
        assert t2.optimizer.num_update == 3
        run(resumed, t2, range(3, 5))
        for a, b in zip(_values(ref), _values(resumed)):
            for copy in b:
                np.testing.assert_allclose(copy, a[0], rtol=1e-5, atol=1e-6)
    # The file is a plain nd.save archive: no pickle inside.
    loaded = nd.load(fname)
    assert '__trainer__.json' in loaded and 'state/0/0' in loaded


def test_load_states_checks_the_file(tmp_path):
    params = _params([mx.cpu(0)])
    t = gluon.Trainer(params, 'adam')
    X, Y = _data()
    _backward(params, X, Y, [mx.cpu(0)])
    t.step(8)
    fname = str(tmp_path / 's')
    t.save_states(fname)
    with pytest.raises(ValueError, match="optimizer 'adam'.*'sgd'"):
        gluon.Trainer(_params([mx.cpu(0)]), 'sgd').load_states(fname)
    nd.save(str(tmp_path / 'x'), [nd.ones((1,))])
    with pytest.raises(ValueError, match='not an optimizer states file'):
        t.load_states(str(tmp_path / 'x'))


def test_load_states_reads_the_flat_layout_of_earlier_files(tmp_path):
    """Files written before states could nest list a tuple state as its size."""
    import json
    params = _params([mx.cpu(0)])
    t = gluon.Trainer(params, 'adam', {'learning_rate': 0.1})
    X, Y = _data()
    _backward(params, X, Y, [mx.cpu(0)])
    t.step(8)
    fname = str(tmp_path / 's')
    t.save_states(fname)
    data = nd.load(fname)
    meta = json.loads(data['__trainer__.json'].asnumpy().tobytes().decode())
    assert meta['states']['0'] == ['array', 'array']
    meta['states'] = {k: 2 for k in meta['states']}             # the old layout
    data['__trainer__.json'] = nd.array(
        np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), dtype='uint8')
    nd.save(fname, data)
    t2 = gluon.Trainer(_params([mx.cpu(0)]), 'adam', {'learning_rate': 0.1})
    t2.load_states(fname)
    for i in range(2):
        for a, b in zip(t._updaters[0].states[i], t2._updaters[0].states[i]):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_with_a_gluon_net(engine_kind):
    """Trainer over net.collect_params() on two contexts (stand-in nn ops if
    nd has no FullyConnected yet)."""
    from d2lmini.gluon import nn
    try:
        from _gluon_standins import standin_ops
    except ImportError:                     # pragma: no cover
        import contextlib
        standin_ops = contextlib.nullcontext
    with standin_ops():
        net = nn.Sequential()
        net.add(nn.Dense(8, activation='relu'), nn.Dense(3))
        net.initialize(init.Xavier(), ctx=CTX2)
        trainer = gluon.Trainer(net.collect_params(), 'sgd',
                                {'learning_rate': 0.1, 'momentum': 0.9})
        loss = gluon.loss.SoftmaxCrossEntropyLoss()
        X = nd.random.normal(shape=(16, 5))
        y = nd.array(np.arange(16) % 3)
        for _ in range(3):
            xs = gluon.utils.split_and_load(X, CTX2)
            ys = gluon.utils.split_and_load(y, CTX2)
            with autograd.record():
                ls = [loss(net(a), b) for a, b in zip(xs, ys)]
            for l_ in ls:
                l_.backward()
            trainer.step(16)
    for p in net.collect_params().values():
        d = p.list_data()
        np.testing.assert_array_equal(d[0].asnumpy(), d[1].asnumpy())
