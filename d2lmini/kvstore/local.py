"""The in-process stores: ``'local'`` and ``'device'``.

Both keep every key's value in this process; they differ in where a push
sums the values of the devices (MXNet's ``CommCPU`` and ``CommDevice``):

* ``'local'``: everything is copied to ``cpu(0)``, summed there, and the
  stored value (and an optimizer's update) lives there too;
* ``'device'``: each key is summed on one of the devices that push it: the
  one that holds the fewest elements of reduction work so far, keys placed
  largest first, so the keys (and the updates, with ``set_optimizer``)
  spread over the devices.

Every copy and sum (:func:`d2lmini.collectives.reduce`) is an engine operation on the destination's stream, so a
push returns at once and the devices work in parallel.  With
``set_gradient_compression`` each device first quantizes its value to 2
bits an element (:mod:`.compression`), and the reducing device sums what
it decompresses.
"""
import numpy as np

from ..context import cpu
from .. import collectives
from .. import ndarray as nd
from .kvstore import KVStore

__all__ = ['LocalStore', 'NAMES']

# MXNet's names for the in-process stores ('device' anywhere in the name:
# reduce on the devices; 'local_update_cpu' & co. are older spellings).
NAMES = ('local', 'device', 'local_update_cpu', 'local_allreduce_cpu',
         'local_allreduce_device')


class LocalStore(KVStore):
    """A key-value store inside this process (``mx.kv.create('local')``)."""

    def __init__(self, name='local'):
        if name not in NAMES:
            raise ValueError(f'LocalStore is one of {NAMES}, got {name!r}')
        super().__init__(name)
        self._on_devices = 'device' in name
        self._store = {}             # key -> NDArray
        self._where = {}             # key -> the device that reduces it
        self._work = {}              # device -> elements it reduces ('device')
        self._residuals = {}         # (key, i) -> what device i has not sent

    def reduce_context(self, key, values=()):
        """The device where ``key`` is summed (None before its first push).

        'device': at the first push of a key not yet placed, every key
        initialized so far and not yet placed is given, largest first, to
        the pushing device with the fewest elements to sum so far (as
        MXNet's ``CommDevice::InitMergeBuffer``).
        """
        if not self._on_devices:
            return cpu(0)
        if key not in self._where and values:
            candidates = list(dict.fromkeys(v.context for v in values))
            waiting = [k for k in self._meta if k not in self._where]
            sizes = {k: int(np.prod(self._meta[k][0])) for k in waiting}
            for k in sorted(waiting, key=lambda k: -sizes[k]):
                ctx = min(candidates, key=lambda c: self._work.get(c, 0))
                self._work[ctx] = self._work.get(ctx, 0) + sizes[k]
                self._where[k] = ctx
        return self._where.get(key)

    def _init_key(self, key, value):
        self._store[key] = value.copyto(cpu(0))

    def _push_key(self, key, values):
        ctx = self.reduce_context(key, values)
        if self._compression is not None:
            values = self._decompressed(key, values, ctx)
        # a new array on ctx: the naive sum for small values, the ring's
        # reduce-scatter for large ones, whichever measured faster
        total = collectives.reduce(values, root=ctx)
        if self._updater is None:
            self._store[key] = total           # a push replaces the value
            return
        stored = self._store[key]
        if stored.context != ctx:              # the weight moves to its reducer
            self._store[key] = stored.copyto(ctx)
            self._move_state(key, ctx, stored.context)
            stored = self._store[key]
        self._updater(key, total, stored)

    def _decompressed(self, key, values, ctx):
        """``values`` as ``ctx`` receives them with 2-bit compression: each
        quantized on its own device, with the residual of that device (one a
        key and position in ``values``, as MXNet's ``CommDevice``), its
        words copied to ``ctx`` and decompressed there.  With one device
        too: every gradient goes through the same quantizer."""
        gc, out = self._compression, []
        for i, v in enumerate(values):
            residual = self._residuals.get((key, i))
            if residual is None or residual.context != v.context:
                residual = self._residuals[(key, i)] = nd.zeros(v.shape, ctx=v.context)
            words = gc.compress(v, residual).as_in_context(ctx)
            out.append(gc.decompress(words, v.shape))
        return out

    def _pull_key(self, key, outs):
        src = self._store[key]
        for o in outs:
            o[:] = src

    def _state_context(self, key):
        src = self._store.get(key)
        return cpu(0) if src is None else src.context
