"""Devices: ``cpu(i)`` and ``gpu(i)``.

A :class:`Context` names a *logical device*.  Every context gets its own
execution stream in :mod:`d2lmini.engine.stream`, so ``cpu(0)`` and
``cpu(1)`` are two devices that really compute at the same time, on two
cores.  That is what lets every multi-device chapter run on a laptop.

Examples
--------
>>> import d2lmini as mx
>>> mx.cpu(1)
cpu(1)
>>> with mx.Context(mx.cpu(1)):
...     mx.context.current_context()
cpu(1)
"""
import os
import re
import threading

__all__ = ['Context', 'cpu', 'gpu', 'current_context', 'num_gpus']


class Context:
    """A device: ``device_type`` is ``'cpu'`` or ``'gpu'``, ``device_id`` an int."""
    __slots__ = ('device_type', 'device_id', '_key')
    _local = threading.local()
    # MXNet's numeric device types (its C API and its .params files use them)
    devtype2str = {1: 'cpu', 2: 'gpu', 3: 'cpu_pinned', 5: 'cpu_shared'}
    devstr2type = {'cpu': 1, 'gpu': 2, 'cpu_pinned': 3, 'cpu_shared': 5}

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in ('cpu', 'gpu', 'cpu_pinned', 'cpu_shared'):
            raise ValueError(f"unknown device type {device_type!r}: use 'cpu' or 'gpu'")
        if not isinstance(device_id, int) or device_id < 0:
            raise ValueError(f"device_id must be a non-negative int, got {device_id!r}")
        if device_type in ('cpu_pinned', 'cpu_shared'):
            # MXNet's pinned and shared (multiprocess) host memory: plain CPU here
            device_type = 'cpu'
        self.device_type = device_type
        self.device_id = device_id
        self._key = (device_type, device_id)

    @property
    def device_typeid(self):
        """MXNet's number for the device type: 1 for CPU, 2 for GPU."""
        return self.devstr2type[self.device_type]

    def __repr__(self):
        return f'{self.device_type}({self.device_id})'

    def __eq__(self, other):
        return isinstance(other, Context) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __lt__(self, other):          # so lists of contexts sort: cpu(0) < cpu(1) < gpu(0)
        return self._key < other._key

    def __enter__(self):
        # A per-thread stack: nesting (even of the same object) unwinds exactly,
        # and leaving the outermost block falls back to the process default.
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False

    def empty_cache(self):
        """Release cached device memory (GPU only; a no-op on CPU)."""
        from . import backend
        backend.empty_cache(self)


def cpu(device_id=0):
    """The ``device_id``-th logical CPU device."""
    return Context('cpu', device_id)


def cpu_pinned(device_id=0):
    return Context('cpu', device_id)


def gpu(device_id=0):
    """The ``device_id``-th GPU.  Using it without a GPU raises a clear error."""
    return Context('gpu', device_id)


def _stack():
    st = getattr(Context._local, 'stack', None)
    if st is None:
        st = Context._local.stack = []
    return st


def current_context():
    """The default context: ``cpu(0)`` unless inside ``with ctx:``."""
    st = getattr(Context._local, 'stack', None)
    return st[-1] if st else _DEFAULT[0]


def _from_env(text):
    """``D2LMINI_DEFAULT_CONTEXT`` ("gpu(0)", "gpu", "cpu(1)") as a Context."""
    m = re.fullmatch(r'\s*(cpu|gpu)\s*(?:\(\s*(\d*)\s*\))?\s*', text or 'cpu(0)')
    if m is None:
        raise ValueError(f'D2LMINI_DEFAULT_CONTEXT={text!r}: expected cpu(i) or gpu(i)')
    return Context(m.group(1), int(m.group(2) or 0))


# The process-wide default, cpu(0) unless D2LMINI_DEFAULT_CONTEXT says
# otherwise (the GPU runs of the tests and notebooks set it to gpu(0)).
_DEFAULT = [_from_env(os.environ.get('D2LMINI_DEFAULT_CONTEXT'))]


def set_default_context(ctx):
    _DEFAULT[0] = Context(ctx)


def num_gpus():
    """How many GPUs CuPy can see (0 without CuPy or a GPU)."""
    from . import backend
    return backend.num_gpus()
