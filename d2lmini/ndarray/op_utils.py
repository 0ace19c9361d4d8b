"""Helpers shared by the operator families (elemwise, broadcast_reduce, matrix,
indexing, dot, ordering): axis checks, summing a broadcast gradient back
down, dtype promotion, keyword checks.
"""
import numpy as np

from .. import backend
from .ndarray import invoke
from .registry import OPS, result_dtype


def _xp(a):
    return np if isinstance(a, np.ndarray) else backend.xp_of(a)


def _sum_to(g, shape):
    """Sum a broadcast gradient ``g`` back down to ``shape``."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and g.shape[i + lead] != 1)
    return invoke(OPS['sum'], (g,), {'axis': axes, 'keepdims': False}).reshape(shape)


def _axis(name, axis, shape):
    """``axis`` as a non-negative int, or a clear error naming op and shape."""
    n = len(shape)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"operator '{name}': axis must be an int, got {axis!r}")
    if not -n <= axis < n:
        raise ValueError(f"operator '{name}': axis {axis} out of range for shape "
                         f"{tuple(shape)}")
    return int(axis) % n


def _common_dtype(dtypes):
    """The dtype NumPy gives when it combines arrays of ``dtypes``."""
    d = dtypes[0]
    for e in dtypes[1:]:
        if e != d:
            d = result_dtype(d, e)
    return d


def _check_kwargs(name, kwargs, allowed):
    bad = set(kwargs) - set(allowed)
    if bad:
        raise TypeError(f"{name}() got unexpected keyword argument(s) {sorted(bad)}; "
                        f"allowed: {sorted(allowed)}")
