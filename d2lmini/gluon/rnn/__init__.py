"""Recurrent networks, as MXNet 1.x's ``gluon.rnn``: the fused layers
(``RNN``, ``LSTM``, ``GRU``: :mod:`.rnn_layer`) and the cells that compute
one step each (:mod:`.rnn_cell`)."""
from .rnn_cell import *    # noqa: F401,F403
from .rnn_layer import *   # noqa: F401,F403
from . import rnn_cell, rnn_layer

__all__ = rnn_cell.__all__ + rnn_layer.__all__
