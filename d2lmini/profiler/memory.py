"""``profile_memory``: each device's memory in use, as MXNet's ``Device
Storage`` counters draw it.

MXNet counts in its storage manager: every allocation adds its size to
the counter ``Memory: cpu/0`` (one per device), every free subtracts it,
and each change is a point of the counter while the profiler runs.  Here
NumPy (or CuPy) allocates the arrays, through ``malloc`` with no hook per
array (:mod:`d2lmini.storage`), so we count one level up, where the
engine hands an operation's results to its output arrays (and where
``nd.array`` and the ``DataLoader``'s batches get their host copies):

* an output that owns its buffer (``data.base is None``: not a view of
  another array), and is not one of the op's inputs (an in-place write,
  an identity), is an allocation of ``data.nbytes`` on the op's device,
  counted once even if several outputs share it;
* a ``weakref.finalize`` on that buffer subtracts it again when NumPy
  frees it: when the last array, view or queued operation holding it is
  gone.

As in MXNet, memory is allocated when an operation *runs*, not when it is
pushed, so the counter shows what the engine's queue holds at each
moment; and it is counted from ``set_state('run')`` until ``'stop'`` has
waited for the operations pushed before it, except while paused.  The
engine calls :meth:`MemoryCounters.on_outputs` only then (from its traced
path), so this costs nothing otherwise.  What is not counted: memory an operator takes and frees
inside its kernel (NumPy's temporaries; MXNet's temp space is counted),
arrays made outside the engine, and the allocator's own pool.
"""
import threading
import warnings
import weakref

from ..engine.stream import _MEMORY
from .core import STATE, device_label

CATEGORY = 'Device Storage'          # MXNet's name for the counters' section


class MemoryCounters:
    """The bytes in use per device, counted as the module describes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.generation = 0              # a new count on every start
        self.used = {}                   # device label -> bytes in use
        self.live = {}                   # id(buffer) -> (label, nbytes)

    def start(self):
        """Count from zero (arrays made before are not counted)."""
        with self.lock:
            self.generation += 1
            self.used, self.live = {}, {}
        _MEMORY[0] = self.on_outputs

    def stop(self):
        _MEMORY[0] = None
        with self.lock:
            self.generation += 1         # the finalizers still pending: no-ops
            self.used, self.live = {}, {}

    def on_outputs(self, ctx, args, outs):
        """The engine ran an operation on ``ctx`` from ``args`` into ``outs``."""
        try:
            self._count(ctx, args, outs)
        except Exception as e:          # noqa: BLE001 - never stop the engine
            warnings.warn(f'profiler: memory not counted: {e!r}')

    def _count(self, ctx, args, outs):
        for o in outs:
            data = o._data
            if data is None or getattr(data, 'base', 0) is not None:
                continue                 # failed, or a view of another buffer
            if any(a._data is data for a in args):
                continue                 # written in place, or passed through
            key = id(data)
            if key in self.live:
                continue                 # an output we have counted already
            nbytes = int(data.nbytes)
            if not nbytes:
                continue                 # MXNet counts no empty allocation
            try:
                done = weakref.finalize(data, self._freed, self.generation, key)
            except TypeError:            # an array type without weak refs
                continue
            done.atexit = False
            label = device_label(ctx)
            self._change(key, label, nbytes)

    def _change(self, key, label, nbytes):
        with self.lock:
            if nbytes > 0:
                self.live[key] = (label, nbytes)
            used = self.used[label] = self.used.get(label, 0) + nbytes
        if not STATE.paused:
            STATE.add_counter(CATEGORY, f'Memory: {label}', used, lane=label)

    def _freed(self, generation, key):
        with self.lock:
            if generation != self.generation or key not in self.live:
                return
            label, nbytes = self.live.pop(key)
        self._change(key, label, -nbytes)

    def in_use(self):
        """``{device label: bytes}`` counted now."""
        with self.lock:
            return dict(self.used)


COUNTERS = MemoryCounters()
