"""d2lmini.pipeline: micro-batched model parallelism (GPipe).

Oracle: the same stages run one after the other on one device.  A pipelined
step must give the same output, loss and gradients for any number of
micro-batches, even or not; bad arguments fail at the call, clearly.
"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import gluon, nd
from d2lmini.engine import Trace
from d2lmini.gluon import nn
from d2lmini.pipeline import (Pipeline, bubble, idle_fractions, micro_batches,
                              pipeline_step, predicted_bubble)

from conftest import needs_devices

# two devices of the default context's kind: cpu(0), cpu(1) or gpu(0), gpu(1)
_KIND = mx.current_context().device_type
D0, D1 = mx.Context(_KIND, 0), mx.Context(_KIND, 1)
LOSS = gluon.loss.SoftmaxCrossEntropyLoss()


def make_stages(seed=0):
    mx.random.seed(seed)
    s0 = nn.Sequential()
    s0.add(nn.Dense(16, activation='relu', in_units=6),
           nn.Dense(16, activation='tanh', in_units=16))
    s1 = nn.Sequential()
    s1.add(nn.Dense(8, activation='relu', in_units=16), nn.Dense(4, in_units=8))
    for s in (s0, s1):
        s.initialize(mx.init.Xavier(), ctx=D0)
    return [s0, s1]


def data(n, seed=1):
    rng = np.random.default_rng(seed)
    return (nd.array(rng.standard_normal((n, 6))),
            nd.array(rng.integers(0, 4, n)))


def plain_step(stages, X, y):
    """The reference: every stage on D0, the whole batch at once."""
    with mx.autograd.record():
        h = X
        for s in stages:
            h = s(h)
        lv = LOSS(h, y)
    lv.backward()
    return h.asnumpy(), lv.asnumpy(), grads(stages)


def grads(stages):
    return [p.grad(p.list_ctx()[0]).asnumpy().copy()
            for s in stages for p in s.collect_params().values()]


def test_micro_batches():
    assert micro_batches(8, 4) == [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert micro_batches(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert micro_batches(5, 1) == [(0, 5)]
    assert micro_batches(3, 3) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ValueError, match='at least 1'):
        micro_batches(8, 0)
    with pytest.raises(ValueError, match='3 samples into 4 micro-batches'):
        micro_batches(3, 4)
    with pytest.raises(TypeError, match='int'):
        micro_batches(8, 2.0)


@needs_devices(2)
@pytest.mark.parametrize('m, n', [(1, 8), (2, 8), (4, 8), (4, 10), (3, 10)])
def test_pipeline_step_equals_plain_step(m, n):
    stages = make_stages()
    X, y = data(n)
    out0, loss0, grads0 = plain_step(stages, X, y)
    net = Pipeline(stages, [D0, D1], num_micro=m)     # moves stage 1 to D1
    assert stages[1][0].weight.list_ctx() == [D1]
    assert stages[0][0].weight.list_ctx() == [D0]
    out = net(X)
    assert out.context == D1 and out.shape == (n, 4)
    np.testing.assert_allclose(out.asnumpy(), out0, rtol=1e-5, atol=1e-6)
    lv = pipeline_step(net, X, y, LOSS)
    assert lv.context == D1
    np.testing.assert_allclose(lv.asnumpy(), loss0, rtol=1e-5, atol=1e-6)
    for g, g0 in zip(grads(stages), grads0):
        np.testing.assert_allclose(g, g0, rtol=1e-4, atol=1e-6)
    assert all(p.grad(p.list_ctx()[0]).context == p.list_ctx()[0]
               for s in stages for p in s.collect_params().values())


@needs_devices(2)
def test_pipeline_training_equals_one_device():
    """Three steps of SGD with momentum: stage trainers vs one Trainer."""
    X, y = data(12)
    opt = {'learning_rate': 0.2, 'momentum': 0.9}
    ref = make_stages(5)
    init = [p.data().asnumpy() for s in ref for p in s.collect_params().values()]
    trainer = gluon.Trainer([p for s in ref for p in s.collect_params().values()],
                            'sgd', opt)
    for _ in range(3):
        plain_step(ref, X, y)
        trainer.step(12)
    stages = make_stages(5)
    net = Pipeline(stages, [D0, D1], num_micro=3)
    trainers = net.trainer('sgd', opt)
    assert len(trainers.trainers) == 2
    for _ in range(3):
        pipeline_step(net, X, y, LOSS, trainers)
    for s, r, v0 in zip([p for s in stages for p in s.collect_params().values()],
                        [p for s in ref for p in s.collect_params().values()], init):
        np.testing.assert_allclose(s.data().asnumpy(), r.data().asnumpy(),
                                   rtol=1e-4, atol=1e-6)
        assert np.abs(s.data().asnumpy() - v0).max() > 1e-3      # it trained


@needs_devices(2)
def test_initialize_puts_each_stage_on_its_device():
    stages = [nn.Dense(5, activation='relu'), nn.Dense(2)]     # deferred shapes
    net = Pipeline(stages, [D0, D1], num_micro=2)
    net.initialize()
    out = net(nd.ones((4, 3)))
    assert out.shape == (4, 2) and out.context == D1
    assert stages[0].weight.list_ctx() == [D0]
    assert stages[1].weight.list_ctx() == [D1]
    assert len(net.collect_params()) == 4
    with pytest.raises(ValueError, match='without ctx'):
        net.initialize(ctx=D0)


@needs_devices(2)
def test_bad_arguments_are_clear_errors():
    s0, s1 = make_stages()
    with pytest.raises(ValueError, match='one device per stage, got 2 stages and 1'):
        Pipeline([s0, s1], [D0])
    with pytest.raises(ValueError, match='at least one stage'):
        Pipeline([], [])
    with pytest.raises(TypeError, match='list of stages'):
        Pipeline(s0, D0)
    with pytest.raises(TypeError, match='stage 1 must be a Block'):
        Pipeline([s0, 'dense'], [D0, D1])
    with pytest.raises(TypeError, match='device 1 must be a Context'):
        Pipeline([s0, s1], [D0, 1])
    with pytest.raises(ValueError, match='at least 1'):
        Pipeline([s0, s1], [D0, D1], num_micro=0)
    # none of the refused calls moved a stage
    assert s1[0].weight.list_ctx() == [D0]
    net = Pipeline([s0, s1], [D0, D1], num_micro=2)
    with pytest.raises(ValueError, match='at least 1'):
        net.num_micro = -1
    assert net.num_micro == 2
    net.num_micro = 5
    with pytest.raises(ValueError, match='4 samples into 5 micro-batches'):
        net(nd.ones((4, 6)))
    with pytest.raises(TypeError, match='one NDArray'):
        net(np.ones((4, 6)))


def test_idle_fractions_of_a_known_timeline():
    tr = Trace()
    tr.t0 = 0.0
    # D0: [0, 1] and [2, 3]; D1: [1, 2]; the step lasts 3 s
    tr.events = [(D0, 'a', 0.0, 1.0, 1), (D1, 'b', 1.0, 2.0, 1),
                 (D0, 'c', 2.0, 2.5, 2), (D0, 'd', 2.5, 3.0, 3)]
    idle = idle_fractions(tr)
    assert idle[D0] == pytest.approx(1 / 3) and idle[D1] == pytest.approx(2 / 3)
    assert bubble(tr) == pytest.approx(0.5)
    assert idle_fractions(tr, [D1]) == {D1: 0.0}
    with pytest.raises(ValueError, match='no operations'):
        idle_fractions(tr, [mx.cpu(3)])


def test_predicted_bubble():
    assert predicted_bubble(2, 1) == pytest.approx(1 / 2)
    assert predicted_bubble(2, 4) == pytest.approx(1 / 5)
    assert predicted_bubble(4, 8) == pytest.approx(3 / 11)
    assert predicted_bubble(1, 3) == 0


@needs_devices(2)
def test_micro_batches_keep_both_devices_busy_at_once():
    """Behaviour, not speed: with 4 micro-batches the two stages overlap."""
    mx.random.seed(0)
    # products of a few ms each: the GIL is free while they run
    stages = [nn.Dense(1024, activation='relu', in_units=1024) for _ in range(2)]
    net = Pipeline(stages, [D0, D1], num_micro=4)
    net.initialize()
    X = nd.random.normal(shape=(512, 1024))
    net(X).wait_to_read()
    for _ in range(5):                        # a loaded machine may serialise
        with Trace() as tr:
            for _ in range(2):
                net(X)
        if tr.overlap(D0, D1) > 0:
            break
    assert tr.overlap(D0, D1) > 0
    assert bubble(tr, [D0, D1]) < 1


@needs_devices(2)
def test_save_and_load_keep_each_stage_on_its_device(tmp_path):
    stages = make_stages()
    net = Pipeline(stages, [D0, D1], num_micro=2)
    X, _ = data(6)
    before = net(X).asnumpy()
    fname = str(tmp_path / 'pipe.params')
    net.save_parameters(fname)
    other = Pipeline(make_stages(seed=9), [D0, D1], num_micro=3)
    assert not np.allclose(other(X).asnumpy(), before)
    other.load_parameters(fname)
    # 3 micro-batches, not 2: other GEMM shapes, so not the same bits.
    # Measured over OpenBLAS kernels (Haswell, Sandybridge, Nehalem,
    # Prescott, 1 thread, NumPy without AVX2): up to 1.8e-7 apart, 1.6e-6
    # relative (Prescott alone: 8.1e-7 between the two micro-batchings).
    np.testing.assert_allclose(other(X).asnumpy(), before, rtol=1e-5, atol=1e-6)
    assert other.stages[0][0].weight.list_ctx() == [D0]
    assert other.stages[1][0].weight.list_ctx() == [D1]
