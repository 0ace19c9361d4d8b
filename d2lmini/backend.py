"""Array backends: NumPy for CPU contexts, CuPy for GPU contexts.

This is the only module that imports :mod:`cupy`.  Everything else asks
:func:`xp` (or :func:`xp_of`) for the array module of a context (or array)
and stays backend-agnostic.

``D2LMINI_CUPY`` names another module to import in CuPy's place.  The tests
set it to ``cupy_standin`` (``tests/cupy_standin.py``, strict about the
host/device boundary, computing on the host) so that every GPU code path runs
in CI on machines without a GPU: ``make test-gpu-standin``.
"""
import importlib
import os

import numpy as np

from .base import MXNetError

_CUPY_MODULE = os.environ.get('D2LMINI_CUPY', 'cupy')
try:                                   # optional: pip install -e .[gpu]
    _cupy = importlib.import_module(_CUPY_MODULE)
except ImportError:
    if _CUPY_MODULE != 'cupy':         # asked for by name: say so
        raise
    _cupy = None
except Exception:                      # a CUDA driver problem
    _cupy = None

_GPU_HELP = ("d2lmini needs CuPy and a CUDA GPU for gpu contexts. Install the GPU "
             "extra with `pip install -e .[gpu]` (or `pip install cupy-cuda12x`), "
             "or use mx.cpu(i) logical devices instead.")


def num_gpus():
    if _cupy is None:
        return 0
    try:
        return _cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def gpu_memory_info(device_id=0):
    """``(free, total)`` bytes of memory on GPU ``device_id``."""
    from .context import Context
    check_context(Context('gpu', device_id))
    with _cupy.cuda.Device(device_id):
        return _cupy.cuda.runtime.memGetInfo()


def nccl():
    """CuPy's NCCL bindings (``cupy.cuda.nccl``), or None where there is no
    CuPy, no GPU or no NCCL (``d2lmini.horovod`` then sums through the host)."""
    if _cupy is None or _CUPY_MODULE != 'cupy' or num_gpus() == 0:
        return None
    try:
        from cupy.cuda import nccl as _nccl
    except Exception:
        return None
    return _nccl if getattr(_nccl, 'available', True) else None


def check_context(ctx):
    """Raise a clear error if ``ctx`` cannot be used on this machine.

    An :class:`MXNetError`, as in MXNet: the classic ``try_gpu()`` catches
    exactly that to fall back to the CPU.
    """
    if ctx.device_type == 'gpu':
        n = num_gpus()
        if n == 0:
            raise MXNetError(f'cannot use {ctx}: no GPU available. ' + _GPU_HELP)
        if ctx.device_id >= n:
            raise MXNetError(f'cannot use {ctx}: only {n} GPU(s) visible')


def xp(ctx):
    """The array module (numpy or cupy) that backs ``ctx``."""
    return _cupy if ctx.device_type == 'gpu' else np


def is_gpu_array(a):
    return _cupy is not None and isinstance(a, _cupy.ndarray)


def to_numpy(a):
    """A host NumPy array for any backend array (waits for the GPU)."""
    return a.get() if is_gpu_array(a) else np.asarray(a)


def device_guard(ctx):
    """Context manager that makes ``ctx`` the current CUDA device (no-op on CPU)."""
    if ctx.device_type == 'gpu':
        return _cupy.cuda.Device(ctx.device_id)
    return _NullGuard


def to_context(a, ctx):
    """Copy backend array ``a`` onto ``ctx`` (always a new buffer)."""
    if ctx.device_type == 'gpu':
        with _cupy.cuda.Device(ctx.device_id):
            return _cupy.array(a, copy=True)
    return a.get() if is_gpu_array(a) else np.array(a, copy=True)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


_NullGuard = _Null()


# --- GPU streams and events, used by the engine ------------------------------
def new_stream(ctx):
    with _cupy.cuda.Device(ctx.device_id):
        return _cupy.cuda.Stream(non_blocking=True)


def new_event():
    return _cupy.cuda.Event(disable_timing=True)


def empty_cache(ctx):
    if ctx.device_type == 'gpu' and _cupy is not None:
        _cupy.get_default_memory_pool().free_all_blocks()


def asarray_on(data, ctx, dtype=None):
    """Make a backend array on ``ctx`` from Python data / numpy / cupy arrays."""
    if ctx.device_type == 'gpu':
        with _cupy.cuda.Device(ctx.device_id):
            return _cupy.asarray(data, dtype=dtype)
    if is_gpu_array(data):
        data = data.get()
    return np.asarray(data, dtype=dtype)


def xp_of(a):
    """The array module of backend array ``a`` (numpy for a NumPy array,
    which is checked first: this is on the path of every CPU operator)."""
    return np if a.__class__ is np.ndarray else (_cupy if is_gpu_array(a) else np)


def same_function(f, a):
    """NumPy function ``f`` as it applies to backend array ``a``: ``f`` itself
    on the host, the function of the same name on a GPU (CuPy mirrors NumPy's
    names: ``np.exp`` -> ``cupy.exp``).  ``f`` that is not NumPy's own (a
    lambda, a helper) is returned as it is: it must be backend-agnostic."""
    if a.__class__ is np.ndarray:
        return f
    name = getattr(f, '__name__', None)
    if name and getattr(np, name, None) is f and is_gpu_array(a):
        return getattr(_cupy, name)
    return f
