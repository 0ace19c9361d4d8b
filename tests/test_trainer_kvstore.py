"""gluon.Trainer on mx.kv: 2 devices train exactly like 1 with the same batch."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, init, nd
from d2lmini.gluon import nn

from conftest import needs_devices

pytestmark = needs_devices(2)
# two devices of the default context's kind: cpu(0)+cpu(1), or gpu(0)+gpu(1)
_KIND = mx.current_context().device_type
CTX1 = [mx.Context(_KIND, 0)]
CTX2 = [mx.Context(_KIND, 0), mx.Context(_KIND, 1)]
OPTS = [('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3}),
        ('adam', {'learning_rate': 0.01})]


def _net(ctxs):
    mx.random.seed(7)
    net = nn.Sequential()
    net.add(nn.Dense(16, activation='relu'), nn.Dense(4))
    net.initialize(init.Xavier(), ctx=CTX1)
    net(nd.zeros((1, 6)))                         # shapes known
    net.collect_params().reset_ctx(ctxs)
    return net


def _fit(ctxs, optimizer, opt_params, steps=4, batch=24, **kw):
    net = _net(ctxs)
    trainer = gluon.Trainer(net.collect_params(), optimizer, dict(opt_params), **kw)
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(3)
    for _ in range(steps):
        X = nd.array(rng.normal(size=(batch, 6)))
        y = nd.array(rng.integers(0, 4, size=batch))
        xs = gluon.utils.split_and_load(X, ctxs)
        ys = gluon.utils.split_and_load(y, ctxs)
        with autograd.record():
            ls = [loss(net(a), b) for a, b in zip(xs, ys)]
        for l_ in ls:
            l_.backward()
        trainer.step(batch)
    return net, trainer


def _weights(net):
    """Per parameter (in order), the values of its copies."""
    return [[d.asnumpy() for d in p.list_data()]
            for p in net.collect_params().values()]


@pytest.mark.parametrize('optimizer,opt_params', OPTS, ids=['sgd_mom', 'adam'])
@pytest.mark.parametrize('update_on_kvstore', [True, False])
@pytest.mark.parametrize('kvstore', ['local', 'device'])
def test_two_devices_equal_one_device(kvstore, update_on_kvstore, optimizer,
                                      opt_params):
    one, t1 = _fit(CTX1, optimizer, opt_params)
    two, t2 = _fit(CTX2, optimizer, opt_params, kvstore=kvstore,
                   update_on_kvstore=update_on_kvstore)
    assert t1._kvstore is None                   # nothing to reduce on one device
    assert t2._kvstore.type == kvstore
    assert t2._update_on_kvstore is update_on_kvstore
    w1, w2 = _weights(one), _weights(two)
    assert len(w1) == len(w2) == 4
    for (ref,), (a, b) in zip(w1, w2):
        np.testing.assert_array_equal(a, b)      # copies identical
        np.testing.assert_allclose(a, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('update_on_kvstore', [True, False])
def test_two_devices_equal_one_device_in_the_naive_engine(update_on_kvstore):
    old = mx.engine.set_engine('naive')
    try:
        one, _ = _fit(CTX1, *OPTS[0], steps=2)
        two, _ = _fit(CTX2, *OPTS[0], steps=2, update_on_kvstore=update_on_kvstore)
    finally:
        mx.engine.set_engine(old)
    for (ref,), (a, b) in zip(_weights(one), _weights(two)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, ref, rtol=1e-5, atol=1e-6)


def test_update_on_kvstore_defaults_as_in_mxnet():
    _, t = _fit(CTX2, 'sgd', {'learning_rate': 0.1}, steps=1)
    assert t._kvstore.type == 'device' and t._update_on_kvstore is True
    _, t = _fit(CTX2, 'sgd', {'learning_rate': 0.1}, steps=1, kvstore=None)
    assert t._kvstore is None
    _, t = _fit(CTX1, 'sgd', {'learning_rate': 0.1}, steps=1, kvstore='local')
    assert t._kvstore is None                    # one device: no store
    kv = mx.kv.create('local')
    _, t = _fit(CTX1, 'sgd', {'learning_rate': 0.1}, steps=1, kvstore=kv)
    assert t._kvstore is kv                      # an object is used as given
    _, t = _fit(CTX2, 'sgd', {'learning_rate': 0.1}, steps=1,
                kvstore=mx.kv.create('teststore'))
    assert t._update_on_kvstore is False         # it cannot run an optimizer


def test_trainer_refuses_bad_settings():
    net = _net(CTX2)
    with pytest.raises(ValueError, match='update_on_kvstore=False'):
        gluon.Trainer(net.collect_params(), 'sgd', kvstore=mx.kv.create('teststore'),
                      update_on_kvstore=True)._init_kvstore()
    with pytest.raises(TypeError, match='kvstore must be'):
        gluon.Trainer(net.collect_params(), 'sgd', kvstore=3.0)._init_kvstore()
    with pytest.raises(mx.MXNetError, match="'dist_sync'.*DMLC_ROLE"):
        gluon.Trainer(net.collect_params(), 'sgd', kvstore='dist_sync')._init_kvstore()
    _, t = _fit(CTX2, 'sgd', {'learning_rate': 0.1}, steps=1)
    with pytest.raises(AssertionError, match='update_on_kvstore'):
        t.allreduce_grads()
    with pytest.raises(AssertionError, match='update_on_kvstore'):
        t.update(8)
    with pytest.raises(ValueError, match='empty list'):
        nn.Dense(2).initialize(ctx=[])


def test_copies_start_identical_through_the_store():
    net = _net(CTX2)
    w = net[0].weight
    w.list_data()[1][:] = 5.0                     # the copies disagree
    t = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.0})
    t._ensure_init()                             # broadcast from the first copy
    a, b = (d.asnumpy() for d in w.list_data())
    np.testing.assert_array_equal(a, b)
    assert not (b == 5.0).all()


@pytest.mark.parametrize('save_uok,load_uok', [(True, True), (True, False),
                                               (False, True), (False, False)])
@pytest.mark.parametrize('kvstore', ['local', 'device'])
def test_save_and_load_states_in_every_mode(tmp_path, kvstore, save_uok, load_uok):
    fname = str(tmp_path / 'states')
    ref, _ = _fit(CTX2, 'adam', {'learning_rate': 0.01}, steps=4)
    net, t = _fit(CTX2, 'adam', {'learning_rate': 0.01}, steps=2, kvstore=kvstore,
                  update_on_kvstore=save_uok)
    t.save_states(fname)
    # resume: same weights, fresh trainer, the rest of the data
    net2 = _net(CTX2)
    for p, q in zip(net.collect_params().values(),
                    net2.collect_params().values()):
        q.set_data(p.data())
    t2 = gluon.Trainer(net2.collect_params(), 'adam', {'learning_rate': 9.0},
                       kvstore=kvstore, update_on_kvstore=load_uok)
    t2.load_states(fname)
    assert t2.learning_rate == pytest.approx(0.01)
    assert t2.optimizer.num_update == 2
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(3)
    for s in range(4):
        X = nd.array(rng.normal(size=(24, 6)))
        y = nd.array(rng.integers(0, 4, size=24))
        if s < 2:
            continue                             # the steps done before saving
        xs, ys = (gluon.utils.split_and_load(a, CTX2) for a in (X, y))
        with autograd.record():
            ls = [loss(net2(a), b) for a, b in zip(xs, ys)]
        for l_ in ls:
            l_.backward()
        t2.step(24)
    for (want, _), copies in zip(_weights(ref), _weights(net2)):
        for copy in copies:
            np.testing.assert_allclose(copy, want, rtol=1e-5, atol=1e-6)


def test_loading_parameters_resets_a_store_that_holds_them(tmp_path):
    """MXNet's test_trainer_reset_kv, for both store types (and a store
    object, which the reset Trainer uses again)."""
    for kv in ('local', 'device', mx.kv.create('device')):
        x = gluon.Parameter('x', shape=(10,))
        x.initialize(ctx=CTX2, init='zeros')
        trainer = gluon.Trainer([x], 'sgd', {'learning_rate': 0.1}, kvstore=kv)
        for _ in range(2):
            with autograd.record():
                for w in x.list_data():
                    (w + 1).backward()
            trainer.step(1)
            x.set_data(nd.zeros((10,)))          # as params.load does
            assert trainer._kvstore is None and not trainer._kv_initialized
        with autograd.record():
            for w in x.list_data():
                (w + 1).backward()
        trainer.step(1)
        for d in x.list_data():
            np.testing.assert_allclose(d.asnumpy(), -0.2, rtol=1e-6)
