"""``npx.save`` / ``npx.load``: ``mx.np`` arrays in MXNet's NDArray file.

MXNet 1.9.1 writes ``npx.save`` files with the same writer as ``nd.save``
(not NumPy's ``.npz``), every record with the NumPy-shape magic
``0xF993FACA``, so 0-d and zero-size arrays survive; see
:mod:`d2lmini.ndarray.utils` for the layout.  Files move both ways between
MXNet and d2lmini.  MXNet's ``npx.load`` refuses a legacy (``nd.save``)
file; d2lmini reads it (its records are the same but for the magic).
"""
from ..ndarray import utils as _io
from ..ndarray.ndarray import NDArray
from ..util import is_np_array
from .ops import _np

__all__ = ['save', 'load']


def _need_np(what):
    if not is_np_array():
        raise ValueError(f'npx.{what} works on mx.np arrays in NumPy mode: call '
                         f'npx.set_np() first (MXNet refuses it in legacy mode too)')


def save(file, arr):
    """Save an ``np.ndarray``, a list of them or a dict ``str -> ndarray``.

    >>> npx.save('x.npx', {'w': np.ones((2, 3)), 'step': np.array(7)})
    """
    _need_np('save')
    from ..numpy.multiarray import ndarray
    values = [arr] if isinstance(arr, NDArray) else \
        list(arr.values()) if isinstance(arr, dict) else arr
    if not isinstance(values, (list, tuple)):
        raise ValueError(f'npx.save: data must be an ndarray, a list of ndarrays or '
                         f'a dict str -> ndarray, got {type(arr).__name__}')
    for v in values:
        if not isinstance(v, ndarray):
            raise TypeError(f'npx.save: only mx.np arrays, got {type(v).__name__} '
                            f'(convert an nd.NDArray with .as_np_ndarray())')
    _io.write_file(file, _io.dumps(arr, magic=_io.V3_MAGIC))


def load(file):
    """The list, or dict, of ``np.ndarray`` that ``save`` wrote."""
    _need_np('load')
    if not isinstance(file, str):
        raise TypeError(f'npx.load: file must be a string, got {type(file).__name__}')
    data = _io.load(file)              # fresh arrays: made np in place
    if isinstance(data, dict):
        return {k: _np(v) for k, v in data.items()}
    return _np(data)
