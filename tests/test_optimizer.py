"""Optimizers against hand-written NumPy versions of MXNet's update rules."""
import math

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd, optimizer as opt
from d2lmini.ndarray.registry import OPS
from oracles import clip as _clip

RTOL, ATOL = 2e-5, 1e-6


# --- NumPy references (float64), written from MXNet's documentation --------------
def ref_sgd(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, momentum=0.0):
    g = _clip(rescale * g, clip)
    if momentum == 0.0:
        return w - lr * (g + wd * w), st
    mom = momentum * st[0] - lr * (g + wd * w)
    return w + mom, [mom]


def ref_adam(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, beta1=0.9,
             beta2=0.999, epsilon=1e-8):
    g = _clip(rescale * g + wd * w, clip)
    m = beta1 * st[0] + (1 - beta1) * g
    v = beta2 * st[1] + (1 - beta2) * g * g
    lr_t = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    return w - lr_t * m / (np.sqrt(v) + epsilon), [m, v]


def ref_adagrad(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, eps=1e-7):
    g = _clip(rescale * g, clip)
    h = st[0] + g * g
    return w - lr * (g / np.sqrt(h + eps) + wd * w), [h]


def ref_rmsprop(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, gamma1=0.9,
                epsilon=1e-8):
    g = _clip(rescale * g + wd * w, clip)
    n = gamma1 * st[0] + (1 - gamma1) * g * g
    return w - lr * g / np.sqrt(n + epsilon), [n]


def ref_rmspropalex(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, gamma1=0.9,
                    gamma2=0.9, epsilon=1e-8):
    g = _clip(rescale * g + wd * w, clip)
    n = gamma1 * st[0] + (1 - gamma1) * g * g
    gm = gamma1 * st[1] + (1 - gamma1) * g
    delta = gamma2 * st[2] - lr * g / np.sqrt(n - gm * gm + epsilon)
    return w + delta, [n, gm, delta]


def ref_adadelta(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, rho=0.9,
                 epsilon=1e-5):
    g = _clip(rescale * g, clip)
    acc_g = rho * st[0] + (1 - rho) * g * g
    cur = np.sqrt(st[1] + epsilon) / np.sqrt(acc_g + epsilon) * g
    acc_d = rho * st[1] + (1 - rho) * cur * cur
    return w - cur - wd * w, [acc_g, acc_d]


#        name        kwargs for create()                    reference   n states
CASES = [
    ('sgd', {}, ref_sgd, 0),
    ('sgd', {'wd': 0.1}, ref_sgd, 0),
    ('sgd', {'rescale_grad': 0.25, 'clip_gradient': 0.3}, ref_sgd, 0),
    ('sgd', {'momentum': 0.9}, ref_sgd, 1),
    ('sgd', {'momentum': 0.9, 'wd': 0.05, 'rescale_grad': 0.5,
             'clip_gradient': 0.4}, ref_sgd, 1),
    ('adam', {}, ref_adam, 2),
    ('adam', {'wd': 0.1, 'rescale_grad': 0.5, 'clip_gradient': 0.2,
              'beta1': 0.8, 'beta2': 0.99, 'epsilon': 1e-6}, ref_adam, 2),
    ('adagrad', {'wd': 0.01, 'rescale_grad': 2.0, 'clip_gradient': 1.0},
     ref_adagrad, 1),
    ('rmsprop', {'wd': 0.01, 'gamma1': 0.8, 'clip_gradient': 0.5}, ref_rmsprop, 1),
    ('rmsprop', {'centered': True, 'gamma1': 0.8, 'gamma2': 0.7},
     ref_rmspropalex, 3),
    ('adadelta', {'wd': 0.01, 'rho': 0.8, 'rescale_grad': 0.5}, ref_adadelta, 2),
]
RENAME = {'rescale_grad': 'rescale', 'clip_gradient': 'clip', 'eps': 'eps',
          'centered': None}


def _ref_kwargs(kw, lr):
    out = {'lr': lr}
    for k, v in kw.items():
        k = RENAME.get(k, k)
        if k is not None:
            out[k] = v
    return out


@pytest.mark.parametrize('name,kw,ref,nstates', CASES,
                         ids=[f'{c[0]}-{i}' for i, c in enumerate(CASES)])
def test_update_matches_numpy(ctx, engine_kind, name, kw, ref, nstates):
    rng = np.random.default_rng(0)
    lr = 0.1
    o = opt.create(name, learning_rate=lr, **kw)
    w_np = rng.normal(size=(3, 4))
    w = nd.array(w_np, ctx=ctx)
    st = o.create_state(0, w)
    states = [] if st is None else ([st] if isinstance(st, nd.NDArray) else list(st))
    assert len(states) == nstates
    ref_states = [np.zeros_like(w_np) for _ in range(nstates)]
    for t in range(1, 4):
        g_np = rng.normal(size=(3, 4))
        o.update(0, w, nd.array(g_np, ctx=ctx), st)
        w_np, ref_states = ref(w_np, g_np, ref_states, t, **_ref_kwargs(kw, lr))
        np.testing.assert_allclose(w.asnumpy(), w_np, rtol=RTOL, atol=ATOL)
        for s, r in zip(states, ref_states):
            np.testing.assert_allclose(s.asnumpy(), r, rtol=RTOL, atol=ATOL)
    assert w.dtype == np.float32 and w.context == ctx


def test_update_multi_equals_one_by_one(engine_kind):
    rng = np.random.default_rng(1)
    shapes = [(3, 4), (5,), (2, 2, 2)]
    ws = [rng.normal(size=s) for s in shapes]
    gs = [[rng.normal(size=s) for s in shapes] for _ in range(3)]
    results = []
    for multi in (False, True):
        o = opt.create('adam', learning_rate=0.05, wd=0.01)
        w_nd = [nd.array(w) for w in ws]
        st = [o.create_state(i, w) for i, w in enumerate(w_nd)]
        for step in gs:
            g_nd = [nd.array(g) for g in step]
            if multi:
                o.update_multi([0, 1, 2], w_nd, g_nd, st)
            else:
                for i in range(3):
                    o.update(i, w_nd[i], g_nd[i], st[i])
        results.append([w.asnumpy() for w in w_nd])
        assert o.num_update == 3
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_update_is_one_kernel_per_step():
    """One engine op for all parameters of a context (fused and aggregated)."""
    o = opt.create('sgd', learning_rate=0.1, momentum=0.9)
    ws = [nd.ones((3,)), nd.ones((2, 2)), nd.ones((4,))]
    gs = [nd.ones(w.shape) for w in ws]
    st = [o.create_state(i, w) for i, w in enumerate(ws)]
    nd.waitall()
    old = mx.engine.set_engine('threaded')
    try:
        with mx.engine.Trace() as tr:
            o.update_multi([0, 1, 2], ws, gs, st)
        names = [s[1] for s in tr.spans()]
        assert names == ['multi_sgd_mom_update'], names
        with mx.engine.Trace() as tr:
            o.update(0, ws[0], gs[0], st[0])
        assert [s[1] for s in tr.spans()] == ['sgd_mom_update']
    finally:
        mx.engine.set_engine(old)
    np.testing.assert_allclose(ws[0].asnumpy(), 1 - 0.1 - (0.9 * 0.1 + 0.1))


def test_update_counts_are_per_context():
    o = opt.create('adam', learning_rate=0.1)
    upd = [opt.get_updater(o) for _ in range(2)]
    ws = [nd.ones((2,), ctx=mx.cpu(0)), nd.ones((2,), ctx=mx.cpu(1))]
    for _ in range(3):
        for u, w in zip(upd, ws):
            u(0, nd.ones((2,), ctx=w.context), w)
    # Two copies of one parameter, three steps: t = 3, not 6.
    assert o.num_update == 3
    assert o._all_index_update_counts[mx.cpu(1)][0] == 3
    np.testing.assert_array_equal(ws[0].asnumpy(), ws[1].asnumpy())


def test_lr_and_wd_multipliers():
    class P:
        lr_mult, wd_mult = 0.5, 0.0
    o = opt.create('sgd', learning_rate=0.2, wd=0.1, param_dict={0: P()})
    w = nd.ones((2,))
    o.update(0, w, nd.ones((2,)), None)
    np.testing.assert_allclose(w.asnumpy(), 1 - 0.1 * 1.0)
    assert o._get_lr(1) == pytest.approx(0.2) and o._get_wd(1) == pytest.approx(0.1)


def test_learning_rate_and_scheduler():
    o = opt.create('sgd', learning_rate=0.3)
    assert o.learning_rate == pytest.approx(0.3)
    o.set_learning_rate(0.1)
    assert o.learning_rate == pytest.approx(0.1)

    class Halve:
        base_lr = 1.0

        def __call__(self, n):
            return self.base_lr / 2 ** n
    o = opt.create('sgd', learning_rate=0.8, lr_scheduler=Halve())
    assert o.learning_rate == pytest.approx(0.8)
    w = nd.zeros((1,))
    o.update(0, w, nd.ones((1,)), None)         # num_update = 1: lr 0.4
    np.testing.assert_allclose(w.asnumpy(), [-0.4])
    with pytest.raises(UserWarning, match='LRScheduler'):
        o.set_learning_rate(0.1)


def test_registry_and_errors():
    assert isinstance(opt.create('SGD'), opt.SGD)
    assert isinstance(mx.optimizer.create('adam'), opt.Adam)
    assert opt.create('adam').learning_rate == pytest.approx(0.001)
    assert opt.create('sgd').learning_rate == pytest.approx(0.01)
    with pytest.raises(ValueError, match='unknown optimizer'):
        opt.create('sgdd')
    with pytest.raises(TypeError, match='momentun'):
        opt.create('sgd', momentun=0.9)

    @opt.register_optimizer
    class Sign(opt.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight - self.lr * nd.sign(grad)
    try:
        o = opt.create('sign', learning_rate=0.5)
        w = nd.zeros((2,))
        upd = opt.get_updater(o)
        upd(0, nd.array([3., -2.]), w)
        np.testing.assert_allclose(w.asnumpy(), [-0.5, 0.5])
        upd([0], [nd.array([1., 1.])], [w])          # the Trainer's list form
        np.testing.assert_allclose(w.asnumpy(), [-1.0, 0.0])
    finally:
        del opt.Optimizer.opt_registry['sign']


def test_context_mismatch_is_a_clear_error():
    o = opt.create('sgd')
    with pytest.raises(ValueError, match='one context'):
        o.update(0, nd.ones((2,), ctx=mx.cpu(0)), nd.ones((2,), ctx=mx.cpu(1)), None)


def test_functional_forms():
    w, g = nd.array([1., 2.]), nd.array([0.5, -4.])
    out = opt.sgd_update(w, g, lr=0.1, wd=0.1, clip_gradient=1.0)
    np.testing.assert_allclose(out.asnumpy(), [1 - 0.1 * (0.5 + 0.1),
                                               2 - 0.1 * (-1 + 0.2)], rtol=1e-6)
    np.testing.assert_array_equal(w.asnumpy(), [1., 2.])     # not in place
    mom = nd.zeros((2,))
    opt.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, out=w)
    np.testing.assert_allclose(mom.asnumpy(), [-0.05, 0.4], rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), [0.95, 2.4], rtol=1e-6)
    mean, var = nd.zeros((2,)), nd.zeros((2,))
    opt.adam_update(w, g, mean, var, lr=0.1, out=w)
    np.testing.assert_allclose(mean.asnumpy(), [0.05, -0.4], rtol=1e-6)
    for name in ('sgd_update', 'sgd_mom_update', 'adam_update'):
        assert name in OPS and not OPS[name].differentiable


@pytest.mark.cpu_context       # a read-only NumPy view: host buffers only
def test_read_only_weight_buffer_is_replaced_not_crashed():
    w = nd.ones((2, 3))
    w.wait_to_read()
    w._data = np.broadcast_to(np.float32(1), (2, 3))     # a read-only view
    opt.create('sgd', learning_rate=0.5).update(0, w, nd.ones((2, 3)), None)
    np.testing.assert_allclose(w.asnumpy(), 0.5)
