"""``mx.np``: MXNet 1.x's NumPy-compatible front end (``mxnet.numpy``).

``from d2lmini import np, npx; npx.set_np()`` then NumPy code (``np.ones``,
``x.sum()``, ``x[0, 1]``) runs on d2lmini's engine, on any context, with
autograd.  The array type is :class:`multiarray.ndarray`, a subclass of
``nd.NDArray`` (see :mod:`.multiarray`); the functions are grouped as in
NumPy: :mod:`.creation`, :mod:`.elemwise`, :mod:`.reductions`,
:mod:`.shapes` (and products), :mod:`.host` (sorting, searching, sets),
``np.random`` and ``np.linalg``.
"""
import numpy as _onp

from .multiarray import *            # noqa: F401,F403
from .multiarray import __all__ as _multiarray_all
from .creation import *              # noqa: F401,F403
from .elemwise import *              # noqa: F401,F403
from .reductions import *            # noqa: F401,F403
from .shapes import *                # noqa: F401,F403
from .host import *                  # noqa: F401,F403
from . import creation, elemwise, reductions, shapes, host, random, linalg

# NumPy's dtypes and constants, as mx.np has them.
bool_ = bool8 = _onp.bool_
bool = _onp.bool_                     # noqa: A001 - mx.np.bool, as MXNet's
int8, int16, int32, int64 = _onp.int8, _onp.int16, _onp.int32, _onp.int64
uint8, uint16, uint32, uint64 = _onp.uint8, _onp.uint16, _onp.uint32, _onp.uint64
float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
intp, integer, floating, number, generic = (_onp.intp, _onp.integer, _onp.floating,
                                            _onp.number, _onp.generic)
dtype, finfo, iinfo = _onp.dtype, _onp.finfo, _onp.iinfo
pi, e, inf, nan, newaxis, euler_gamma = (_onp.pi, _onp.e, _onp.inf, _onp.nan, None,
                                         _onp.euler_gamma)
PZERO, NZERO, NINF, PINF, NAN = 0.0, -0.0, -_onp.inf, _onp.inf, _onp.nan

__all__ = (list(_multiarray_all) + creation.__all__ + elemwise.__all__ +
           reductions.__all__ + shapes.__all__ + host.__all__ +
           ['random', 'linalg', 'bool', 'bool_', 'bool8', 'int8', 'int16', 'int32', 'int64',
            'uint8', 'uint16', 'uint32', 'uint64', 'float16', 'float32', 'float64',
            'intp', 'integer', 'floating', 'number', 'generic', 'dtype', 'finfo',
            'iinfo', 'pi', 'e', 'inf', 'nan', 'newaxis', 'euler_gamma'])
