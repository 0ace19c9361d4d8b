"""Allreduce of GPU arrays with NCCL, through CuPy: one GPU per rank.

NCCL runs its own ring (or tree) between the GPUs, over NVLink or PCIe,
without copying the gradients to host memory.  The ranks agree on a
communicator through MPI once (rank 0 makes NCCL's unique id and
broadcasts its bytes); after that each allreduce is one NCCL call on the
tensor's device, followed by waiting for that device's stream (polled,
for at most ``HOROVOD_TIMEOUT`` seconds, as every wait: :mod:`.wait`).

Written for machines with GPUs and not run on the CPU-only machines this
package is developed on (``hvd.nccl_built()`` says whether it is used).
"""
import numpy as np

from .. import backend
from .wait import finish

__all__ = ['usable', 'allreduce_']

_comms = {}                      # device id -> NcclCommunicator


def usable(array):
    """Whether ``array`` (a backend array) is summed with NCCL."""
    return backend.is_gpu_array(array) and backend.nccl() is not None


def _communicator(mpi_comm, device_id):
    if device_id not in _comms:
        nccl = backend.nccl()
        uid = np.zeros(128, np.int8)
        if mpi_comm.rank == 0:
            uid[:] = np.array(nccl.get_unique_id(), np.int64).astype(np.int8)
        finish(mpi_comm.Ibcast(uid, root=0), "for rank 0's NCCL id")
        _comms[device_id] = nccl.NcclCommunicator(mpi_comm.size, tuple(int(v) for v in uid),
                                                  mpi_comm.rank)
    return _comms[device_id]


def allreduce_(mpi_comm, array):
    """Sum the CuPy ``array`` over the ranks, in place on its GPU."""
    nccl = backend.nccl()
    types = {'float16': nccl.NCCL_FLOAT16, 'float32': nccl.NCCL_FLOAT32,
             'float64': nccl.NCCL_FLOAT64, 'int32': nccl.NCCL_INT32,
             'int64': nccl.NCCL_INT64, 'uint8': nccl.NCCL_UINT8}
    device = array.device
    with device:
        comm = _communicator(mpi_comm, device.id)
        stream = backend.xp_of(array).cuda.get_current_stream()
        comm.allReduce(array.data.ptr, array.data.ptr, array.size,
                       types[array.dtype.name], nccl.NCCL_SUM, stream.ptr)
        finish(lambda: stream.done, 'for the GPU (NCCL)')
    return array
