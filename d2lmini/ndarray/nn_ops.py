"""Neural-network operators: the layers of a CNN as ops of the op table.

The operators live in :mod:`d2lmini.ndarray.nn`, one module per family
(``nn.convolution`` explains the im2col convolution).  This module gathers
their public front ends (``nd.Convolution``, ``nd.Pooling``, ...) in one
place, with MXNet 1.x's names, keywords and NCHW layout.
"""
from .nn import (activation, batch_norm, convolution, dropout, fully_connected,
                 pooling, softmax as _softmax_family)
from .nn.activation import *         # noqa: F401,F403
from .nn.batch_norm import *         # noqa: F401,F403
from .nn.convolution import *        # noqa: F401,F403
from .nn.dropout import *            # noqa: F401,F403
from .nn.fully_connected import *    # noqa: F401,F403
from .nn.pooling import *            # noqa: F401,F403
from .nn.softmax import *            # noqa: F401,F403
# internals other modules and tests reach for
from .nn.convolution import _conv_act, _conv_geom, _to_chwn  # noqa: F401
from .layout import chwn as _chwn    # noqa: F401

__all__ = (activation.__all__ + batch_norm.__all__ + convolution.__all__ +
           dropout.__all__ + fully_connected.__all__ + pooling.__all__ +
           _softmax_family.__all__)
