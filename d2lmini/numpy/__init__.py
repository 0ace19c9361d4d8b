"""``mx.np``: MXNet 1.x's NumPy-compatible front end (``mxnet.numpy``).

``from d2lmini import np, npx; npx.set_np()`` then NumPy code (``np.ones``,
``x.sum()``, ``x[0, 1]``) runs on d2lmini's engine, on any context, with
autograd.  The array type is :class:`multiarray.ndarray`, a subclass of
``nd.NDArray`` (see :mod:`.multiarray`).
"""
import numpy as _onp

from .multiarray import *            # noqa: F401,F403
from .multiarray import __all__ as _multiarray_all

# NumPy's dtypes and constants, as mx.np has them.
bool_ = _onp.bool_
int8, int32, int64, uint8 = _onp.int8, _onp.int32, _onp.int64, _onp.uint8
float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
pi, e, inf, nan, newaxis = _onp.pi, _onp.e, _onp.inf, _onp.nan, None

__all__ = list(_multiarray_all) + [
    'bool_', 'int8', 'int32', 'int64', 'uint8', 'float16', 'float32', 'float64',
    'pi', 'e', 'inf', 'nan', 'newaxis']
