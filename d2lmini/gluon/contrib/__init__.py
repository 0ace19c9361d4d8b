"""``gluon.contrib``: where MXNet 1.x keeps the layers it had not yet moved
into ``gluon.nn``.  Only ``contrib.nn``'s branching layers are here, the
ones its model zoo builds Inception, SqueezeNet and DenseNet with."""
from . import nn

__all__ = ['nn']
