"""Gradient compression for the allreduce (Horovod's ``hvd.Compression``).

``Compression.fp16`` sends floating-point gradients as float16, halving the
bytes on the wire at the cost of precision; ``Compression.none`` (the
default) sends them as they are.  A compressor's ``compress(t)`` returns
the tensor to send and what ``decompress`` needs to restore the dtype.
"""

__all__ = ['Compression']


class NoneCompressor:
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor:
    @staticmethod
    def compress(tensor):
        if 'float' in str(tensor.dtype):
            return tensor.astype('float16'), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, dtype):
        return tensor if dtype is None else tensor.astype(dtype)


class Compression:
    """``none`` (default) or ``fp16``."""
    none = NoneCompressor
    fp16 = FP16Compressor
