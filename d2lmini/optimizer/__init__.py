"""``mx.optimizer``: optimizers with MXNet 1.x's names, defaults and update rules.

SGD, NAG, Signum, SGLD, ccSGD, Test (:mod:`.sgd_family`); Adam, Adamax,
Nadam, AdaGrad, AdaDelta, RMSProp, FTML, Ftrl, LAMB (:mod:`.adaptive`); the
base class, registry and Updater (:mod:`.optimizer`); the fused update
kernels are ``nd`` functions
(``nd.sgd_mom_update``, ...; :mod:`d2lmini.ndarray.optimizer_op`)::

    opt = mx.optimizer.create('nag', learning_rate=0.1, momentum=0.9)
    trainer = gluon.Trainer(net.collect_params(), 'adam',
                            {'learning_rate': 1e-3, 'multi_precision': True})
"""
from .optimizer import (Optimizer, Updater, get_updater, create, register,
                        register_optimizer, _states)
from ..ndarray.optimizer_op import *   # noqa: F401,F403 - sgd_update & co.
from ..ndarray.optimizer_op import __all__ as _update_names
from .sgd_family import SGD, NAG, Signum, SGLD, ccSGD, Test
from .adaptive import Adam, Adamax, Nadam, AdaGrad, AdaDelta, RMSProp, FTML, Ftrl, LAMB

__all__ = (['Optimizer', 'SGD', 'NAG', 'Signum', 'SGLD', 'Adam', 'Adamax', 'Nadam',
            'AdaGrad', 'AdaDelta', 'RMSProp', 'FTML', 'Ftrl', 'LAMB', 'ccSGD', 'Test',
            'Updater',
            'get_updater', 'create', 'register', 'register_optimizer']
           + list(_update_names))

# MXNet spells the classes in lowercase too (mx.optimizer.sgd is a class).
sgd, nag, signum, sgld = SGD, NAG, Signum, SGLD
adam, adamax, nadam, adagrad, adadelta = Adam, Adamax, Nadam, AdaGrad, AdaDelta
rmsprop, ftml, ftrl, lamb = RMSProp, FTML, Ftrl, LAMB
