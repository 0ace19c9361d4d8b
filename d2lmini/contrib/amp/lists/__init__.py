"""Which operators AMP runs in float16, which in float32, and which in the
widest type of their inputs (MXNet's ``contrib/amp/lists``)."""
from . import symbol_fp16

__all__ = ['symbol_fp16']
