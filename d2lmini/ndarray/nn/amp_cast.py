"""The casts of mixed precision: ``amp_cast`` and ``amp_multicast``
(MXNet's ``src/operator/tensor/amp_cast.cc``; filed here with the network
operators, as they exist for training networks in float16).

They differ from ``cast`` in what they leave alone: only the two types AMP
works with, float16 and float32, are converted; an integer index or a
float64 array passes through unchanged.  So :mod:`d2lmini.contrib.amp` can
put one before every input of an operator without knowing which inputs
are data.  ``amp_multicast`` gives several arrays one type, the widest of
them (float32 as soon as one is float32; with ``cast_narrow=True`` the
narrowest), as an ``elemwise_add`` of float16 and float32 arrays needs.
The gradient of either is the output's gradient cast back to the input's
type: a float32 weight gets a float32 gradient from a float16 product.
"""
import numpy as np

from ..ndarray import _dtype, invoke
from ..op_utils import into
from ..registry import OPS, Case, Op, register

# The front ends this family gives nd (and mx.sym)
__all__ = ['amp_cast', 'amp_multicast']

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


def _cast_to(dtype, target):
    """What an array of ``dtype`` becomes: ``target`` if it is a float16 or
    float32 array, else itself (MXNet's AMPCastType)."""
    return target if dtype == _F16 or dtype == _F32 else dtype


def _widest(dtypes, cast_narrow):
    """The one type ``amp_multicast`` gives its float16/float32 inputs, by
    MXNet's rule (AMPMultiCastType): the first input's type, float32 if any
    input is float32; with ``cast_narrow``, float32 unless one is float16."""
    if cast_narrow:
        return _F16 if _F16 in dtypes else _F32
    return _F32 if _F32 in dtypes else np.dtype(dtypes[0])


@register
class AmpCastOp(Op):
    name = 'amp_cast'
    # float64 passes through (the check runs in float64); tests/test_amp.py
    # checks the float16 and float32 casts and their gradients' dtypes.
    cases = (Case((3, 2), dtype='float16'),)

    def infer(self, shapes, dtypes, dtype):
        return shapes[0], _cast_to(dtypes[0], np.dtype(dtype))

    def forward(self, a, dtype):
        return a.astype(_cast_to(a.dtype, np.dtype(dtype)))    # always a copy

    def backward(self, g, inputs, out, dtype):
        return [g.astype(inputs[0].dtype, copy=False)]


@register
class AmpMulticastOp(Op):
    name = 'amp_multicast'
    nout = None            # always a list of outputs, one per input
    cases = (Case((2, 3), (3,), num_outputs=2),)

    def infer(self, shapes, dtypes, num_outputs, cast_narrow=False):
        if num_outputs != len(shapes):
            raise ValueError(f"operator 'amp_multicast': num_outputs={num_outputs} "
                             f"but {len(shapes)} inputs")
        to = _widest(dtypes, cast_narrow)
        return [(s, _cast_to(d, to)) for s, d in zip(shapes, dtypes)]

    def forward(self, *arrays, num_outputs, cast_narrow=False):
        to = _widest([a.dtype for a in arrays], cast_narrow)
        return [a.astype(_cast_to(a.dtype, to)) for a in arrays]

    def backward(self, grads, inputs, outputs, num_outputs, cast_narrow=False):
        return [g.astype(x.dtype, copy=False) for g, x in zip(grads, inputs)]


def amp_cast(data, dtype, out=None, name=None):
    """``data`` as ``dtype`` if it is a float16 or float32 array; any other
    array (integers, float64) unchanged.

    >>> nd.amp_cast(nd.array([1, 2], dtype='int32'), dtype='float16').dtype
    <class 'numpy.int32'>
    """
    res = invoke(OPS['amp_cast'], (data,), {'dtype': _dtype(dtype).name})
    return into(out, res, 'amp_cast')


def amp_multicast(*data, num_outputs, cast_narrow=False, name=None):
    """The float16/float32 arrays among ``data`` cast to one type: float32 if
    any of them is float32 (``cast_narrow=True``: float16 if any is
    float16); a list of ``num_outputs`` arrays (one array if one).

    >>> a, b = nd.amp_multicast(nd.ones(2, dtype='float16'), nd.ones(2),
    ...                         num_outputs=2)
    >>> a.dtype, b.dtype
    (<class 'numpy.float32'>, <class 'numpy.float32'>)
    """
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if not data:
        raise ValueError("operator 'amp_multicast' needs at least one array")
    outs = invoke(OPS['amp_multicast'], data, {'num_outputs': num_outputs,
                                               'cast_narrow': bool(cast_narrow)})
    return outs[0] if num_outputs == 1 else outs
