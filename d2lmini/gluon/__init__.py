"""Gluon: the imperative high-level API (Blocks, layers, losses, Trainer, data).

``from d2lmini import gluon; from d2lmini.gluon import nn, rnn, loss as gloss``
gives MXNet 1.x's ``gluon`` surface.  ``gluon.data``, ``gluon.Trainer`` and
``gluon.model_zoo`` (and ``gluon.contrib``) load on first use.
"""
import importlib

from .parameter import (Parameter, Constant,                   # noqa: F401
                        DeferredInitializationError)
from .parameter_dict import ParameterDict                       # noqa: F401
from .block import Block, HybridBlock, SymbolBlock              # noqa: F401
from . import nn, loss, rnn, utils                              # noqa: F401

__all__ = ['Parameter', 'Constant', 'ParameterDict', 'DeferredInitializationError',
           'Block', 'HybridBlock', 'SymbolBlock', 'Trainer', 'nn', 'loss', 'rnn', 'utils',
           'data', 'model_zoo', 'contrib']


def __getattr__(name):   # the data pipeline, Trainer and model zoo load lazily
    if name in ('data', 'model_zoo', 'contrib'):
        return importlib.import_module('.' + name, __name__)
    if name == 'Trainer':
        return importlib.import_module('.trainer', __name__).Trainer
    raise AttributeError(f"module 'd2lmini.gluon' has no attribute {name!r}")
