"""Automatic mixed precision for training (MXNet's ``contrib/amp/amp.py``).

float16 halves the memory of every array and, on GPUs with tensor cores,
multiplies matrices several times faster than float32; but its range is
small (largest 65504, smallest positive 6e-8).  AMP runs each operator in
the precision that suits it and keeps the weights in float32::

    amp.init()                        # before the network is built
    net = ...; net.initialize(); net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {...},
                            update_on_kvstore=False)
    amp.init_trainer(trainer)
    for X, y in train_iter:
        with autograd.record():
            l = loss(net(X), y)
            with amp.scale_loss(l, trainer) as scaled_loss:
                autograd.backward(scaled_loss)
        trainer.step(X.shape[0])      # skipped if a gradient overflowed

``init`` changes the operators (:mod:`.wrap`); ``scale_loss`` multiplies the
loss by the loss scale and has the Trainer divide it out of the gradients
again; the Trainer asks the :class:`~.loss_scaler.LossScaler` before each
update whether a gradient overflowed.  For inference, ``convert_hybrid_block``
and ``convert_model`` rewrite a trained network instead (:mod:`.convert`).
"""
import contextlib
import logging

from ...gluon.trainer import Trainer
from ...optimizer import Optimizer
from .convert import AMPError, op_lists, target_dtype_of
from .lists import symbol_fp16
from .loss_scaler import LossScaler
from . import wrap

__all__ = ['init', 'init_trainer', 'scale_loss', 'unscale', 'list_lp16_ops',
           'list_fp32_ops', 'list_lp16_fp32_ops', 'list_conditional_fp32_ops',
           'list_widest_type_cast', 'list_loss_output_functions',
           'list_lp16_use_fp32_params']

# What amp.init did: its arguments, the loss scaler its loss heads read,
# and whether a Trainer has taken that scaler yet (MXNet's globals).
_state = {'init': None, 'loss_scaler': None, 'scaler_taken': False}


def init(target_dtype='float16', target_precision_ops=None,
         conditional_fp32_ops=None, fp32_ops=None):
    """Turn AMP on: from now on the listed operators cast their inputs (call
    it before the network is built or hybridized).

    Parameters
    ----------
    target_dtype : 'float16'
        The low precision type (MXNet also has 'bfloat16'; d2lmini has not).
    target_precision_ops, fp32_ops : list of str, optional
        Replace the lists of operators run in float16 / in float32.
    conditional_fp32_ops : list of (str, str, list of str), optional
        Replace the list of (operator, attribute, values) run in float32
        when the attribute has one of the values.

    A second call with the same arguments does nothing (as in MXNet); with
    others it is an error: the operators can be changed once.
    """
    args = (target_dtype_of(target_dtype).name, target_precision_ops,
            conditional_fp32_ops, fp32_ops)
    if _state['init'] is not None:
        if _state['init'] != args:
            raise AMPError(f'amp.init() was already called with {_state["init"]}; '
                           f'AMP cannot be initialized again with other arguments')
        return
    lp16, fp32, cond = op_lists(target_precision_ops, fp32_ops, conditional_fp32_ops)
    logging.info('Using AMP')
    scaler = LossScaler()
    wrap.wrap_all(target_dtype_of(target_dtype), lp16, fp32, cond,
                  symbol_fp16.WIDEST_TYPE_CASTS, symbol_fp16.LOSS_OUTPUT_FUNCTIONS,
                  scaler)
    _state.update(init=args, loss_scaler=scaler, scaler_taken=False)


def _reset():
    """Undo :func:`init` (MXNet has no way back; the tests need one)."""
    wrap.unwrap_all()
    _state.update(init=None, loss_scaler=None, scaler_taken=False)


def _trainer(obj, what):
    if isinstance(obj, Trainer):
        return obj
    if isinstance(obj, Optimizer):
        raise TypeError('AMP is currently only compatible with Gluon Trainer')
    raise TypeError(f'{what}: optimizer_or_trainer should be a Gluon Trainer or an '
                    f'optimizer, instead is {type(obj).__name__}')


def init_trainer(optimizer_or_trainer):
    """Give a Trainer a loss scaler: from now on its steps skip updates
    whose gradients overflowed (see :func:`scale_loss`).

    The check must come before the update, so the Trainer updates on the
    devices (``update_on_kvstore=False``): left unset, it is set so; asked
    for True, it is an error.
    """
    if _state['init'] is None:
        raise AMPError('AMP not initialized, did you forget to call amp.init()?')
    trainer = _trainer(optimizer_or_trainer, 'amp.init_trainer')
    on_store = trainer._kvstore_params['update_on_kvstore']
    if on_store or (trainer._kv_initialized and trainer._update_on_kvstore):
        raise AMPError('amp.init_trainer: this Trainer updates the weights in its '
                       'kvstore (update_on_kvstore=True), before AMP can see an '
                       'overflowed gradient and skip the step; create it with '
                       'update_on_kvstore=False')
    trainer._kvstore_params['update_on_kvstore'] = False
    if _state['scaler_taken']:
        scaler = LossScaler()
    else:                          # the first one is what the loss heads read
        scaler, _state['scaler_taken'] = _state['loss_scaler'], True
    trainer._amp_loss_scaler = scaler
    trainer._amp_original_scale = trainer._scale


def _scaler(trainer, what):
    scaler = getattr(trainer, '_amp_loss_scaler', None)
    if scaler is None:
        raise AMPError(f'{what}: Loss scaler is not initialized, did you forget to '
                       f'call amp.init_trainer()?')
    return scaler


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """``with amp.scale_loss(loss, trainer) as scaled_loss:`` gives the loss
    (or a list of losses) times the loss scale, for ``backward()``; the
    Trainer's next step divides the gradients by the same scale."""
    trainer = _trainer(optimizer_or_trainer, 'amp.scale_loss')
    scale = _scaler(trainer, 'amp.scale_loss').loss_scale
    trainer._scale = trainer._amp_original_scale / scale
    if isinstance(loss, (list, tuple)):
        yield [l * scale for l in loss]
    else:
        yield scale * loss


def unscale(optimizer_or_trainer):
    """Divide the loss scale out of the gradients now, in place (to clip or
    read them before ``trainer.step``, which then leaves them as they are)."""
    from ... import autograd
    trainer = _trainer(optimizer_or_trainer, 'amp.unscale')
    _scaler(trainer, 'amp.unscale')
    with autograd.pause():
        for p in trainer._params:
            if p.grad_req != 'null' and p._data is not None:
                for g in p.list_grad():
                    g[:] = g * trainer._scale
    trainer._scale = 1.0


# --- the lists (MXNet's functions) --------------------------------------------
def list_lp16_ops(target_dtype):
    """Operators AMP runs in ``target_dtype`` (float16)."""
    target_dtype_of(target_dtype)
    return symbol_fp16.FP16_FUNCS


def list_fp32_ops(target_dtype):
    """Operators AMP runs in float32."""
    target_dtype_of(target_dtype)
    return symbol_fp16.FP32_FUNCS


def list_lp16_fp32_ops(target_dtype):
    """Operators AMP runs in the type they are given."""
    target_dtype_of(target_dtype)
    return symbol_fp16.FP16_FP32_FUNCS


def list_conditional_fp32_ops(target_dtype):
    """(operator, attribute, values): float32 for those attribute values."""
    target_dtype_of(target_dtype)
    return symbol_fp16.CONDITIONAL_FP32_FUNCS


def list_widest_type_cast(target_dtype):
    """Operators whose inputs AMP casts to the widest type among them."""
    target_dtype_of(target_dtype)
    return symbol_fp16.WIDEST_TYPE_CASTS


def list_loss_output_functions(target_dtype):
    """Loss heads whose ``grad_scale`` AMP multiplies by the loss scale."""
    target_dtype_of(target_dtype)
    return symbol_fp16.LOSS_OUTPUT_FUNCTIONS


def list_lp16_use_fp32_params(target_dtype):
    """Operators of bfloat16 that keep float32 parameters: none for float16."""
    target_dtype_of(target_dtype)
    return None
