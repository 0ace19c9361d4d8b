"""``nd._internal``: MXNet's underscore operators that its own code and tests
call by name.  Only the slice assignments for now."""
from .op_utils import into
from .matrix import slice as _slice_copy
from .ndarray import NDArray, _slice_key

__all__ = ['_crop_assign', '_crop_assign_scalar', '_slice_assign',
           '_slice_assign_scalar']


def _slice_assign(lhs, rhs, begin, end, step=(), out=None, name=None):
    """A copy of ``lhs`` with ``lhs[begin:end:step] = rhs`` (``out=lhs``: in place)."""
    res = _slice_copy(lhs, (None,) * lhs.ndim, (None,) * lhs.ndim)   # a copy
    res[_slice_key(begin, end, step)] = rhs
    return into(out, res, '_slice_assign')


def _slice_assign_scalar(data, scalar=0, begin=(), end=(), step=(), out=None,
                         name=None):
    """A copy of ``data`` with ``data[begin:end:step] = scalar``."""
    if isinstance(scalar, NDArray):
        raise TypeError('_slice_assign_scalar: scalar must be a number')
    return _slice_assign(data, float(scalar), begin, end, step, out=out)


_crop_assign, _crop_assign_scalar = _slice_assign, _slice_assign_scalar
