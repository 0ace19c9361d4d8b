"""Faults, one per argument (the test checks how the job ends).

    mpiexec -n 2 python faults.py shapes|dtypes|skip_idle|skip_next|kill9|stop_* OUTDIR

A rank that catches a HorovodError writes it to OUTDIR/caught.<rank> (a
file: what a rank prints can be lost when the job is aborted) and raises
it again, so that the package's hook aborts the job.

* shapes: one name, shape (3,) on rank 0 and (4,) on rank 1.
* dtypes: one name, float32 on rank 0 and float64 on rank 1.
* skip_idle: rank 1 skips a collective and then waits: rank 0 must give up
  after HOROVOD_TIMEOUT and end the job.
* skip_next: rank 1 skips a collective and calls the next one.
* kill9: rank 1 kills itself (SIGKILL) in the middle of training (each
  rank writes the number of epochs it finished to OUTDIR/epochs.<rank>).
* stop_mpi, stop_ring, stop_allgather, stop_broadcast: rank 1 stops
  itself (SIGSTOP) in the middle of a collective of 1 MB (allreduce by the
  MPI library or by the ring, allgather, broadcast), after both ranks agreed
  on it; it writes its pid to OUTDIR/pid.1 first (the test kills it).  Rank
  0 must give up after HOROVOD_TIMEOUT and end the job; it then tries one
  more allreduce, which must fail at once, and writes that error to
  OUTDIR/after.0.
"""
import os
import signal
import sys
import time

import numpy as np

import d2lmini.horovod as hvd
from d2lmini import MXNetError, nd

case, outdir = sys.argv[1:3]
hvd.init()
rank = hvd.rank()
print(f'rank {rank}: start', flush=True)
try:
    if case == 'shapes':
        hvd.allreduce(nd.array(np.ones(3 + rank, dtype=np.float32)),
                      name='weights_0').wait_to_read()
    elif case == 'dtypes':
        hvd.allreduce(nd.array(np.ones(3), dtype=['float32', 'float64'][rank]),
                      name='bias_1').wait_to_read()
    elif case == 'skip_idle':
        if rank != 1:
            hvd.allreduce(nd.array(np.ones(3)), name='only_rank_0').wait_to_read()
        else:
            time.sleep(120)
    elif case == 'skip_next':
        if rank != 1:
            hvd.allreduce(nd.array(np.ones(3)), name='first').wait_to_read()
        hvd.allreduce(nd.array(np.ones(3)), name='second').wait_to_read()
    elif case == 'kill9':
        from _net import make_net, train
        net = make_net()
        trainer = hvd.DistributedTrainer(net.collect_params(), 'sgd',
                                         {'learning_rate': 0.1})
        for epoch in range(1000):
            if rank == 1 and epoch == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            train(net, trainer.step)
            with open(os.path.join(outdir, f'epochs.{rank}'), 'w') as f:
                f.write(str(epoch + 1))
    elif case.startswith('stop_'):
        from d2lmini.horovod import ops, ring
        what = case[len('stop_'):]

        def stop():
            with open(os.path.join(outdir, 'pid.1'), 'w') as f:
                f.write(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGSTOP)
        # rank 1 stops at its second wait: in ops the first one is the
        # agreement's; in the ring, its first message has arrived
        module, fn = (ring, 'wait') if what == 'ring' else (ops, 'finish')
        if rank == 1:
            waits, calls = getattr(module, fn), []

            def stopping(*args, **kwargs):
                calls.append(args)
                if len(calls) == 2:
                    stop()
                return waits(*args, **kwargs)
            setattr(module, fn, stopping)
        x = nd.ones(1 << 18)                               # 1 MB
        call = {'mpi': lambda: hvd.allreduce(x, name='big', algorithm='mpi'),
                'ring': lambda: hvd.allreduce(x, name='big', algorithm='ring'),
                'allgather': lambda: hvd.allgather(x, name='big'),
                'broadcast': lambda: hvd.broadcast(x, 0, name='big')}[what]
        try:
            call().wait_to_read()
        except hvd.HorovodError:
            try:
                hvd.allreduce(x, name='next').wait_to_read()
            except hvd.HorovodError as e:
                with open(os.path.join(outdir, f'after.{rank}'), 'w') as f:
                    f.write(str(e))
            raise
    print(f'rank {rank}: FINISHED', flush=True)
except hvd.HorovodError as e:
    # written whole, then renamed: the other rank's abort may kill this one
    # at any moment, and a half-written caught.<rank> would read as empty
    tmp = os.path.join(outdir, f'.tmp.{rank}')
    with open(tmp, 'w') as f:
        f.write(f'rank {rank}: caught {type(e).__name__} '
                f'MXNetError={isinstance(e, MXNetError)} '
                f'RuntimeError={isinstance(e, RuntimeError)}: {e}\n')
    os.replace(tmp, os.path.join(outdir, f'caught.{rank}'))
    raise                # uncaught: d2lmini.horovod aborts the whole job
