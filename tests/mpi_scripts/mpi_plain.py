"""The harness on mpi4py alone (no d2lmini.horovod).

    mpiexec -n N python mpi_plain.py hello|hang|fail|kill9 [PIDDIR]

* hello: prints rank/size and the Allreduce of each rank's rank + 1.
* hang: every rank writes its pid to PIDDIR, then rank 0 sleeps and the
  others wait in a barrier (a job that never ends by itself).
* fail: rank 1 exits with status 7 at once (``os._exit``: a ``sys.exit``
  would wait in MPI_Finalize for the others, which wait in the barrier),
  the others wait in a barrier.
* kill9: rank 1 kills itself with SIGKILL, the others wait in a barrier.
"""
import os
import signal
import sys
import time

case = sys.argv[1]
if len(sys.argv) > 2:         # first of all: MPI's start can be slow under load
    with open(os.path.join(sys.argv[2], f'pid.{os.environ["PMI_RANK"]}'), 'w') as f:
        f.write(str(os.getpid()))

import numpy as np            # noqa: E402
from mpi4py import MPI        # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
if case == 'hello':
    total = np.zeros(1)
    comm.Allreduce(np.array([rank + 1.0]), total)
    print(f'rank {rank} of {size}: sum {total[0]:g}')
    print(f'rank {rank} to stderr', file=sys.stderr)
elif case == 'hang':
    if rank == 0:
        time.sleep(600)
    comm.Barrier()
elif case in ('fail', 'kill9'):
    if rank == 1:
        if case == 'fail':
            os._exit(7)
        os.kill(os.getpid(), signal.SIGKILL)
    comm.Barrier()
    print(f'rank {rank}: past the barrier')
