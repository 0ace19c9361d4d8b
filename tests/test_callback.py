"""mx.callback: what Speedometer, log_train_metric and ProgressBar log (with
a fake clock), and when the checkpoint callbacks save."""
import logging
import sys
import types
from collections import namedtuple

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import callback

# The fields of MXNet's mx.model.BatchEndParam
BatchEndParam = namedtuple('BatchEndParam',
                           ['epoch', 'nbatch', 'eval_metric', 'locals'])


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(callback.time, 'time', fake)
    return fake


def _metric_with(correct, total):
    acc = mx.metric.Accuracy()
    acc.update([np.zeros(total)], [np.r_[np.zeros(correct), np.ones(total - correct)]])
    return acc


def _messages(caplog):
    return [r.getMessage() for r in caplog.records]


def test_speedometer_auto_reset(clock, caplog):
    caplog.set_level(logging.INFO)
    speed = mx.callback.Speedometer(batch_size=10, frequent=2)
    acc = _metric_with(3, 4)
    for nbatch in range(5):
        if nbatch == 4:
            acc.update([np.zeros(4)], [np.zeros(4)])     # 7 of 8 right
        speed(BatchEndParam(0, nbatch, acc, None))
        clock.now += 0.5                             # 0.5 s per batch
    # 2 batches of 10 samples per second-long window: 20 samples/sec
    assert _messages(caplog) == [
        'Epoch[0] Batch [0-2]\tSpeed: 20.00 samples/sec\taccuracy=0.750000',
        'Epoch[0] Batch [2-4]\tSpeed: 20.00 samples/sec\taccuracy=1.000000']
    # the local figures were reset after each line, the global ones kept
    assert np.isnan(acc.get()[1]) and acc.get_global()[1] == 7 / 8


def test_speedometer_cumulative_and_new_epoch(clock, caplog):
    caplog.set_level(logging.INFO)
    speed = mx.callback.Speedometer(batch_size=4, frequent=1, auto_reset=False)
    acc = _metric_with(1, 2)
    for epoch, nbatches in ((0, 3), (1, 2)):
        for nbatch in range(nbatches):
            speed(BatchEndParam(epoch, nbatch, acc, None))
            clock.now += 2.0
    assert _messages(caplog) == [
        'Epoch[0] Batch [0-1]\tSpeed: 2.00 samples/sec\taccuracy=0.500000',
        'Epoch[0] Batch [0-2]\tSpeed: 2.00 samples/sec\taccuracy=0.500000',
        # batch 0 of epoch 1 only restarts the clock
        'Epoch[1] Batch [0-1]\tSpeed: 2.00 samples/sec\taccuracy=0.500000']
    assert acc.get()[1] == 0.5


def test_speedometer_without_metric_and_zero_time(clock, caplog):
    caplog.set_level(logging.INFO)
    speed = mx.callback.Speedometer(batch_size=4, frequent=1)
    speed(BatchEndParam(2, 0, None, None))
    speed(BatchEndParam(2, 1, None, None))           # no time has passed
    assert _messages(caplog) == ['Iter[2] Batch [1]\tSpeed: inf samples/sec']


def test_log_train_metric(caplog):
    caplog.set_level(logging.INFO)
    acc = _metric_with(1, 4)
    log = mx.callback.log_train_metric(period=2, auto_reset=True)
    for nbatch in range(3):
        log(BatchEndParam(1, nbatch, acc, None))
    assert _messages(caplog) == ['Iter[1] Batch[0] Train-accuracy=0.250000',
                                 'Iter[1] Batch[2] Train-accuracy=nan']


def test_progress_bar(caplog):
    caplog.set_level(logging.INFO)
    bar = mx.callback.ProgressBar(total=4, length=8)
    bar(BatchEndParam(0, 1, None, None))
    bar(BatchEndParam(0, 3, None, None))
    assert _messages(caplog) == ['[==------] 25%\r', '[======--] 75%\r']
    with pytest.raises(ValueError, match='total'):
        mx.callback.ProgressBar(total=0)


def test_log_validation_metrics(caplog):
    caplog.set_level(logging.INFO)
    metric = mx.metric.create(['acc', 'loss'])
    metric.update([np.zeros(2)], [np.zeros(2)])
    mx.callback.LogValidationMetricsCallback()(BatchEndParam(3, 0, metric, None))
    assert _messages(caplog) == ['Epoch[3] Validation-accuracy=1.000000',
                                 'Epoch[3] Validation-loss=0.000000']


def test_do_checkpoint_calls_model_save_checkpoint(monkeypatch):
    saved = []
    fake = types.ModuleType('d2lmini.model')
    fake.save_checkpoint = lambda *args: saved.append(args)
    monkeypatch.setitem(sys.modules, 'd2lmini.model', fake)
    save = mx.callback.do_checkpoint('run/lenet', period=2)
    for epoch in range(5):
        save(epoch, 'sym', {'w': epoch}, {})
    assert saved == [('run/lenet', 2, 'sym', {'w': 1}, {}),
                     ('run/lenet', 4, 'sym', {'w': 3}, {})]
    saved.clear()
    every = mx.callback.do_checkpoint('p', period=0)     # at least every epoch
    every(0, 's', {}, {})
    assert saved == [('p', 1, 's', {}, {})]


def test_module_checkpoint():
    class Mod:
        def __init__(self):
            self.calls = []

        def save_checkpoint(self, prefix, epoch, save_optimizer_states):
            self.calls.append((prefix, epoch, save_optimizer_states))
    mod = Mod()
    save = mx.callback.module_checkpoint(mod, 'ckpt', period=3,
                                         save_optimizer_states=True)
    for epoch in range(7):
        save(epoch)
    assert mod.calls == [('ckpt', 3, True), ('ckpt', 6, True)]
