"""The fused update operators as ``nd`` functions (``nd.sgd_mom_update`` & co.):
states updated in place, the result to ``out=`` (in place when it is the
weight, a new array when None), against NumPy versions of MXNet's kernels."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd
from d2lmini.ndarray.registry import OPS

rng = np.random.default_rng(0)
W = rng.normal(size=(2, 3))
G = rng.normal(size=(2, 3)) * 3
S = [np.abs(rng.normal(size=(2, 3))) + 0.1 for _ in range(3)]


def _clip(g, c):
    return g if c < 0 else np.clip(g, -c, c)


# name, states, attrs, reference(w, g, *states) -> (new_w, *new_states)
CASES = [
    ('sgd_update', 0, dict(lr=0.1, wd=0.1, rescale_grad=0.5, clip_gradient=1.0),
     lambda w, g: ((1 - 0.01) * w - 0.1 * _clip(0.5 * g, 1.0),)),
    ('sgd_mom_update', 1, dict(lr=0.1, momentum=0.9, wd=0.1, clip_gradient=1.0),
     lambda w, g, m: (w + (0.9 * m - 0.01 * w - 0.1 * _clip(g, 1.0)),
                      0.9 * m - 0.01 * w - 0.1 * _clip(g, 1.0))),
    ('nag_mom_update', 1, dict(lr=0.1, momentum=0.9),
     lambda w, g, m: (w - 0.9 * m + 1.9 * (0.9 * m - 0.1 * g),
                      0.9 * m - 0.1 * g)),
    ('signsgd_update', 0, dict(lr=0.1, wd=0.2),
     lambda w, g: ((1 - 0.02) * w - 0.1 * np.sign(g),)),
    ('signum_update', 1, dict(lr=0.1, momentum=0.9, wd=0.2, wd_lh=0.1,
                              clip_gradient=1.0),
     lambda w, g, m: ((1 - 0.01) * w + 0.1 * np.sign(
         0.9 * m - 0.1 * (0.2 * w + _clip(g, 1.0))),
         0.9 * m - 0.1 * (0.2 * w + _clip(g, 1.0)))),
    ('adam_update', 2, dict(lr=0.1, beta1=0.8, beta2=0.9, wd=0.1),
     lambda w, g, m, v: (
         w - 0.1 * (0.8 * m + 0.2 * (g + 0.1 * w))
         / (np.sqrt(0.9 * v + 0.1 * (g + 0.1 * w) ** 2) + 1e-8),
         0.8 * m + 0.2 * (g + 0.1 * w), 0.9 * v + 0.1 * (g + 0.1 * w) ** 2)),
    ('rmsprop_update', 1, dict(lr=0.1, clip_weights=0.5),           # gamma1 0.95
     lambda w, g, n: (np.clip(w - 0.1 * g / np.sqrt(0.95 * n + 0.05 * g * g + 1e-8),
                              -0.5, 0.5), 0.95 * n + 0.05 * g * g)),
    ('ftrl_update', 2, dict(lr=0.1, lamda1=0.5, beta=1.0, wd=0.1),
     lambda w, g, z, n: (
         (np.sign(z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / 0.1) * 0.5
          - (z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / 0.1))
         / ((1.0 + np.sqrt(n + g * g)) / 0.1 + 0.1)
         * (np.abs(z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / 0.1) > 0.5),
         z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / 0.1, n + g * g)),
]


@pytest.mark.parametrize('name,nst,attrs,ref', CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize('where', ['new', 'weight', 'other'])
def test_nd_update_functions(ctx, name, nst, attrs, ref, where):
    fn = getattr(nd, name)
    w, g = nd.array(W), nd.array(G)
    states = [nd.array(s) for s in S[:nst]]
    expect = ref(W, G, *S[:nst])
    out = {'new': None, 'weight': w, 'other': nd.zeros(W.shape)}[where]
    res = fn(w, g, *states, out=out, **attrs)
    if where == 'new':
        assert res is not w
        np.testing.assert_allclose(w.asnumpy(), W.astype(np.float32))   # untouched
    else:
        assert res is out
    np.testing.assert_allclose(res.asnumpy(), expect[0], rtol=1e-5, atol=1e-6)
    for s, e in zip(states, expect[1:]):          # states always in place
        np.testing.assert_allclose(s.asnumpy(), e, rtol=1e-5, atol=1e-6)
    assert OPS[name].differentiable is False


def test_mp_functions_update_the_master_copy():
    w = nd.array([1.0, -1.0], dtype='float16')
    w32 = w.astype('float32')
    mom = nd.zeros((2,))
    g = nd.array([1e-4, -1e-4], dtype='float16')
    for _ in range(10):
        nd.mp_sgd_mom_update(w, g, mom, w32, lr=1.0, momentum=0.5, out=w)
    assert w.dtype == np.float16 and w32.dtype == np.float32
    m, v32 = 0.0, 1.0
    g0 = float(np.float16(1e-4))
    for _ in range(10):
        m = 0.5 * m - g0
        v32 += m
    np.testing.assert_allclose(w32.asnumpy(), [v32, -v32], rtol=1e-5)
    np.testing.assert_array_equal(w.asnumpy(), w32.asnumpy().astype(np.float16))
    w32b = nd.ones((2,))
    nd.mp_sgd_update(w, g, w32b, lr=1.0, wd=0.5, out=w)
    np.testing.assert_allclose(w32b.asnumpy(), [0.5 - g0, 0.5 + g0], rtol=1e-5)
    mom, w32c = nd.zeros((2,)), nd.ones((2,))
    nd.mp_nag_mom_update(w, g, mom, w32c, lr=1.0, momentum=0.9, out=w)
    np.testing.assert_allclose(w32c.asnumpy(), [1 - 1.9 * g0, 1 + 1.9 * g0],
                               rtol=1e-5)
    with pytest.raises(TypeError, match='float32'):
        nd.mp_sgd_update(w, g, nd.ones((2,), dtype='float16'), lr=0.1)


def test_ftml_update():
    w, g = nd.array(W), nd.array(G)
    d, v, z = (nd.zeros(W.shape) for _ in range(3))
    nd.ftml_update(w, g, d, v, z, lr=0.1, t=1, beta1=0.6, beta2=0.999,
                   clip_grad=1.0, out=w)
    gc = np.clip(G, -1, 1)
    v_ = 0.001 * gc * gc
    d_ = (1 - 0.6) / 0.1 * (np.sqrt(v_ / 0.001) + 1e-8)
    z_ = 0.4 * gc - d_ * W
    np.testing.assert_allclose(w.asnumpy(), -z_ / d_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d.asnumpy(), d_, rtol=1e-5)


def test_lamb_phases_and_their_mp_forms():
    w, g = nd.array(W), nd.array(G)
    mean, var = nd.zeros(W.shape), nd.zeros(W.shape)
    gd = nd.lamb_update_phase1(w, g, mean, var, t=1, wd=0.1, rescale_grad=0.5)
    m, v = 0.1 * 0.5 * G, 0.001 * (0.5 * G) ** 2
    expect_g = (m / 0.1) / (np.sqrt(v / 0.001) + 1e-6) + 0.1 * W
    np.testing.assert_allclose(gd.asnumpy(), expect_g, rtol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), m, rtol=1e-5)
    r1, r2 = w.norm().reshape((1,)), gd.norm().reshape((1,))
    nd.lamb_update_phase2(w, gd, r1, r2, lr=0.01, out=w)
    ratio = np.linalg.norm(W) / np.linalg.norm(expect_g)
    np.testing.assert_allclose(w.asnumpy(), W - 0.01 * ratio * expect_g, rtol=1e-5)
    # bounds clip r1; a zero norm means ratio 1
    w2 = nd.array(W)
    nd.lamb_update_phase2(w2, gd, nd.zeros((1,)), r2, lr=0.01, out=w2)
    np.testing.assert_allclose(w2.asnumpy(), W - 0.01 * expect_g, rtol=1e-5)
    w3 = nd.array(W)
    assert np.linalg.norm(W) > 0.5
    nd.lamb_update_phase2(w3, gd, r1, r2, lr=0.01, upper_bound=0.5, out=w3)
    np.testing.assert_allclose(
        w3.asnumpy(), W - 0.01 * 0.5 / np.linalg.norm(expect_g) * expect_g,
        rtol=1e-5)
    with pytest.raises(ValueError, match='shape'):
        nd.lamb_update_phase2(w, gd, nd.ones((2,)), r2, lr=0.1)
    # mixed precision: float32 direction, master copy takes the step
    w16 = nd.array(W, dtype='float16')
    w32 = w16.astype('float32')
    mean, var = nd.zeros(W.shape), nd.zeros(W.shape)
    g32 = nd.mp_lamb_update_phase1(w16, nd.array(G, dtype='float16'), mean, var,
                                   w32, t=1)
    assert g32.dtype == np.float32
    before = w32.asnumpy().copy()
    nd.mp_lamb_update_phase2(w16, g32, w32.norm().reshape((1,)),
                             g32.norm().reshape((1,)), w32, lr=0.01, out=w16)
    assert not np.allclose(w32.asnumpy(), before)
    np.testing.assert_array_equal(w16.asnumpy(), w32.asnumpy().astype(np.float16))


def test_errors_name_the_op():
    w = nd.ones((2, 3))
    with pytest.raises(ValueError, match="sgd_mom_update.*one shape"):
        nd.sgd_mom_update(w, nd.ones((2, 3)), nd.zeros((3,)), lr=0.1)
    with pytest.raises(ValueError, match='one context'):
        nd.sgd_update(w, nd.ones((2, 3), ctx=mx.cpu(1)), lr=0.1)
    with pytest.raises(TypeError, match='momentun'):
        nd.sgd_mom_update(w, w, nd.zeros((2, 3)), lr=0.1, momentun=0.9)
    with pytest.raises(ValueError, match='out= has shape'):
        nd.sgd_update(w, w, lr=0.1, out=nd.zeros((3,)))


def test_updates_keep_engine_order():
    """The in-place update is ordered with what reads the weight after it."""
    w = nd.ones((1000,))
    mom = nd.zeros((1000,))
    g = nd.ones((1000,))
    total = None
    for _ in range(5):
        nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.5, out=w)
        total = w.sum() if total is None else total + w.sum()
    m, v, acc = 0.0, 1.0, 0.0
    for _ in range(5):
        m = 0.5 * m - 0.1
        v += m
        acc += 1000 * v
    np.testing.assert_allclose(total.asscalar(), acc, rtol=1e-5)


def test_multi_updates_are_one_push_and_equal_the_single_ones():
    shapes = [(2, 3), (4,), (1, 2, 2)]
    r = np.random.default_rng(5)
    w_np = [r.normal(size=s) for s in shapes]
    g_np = [r.normal(size=s) for s in shapes]
    lrs, wds = [0.1, 0.2, 0.3], [0.0, 0.01, 0.1]
    ws = [nd.array(w) for w in w_np]
    moms = [nd.zeros(s) for s in shapes]
    data = [a for w, g, m in zip(ws, g_np, moms) for a in (w, nd.array(g), m)]
    nd.waitall()
    old = mx.engine.set_engine('threaded')
    try:
        with mx.engine.Trace() as tr:
            res = nd.multi_sgd_mom_update(*data, lrs=lrs, wds=wds, momentum=0.9,
                                          clip_gradient=0.5, num_weights=3,
                                          out=ws)
        assert [s[1] for s in tr.spans()] == ['multi_sgd_mom_update']
    finally:
        mx.engine.set_engine(old)
    assert res == ws
    for i in range(3):
        w1, m1 = nd.array(w_np[i]), nd.zeros(shapes[i])
        nd.sgd_mom_update(w1, nd.array(g_np[i]), m1, lr=lrs[i], wd=wds[i],
                          momentum=0.9, clip_gradient=0.5, out=w1)
        np.testing.assert_array_equal(ws[i].asnumpy(), w1.asnumpy())
        np.testing.assert_array_equal(moms[i].asnumpy(), m1.asnumpy())
    # plain and mixed-precision forms
    out = nd.multi_sgd_update(nd.ones((2,)), nd.ones((2,)), nd.ones((3,)),
                              nd.ones((3,)), lrs=[0.5, 0.25], wds=[0, 0],
                              num_weights=2)
    np.testing.assert_allclose(out[0].asnumpy(), 0.5)
    np.testing.assert_allclose(out[1].asnumpy(), 0.75)
    w16, w32 = nd.ones((2,), dtype='float16'), nd.ones((2,))
    mom = nd.zeros((2,))
    for _ in range(10):
        nd.multi_mp_sgd_mom_update(w16, nd.full((2,), 1e-4, dtype='float16'), mom,
                                   w32, lrs=[1.0], wds=[0.0], momentum=0.0,
                                   num_weights=1, out=[w16])
    np.testing.assert_allclose(w32.asnumpy(), 1 - 10 * float(np.float16(1e-4)),
                               rtol=1e-6)
    nd.multi_mp_sgd_update(w16, nd.ones((2,), dtype='float16'), w32, lrs=[0.5],
                           wds=[0.0], out=w16)
    np.testing.assert_allclose(w16.asnumpy(), 0.499, atol=1e-3)
    with pytest.raises(ValueError, match='3 arrays per weight'):
        nd.multi_sgd_mom_update(nd.ones((2,)), nd.ones((2,)), lrs=[0.1], wds=[0.0])
