"""Helpers shared by the operator families (elemwise, broadcast_reduce, matrix,
indexing, dot, ordering): axis checks, summing a broadcast gradient back
down, dtype promotion, and ``out=``.  (Their keyword check is
:func:`d2lmini.base._check_kwargs`, which every front end shares.)
"""
import numpy as np

from .. import autograd as _ag
from .. import backend
from . import layout
from .ndarray import NDArray, _write_inplace, invoke
from .registry import OPS, result_dtype

_REC = _ag._STATE          # [recording, training]


def _xp(a):
    """The array module of backend array ``a``: NumPy, or CuPy on a GPU (the
    one helper for this, used by the nn families and the symbol executor too)."""
    return np if isinstance(a, np.ndarray) else backend.xp_of(a)


def _sum_to(g, shape):
    """Sum a broadcast gradient ``g`` back down to ``shape``."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and g.shape[i + lead] != 1)
    return invoke(OPS['sum'], (g,), {'axis': axes, 'keepdims': False})._reshape_to(shape)


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


# === out=: one mechanism for every operator function ===============================
def _write_kernel(dst, src):
    if not getattr(dst.flags, 'writeable', True):
        dst = dst.copy()                 # a broadcast view: own the buffer now
    return layout.copyto(dst, src)


def into(out, res, name):
    """MXNet's ``out=``: write the result ``res`` into ``out`` and return ``out``.

    ``out`` must already have the result's shape, dtype and context (MXNet
    infers the op's output from ``out`` the same way and refuses a
    mismatch).  The write is an ordinary in-place write on ``out``'s stream,
    so it waits for the op and for earlier readers of ``out``; ``out`` may
    be one of the inputs (``nd.add(x, y, out=x)``).  Under
    ``autograd.record()`` ``out`` is recorded as a copy of the result, so
    gradients flow through it as through the returned array; an ``out``
    that is itself in the graph is refused, as MXNet does.
    """
    if out is None:
        return res
    if not isinstance(out, NDArray):
        raise TypeError(f"operator '{name}': out= must be an NDArray, "
                        f"got {type(out).__name__}")
    if out._shape != res._shape:
        raise ValueError(f"operator '{name}': out= has shape {out._shape}, but the "
                         f"result has shape {res._shape}")
    if out._dtype != res._dtype:
        raise TypeError(f"operator '{name}': out= has dtype {out._dtype}, but the "
                        f"result has dtype {res._dtype}; cast the inputs or pass an "
                        f"array of dtype {res._dtype}")
    if out._ctx != res._ctx:
        raise ValueError(f"operator '{name}': out= is on {out._ctx}, but the inputs "
                         f"are on {res._ctx}")
    record = _REC[0] and res._node is not None
    if record and out._node is not None:
        # Rebinding a graph array would cut (or loop) the graph: MXNet refuses.
        raise RuntimeError(
            f"operator '{name}': out= is an array already in the autograd graph "
            f"(recorded, or with attach_grad). Assigning to it would make its "
            f"gradients wrong; inplace operations like relu(x, out=x) are not "
            f"supported inside autograd.record(). Drop out= there.")
    _write_inplace(name, _write_kernel, [out], [res])
    if record:
        _ag._record(OPS['_copy'], (res,), [out], {})
    return out
