"""``mx.mod`` (also ``mx.module``): the Module API, training a Symbol.

:mod:`.base_module` holds the loop every module shares (``fit``,
``score``, ``predict``), :mod:`.module` the Module of one symbol, and
:mod:`.executor_group` its executors, one per device, each fed a slice of
every batch::

    mod = mx.mod.Module(net, data_names=('data',), label_names=('softmax_label',),
                        context=mx.cpu())
    mod.fit(train_iter, eval_data=val_iter, num_epoch=5,
            optimizer_params={'learning_rate': 0.1})
    mod.score(val_iter, 'acc')
"""
from .base_module import BaseModule
from .module import Module

__all__ = ['BaseModule', 'Module']
