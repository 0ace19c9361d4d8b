"""``gluon.nn``: layers and containers (``nn.Dense``, ``nn.Conv2D``, ...)."""
from ..block import Block, HybridBlock
from .basic_layers import *          # noqa: F401,F403
from .conv_layers import *           # noqa: F401,F403
from . import basic_layers, conv_layers

__all__ = ['Block', 'HybridBlock'] + basic_layers.__all__ + conv_layers.__all__
