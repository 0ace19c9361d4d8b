"""``BaseModule``: the training loop written once, over a few abstract steps.

A module is a computation that can be bound to shapes, given parameters
and an optimizer, and then stepped: ``forward``, ``backward``, ``update``,
``update_metric``.  Everything a user calls most is written here on top of
those steps, for any module:

* ``fit``: bind, initialize, install the optimizer, and loop over epochs
  and batches, logging ``Epoch[0] Train-accuracy=0.93`` per epoch;
* ``score``: a metric over a data set;
* ``predict`` / ``iter_predict``: the outputs over a data set (the padding
  of the last batch removed).

:class:`~d2lmini.module.Module` fills in the steps with a Symbol bound on
one device or several.
"""
import logging
import time
import warnings

import numpy as np

from .. import metric
from .. import ndarray as nd
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam, load_params_file, save_params_file

__all__ = ['BaseModule']


def _as_list(obj):
    return obj if isinstance(obj, (list, tuple)) else [obj]


def _call_all(callbacks, *args):
    if callbacks is not None:
        for cb in _as_list(callbacks):
            cb(*args)


def _check_input_names(symbol, names, typename, throw):
    """Every name in ``names`` must be an argument of ``symbol``: an error
    (or a warning) that lists the arguments that could be inputs."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(('_weight', '_bias', '_gamma',
                                                         '_beta'))]
        msg = (f'Module(..., {typename}_names={list(names)}): {name!r} is not an '
               f'argument of the symbol (symbol.list_arguments()); the arguments '
               f'that can be inputs are {candidates}')
        if throw:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)


def _desc(x, what):
    """A DataDesc from ``(name, shape)`` or a DataDesc; the shape checked."""
    if not isinstance(x, DataDesc):
        if not isinstance(x, (list, tuple)) or len(x) < 2 or not isinstance(x[0], str):
            raise TypeError(f'{what}: each entry must be a DataDesc or a (name, shape) '
                            f'pair, got {x!r}')
        x = DataDesc(*x)
    shape = x.shape
    if not isinstance(shape, (tuple, list)) or \
            not all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape):
        raise TypeError(f'{what}: the shape of {x.name!r} must be a tuple of '
                        f'non-negative ints, got {shape!r}')
    return x


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """Check the shapes given to ``bind`` against the module's input names."""
    if data_shapes is None or isinstance(data_shapes, (str, DataDesc)) or \
            not isinstance(data_shapes, (list, tuple)):
        raise TypeError(f'bind: data_shapes must be a list of (name, shape) pairs or '
                        f'DataDesc, e.g. train_iter.provide_data; got {data_shapes!r}')
    data_shapes = [_desc(x, 'bind(data_shapes)') for x in data_shapes]
    given = [x.name for x in data_shapes]
    if sorted(given) != sorted(data_names):
        raise ValueError(f'bind: data_shapes name the inputs {given}, the module was '
                         f'created with data_names={list(data_names)}')
    if label_shapes is not None:
        # (bound without labels, as for prediction, the labels are not needed)
        label_shapes = [_desc(x, 'bind(label_shapes)') for x in label_shapes]
        given = [x.name for x in label_shapes]
        if sorted(given) != sorted(label_names):
            warnings.warn(f'bind: label_shapes name {given}, the module was created '
                          f'with label_names={list(label_names)}', stacklevel=3)
    return data_shapes, label_shapes


class BaseModule:
    """A computation with parameters, trained by the loop of :meth:`fit`.

    States: *bound* (``binded``: shapes known, memory allocated),
    *parameters initialized* (``params_initialized``), *optimizer installed*
    (``optimizer_initialized``).  Subclasses implement ``bind``,
    ``init_params``, ``init_optimizer``, ``forward``, ``backward``,
    ``update``, ``update_metric``, ``get_outputs``, ``get_params`` and the
    shape properties; ``fit``, ``score`` and ``predict`` then work.
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # == the high-level API ==========================================================
    def forward_backward(self, data_batch):
        """``forward(data_batch, is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _need(self, what, bound=True, params=True):
        if bound and not self.binded:
            raise RuntimeError(f'{what}: call bind() first (or fit())')
        if params and not self.params_initialized:
            raise RuntimeError(f'{what}: call init_params() first (or fit())')

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run ``eval_data`` forward and return ``eval_metric``'s
        ``[(name, value)]``.

        >>> mod.score(val_iter, 'acc')            # doctest: +SKIP
        [('accuracy', 0.97)]
        """
        self._need('score')
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        done = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            if isinstance(batch, list):
                self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, batch.label)
            if batch_end_callback is not None:
                _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric,
                                                            locals()))
            done += 1
        if score_end_callback:
            _call_all(score_end_callback, BatchEndParam(epoch, done, eval_metric, locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, nbatch, batch)`` per batch, the padding removed."""
        self._need('iter_predict')
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            yield [out[0:out.shape[0] - pad] for out in self.get_outputs()], nbatch, batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs over ``eval_data`` (a DataIter, or one NDArray/NumPy batch).

        With ``merge_batches`` the batches are concatenated: ``[out1, out2]``,
        or just ``out1`` for a single output unless ``always_output_list``;
        otherwise a list per batch.  The last batch's padding is removed.
        """
        self._need('predict')
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError(f'predict: eval_data must be a DataIter, an NDArray or a '
                             f'NumPy array, got {type(eval_data).__name__}')
        if reset:
            eval_data.reset()
        per_batch = []
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            per_batch.append([out[0:out.shape[0] - pad].copy()
                              for out in self.get_outputs()])
        if not per_batch or not merge_batches:
            return per_batch
        num_outputs = len(per_batch[0])
        if any(len(outs) != num_outputs for outs in per_batch):
            raise ValueError('predict: the batches have different numbers of outputs; '
                             'use merge_batches=False')
        merged = [nd.concatenate([outs[i] for outs in per_batch]) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric='acc',
            epoch_end_callback=None, batch_end_callback=None, kvstore='local',
            optimizer='sgd', optimizer_params=(('learning_rate', 0.01),),
            eval_end_callback=None, eval_batch_end_callback=None,
            initializer=Uniform(0.01), arg_params=None, aux_params=None,
            allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0,
            num_epoch=None, validation_metric=None, monitor=None, sparse_row_id_fn=None):
        """Train on ``train_data`` for epochs ``begin_epoch .. num_epoch - 1``.

        Each epoch: for every batch ``forward_backward``, ``update`` and
        ``update_metric``, then ``batch_end_callback(BatchEndParam)``; at the
        end of the epoch the training metric is logged, the parameters are
        handed to ``epoch_end_callback(epoch, symbol, arg_params,
        aux_params)``, and ``eval_data`` (if any) is scored with
        ``validation_metric`` (default: ``eval_metric``)::

            mod.fit(train_iter, eval_data=val_iter, optimizer='sgd',
                    optimizer_params={'learning_rate': 0.1}, num_epoch=5,
                    batch_end_callback=mx.callback.Speedometer(64, 100))
        """
        if num_epoch is None:
            raise ValueError('fit: please specify num_epoch, the number of epochs to train')
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params,
                         aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            batches = iter(train_data)
            # one batch is fetched ahead, so that a batch's data can be
            # prepared while the last is still computed; only one batch is
            # held at a time besides (iterators may reuse their buffers)
            nbatch, end_of_batch = 0, False
            next_batch = next(batches)
            while not end_of_batch:
                batch = next_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(batch)
                self.update()
                if isinstance(batch, list):
                    self.update_metric(eval_metric, [b.label for b in batch],
                                       pre_sliced=True)
                else:
                    self.update_metric(eval_metric, batch.label)
                try:
                    next_batch = next(batches)
                    self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    name_values = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    _call_all(batch_end_callback,
                              BatchEndParam(epoch, nbatch, eval_metric, locals()))
                nbatch += 1

            for name, value in name_values:
                self.logger.info('Epoch[%d] Train-%s=%f', epoch, name, value)
            self.logger.info('Epoch[%d] Time cost=%.3f', epoch, time.time() - tic)

            # the devices' copies agree again (auxiliary states such as
            # BatchNorm's moving mean differ per device)
            arg_params_now, aux_params_now = self.get_params()
            self.set_params(arg_params_now, aux_params_now)
            _call_all(epoch_end_callback, epoch, self.symbol, arg_params_now, aux_params_now)

            if eval_data is not None:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, value in res:
                    self.logger.info('Epoch[%d] Validation-%s=%f', epoch, name, value)
            train_data.reset()

    # == what a module says about itself ================================================
    @property
    def data_names(self):
        """The names of the data inputs."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """The names of the outputs."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """``[DataDesc]`` of the data inputs (after ``bind``)."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """``[DataDesc]`` of the labels (None when bound without labels)."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """``[(name, shape)]`` of the outputs (after ``bind``)."""
        raise NotImplementedError()

    @property
    def symbol(self):
        """The symbol this module computes."""
        return self._symbol

    # == parameters ===================================================================
    def get_params(self):
        """``(arg_params, aux_params)``: dictionaries of CPU copies."""
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Set the parameters from dictionaries of arrays (all of them unless
        ``allow_missing``)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def save_params(self, fname):
        """Write the parameters to ``fname`` (``arg:``/``aux:`` keys)."""
        arg_params, aux_params = self.get_params()
        save_params_file(fname, arg_params, aux_params)

    def load_params(self, fname):
        """Read parameters written by :meth:`save_params` and set them."""
        arg_params, aux_params = load_params_file(fname)
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        """The state inputs (none for a module without ``state_names``)."""
        self._need('get_states')
        assert not merge_multi_context
        return []

    def set_states(self, states=None, value=None):
        self._need('set_states')
        assert not states and not value

    def install_monitor(self, mon):
        raise NotImplementedError(
            'install_monitor: d2lmini has no mx.monitor (executor monitoring); '
            'print get_outputs() or the executors\' arrays instead')

    # == the steps ====================================================================
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for ``data_batch`` (nothing to do for a plain module)."""
        if sparse_row_id_fn is not None:
            warnings.warn('sparse_row_id_fn is ignored: d2lmini has no row_sparse '
                          'parameters', stacklevel=2)

    def forward(self, data_batch, is_train=None):
        raise NotImplementedError()

    def backward(self, out_grads=None):
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        raise NotImplementedError()

    def update(self):
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req='write'):
        raise NotImplementedError()

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        raise NotImplementedError()
