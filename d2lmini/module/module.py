"""``mx.mod.Module``: a Symbol trained on one device or several.

Why one long file: ``Module`` is one class, MXNet's, and its methods
(bind, init_params, init_optimizer, forward/backward/update, fit, predict,
score, checkpoints) are an API read one method at a time; the per-device
executors are in ``executor_group.py``.

The symbolic counterpart of ``net`` + ``Trainer``::

    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=10, name='fc')
    net = mx.sym.SoftmaxOutput(net, name='softmax')
    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
    mod.fit(train_iter, num_epoch=5, optimizer_params={'learning_rate': 0.1})

``bind`` turns the symbol into executors (one per device; each gets its
slice of every batch), ``init_params`` fills a CPU copy of the parameters
and copies it to the devices, ``init_optimizer`` chooses how updates
happen:

* one device: an updater applies the optimizer to each device's weights
  with their gradients (``rescale_grad = 1/batch_size``, as MXNet);
* several devices (or a ``dist_*`` store): the gradients of the devices
  are pushed to a KVStore that sums them, updates its copy of the weights
  and hands the new weights back to every device (``pushpull``).  With
  ``MXNET_UPDATE_ON_KVSTORE=0`` (or a weight above 16M elements) the store
  only sums and each device runs its own updater on the sum.
"""
import logging
import os
import warnings

import numpy as np

from .. import context as ctx
from .. import kvstore as kvs
from .. import optimizer as opt
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..kvstore import states as _opt_states
from ..model import load_checkpoint
from ..ndarray import zeros
from .base_module import BaseModule, _check_input_names, _parse_data_desc
from .executor_group import DataParallelExecutorGroup

__all__ = ['Module']


# == how gradients become updates (MXNet keeps these in model.py) =================
def _update_on_kvstore_default():
    """``MXNET_UPDATE_ON_KVSTORE`` (default 1): whether a store that can run
    the optimizer does so."""
    return bool(int(os.environ.get('MXNET_UPDATE_ON_KVSTORE', '1')))


def _create_kvstore(kvstore, num_device, arg_params):
    """``(store or None, update_on_kvstore)`` for ``kvstore`` (a name, a
    store or None).  One device in one process needs no store."""
    update_on_kvstore = _update_on_kvstore_default()
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and 'dist' not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == 'local' and arg_params:
                # a huge weight is better updated where it lives
                biggest = max(int(np.prod(p.shape)) for p in arg_params.values())
                if biggest > 16 * 1024 * 1024:
                    update_on_kvstore = False
    else:
        raise TypeError(f'kvstore must be a KVStore, its name or None, got '
                        f'{type(kvstore).__name__}')
    if kv is None:
        return None, False
    return kv, update_on_kvstore and kv.is_capable(kvs.KVStoreBase.OPTIMIZER)


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Give the store every weight; when it updates them, also copy its
    value to every device."""
    for name, on_devices in zip(param_names, param_arrays):
        if update_on_kvstore:
            kvstore.broadcast(name, arg_params[name], out=on_devices)
        else:
            kvstore.init(name, arg_params[name])


def _with_grads(param_arrays, grad_arrays, param_names):
    """The ``(index, name, weights, grads)`` of parameters that have gradients."""
    return [(i, name, ws, gs) for i, (name, ws, gs)
            in enumerate(zip(param_names, param_arrays, grad_arrays)) if gs[0] is not None]


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push every gradient, let the store update, pull the weights back:
    one ``pushpull`` for all parameters."""
    live = _with_grads(param_arrays, grad_arrays, param_names)
    if live:
        _, names, ws, gs = zip(*live)
        kvstore.pushpull(list(names), list(gs), out=list(ws))


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None,
                   param_names=None):
    """Sum the gradients through ``kvstore`` (if any), then update each
    device's weights with the updater: one call per device.  Parameter ``i``
    on device ``k`` is index ``i * num_device + k``, so that each copy has
    its own optimizer state."""
    live = _with_grads(param_arrays, grad_arrays, param_names)
    if not live:
        return
    if kvstore:
        _, names, _, gs = zip(*live)
        kvstore.pushpull(list(names), list(gs))
    for k in range(num_device):
        updater([i * num_device + k for i, _, _, _ in live],
                [gs[k] for _, _, _, gs in live],
                [ws[k] for _, _, ws, _ in live])


def _param_attrs(symbol):
    """``{name: {attr: value}}`` of the symbol's variables (init, lr_mult...)."""
    attr_dict = getattr(symbol, 'attr_dict', None)
    return attr_dict() if callable(attr_dict) else {}


class Module(BaseModule):
    """A module computing ``symbol``; see the module's docstring.

    Parameters
    ----------
    symbol : Symbol
    data_names, label_names : names of the symbol's arguments fed by the
        data iterator's ``provide_data`` / ``provide_label``; the other
        arguments are parameters.
    context : Context or list of Context; a batch is split over a list.
    work_load_list : relative share of each context (default equal).
    fixed_param_names : parameters that are not trained.
    state_names : arguments set by ``set_states`` (e.g. an RNN's state).
    """

    def __init__(self, symbol, data_names=('data',), label_names=('softmax_label',),
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if isinstance(context, ctx.Context):
            context = [context]
        self._context = list(context)
        if not self._context or not all(isinstance(c, ctx.Context) for c in self._context):
            raise TypeError(f'Module: context must be a Context or a non-empty list of '
                            f'them, got {context!r}')
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ValueError(f'Module: work_load_list has {len(work_load_list)} entries '
                             f'for {len(self._context)} contexts')
        if group2ctxs is not None:
            raise NotImplementedError('Module: group2ctxs (placing parts of a graph on '
                                      'other devices) is not supported by d2lmini')
        self._work_load_list = list(work_load_list)
        self._group2ctxs = group2ctxs
        self._symbol = symbol

        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, 'data', True)
        _check_input_names(symbol, label_names, 'label', False)
        _check_input_names(symbol, state_names, 'state', True)
        _check_input_names(symbol, fixed_param_names, 'fixed_param', True)

        inputs = data_names + label_names + state_names
        self._param_names = [a for a in symbol.list_arguments() if a not in inputs]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()

        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # == checkpoints ==================================================================
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from ``prefix-symbol.json`` and ``prefix-%04d.params``
        (``kwargs`` go to the constructor); bind it, then train or predict.
        With ``load_optimizer_states`` the states in ``prefix-%04d.states``
        are read at ``init_optimizer``."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = '%s-%04d.states' % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` and, with
        ``save_optimizer_states``, ``prefix-%04d.states``."""
        del remove_amp_cast
        self._symbol.save('%s-symbol.json' % prefix)
        fname = '%s-%04d.params' % (prefix, epoch)
        self.save_params(fname)
        logging.info('Saved checkpoint to "%s"', fname)
        if save_optimizer_states:
            state_name = '%s-%04d.states' % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # == what the module says about itself ==============================================
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        self._need('data_shapes', params=False)
        return self._data_shapes

    @property
    def label_shapes(self):
        self._need('label_shapes', params=False)
        return self._label_shapes

    @property
    def output_shapes(self):
        self._need('output_shapes', params=False)
        return self._exec_group.get_output_shapes()

    # == parameters ===================================================================
    def get_params(self):
        """``(arg_params, aux_params)`` on the CPU; with several devices each
        value is the devices' mean."""
        self._need('get_params', bound=False)
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Fill the parameters: from ``arg_params``/``aux_params`` where they
        name them, else with ``initializer`` (a variable's own ``init=``
        attribute wins); then copy them to every device.

        Everything is checked before anything changes: a parameter missing
        from a given dictionary (unless ``allow_missing``), a name that is
        not the symbol's (unless ``allow_extra``), a wrong shape.
        """
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. '
                          'init_params call ignored.', stacklevel=2)
            return
        self._need('init_params', params=False)

        targets = ((self._arg_params, arg_params, 'arg_params'),
                   (self._aux_params, aux_params, 'aux_params'))
        for mine, given, what in targets:
            if given is None:
                continue
            for name, arr in mine.items():
                if name not in given:
                    if not allow_missing:
                        raise RuntimeError(
                            f'init_params: {name!r} is not in {what} (pass '
                            f'allow_missing=True to initialize it with the initializer)')
                elif tuple(given[name].shape) != tuple(arr.shape):
                    raise ValueError(f'init_params: {what}[{name!r}] has shape '
                                     f'{tuple(given[name].shape)}, the symbol needs '
                                     f'{tuple(arr.shape)}')
            if not allow_extra:
                known = set(self._symbol.list_arguments()) if what == 'arg_params' \
                    else set(self._aux_names)
                extra = sorted(set(given) - known)
                if extra:
                    raise ValueError(f'init_params: {what} holds {extra}, which the symbol '
                                     f'does not have (pass allow_extra=True to ignore them)')

        attrs = _param_attrs(self._symbol)
        for mine, given, _ in targets:
            for name in sorted(mine):
                arr = mine[name]
                if given is not None and name in given:
                    if given[name] is not arr:
                        arr[:] = given[name]
                elif initializer is not None:
                    initializer(InitDesc(name, attrs.get(name)), arr)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params,
                                    allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Copy ``arg_params``/``aux_params`` to the devices.  With
        ``allow_missing`` the values not given stay as they are."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. '
                          'set_params call ignored.', stacklevel=2)
            return
        self._need('set_params', params=False)
        if not allow_extra:
            for given, known, what in ((arg_params, self._symbol.list_arguments(),
                                        'arg_params'),
                                       (aux_params, self._aux_names, 'aux_params')):
                extra = sorted(set(given or {}) - set(known))
                if extra:
                    raise ValueError(f'set_params: {what} holds {extra}, which the symbol '
                                     f'does not have (pass allow_extra=True to ignore '
                                     f'them)')
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True        # the CPU copy is behind the devices now
        self.params_initialized = True

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # == binding ======================================================================
    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req='write'):
        """Allocate the executors for inputs of these shapes.

        ``data_shapes``/``label_shapes``: ``[(name, shape)]`` or DataDesc,
        e.g. ``train_iter.provide_data``.  ``for_training=False`` binds
        without gradients (prediction); ``inputs_need_grad`` also computes
        the gradients of the data (``get_input_grads``).
        """
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if shared_module is not None:
            raise NotImplementedError('bind: shared_module (bucketing) is not supported '
                                      'by d2lmini')
        if not for_training and inputs_need_grad:
            raise ValueError('bind: inputs_need_grad=True needs for_training=True')
        data_shapes, label_shapes = _parse_data_desc(self.data_names, self.label_names,
                                                     data_shapes, label_shapes)
        group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, data_shapes, label_shapes,
            self._param_names, for_training, inputs_need_grad, logger=self.logger,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req,
            state_names=self._state_names)
        # bound: now the module changes
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = data_shapes, label_shapes
        self._exec_group = group
        self._total_exec_bytes = group._total_exec_bytes
        if self.params_initialized:
            # re-bound (or loaded): the devices get the values we hold
            self._complete_loaded_params(group)
            group.set_params(self._arg_params, self._aux_params)
        else:
            self._arg_params = {name: zeros(ws[0].shape, dtype=ws[0].dtype)
                                for name, ws in zip(self._param_names, group.param_arrays)}
            self._aux_params = {name: zeros(a[0].shape, dtype=a[0].dtype)
                                for name, a in zip(self._aux_names, group.aux_arrays)}
        self.binded = True

    def _complete_loaded_params(self, group):
        """Parameters a loaded checkpoint lacks stay zero, as in MXNet; say so."""
        missing = []
        for names, blocks, held in ((self._param_names, group.param_arrays, self._arg_params),
                                    (self._aux_names, group.aux_arrays, self._aux_params)):
            for name, arrs in zip(names, blocks):
                if name not in held:
                    held[name] = zeros(arrs[0].shape, dtype=arrs[0].dtype)
                    missing.append(name)
        if missing:
            warnings.warn(f'bind: the parameters {missing} were not loaded and are zero; '
                          f'init_params(force_init=True, allow_missing=True, '
                          f'arg_params=...) initializes them', stacklevel=3)

    def reshape(self, data_shapes, label_shapes=None):
        """Re-bind for inputs of new shapes (a new batch size...), keeping
        the parameters."""
        self._need('reshape', params=False)
        data_shapes, label_shapes = _parse_data_desc(self.data_names, self.label_names,
                                                     data_shapes, label_shapes)
        self._exec_group.reshape(data_shapes, label_shapes)
        self._data_shapes, self._label_shapes = data_shapes, label_shapes

    # == the optimizer ================================================================
    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install ``optimizer`` (a name with ``optimizer_params``, or an
        Optimizer); ``rescale_grad`` defaults to ``1/batch_size``."""
        self._need('init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring...')
            return
        if self._params_dirty:
            self._sync_params_from_devices()

        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context),
                                                     self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and 'dist' in kvstore.type and '_sync' in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size

        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            n = len(self._context)
            idx2name = {i * n + k: name for k in range(n) for i, name in enumerate(names)}
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault('rescale_grad', rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name,
                                   **optimizer_params)
            self._apply_symbol_mults(optimizer)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise TypeError(f'init_optimizer: optimizer must be a name or an '
                                f'Optimizer, got {type(optimizer).__name__}')
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(
                    f'Optimizer created manually outside Module but rescale_grad is not '
                    f'normalized to 1.0/batch_size/num_workers ({optimizer.rescale_grad} '
                    f'vs. {rescale_grad}). Is this intended?', stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()

        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            # the keys first (MXNet sets the optimizer first): a dist store
            # tells its servers the key type (names) with the optimizer
            _initialize_kvstore(kvstore, self._exec_group.param_arrays, self._arg_params,
                                self._param_names, update_on_kvstore)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True

        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _apply_symbol_mults(self, optimizer):
        """The variables' ``lr_mult``/``wd_mult`` attributes, as MXNet's
        optimizer reads them from ``sym``."""
        lr, wd = {}, {}
        attrs = _param_attrs(self._symbol)
        for name in self._symbol.list_arguments():
            attr = attrs.get(name, {})
            if '__lr_mult__' in attr:
                lr[name] = float(attr['__lr_mult__'])
            if '__wd_mult__' in attr:
                wd[name] = float(attr['__wd_mult__'])
        if lr:
            optimizer.set_lr_mult(lr)
        if wd:
            optimizer.set_wd_mult(wd)

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s optimizer, store and updater."""
        if not shared_module.optimizer_initialized:
            raise RuntimeError('borrow_optimizer: the shared module has no optimizer yet')
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        """Write the optimizer's states (no pickle: ``nd.save`` + JSON)."""
        if not self.optimizer_initialized:
            raise RuntimeError('save_optimizer_states: call init_optimizer() first')
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            _opt_states.save(fname, self._updater, dump_optimizer=False)

    def load_optimizer_states(self, fname):
        """Read what :meth:`save_optimizer_states` wrote."""
        if not self.optimizer_initialized:
            raise RuntimeError('load_optimizer_states: call init_optimizer() first')
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            return
        n = len(self._context)
        names = self._exec_group.param_names

        def device_of(key):           # local updaters: key i * n + k is on device k
            return self._context[key % n] if isinstance(key, int) else self._context[0]

        def shape_of(key):
            name = names[key // n] if isinstance(key, int) and key // n < len(names) \
                else key
            arr = self._arg_params.get(name) if isinstance(name, str) else None
            return None if arr is None else arr.shape
        _opt_states.load(fname, [(self._updater, device_of)], shape_of=shape_of,
                         contexts=self._context)

    # == the steps ====================================================================
    def forward(self, data_batch, is_train=None):
        """Run the batch forward (``is_train`` defaults to ``for_training``).
        A batch of other shapes (a smaller last batch, another image size)
        re-binds the executors for them first."""
        self._need('forward')
        current = tuple(d.shape for d in self._data_shapes)
        if isinstance(data_batch, list):       # one batch per device, equal shapes
            first = data_batch[0].data
            new = tuple((len(data_batch) * d.shape[0],) + d.shape[1:] for d in first)
        else:
            new = tuple(d.shape for d in data_batch.data)
        if new != current:
            provided = getattr(data_batch, 'provide_data', None)
            new_dshape = provided or [DataDesc(d.name, s, d.dtype, d.layout)
                                      for d, s in zip(self._data_shapes, new)]
            labels = getattr(data_batch, 'label', None)
            if getattr(data_batch, 'provide_label', None):
                new_lshape = data_batch.provide_label
            elif labels and self._label_shapes:
                new_lshape = [DataDesc(d.name, lab.shape, d.dtype, d.layout)
                              for d, lab in zip(self._label_shapes, labels)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)
        if self._aux_names and (self.for_training if is_train is None else is_train):
            self._params_dirty = True     # training moved the auxiliary states

    def backward(self, out_grads=None):
        """Gradients of the last forward; ``out_grads`` are the gradients of
        the outputs (not needed when the outputs are loss heads)."""
        self._need('backward')
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Apply the optimizer to the gradients of the last backward."""
        self._need('update')
        if not self.optimizer_initialized:
            raise RuntimeError('update: call init_optimizer() first (or fit())')
        if not self.for_training:
            raise RuntimeError('update: the module is bound with for_training=False; '
                               'bind(..., for_training=True, force_rebind=True) to train')
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                      group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                           num_device=len(self._context), kvstore=self._kvstore,
                           param_names=group.param_names)

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward: one array per output (the devices'
        parts concatenated), or per output a list per device."""
        self._need('get_outputs')
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._need('get_input_grads')
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        self._need('get_states')
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._need('set_states')
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` with the last outputs and ``labels``."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        BaseModule.install_monitor(self, mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        self._need('prepare', params=False)
        BaseModule.prepare(self, data_batch, sparse_row_id_fn)
