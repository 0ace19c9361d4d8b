"""Array backends: NumPy for CPU contexts, CuPy for GPU contexts.

This is the only module that imports :mod:`cupy`.  Everything else asks
:func:`xp` for the array module of a context and stays backend-agnostic.
"""
import numpy as np

from .base import MXNetError

try:                                   # optional: pip install -e .[gpu]
    import cupy as _cupy
except Exception:                      # ImportError, or a CUDA driver problem
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


def nccl():
    """CuPy's NCCL bindings (``cupy.cuda.nccl``), or None where there is no
    CuPy, no GPU or no NCCL (``d2lmini.horovod`` then sums through the host)."""
    if _cupy is None or num_gpus() == 0:
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
    """The array module of backend array ``a``."""
    return _cupy if is_gpu_array(a) else np
