"""``mx.model``: checkpoints of symbolic models, and what a training loop
tells its callbacks.

A checkpoint is two files, MXNet's format::

    prefix-symbol.json      the graph (``symbol.save``)
    prefix-0003.params      the values (``nd.save``): keys ``arg:fc1_weight``
                            for parameters, ``aux:bn_moving_mean`` for
                            auxiliary states

so ``mx.model.load_checkpoint(prefix, 3)`` gives back the symbol and the
two dictionaries that ``Module.set_params`` (or ``mod.fit(arg_params=...)``)
takes::

    mx.model.save_checkpoint('lenet', 3, net, arg_params, aux_params)
    sym, arg_params, aux_params = mx.model.load_checkpoint('lenet', 3)

``HybridBlock.export`` writes the same two files.
"""
import logging
from collections import namedtuple

from . import ndarray as nd
from .context import cpu

__all__ = ['BatchEndParam', 'save_checkpoint', 'load_checkpoint', 'load_params',
           'save_params_file', 'load_params_file']

#: What ``batch_end_callback`` (and ``eval_end_callback``) receive:
#: the epoch, the batch number, the metric so far, and the loop's locals().
BatchEndParam = namedtuple('BatchEndParams', ['epoch', 'nbatch', 'eval_metric', 'locals'])


def _params_name(prefix, epoch):
    return '%s-%04d.params' % (prefix, epoch)


def save_params_file(fname, arg_params, aux_params):
    """Write ``arg_params`` and ``aux_params`` to ``fname`` with their
    ``arg:``/``aux:`` prefixes, every array copied to the CPU."""
    save_dict = {'arg:' + k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({'aux:' + k: v.as_in_context(cpu()) for k, v in aux_params.items()})
    nd.save(fname, save_dict)


def load_params_file(fname):
    """``(arg_params, aux_params)`` read from a file written by
    :func:`save_params_file` (or MXNet's ``save_checkpoint``)."""
    save_dict = nd.load(fname)
    if not isinstance(save_dict, dict):
        raise ValueError(f'{fname}: holds a list of arrays, not the named '
                         f"'arg:'/'aux:' arrays of a checkpoint")
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, sep, name = key.partition(':')
        if not sep or kind not in ('arg', 'aux'):
            raise ValueError(
                f"{fname}: key {key!r} is not 'arg:<name>' or 'aux:<name>'; this "
                f'is not a checkpoint of a symbolic model (a Gluon file written '
                f'by save_parameters is read by net.load_parameters)')
        (arg_params if kind == 'arg' else aux_params)[name] = value
    return arg_params, aux_params


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``prefix-symbol.json`` (unless ``symbol`` is None) and
    ``prefix-%04d.params``.  ``remove_amp_cast`` is accepted for MXNet's
    signature: d2lmini graphs hold no AMP casts."""
    del remove_amp_cast
    if symbol is not None:
        symbol.save('%s-symbol.json' % prefix)
    fname = _params_name(prefix, epoch)
    save_params_file(fname, arg_params, aux_params)
    logging.info('Saved checkpoint to "%s"', fname)


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` of ``prefix-%04d.params``."""
    return load_params_file(_params_name(prefix, epoch))


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` written by :func:`save_checkpoint`.

    >>> sym, arg_params, aux_params = mx.model.load_checkpoint('lenet', 3)  # doctest: +SKIP
    """
    from . import symbol as sym
    symbol = sym.load('%s-symbol.json' % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
