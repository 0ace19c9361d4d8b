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
* a weak reference to that buffer subtracts it again when NumPy
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


class _Buffer(weakref.ref):
    """A weak reference to a counted buffer, which calls back when NumPy
    frees it (cheaper than ``weakref.finalize``: this runs per operation)."""
    __slots__ = ('key', 'generation')


class MemoryCounters:
    """The bytes in use per device, counted as the module describes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.generation = 0              # a new count on every start
        self.used = {}                   # device label -> bytes in use
        self.live = {}                   # id(buffer) -> (label, nbytes, _Buffer)
        self.names = {}                  # ctx -> (label, counter name)

    def start(self):
        """Count from zero (arrays made before are not counted)."""
        with self.lock:
            self.generation += 1
            self.used, self.live = {}, {}
        _MEMORY[0] = self.on_outputs

    def stop(self):
        _MEMORY[0] = None
        with self.lock:
            self.generation += 1         # the callbacks still pending: no-ops
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
                ref = _Buffer(data, self._freed)
            except TypeError:            # an array type without weak refs
                continue
            ref.key, ref.generation = key, self.generation
            names = self.names.get(ctx)
            if names is None:
                label = device_label(ctx)
                names = self.names[ctx] = (label, f'Memory: {label}')
            self._change(names, nbytes, key, ref)

    def _change(self, names, nbytes, key=None, ref=None):
        label, name = names
        with self.lock:
            if ref is not None:
                self.live[key] = (names, nbytes, ref)
            used = self.used[label] = self.used.get(label, 0) + nbytes
        if not STATE.paused:
            STATE.add_counter(CATEGORY, name, used, lane=label)

    def _freed(self, ref):
        with self.lock:
            if ref.generation != self.generation or ref.key not in self.live:
                return
            names, nbytes, _ = self.live.pop(ref.key)
        self._change(names, -nbytes)

    def in_use(self):
        """``{device label: bytes}`` counted now."""
        with self.lock:
            return dict(self.used)


COUNTERS = MemoryCounters()
