"""mx.lr_scheduler: MXNet's schedules and warm-up, wired into Optimizer and
Trainer (the count is one per step, however many contexts)."""
import math

import numpy as np
import pytest

import d2lmini as mx
import d2lmini.lr_scheduler as lrs
from d2lmini import autograd, gluon, nd, optimizer as opt


def test_factor_scheduler_counts_as_mxnet():
    s = lrs.FactorScheduler(step=3, factor=0.5, base_lr=1.0)
    # update n has base_lr * factor ** floor((n - 1) / step)
    got = [s(n) for n in range(1, 11)]
    assert got == pytest.approx([0.5 ** ((n - 1) // 3) for n in range(1, 11)])
    floor = lrs.FactorScheduler(step=1, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0)
    assert floor(100) == pytest.approx(1e-3)


def test_warmup_constant_and_linear():
    s = lrs.FactorScheduler(10, 0.1, base_lr=1.0, warmup_steps=5,
                            warmup_begin_lr=0.2, warmup_mode='constant')
    assert [s(n) for n in range(5)] == [0.2] * 5
    assert s(5) == 1.0
    s = lrs.MultiFactorScheduler([8, 12], 0.1, base_lr=0.5, warmup_steps=4,
                                 warmup_begin_lr=0.1)
    assert [s(n) for n in range(4)] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert s(8) == pytest.approx(0.5)
    assert s(9) == pytest.approx(0.05)
    assert s(13) == pytest.approx(0.005)
    assert s(100) == pytest.approx(0.005)


def test_poly_and_cosine():
    p = lrs.PolyScheduler(110, base_lr=2.0, pwr=2, final_lr=0.5, warmup_steps=10)
    assert p(5) == pytest.approx(1.0)                 # linear warm-up from 0
    for n in (10, 35, 60, 110):
        frac = (n - 10) / 100
        assert p(n) == pytest.approx(0.5 + 1.5 * (1 - frac) ** 2)
    assert p(500) == pytest.approx(0.5)
    c = lrs.CosineScheduler(100, base_lr=3.0, final_lr=0.1)
    for n in (0, 25, 50, 100):
        assert c(n) == pytest.approx(0.1 + 2.9 * (1 + math.cos(math.pi * n / 100)) / 2)
    assert c(1000) == pytest.approx(0.1)


@pytest.mark.parametrize('make', [
    lambda: lrs.FactorScheduler(0),
    lambda: lrs.FactorScheduler(2, factor=1.5),
    lambda: lrs.MultiFactorScheduler([5, 5]),
    lambda: lrs.MultiFactorScheduler([0, 3]),
    lambda: lrs.PolyScheduler(0),
    lambda: lrs.CosineScheduler(10, base_lr=0.1, warmup_begin_lr=0.5),
    lambda: lrs.CosineScheduler(10, warmup_mode='cubic'),
    lambda: lrs.LRScheduler(warmup_steps=-1),
])
def test_bad_arguments_are_value_errors(make):
    with pytest.raises(ValueError):
        make()


def test_optimizer_learning_rate_sets_the_base():
    s = lrs.FactorScheduler(step=1)
    o = opt.Optimizer(lr_scheduler=s, learning_rate=0.3)
    assert o.learning_rate == 0.3
    s.base_lr = 0.4
    assert o.learning_rate == 0.4
    o = opt.Optimizer(lr_scheduler=lrs.FactorScheduler(step=1, base_lr=1024))
    assert o.learning_rate == 1024
    with pytest.raises(UserWarning):
        o.set_learning_rate(0.5)
    # The whole schedule follows the override, warm-up target included.
    c = lrs.CosineScheduler(100, base_lr=1.0, warmup_steps=10)
    opt.create('sgd', learning_rate=0.5, lr_scheduler=c)
    assert c(5) == pytest.approx(0.25) and c(10) == pytest.approx(0.5)


def test_adam_default_learning_rate_overrides_the_scheduler_base():
    """As in MXNet: Adam's learning_rate defaults to 0.001, not None."""
    s = lrs.FactorScheduler(step=10, base_lr=0.5)
    assert opt.create('adam', lr_scheduler=s).learning_rate == pytest.approx(0.001)
    s = lrs.FactorScheduler(step=10, base_lr=0.5)
    assert opt.create('sgd', lr_scheduler=s).learning_rate == pytest.approx(0.5)


def test_updates_use_the_scheduled_rate():
    s = lrs.MultiFactorScheduler([2], factor=0.1, base_lr=1.0)
    o = opt.create('sgd', lr_scheduler=s)
    w = nd.zeros((1,))
    for _ in range(4):
        o.update(0, w, nd.ones((1,)), None)
    # num_update 1, 2 -> lr 1; 3, 4 -> lr 0.1
    np.testing.assert_allclose(w.asnumpy(), [-2.2], rtol=1e-6)


def test_trainer_steps_the_schedule_once_per_step_on_two_contexts():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    x = gluon.Parameter('x', shape=(3,))
    x.initialize(mx.init.Zero(), ctx=ctxs)
    sched = lrs.FactorScheduler(2, factor=0.1, base_lr=1.0)
    trainer = gluon.Trainer([x], 'sgd', {'learning_rate': 1.0,
                                         'lr_scheduler': sched})
    expect_w, lrs_seen = 0.0, []
    for i in range(6):
        with autograd.record():
            ys = [w + 1 for w in x.list_data()]
        for y in ys:
            y.backward()
        trainer.step(1)
        lrs_seen.append(trainer.learning_rate)
        expect_w -= 2 * lrs_seen[-1]          # gradient summed over 2 contexts
        for d in x.list_data():
            np.testing.assert_allclose(d.asnumpy(), expect_w, rtol=1e-5)
    assert lrs_seen == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01])
    assert trainer.optimizer.num_update == 6
    with pytest.raises(UserWarning):
        trainer.set_learning_rate(0.5)


def test_mx_lr_scheduler_is_reachable():
    assert mx.lr_scheduler.CosineScheduler is lrs.CosineScheduler
