"""``mx.kv`` (also ``mx.kvstore``): key-value stores for data parallelism.

    kv = mx.kv.create('device')          # or 'local'
    kv.init(0, weight)
    kv.pushpull(0, [g0, g1])             # all-reduce gradients in place

:mod:`.base` is the interface and the registry of store names,
:mod:`.kvstore` the front end every store shares (keys, checks, updater,
optimizer states), :mod:`.local` the in-process stores, :mod:`.dist` the
parameter server across processes (``dist_sync``, ``dist_async``...),
:mod:`.states` the optimizer-states file, :mod:`.compression` the 2-bit
gradient compression of ``kv.set_gradient_compression``.
"""
from .base import KVStoreBase, KVStoreError, TestStore, create
from .kvstore import KVStore
from .local import LocalStore
from .dist.config import DistributedError

__all__ = ['KVStoreBase', 'KVStore', 'LocalStore', 'KVStoreError', 'TestStore',
           'DistributedError', 'create']
