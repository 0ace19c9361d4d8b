"""Host memory: keep freed memory for reuse, as MXNet's pooled storage does.

A training step allocates and frees the same large arrays again and again
(activations, gradients, temporaries of a few MB each).  By default glibc's
``malloc`` hands such blocks back to the operating system when they are
freed, so the next step gets fresh pages, and the kernel zeroes each 4 KB
page on its first touch: about 1000 page faults per 4 MB array, 10-15% of a
LeNet training step on a 2-core virtual machine.  MXNet avoids this with its
pooled storage manager, which keeps freed blocks for the next request.  In
d2lmini NumPy allocates the arrays, so we ask glibc for the same policy:

* ``M_MMAP_THRESHOLD`` = 32 MB: blocks up to 32 MB come from the heap (the
  default threshold starts at 128 KB and only adapts as big blocks are freed);
* ``M_TRIM_THRESHOLD`` = 1 GB: freed memory at the top of the heap is kept,
  up to 1 GB, instead of being returned at once.

The price is the pool's, too: the process's resident memory stays at its
peak after big arrays are freed (the memory is reused, not lost).  Set
``D2LMINI_MEM_POOL=0`` before importing d2lmini to keep glibc's defaults.
Only Linux with glibc is affected; elsewhere this does nothing.  GPU memory
is CuPy's, which pools by itself.
"""
import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1            # mallopt parameters, from <malloc.h>
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20        # bytes
TRIM_THRESHOLD = 1 << 30

_STATE = {'pooled': False}


def enable_pool():
    """Apply the policy above; True if the C library accepted it."""
    if not sys.platform.startswith('linux'):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt      # glibc; absent on e.g. musl
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _STATE['pooled'] = ok
    return ok


def pooled():
    """Whether freed host memory is kept for reuse (see the module docs)."""
    return _STATE['pooled']


if os.environ.get('D2LMINI_MEM_POOL', '1') != '0':
    enable_pool()
