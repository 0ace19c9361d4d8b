"""Callbacks for ``Module.fit``: ``mx.callback`` as in MXNet 1.x.

``fit`` calls a *batch-end* callback after every batch with a
``BatchEndParam(epoch, nbatch, eval_metric, locals)`` and an *epoch-end*
callback after every epoch with ``(epoch, symbol, arg_params, aux_params)``.
Messages go to the ``logging`` module (``logging.basicConfig(level=
logging.INFO)`` shows them), as in MXNet.

>>> mod.fit(train_iter, num_epoch=2,
...         batch_end_callback=mx.callback.Speedometer(64, frequent=100),
...         epoch_end_callback=mx.callback.do_checkpoint('lenet'))
"""
import logging
import math
import time

__all__ = ['module_checkpoint', 'do_checkpoint', 'log_train_metric',
           'Speedometer', 'ProgressBar', 'LogValidationMetricsCallback']


def _period(period):
    return int(max(1, period))


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """Epoch-end callback: ``mod.save_checkpoint(prefix, epoch + 1, ...)``
    every ``period`` epochs (files ``prefix-symbol.json`` and
    ``prefix-%04d.params``)."""
    period = _period(period)

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """Epoch-end callback: ``mx.model.save_checkpoint(prefix, epoch + 1,
    symbol, arg_params, aux_params)`` every ``period`` epochs."""
    period = _period(period)

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            from .model import save_checkpoint     # mx.model needs mx.sym
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """Batch-end callback: log the training metric every ``period`` batches
    (and reset its local figures if ``auto_reset``)."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info('Iter[%d] Batch[%d] Train-%s=%f',
                             param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Batch-end callback: every ``frequent`` batches, log samples per
    second over those batches and the training metric.

    With ``auto_reset`` (default) the metric's local figures are reset after
    each log, so each line reports its own ``frequent`` batches
    (``Batch [50-100]``); otherwise the figures run from the epoch's start
    (``Batch [0-100]``).  The first call of an epoch starts the clock.
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0
        self.last_count = 0

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:          # a new epoch: restart the clock
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 \
            else float('inf')
        metric = param.eval_metric
        if metric is None:
            logging.info('Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec',
                         param.epoch, count, speed)
        else:
            name_value = metric.get_name_value()
            if self.auto_reset:
                metric.reset_local()
                first = count - self.frequent
            else:
                first = 0
            msg = 'Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec' + \
                '\t%s=%f' * len(name_value)
            logging.info(msg, param.epoch, first, count, speed,
                         *sum(name_value, ()))
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback: log a bar of ``length`` characters showing the
    share of the ``total`` batches of the epoch done so far."""

    def __init__(self, total, length=80):
        if total <= 0:
            raise ValueError(f'ProgressBar: total must be a positive number '
                             f'of batches, got {total!r}')
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percent = math.ceil(100.0 * count / float(self.total))
        bar = '=' * filled + '-' * (self.bar_len - filled)
        logging.info('[%s] %s%s\r', bar, percent, '%')


class LogValidationMetricsCallback:
    """Eval-end callback: log every validation metric of the epoch."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info('Epoch[%d] Validation-%s=%f', param.epoch, name, value)
