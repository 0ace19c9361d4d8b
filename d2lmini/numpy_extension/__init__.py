"""``mx.npx``: what MXNet adds to NumPy (``mxnet.numpy_extension``).

The switches (``set_np``, ``reset_np``), contexts and devices, and the
neural-network operators under their NumPy-style names (``npx.relu``,
``npx.convolution``, ...) that take and give ``mx.np`` arrays.
"""
from ..context import cpu, gpu, current_context, num_gpus, cpu_pinned  # noqa: F401
from ..engine import waitall                                            # noqa: F401
from ..util import (set_np, reset_np, is_np_array, is_np_shape,         # noqa: F401
                    use_np, use_np_array, use_np_shape, np_array, np_shape)

__all__ = ['set_np', 'reset_np', 'is_np_array', 'is_np_shape', 'use_np',
           'use_np_array', 'use_np_shape', 'np_array', 'np_shape', 'cpu', 'gpu',
           'cpu_pinned', 'current_context', 'num_gpus', 'waitall']
