"""Neural-network operators: the layers of a CNN as ops of the op table.

The operators live in :mod:`d2lmini.ndarray.nn`, one module per family
(``nn.convolution`` explains the im2col convolution).  This module gathers
their public front ends (``nd.Convolution``, ``nd.Pooling``, ...) in one
place, with MXNet 1.x's names and keywords.
"""
from .nn import FAMILIES as _FAMILIES
from .layout import chwn as _chwn    # noqa: F401 - for tests
from .nn.convolution import _conv_act, _conv_geom, _to_chwn  # noqa: F401

__all__ = []
for _family in _FAMILIES:
    for _name in _family.__all__:
        globals()[_name] = getattr(_family, _name)
    __all__ += _family.__all__
del _family, _name
