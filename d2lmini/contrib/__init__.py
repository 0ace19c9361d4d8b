"""``mx.contrib``: the contributed packages of MXNet that d2lmini has.

* :mod:`.amp`: automatic mixed precision (float16 where it is safe, float32
  where it is not, and dynamic loss scaling).
"""
from . import amp

__all__ = ['amp']
