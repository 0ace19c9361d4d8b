"""multi_precision=True: a float32 master copy of float16 weights.

The test that matters: updates far below float16's resolution (the spacing
of float16 just under 1.0 is 2**-11 ~ 4.9e-4) are lost when the float16
weight is updated directly, and accumulate with a master copy.
"""
import warnings

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import gluon, nd, optimizer as opt

F16, F32 = np.float16, np.float32


def _run(name, kw, steps, mp, grad=1e-4):
    o = opt.create(name, multi_precision=mp, **kw)
    w = nd.ones((4,), dtype=F16)
    g = nd.full((4,), grad, dtype=F16)
    with pytest.warns(UserWarning, match='multi_precision') if not mp \
            else _no_warning():
        st = o.create_state_multi_precision(0, w)
    for _ in range(steps):
        o.update_multi_precision(0, w, g, st)
    return w, st


class _no_warning:
    """No multi_precision warning here.  Recorded, not made an error: the
    filters are the whole process's, and 'error' would also reach warnings
    of the engine's worker, still running the previous steps."""
    def __enter__(self):
        self._c = warnings.catch_warnings(record=True)
        self._seen = self._c.__enter__()
        warnings.simplefilter('always')

    def __exit__(self, *a):
        self._c.__exit__(*a)
        assert not [w for w in self._seen if 'multi_precision' in str(w.message)]


# name, kwargs, expected float32 drift after 100 steps of grad 1e-4
CASES = [
    ('sgd', {'learning_rate': 1.0}, 100 * 1e-4),
    ('sgd', {'learning_rate': 0.1, 'momentum': 0.9}, None),
    ('nag', {'learning_rate': 0.1, 'momentum': 0.9}, None),
    ('adam', {'learning_rate': 1e-4}, None),
    ('rmsprop', {'learning_rate': 8e-5}, None),
    ('adagrad', {'learning_rate': 3e-4}, None),
    ('signum', {'learning_rate': 1e-4}, None),
    ('lamb', {'learning_rate': 1e-4}, None),
    ('ftml', {'learning_rate': 1e-4}, None),
]


@pytest.mark.parametrize('name,kw,drift', CASES,
                         ids=[f'{c[0]}-{i}' for i, c in enumerate(CASES)])
def test_tiny_updates_accumulate_in_the_master_copy(name, kw, drift):
    w16, _ = _run(name, kw, 100, mp=False)
    if name == 'sgd':
        # float16 alone: every step rounds back to 1.0.
        np.testing.assert_array_equal(w16.asnumpy(), np.ones(4, F16))
    w, st = _run(name, kw, 100, mp=True)
    assert w.dtype == F16
    # The same optimizer in float32 from the start is the reference.
    o32 = opt.create(name, **kw)
    w32 = nd.ones((4,), dtype=F32)
    s32 = o32.create_state(0, w32)
    g32 = nd.full((4,), np.float32(np.float16(1e-4)), dtype=F32)
    for _ in range(100):
        o32.update(0, w32, g32, s32)
    ref = w32.asnumpy()
    assert ref[0] < 1 - 4e-3                     # it moved far, in small steps
    if drift is not None:
        np.testing.assert_allclose(1 - ref, drift, rtol=1e-3)
    master = st[1] if name in ('sgd', 'nag') else st[0]
    assert master.dtype == F32
    np.testing.assert_allclose(master.asnumpy(), ref, rtol=1e-5)
    np.testing.assert_array_equal(w.asnumpy(), ref.astype(F16))
    # float16 alone lost it (rounded away, or g*g underflowed to 0 and
    # the adaptive step divided by it).
    assert not np.allclose(w16.asnumpy().astype(F32), ref, atol=1e-3)


@pytest.mark.parametrize('name,kw', [c[:2] for c in CASES
                                     if c[0] in ('adam', 'rmsprop', 'ftml')])
def test_float16_alone_overflows_without_a_warning(name, kw):
    """float16 alone, g*g underflows to 0 and the adaptive step divides by
    it: inf or nan in the weight, and no RuntimeWarning, as MXNet's kernels
    never warn.  In the naive engine the kernels run on this thread, so the
    filter below sees what they would warn (it need not reach a worker)."""
    with mx.engine.engine_mode('naive'), warnings.catch_warnings():
        warnings.simplefilter('error', RuntimeWarning)
        w16, _ = _run(name, kw, 100, mp=False)
    assert not np.isfinite(w16.asnumpy()).any()


def test_state_layouts_are_mxnets():
    w = nd.ones((2, 3), dtype=F16)
    mom, w32 = opt.create('sgd', momentum=0.9, multi_precision=True) \
        .create_state_multi_precision(0, w)
    assert mom.dtype == F32 and w32.dtype == F32
    none, w32 = opt.create('sgd', multi_precision=True) \
        .create_state_multi_precision(0, w)
    assert none is None and w32.dtype == F32
    w32, (m, v) = opt.create('adam', multi_precision=True) \
        .create_state_multi_precision(0, w)
    assert (w32.dtype, m.dtype, v.dtype) == (F32, F32, F32)
    np.testing.assert_array_equal(w32.asnumpy(), np.ones((2, 3)))
    # float32 weights: multi_precision changes nothing.
    st = opt.create('adam', multi_precision=True).create_state_multi_precision(
        0, nd.ones((2,)))
    assert len(st) == 2 and st[0].dtype == F32


def test_a_subclass_with_its_own_update_gets_the_master_copy():
    """As in MXNet: the base class runs update() on weight32 and casts back."""
    class Plain(opt.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight - self.lr * grad
    o = Plain(learning_rate=1.0, multi_precision=True)
    w = nd.ones((3,), dtype=F16)
    st = o.create_state_multi_precision(0, w)
    for _ in range(50):
        o.update_multi_precision(0, w, nd.full((3,), 1e-4, dtype=F16), st)
    np.testing.assert_allclose(st[0].asnumpy(), 1 - 50 * np.float32(F16(1e-4)),
                               rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), 0.995, atol=5e-4)


def test_trainer_multi_precision_and_states_round_trip(tmp_path):
    def make():
        p = gluon.Parameter('w_weight', shape=(3,), dtype='float16')
        p.initialize(mx.init.One())
        return p, gluon.Trainer([p], 'adam', {'learning_rate': 1e-4,
                                             'multi_precision': True})

    def step(p, t):
        with mx.autograd.record():
            loss = (p.data() * nd.array([1., -1., 2.], dtype='float16')).sum()
        loss.backward()
        t.step(1)

    p, t = make()
    for _ in range(20):
        step(p, t)
    # Adam's step is ~lr: 20 steps of 1e-4 move the weight by ~2e-3.
    np.testing.assert_allclose(p.data().asnumpy().astype(F32),
                               [1 - 2e-3, 1 + 2e-3, 1 - 2e-3], atol=5e-4)
    w32, (m, v) = t._updaters[0].states[0]
    assert w32.dtype == F32
    fname = str(tmp_path / 'mp.states')
    t.save_states(fname)
    p2, t2 = make()
    p2.set_data(p.data())
    t2.load_states(fname)
    w32b, (mb, vb) = t2._updaters[0].states[0]
    for a, b in ((w32, w32b), (m, mb), (v, vb)):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    step(p, t)
    step(p2, t2)
    np.testing.assert_array_equal(p.data().asnumpy(), p2.data().asnumpy())


def test_sgd_without_momentum_round_trips_its_none_state(tmp_path):
    p = gluon.Parameter('w_weight', shape=(2,), dtype='float16')
    p.initialize(mx.init.One())
    t = gluon.Trainer([p], 'sgd', {'learning_rate': 1.0, 'multi_precision': True})
    with mx.autograd.record():
        loss = (p.data() * 1e-4).sum()
    loss.backward()
    t.step(1)
    fname = str(tmp_path / 'sgd.states')
    t.save_states(fname)
    t.load_states(fname)
    none, w32 = t._updaters[0].states[0]
    assert none is None and w32.dtype == F32
