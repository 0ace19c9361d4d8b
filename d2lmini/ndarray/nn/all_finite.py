"""Is every value finite?  ``all_finite`` and ``multi_all_finite`` (MXNet's
``src/operator/all_finite.cc``).

The check behind dynamic loss scaling (:mod:`d2lmini.contrib.amp`): after a
backward pass in float16, one ``inf`` or ``nan`` in any gradient means the
scaled loss overflowed, and the step must be skipped.  The answer is an
array ``[1.]`` or ``[0.]`` that stays on the device, so checking hundreds of
gradients costs one read back, not one per gradient.  With
``init_output=False`` the answer is and-ed into ``out``, so a long list can
be checked in chunks into one flag, as MXNet's loss scaler does.
"""
import numpy as np

from ..ndarray import invoke
from ..op_utils import _xp, into
from ..registry import OPS, Case, Op, register

# The front ends this family gives nd (and mx.sym)
__all__ = ['all_finite', 'multi_all_finite']


@register
class MultiAllFiniteOp(Op):
    name = 'multi_all_finite'
    differentiable = False
    cases = (Case((2, 3), (4,)),)          # for the dtype check of every op

    def infer(self, shapes, dtypes):
        return (1,), np.dtype(np.float32)

    def forward(self, *arrays):
        xp = _xp(arrays[0])
        ok = xp.stack([xp.isfinite(a).all() for a in arrays]).all()
        return ok.astype(np.float32).reshape(1)


def multi_all_finite(*data, num_arrays=None, init_output=True, out=None, name=None):
    """``[1.]`` if every value of every array in ``data`` is finite, else ``[0.]``.

    With ``init_output=False`` and ``out``, the answer is and-ed into ``out``
    (a ``[0.]`` already there stays).

    >>> nd.multi_all_finite(nd.ones(3), nd.array([1, float('inf')]), num_arrays=2)
    <BLANKLINE>
    [0.]
    <NDArray 1 @cpu(0)>
    """
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if not data:
        raise ValueError("operator 'multi_all_finite' needs at least one array")
    if num_arrays is not None and num_arrays != len(data):
        raise ValueError(f"operator 'multi_all_finite': num_arrays={num_arrays} but "
                         f"{len(data)} arrays given")
    res = invoke(OPS['multi_all_finite'], data)
    if out is not None and not init_output:
        res = res * out
    return into(out, res, 'multi_all_finite')


def all_finite(data, init_output=True, out=None, name=None):
    """``[1.]`` if every value of ``data`` is finite (no inf, no nan), else ``[0.]``.

    >>> nd.all_finite(nd.array([1, float('nan')]))
    <BLANKLINE>
    [0.]
    <NDArray 1 @cpu(0)>
    """
    return multi_all_finite(data, init_output=init_output, out=out)
