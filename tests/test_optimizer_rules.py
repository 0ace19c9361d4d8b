"""NAG, Signum, Adamax, Nadam, FTML, Ftrl, LAMB, SGLD and RMSProp's options
against NumPy re-implementations of MXNet 1.9.1's documented update rules,
several steps, with weight decay, gradient rescaling and clipping."""
import math

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd, optimizer as opt
from oracles import clip as _clip

RTOL, ATOL = 3e-5, 1e-6


# --- NumPy references (float64), from MXNet's docstrings and kernels --------------
def ref_nag(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, momentum=0.0):
    g = _clip(rescale * g, clip)
    if momentum == 0.0:
        return w - lr * (g + wd * w), st
    mom = momentum * st[0]
    w_new = w - mom + (momentum + 1) * (mom - lr * (g + wd * w))
    # In place (out=weight), MXNet's kernel reads the new weight here.
    return w_new, [mom - lr * (g + wd * w_new)]


def ref_signum(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, momentum=0.9,
               wd_lh=0.0):
    if momentum == 0.0:
        return (1 - lr * (wd + wd_lh)) * w - lr * np.sign(g), st
    mom = momentum * st[0] - (1 - momentum) * (_clip(rescale * g, clip) + wd * w)
    return (1 - lr * wd_lh) * w + lr * np.sign(mom), [mom]


def ref_adamax(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, beta1=0.9,
               beta2=0.999):
    g = _clip(rescale * g + wd * w, clip)
    m = beta1 * st[0] + (1 - beta1) * g
    u = np.maximum(beta2 * st[1], np.abs(g))
    return w - lr / (1 - beta1 ** t) * m / u, [m, u]


def make_ref_nadam():
    sched = [1.0]

    def ref(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, beta1=0.9,
            beta2=0.999, epsilon=1e-8, schedule_decay=0.004):
        g = _clip(rescale * g + wd * w, clip)
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * schedule_decay))
        mu_t1 = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * schedule_decay))
        sched[0] *= mu_t
        m = beta1 * st[0] + (1 - beta1) * g
        v = beta2 * st[1] + (1 - beta2) * g * g
        m_bar = ((1 - mu_t) * g / (1 - sched[0])
                 + mu_t1 * m / (1 - sched[0] * mu_t1))
        v_hat = v / (1 - beta2 ** t)
        return w - lr * m_bar / (np.sqrt(v_hat) + epsilon), [m, v]
    return ref


def ref_ftml(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, beta1=0.6,
             beta2=0.999, epsilon=1e-8):
    g = _clip(rescale * g + wd * w, clip)
    d, v, z = st
    v = beta2 * v + (1 - beta2) * g * g
    d_t = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * w
    return -z / d_t, [d_t, v, z]


def ref_ftrl(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, lamda1=0.01, beta=1.0):
    g = _clip(rescale * g, clip)
    z, n = st
    z = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
    n = n + g * g
    w = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > lamda1)
    return w, [z, n]


def ref_lamb(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, beta1=0.9,
             beta2=0.999, epsilon=1e-6, lower_bound=None, upper_bound=None,
             bias_correction=True):
    g = _clip(rescale * g, clip)
    m = beta1 * st[0] + (1 - beta1) * g
    v = beta2 * st[1] + (1 - beta2) * g * g
    mh, vh = (m / (1 - beta1 ** t), v / (1 - beta2 ** t)) if bias_correction \
        else (m, v)
    d = mh / (np.sqrt(vh) + epsilon) + wd * w
    r1, r2 = np.linalg.norm(w), np.linalg.norm(d)
    if lower_bound:
        r1 = max(r1, lower_bound)
    if upper_bound:
        r1 = min(r1, upper_bound)
    ratio = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
    return w - lr * ratio * d, [m, v]


def ref_rmsprop(w, g, st, t, lr, wd=0.0, rescale=1.0, clip=None, gamma1=0.9,
                epsilon=1e-8, clip_weights=None):
    g = _clip(rescale * g + wd * w, clip)
    n = (1 - gamma1) * g * g + gamma1 * st[0]
    w = w - lr * g / np.sqrt(n + epsilon)
    return (w if clip_weights is None else np.clip(w, -clip_weights, clip_weights)), [n]


#        name        kwargs for create()                                reference
CASES = [
    ('nag', {'momentum': 0.9}, ref_nag),
    ('nag', {'momentum': 0.9, 'wd': 0.05, 'rescale_grad': 0.5,
             'clip_gradient': 0.4}, ref_nag),
    ('nag', {'wd': 0.1, 'clip_gradient': 0.3}, ref_nag),
    ('signum', {}, ref_signum),
    ('signum', {'momentum': 0.8, 'wd': 0.05, 'wd_lh': 0.02, 'rescale_grad': 0.5,
                'clip_gradient': 0.3}, ref_signum),
    ('signum', {'momentum': 0.0, 'wd': 0.05, 'wd_lh': 0.02}, ref_signum),
    ('adamax', {}, ref_adamax),
    ('adamax', {'wd': 0.1, 'rescale_grad': 0.5, 'clip_gradient': 0.2,
                'beta1': 0.8, 'beta2': 0.9}, ref_adamax),
    ('nadam', {}, 'nadam'),
    ('nadam', {'wd': 0.05, 'rescale_grad': 0.5, 'clip_gradient': 0.3,
               'schedule_decay': 0.01}, 'nadam'),
    ('ftml', {}, ref_ftml),
    ('ftml', {'wd': 0.05, 'rescale_grad': 0.5, 'clip_gradient': 0.3,
              'beta1': 0.5, 'beta2': 0.9}, ref_ftml),
    ('ftrl', {}, ref_ftrl),
    ('ftrl', {'wd': 0.05, 'rescale_grad': 0.5, 'clip_gradient': 0.3,
              'lamda1': 0.2, 'beta': 0.5}, ref_ftrl),
    ('lamb', {}, ref_lamb),
    ('lamb', {'wd': 0.05, 'rescale_grad': 0.5, 'clip_gradient': 0.3,
              'bias_correction': False}, ref_lamb),
    ('lamb', {'lower_bound': 5.0, 'upper_bound': 10.0}, ref_lamb),   # |w| < 5
    ('lamb', {'upper_bound': 1.0}, ref_lamb),                          # |w| > 1
    ('rmsprop', {'clip_weights': 0.35, 'wd': 0.02}, ref_rmsprop),
]
RENAME = {'rescale_grad': 'rescale', 'clip_gradient': 'clip'}


def _ref_kwargs(kw, lr):
    return dict({'lr': lr}, **{RENAME.get(k, k): v for k, v in kw.items()})


def _arrays(st):
    return [] if st is None else [st] if isinstance(st, nd.NDArray) else list(st)


@pytest.mark.parametrize('name,kw,ref', CASES,
                         ids=[f'{c[0]}-{i}' for i, c in enumerate(CASES)])
def test_update_matches_numpy(ctx, engine_kind, name, kw, ref):
    rng = np.random.default_rng(0)
    lr = 0.1
    ref = make_ref_nadam() if ref == 'nadam' else ref
    o = opt.create(name, learning_rate=lr, **kw)
    w_np = rng.normal(size=(3, 4))
    w = nd.array(w_np, ctx=ctx)
    st = o.create_state(0, w)
    states = _arrays(st)
    ref_states = [np.zeros_like(w_np) for _ in states]
    for t in range(1, 5):
        g_np = rng.normal(size=(3, 4))
        o.update(0, w, nd.array(g_np, ctx=ctx), st)
        w_np, ref_states = ref(w_np, g_np, ref_states, t, **_ref_kwargs(kw, lr))
        np.testing.assert_allclose(w.asnumpy(), w_np, rtol=RTOL, atol=ATOL)
        for s, r in zip(states, ref_states):
            np.testing.assert_allclose(s.asnumpy(), r, rtol=RTOL, atol=ATOL)
    assert w.dtype == np.float32 and w.context == ctx


@pytest.mark.parametrize('name', ['nag', 'signum', 'adamax', 'nadam', 'ftml',
                                  'ftrl', 'lamb', 'sgld'])
def test_registered_by_name_and_usable_in_a_trainer(name):
    from d2lmini import gluon
    assert type(mx.optimizer.create(name)).__name__.lower() == name
    p = gluon.Parameter('w', shape=(3,))
    p.initialize(mx.init.One())
    trainer = gluon.Trainer([p], name, {'learning_rate': 0.01})
    with mx.autograd.record():
        loss = (p.data() * nd.array([1., 2., 3.])).sum()
    loss.backward()
    trainer.step(1)
    assert not np.allclose(p.data().asnumpy(), 1.0)
    assert trainer.optimizer.num_update == 1


def test_sgld_adds_gaussian_noise_of_variance_lr():
    lr, wd, clip = 0.04, 0.1, 0.5
    o = opt.create('sgld', learning_rate=lr, wd=wd, clip_gradient=clip,
                   rescale_grad=2.0)
    w0 = np.linspace(-1, 1, 12).reshape(3, 4)
    g = np.linspace(0.5, -0.5, 12).reshape(3, 4)
    w = nd.array(w0)
    mx.random.seed(7)
    o.update(0, w, nd.array(g), o.create_state(0, w))
    mx.random.seed(7)
    noise = nd.random.normal(0, math.sqrt(lr), shape=(3, 4)).asnumpy()
    expect = w0 - lr / 2 * (np.clip(2.0 * g, -clip, clip) + wd * w0) + noise
    np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-5, atol=1e-6)
    # The noise really is N(0, lr): a large draw has that spread.
    big = nd.zeros((200, 200))
    opt.create('sgld', learning_rate=lr).update(0, big, nd.zeros((200, 200)), None)
    assert abs(big.asnumpy().std() - math.sqrt(lr)) < 0.01


def test_nadam_schedule_is_shared_by_all_parameters():
    """MXNet multiplies one m_schedule at every parameter's update."""
    o = opt.create('nadam')
    ws = [nd.ones((2,)), nd.ones((2,))]
    sts = [o.create_state(i, w) for i, w in enumerate(ws)]
    for i in range(2):
        o.update(i, ws[i], nd.ones((2,)), sts[i])
    mu1 = 0.9 * (1 - 0.5 * 0.96 ** 0.004)
    assert o.m_schedule == pytest.approx(mu1 * mu1)


def test_rmsprop_states_are_tuples_as_in_mxnet():
    w = nd.ones((2,))
    st = opt.create('rmsprop').create_state(0, w)
    assert isinstance(st, tuple) and len(st) == 1
    assert len(opt.create('rmsprop', centered=True).create_state(0, w)) == 3


def test_update_multi_fuses_the_new_optimizers_too():
    """One engine op for all parameters of a context, any optimizer."""
    for name in ('nag', 'lamb', 'ftml'):
        o1 = opt.create(name, learning_rate=0.1, momentum=0.9) if name == 'nag' \
            else opt.create(name, learning_rate=0.1)
        o2 = opt.create(name, learning_rate=0.1, momentum=0.9) if name == 'nag' \
            else opt.create(name, learning_rate=0.1)
        rng = np.random.default_rng(3)
        w_np = [rng.normal(size=s) for s in [(3,), (2, 2)]]
        g_np = [rng.normal(size=s) for s in [(3,), (2, 2)]]
        w1 = [nd.array(w) for w in w_np]
        w2 = [nd.array(w) for w in w_np]
        s1 = [o1.create_state(i, w) for i, w in enumerate(w1)]
        s2 = [o2.create_state(i, w) for i, w in enumerate(w2)]
        o1.update_multi([0, 1], w1, [nd.array(g) for g in g_np], s1)
        for i in range(2):
            o2.update(i, w2[i], nd.array(g_np[i]), s2[i])
        for a, b in zip(w1, w2):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)


def test_ccsgd_and_the_test_optimizer():
    assert isinstance(opt.create('ccsgd', momentum=0.9), opt.SGD)
    o = opt.create('test', rescale_grad=0.5)
    w = nd.ones((2,))
    st = o.create_state(0, w)
    opt.get_updater(o)(0, nd.array([2., 4.]), w)           # creates its state
    o.update(0, w, nd.array([2., 4.]), st)
    np.testing.assert_allclose(w.asnumpy(), [3., 5.])
    np.testing.assert_allclose(st.asnumpy(), [3., 5.])
