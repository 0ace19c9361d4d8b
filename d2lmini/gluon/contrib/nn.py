"""``gluon.contrib.nn``: MXNet 1.x's names for the branching layers, which
d2lmini defines in :mod:`d2lmini.gluon.nn` (as MXNet 2.0 does)."""
from ..nn.basic_layers import Concurrent, HybridConcurrent, Identity

__all__ = ['Concurrent', 'HybridConcurrent', 'Identity']
