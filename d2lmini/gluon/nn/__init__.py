"""``gluon.nn``: layers and containers (``nn.Dense``, ``nn.Conv2D``, ...)."""
from ..block import Block, HybridBlock, SymbolBlock
from .basic_layers import *          # noqa: F401,F403
from .conv_layers import *           # noqa: F401,F403
from .activations import *           # noqa: F401,F403
from .norm_layers import *           # noqa: F401,F403
from . import activations, basic_layers, conv_layers, norm_layers

__all__ = ['Block', 'HybridBlock', 'SymbolBlock'] + basic_layers.__all__ + conv_layers.__all__ + \
    activations.__all__ + norm_layers.__all__
