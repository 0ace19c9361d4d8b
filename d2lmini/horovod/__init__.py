"""``import d2lmini.horovod as hvd``: Horovod's MXNet API over MPI.

One process per device, started by MPI (``mpiexec -n 4 python
train.py``); gradients summed by allreduce, no parameter servers::

    hvd.init()
    net.initialize(ctx=mx.cpu(hvd.local_rank()))
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = hvd.DistributedTrainer(net.collect_params(), 'sgd',
                                     {'learning_rate': 0.1})
    ...
    trainer.step(batch_size)            # the local batch size

Code written for ``horovod.mxnet`` runs by changing that one import.

===================  ==========================================================
:mod:`.basics`       ``init``, ``size``, ``rank``, ``local_rank``; the settings
:mod:`.ring`         the ring allreduce over MPI point-to-point, from scratch
:mod:`.ops`          ``allreduce``, ``grouped_allreduce`` (tensor fusion),
                     ``allgather``, ``broadcast``, ``broadcast_parameters``;
                     the ranks' agreement on each call
:mod:`.wait`         every wait bounded by ``HOROVOD_TIMEOUT``
:mod:`.trainer`      ``DistributedTrainer``, ``DistributedOptimizer``
:mod:`.compression`  ``Compression.none`` / ``fp16`` for the gradients
:mod:`.nccl`         GPU tensors summed on their device by NCCL (through CuPy)
===================  ==========================================================
"""
from .basics import (HorovodError, init, is_initialized, local_rank, local_size,
                     mpi_built, mpi_enabled, nccl_built, rank, settings, shutdown,
                     size)
from .ops import (allgather, allreduce, allreduce_, broadcast, broadcast_,
                  broadcast_parameters, grouped_allreduce)
from .compression import Compression
from .ring import ring_allreduce
from .trainer import DistributedOptimizer, DistributedTrainer

__all__ = ['HorovodError', 'init', 'shutdown', 'is_initialized', 'size', 'rank',
           'local_rank', 'local_size', 'mpi_built', 'mpi_enabled', 'nccl_built',
           'settings', 'allreduce',
           'allreduce_', 'grouped_allreduce', 'allgather', 'broadcast',
           'broadcast_', 'broadcast_parameters', 'ring_allreduce',
           'DistributedTrainer', 'DistributedOptimizer', 'Compression']
