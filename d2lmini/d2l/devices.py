"""Devices: :func:`try_gpu` and :func:`try_all_gpus` fall back to the CPU
when allocating on a GPU raises ``MXNetError``, as in the book.
"""
from .. import context
from .. import ndarray as nd


def _gpu_works(i):
    """Whether an array can be allocated on ``gpu(i)`` (MXNetError if not)."""
    from ..base import MXNetError
    try:
        nd.zeros((1,), ctx=context.gpu(i)).wait_to_read()
    except MXNetError:
        return False
    return True


def try_gpu(i=0):
    """Return gpu(i) if exists, otherwise return cpu().

    As in the book, it tries to allocate on ``gpu(i)`` and falls back to
    ``cpu()`` when that raises ``MXNetError``.
    """
    return context.gpu(i) if _gpu_works(i) else context.cpu()


def try_all_gpus():
    """Return all available GPUs, or [cpu()] if there is no GPU."""
    devices = []
    for i in range(16):             # the book looks at gpu(0) .. gpu(15)
        if not _gpu_works(i):
            break
        devices.append(context.gpu(i))
    return devices if devices else [context.cpu()]
