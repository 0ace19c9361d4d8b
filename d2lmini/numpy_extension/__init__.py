"""``mx.npx``: what MXNet adds to NumPy (``mxnet.numpy_extension``).

The switches (``set_np``, ``reset_np``), contexts and devices, the
neural-network operators under their NumPy-style names (``npx.relu``,
``npx.convolution``, ...: :mod:`.ops`) that take and give ``mx.np``
arrays, ``npx.save``/``npx.load`` (:mod:`.utils`) and ``npx.random``.
"""
from ..context import cpu, gpu, current_context, num_gpus, cpu_pinned  # noqa: F401
from ..engine import waitall                                            # noqa: F401
from ..util import (set_np, reset_np, is_np_array, is_np_shape,         # noqa: F401
                    use_np, use_np_array, use_np_shape, np_array, np_shape)
from .ops import *                  # noqa: F401,F403
from .ops import __all__ as _ops_all
from .utils import save, load       # noqa: F401
from . import random                # noqa: F401

__all__ = ['set_np', 'reset_np', 'is_np_array', 'is_np_shape', 'use_np',
           'use_np_array', 'use_np_shape', 'np_array', 'np_shape', 'cpu', 'gpu',
           'cpu_pinned', 'current_context', 'num_gpus', 'gpu_memory_info', 'waitall',
           'save', 'load', 'random'] + list(_ops_all)


def gpu_memory_info(device_id=0):
    """``(free, total)`` bytes of GPU ``device_id`` (MXNet's
    ``npx.gpu_memory_info``)."""
    from .. import backend
    return backend.gpu_memory_info(device_id)
