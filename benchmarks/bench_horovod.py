"""d2lmini.horovod on this machine: the from-scratch ring allreduce against
the MPI library's own, and LeNet on Fashion-MNIST with 1 and 2 ranks.

Rows:

* ``allreduce S, n ranks``: float32 buffers of S = 4 KB ... 64 MB summed in
  place over ``n`` = 2 and 4 MPI ranks (``mpiexec -n n``, one process per
  rank, MPICH's shared memory between them), once by
  ``d2lmini.horovod.ring.ring_allreduce`` (reduce-scatter + all-gather over
  point-to-point messages) and once by ``comm.Allreduce`` (MPICH's own).
  ``ours`` is the ring's bus bandwidth, ``reference`` MPI's, both
  ``2 (n - 1) / n * bytes / time`` (NCCL's convention: the bytes each rank
  must send in an optimal allreduce, comparable across ``n``).  A time is
  the slowest rank's mean over a batch of calls; the two algorithms'
  batches alternate, and the median batch counts.  The issue's target:
  ratio >= 0.8 at 64 MB with 2 and 4 ranks.
* ``LeNet Fashion-MNIST, n rank(s)``: the multi-GPU chapter's LeNet
  (``d2l.lenet_multigpu``), SGD with momentum, trained ``EPOCHS`` epochs by
  ``hvd.DistributedTrainer`` with a global batch of 256 (``256 / n`` per
  rank), each rank reading its own part of the training set
  (``d2l.load_data_fashion_mnist(..., num_parts=hvd.size(),
  part_index=hvd.rank())``).  Both runs make the same number of updates of
  the same global batch size, so their accuracies are comparable.  ``ours``
  is images/s of all ranks (training only, the slowest rank's time; the
  better of the epoch and of a later ``TIMING_STEPS``-step run, the rank
  counts alternating: other jobs on a shared machine only ever slow a run
  down); ``reference`` the 1-rank run's; a second row per run gives the
  test accuracy on the 10,000 test images after the epoch(s).  Without the Fashion-MNIST files the
  rows use synthetic images and say so.

Each rank gets one BLAS/OpenMP thread; this machine has few cores, so 4
ranks share them.  The worker side is this same file, run by ``mpiexec``:
``python bench_horovod.py --worker sweep`` (or ``lenet``); rank 0 prints one
line ``BENCH_HVD {json}``.

    python benchmarks/bench_horovod.py           # all rows
    python benchmarks/run.py horovod             # the same, into results.md
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, os.path.join(ROOT, 'tests')):
    if p not in sys.path:
        sys.path.insert(0, p)

SIZES = [(4 << 10) * 4 ** i for i in range(8)]          # 4 KB .. 64 MB
RANKS = (2, 4)
BATCH_SECONDS = 0.05          # each timed batch of calls lasts about this long
REPEAT = 7                    # batches per algorithm and size (median)
EPOCHS = 1
TIMING_STEPS = 60            # a second, shorter LeNet run for images/s
GLOBAL_BATCH = 256
LENET_PARAMS = {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-4}
TIMEOUT = 300.0
TAG = 'BENCH_HVD '
_now = time.perf_counter


def _fmt_bytes(n):
    return f'{n >> 20} MB' if n >= 1 << 20 else f'{n >> 10} KB'


def busbw(nbytes, seconds, n):
    """Bus bandwidth, bytes/s: what each rank sends in an optimal allreduce
    (``2 (n - 1) / n`` times the buffer), over the time."""
    return 2 * (n - 1) / n * nbytes / seconds


# ------------------------------------------------------------ worker side
def _timed(comm, fn, number):
    """The slowest rank's mean seconds per call over ``number`` calls."""
    from mpi4py import MPI
    comm.Barrier()
    t = _now()
    for _ in range(number):
        fn()
    return comm.allreduce((_now() - t) / number, op=MPI.MAX)


def worker_sweep(sizes=SIZES, repeat=REPEAT, batch_seconds=BATCH_SECONDS):
    """In every rank: seconds per allreduce, ring and MPI, for each size."""
    from mpi4py import MPI
    from d2lmini.horovod.ring import ring_allreduce
    comm = MPI.COMM_WORLD
    rows = []
    for nbytes in sizes:
        # zeros stay zeros however often they are summed (no overflow to inf)
        buf = np.zeros(nbytes // 4, np.float32)
        algos = {'ring': lambda: ring_allreduce(comm, buf),
                 'mpi': lambda: comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)}
        # warm up both, and size a batch to last about batch_seconds
        one = max(_timed(comm, f, 1) for f in algos.values())
        one = max(one, _timed(comm, algos['ring'], 1))
        number = max(1, min(2000, int(batch_seconds / max(one, 1e-7))))
        times = {a: [] for a in algos}
        for _ in range(repeat):
            for a, f in algos.items():
                times[a].append(_timed(comm, f, number))
        check = np.full(nbytes // 4, comm.rank + 1, np.float32)
        ring_allreduce(comm, check)                  # the ring sums right
        expected = comm.size * (comm.size + 1) / 2
        if not np.all(check == expected):
            raise RuntimeError(f'ring_allreduce of {nbytes} bytes gave '
                               f'{check[:3]}..., expected {expected}')
        rows.append({'bytes': nbytes, 'number': number,
                     **{f'{a}_s': statistics.median(t) for a, t in times.items()},
                     **{f'{a}_best_s': min(t) for a, t in times.items()}})
    return {'size': comm.size, 'rows': rows}


def _fashion_mnist_found():
    from d2lmini.gluon.data.vision import fashion_mnist_files as f
    try:
        for train in (True, False):
            f.find_or_download(train, download=False)
        return True
    except Exception:
        return False


def _synthetic_iters(batch, rank, size, n_train=6000, n_test=1000):
    """Random images in place of Fashion-MNIST (accuracy is then chance),
    host batches as a DataLoader gives."""
    from d2lmini import cpu, nd

    def host(a):
        return nd.array(a, ctx=cpu())
    rng = np.random.default_rng(0)
    X = rng.random((n_train, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, n_train)
    part = slice(rank * n_train // size, (rank + 1) * n_train // size)
    train = [(host(X[part][i:i + batch]), host(y[part][i:i + batch]))
             for i in range(0, n_train // size, batch)]
    test = [(host(X[:n_test][i:i + 256]), host(y[:n_test][i:i + 256]))
            for i in range(0, n_test, 256)]
    return train, test


def worker_lenet(epochs=EPOCHS, global_batch=GLOBAL_BATCH, max_steps=None,
                 synthetic=False):
    """In every rank: train LeNet with DistributedTrainer on this rank's part
    (``max_steps`` per epoch at most: for the tests)."""
    import d2lmini as mx
    import d2lmini.horovod as hvd
    from d2lmini import autograd, d2l, gluon, init
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    batch = global_batch // size
    real = not synthetic and _fashion_mnist_found()
    if real:
        train_iter, test_iter = d2l.load_data_fashion_mnist(
            batch, num_parts=size, part_index=rank)
    else:
        train_iter, test_iter = _synthetic_iters(batch, rank, size)
    # one device a rank: its local GPU when the default context is a GPU (as
    # Horovod's examples pick mx.gpu(hvd.local_rank())), else the default
    ctx = mx.current_context()
    if ctx.device_type == 'gpu':
        ctx = mx.gpu(hvd.local_rank() % mx.num_gpus())
    mx.random.seed(0)
    np.random.seed(rank)
    net = d2l.lenet_multigpu()
    net.initialize(init.Xavier(), ctx=ctx)
    net(mx.nd.zeros((1, 1, 28, 28), ctx=ctx))
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = hvd.DistributedTrainer(net.collect_params(), 'sgd',
                                     dict(LENET_PARAMS))
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    seconds, images, steps = 0.0, 0, 0
    for epoch in range(epochs):
        hvd.allreduce(mx.nd.zeros(1), name=f'epoch{epoch}').wait_to_read()
        t = _now()
        for X, y in train_iter:
            if max_steps is not None and steps >= max_steps * (epoch + 1):
                break
            X, y = X.as_in_context(ctx), y.as_in_context(ctx)   # host batches
            with autograd.record():
                l_ = loss(net(X), y)
            l_.backward()
            trainer.step(X.shape[0])
            images += X.shape[0]
            steps += 1
        mx.nd.waitall()
        seconds += _now() - t
    slowest = float(hvd.allgather(mx.nd.array([seconds]), name='seconds')
                    .asnumpy().max())
    total = int(hvd.allreduce(mx.nd.array([float(images)]), average=False,
                              name='images').asnumpy()[0])
    acc = d2l.evaluate_accuracy_gpu(net, test_iter, ctx) if rank == 0 else None
    hvd.shutdown()
    return {'size': size, 'images': total, 'steps': steps, 'seconds': slowest,
            'images_per_s': total / slowest, 'test_acc': acc, 'epochs': epochs,
            'batch_per_rank': batch, 'data': 'fashion-mnist' if real else 'synthetic'}


# -------------------------------------------------------------- launcher side
def run_mpi(args, n, timeout=TIMEOUT, env=None):
    """Run this file with ``args`` as ``n`` MPI ranks; rank 0's result."""
    import mpi_job
    job = mpi_job.run(__file__, n, args, env=env, timeout=timeout)
    if job.rc != 0 or job.killed:
        raise RuntimeError(f'bench_horovod {" ".join(map(str, args))}: '
                           f'{job.report()[-4000:]}')
    lines = [ln for ln in job.out(0).splitlines() if ln.startswith(TAG)]
    if not lines:
        raise RuntimeError(f'no {TAG.strip()} line from rank 0:\n{job.report()}')
    return json.loads(lines[-1][len(TAG):])


def sweep_rows(ranks=RANKS, sizes=SIZES, repeat=REPEAT):
    rows = []
    for n in ranks:
        res = run_mpi(['--worker', 'sweep', '--repeat', repeat,
                       '--sizes', ','.join(map(str, sizes))], n)
        for r in res['rows']:
            ring = busbw(r['bytes'], r['ring_s'], n) / 1e6
            mpi = busbw(r['bytes'], r['mpi_s'], n) / 1e6
            target = '; target ratio >= 0.8' if r['bytes'] == 64 << 20 else ''
            rows.append({'name': f'allreduce {_fmt_bytes(r["bytes"])}, {n} ranks',
                         'ours': round(ring, 1), 'reference': round(mpi, 1),
                         'ratio': round(ring / mpi, 3),
                         'unit': 'MB/s bus bandwidth 2(n-1)/n*bytes/time, '
                                 'ring_allreduce (reference: MPICH Allreduce, '
                                 f'same run, median of {repeat}{target})'})
    return rows


def lenet_rows(ranks=(1, 2), epochs=EPOCHS, timing_steps=TIMING_STEPS):
    """One full run per rank count (accuracy, images/s), then, alternating
    with the other counts, a short run of ``timing_steps`` steps: images/s
    is the better of the two (other jobs on the machine only slow a run)."""
    res = {n: run_mpi(['--worker', 'lenet', '--epochs', epochs], n)
           for n in ranks}
    speed = {n: r['images_per_s'] for n, r in res.items()}
    for n in ranks:
        short = run_mpi(['--worker', 'lenet', '--max-steps', timing_steps], n)
        speed[n] = max(speed[n], short['images_per_s'])
    ref = ranks[0]
    rows = []
    for n, r in res.items():
        what = (f'LeNet {r["data"]}, {n} rank(s), {r["epochs"]} epoch(s), '
                f'batch {r["batch_per_rank"]} per rank')
        rows.append({'name': what, 'ours': round(speed[n], 1),
                     'reference': round(speed[ref], 1),
                     'ratio': round(speed[n] / speed[ref], 3),
                     'unit': f'images/s, all ranks (reference: {ref} rank; 1 BLAS '
                             f'thread per rank; DistributedTrainer; best of the '
                             f'epoch and a {timing_steps}-step run)'})
        rows.append({'name': what + ': test accuracy', 'ours': round(r['test_acc'], 4),
                     'reference': round(res[ref]['test_acc'], 4),
                     'ratio': round(r['test_acc'] / res[ref]['test_acc'], 3),
                     'unit': f'accuracy on the 10,000 test images after '
                             f'{r["steps"]} steps of global batch {GLOBAL_BATCH} '
                             f'(reference: {ref} rank)'})
    return rows


def run():
    return [dict(r, bench='horovod') for r in sweep_rows() + lenet_rows()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--worker', choices=['sweep', 'lenet'],
                    help='run as an MPI rank (under mpiexec)')
    ap.add_argument('--sizes', default=','.join(map(str, SIZES)),
                    help='sweep: buffer sizes in bytes, comma-separated')
    ap.add_argument('--repeat', type=int, default=REPEAT)
    ap.add_argument('--batch-seconds', type=float, default=BATCH_SECONDS)
    ap.add_argument('--epochs', type=int, default=EPOCHS)
    ap.add_argument('--max-steps', type=int, default=None,
                    help='lenet: at most this many steps an epoch')
    ap.add_argument('--synthetic', action='store_true',
                    help='lenet: random images even if Fashion-MNIST is there')
    args = ap.parse_args(argv)
    if args.worker:
        if args.worker == 'sweep':
            res = worker_sweep([int(s) for s in args.sizes.split(',')],
                               args.repeat, args.batch_seconds)
        else:
            res = worker_lenet(args.epochs, max_steps=args.max_steps,
                               synthetic=args.synthetic)
        from mpi4py import MPI
        if MPI.COMM_WORLD.rank == 0:
            print(TAG + json.dumps(res), flush=True)
        return 0
    for r in run():
        print(r)
    return 0


if __name__ == '__main__':
    sys.exit(main())
