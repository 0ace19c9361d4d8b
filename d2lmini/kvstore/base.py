"""The KVStore interface, the registry of stores, and ``create``.

Every store, in process or distributed, is a :class:`KVStoreBase`: it sums
the values pushed under a key and lets you pull the result (``pushpull`` is
all-reduce), ``broadcast`` copies one value out, and ``set_optimizer`` makes
the store update a stored weight with every push.  A new kind of store
registers itself under its class name::

    @mx.kv.KVStoreBase.register
    class MyStore(mx.kv.KVStoreBase):
        ...
    kv = mx.kv.create('mystore')

``create('local')`` and ``create('device')`` (:mod:`d2lmini.kvstore.local`)
and ``create('dist_sync')``, ``'dist_async'``, ``'dist_sync_device'``,
``'dist_device_async'`` (:mod:`d2lmini.kvstore.dist`, in a process of a
distributed job) are built in; ``horovod`` is a name that its store
registers when it is imported.
"""
import warnings

from ..base import MXNetError

__all__ = ['KVStoreBase', 'KVStoreError', 'create', 'TestStore']


class KVStoreError(MXNetError, ValueError):
    """A KVStore call with bad input (raised before anything changed)."""


class KVStoreBase:
    """What every key-value store offers (MXNet 1.x's ``KVStoreBase``)."""

    #: capability name for :meth:`is_capable`: the store can run an optimizer
    OPTIMIZER = 'optimizer'
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Copy ``value`` (rank 0's) into every array of ``out``."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Sum ``value`` (a list: one array per device) into ``out``
        (default: ``value`` itself): all-reduce."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` on the stored weight at every push."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether this store supports ``capability`` (e.g. ``OPTIMIZER``)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer's state (momenta, ...) to the file ``fname``;
        ``dump_optimizer=True``: the optimizer itself too."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Read back what :meth:`save_optimizer_states` wrote."""
        raise NotImplementedError()

    @property
    def type(self):
        """The name :func:`create` knows this store by, e.g. ``'local'``."""
        raise NotImplementedError()

    @property
    def rank(self):
        """This worker's number, 0 to ``num_workers - 1``."""
        raise NotImplementedError()

    @property
    def num_workers(self):
        """How many workers share the store (1 in one process)."""
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Class decorator: ``create(klass.__name__.lower())`` makes one."""
        if not isinstance(klass, type):
            raise TypeError(f'register expects a class, got {klass!r}')
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f'kvstore {klass.__module__}.{klass.__name__} overrides '
                          f'the registered {old.__module__}.{old.__name__}')
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """The smallest possible store (MXNet's, for tests): all-reduce and
    broadcast by plain copies, no optimizer."""

    def broadcast(self, key, value, out, priority=0):
        for o in (out if isinstance(out, list) else [out]):
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        values = value if isinstance(value, (list, tuple)) else [value]
        ctx = values[0].context
        total = values[0] if len(values) == 1 else \
            sum(v.as_in_context(ctx) for v in values)
        outs = values if out is None else (out if isinstance(out, list) else [out])
        for o in outs:
            if o is not total:
                o[:] = total

    @staticmethod
    def is_capable(capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f'Unknown capability: {capability}')

    @property
    def type(self):
        return 'teststore'

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1


# Names whose stores live in modules not written yet (issue 9): they
# register themselves on import; until then ``create`` says so.
_LATER = ('horovod', 'byteps', 'nccl')


def create(name='local'):
    """Make a KVStore: ``'local'`` (reduce on the CPU), ``'device'`` (reduce
    on the devices), ``'dist_sync'`` & co. (on parameter servers: in a
    worker of a distributed job), or any registered name.

    >>> kv = mx.kv.create('device')
    >>> kv.type
    'device'
    """
    if not isinstance(name, str):
        raise TypeError(f'name must be a string, got {type(name).__name__}')
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    from . import local
    if name in local.NAMES:
        return local.LocalStore(name)
    if name.startswith('dist'):
        from .dist import store
        if name in store.NAMES:
            return store.DistKVStore(name)
    known = sorted(set(local.NAMES) | set(KVStoreBase.kv_registry))
    if any(name.startswith(p) for p in _LATER):
        raise KVStoreError(
            f"unknown kvstore {name!r}: no store of that name is registered in "
            f"this process (the distributed stores register theirs when their "
            f"module is imported). Known: {known}")
    raise KVStoreError(f'unknown kvstore {name!r}: use one of {known}, or register '
                       f'a class with @mx.kv.KVStoreBase.register')
