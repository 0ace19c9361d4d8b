"""Ring allreduce over MPI point-to-point messages, from scratch.

``n`` ranks stand in a ring; each sends only to its right neighbour and
receives only from its left one.  The buffer is cut into ``n`` chunks.

1. *Reduce-scatter*, ``n - 1`` steps: at step ``s`` rank ``r`` sends chunk
   ``(r - s) mod n`` and receives chunk ``(r - s - 1) mod n``, which it adds
   to its own.  Afterwards rank ``r`` holds the full sum of chunk
   ``(r + 1) mod n``.
2. *All-gather*, ``n - 1`` steps: the summed chunks travel once more around
   the ring, each received straight into its place.

Every rank sends ``2 (n - 1) / n`` times the buffer, whatever ``n``: the
ring uses every link all the time and no link more than the others.
Within a step the incoming chunk arrives in segments, all posted at once
(non-blocking), and each segment is added as soon as it is there, so the
additions overlap the transfer of the rest.  Every wait is
:func:`.wait.wait`: with a ``timeout``, a neighbour that stops (dies,
hangs) makes this rank raise ``HorovodError`` instead of waiting forever.
"""
import numpy as np

from .basics import HorovodError
from .wait import wait

__all__ = ['ring_allreduce', 'SEGMENT']

SEGMENT = 1 << 20          # bytes per message within a chunk


def _segments(lo, hi, per):
    return [(a, min(a + per, hi)) for a in range(lo, hi, per)] or [(lo, hi)]


def ring_allreduce(comm, buf, op='sum', timeout=None):
    """Sum (``op='sum'``) ``buf`` over the ranks of ``comm``, in place.

    ``buf`` is a C-contiguous NumPy array, of the same shape and dtype on
    every rank.  Returns ``buf``.  ``timeout``: the longest wait, in
    seconds, for one message from or to a neighbour (``None``: no limit;
    ``hvd.allreduce`` passes ``HOROVOD_TIMEOUT``); past it, ``HorovodError``.

    >>> ring_allreduce(MPI.COMM_WORLD, np.ones(10))   # doctest: +SKIP
    """
    if op != 'sum':
        raise ValueError(f"ring_allreduce: op must be 'sum', got {op!r}")
    n, r = comm.size, comm.rank
    if n == 1 or buf.size == 0:
        return buf
    if not buf.flags.c_contiguous:
        raise ValueError('ring_allreduce: buf must be C-contiguous (it is summed in place)')
    flat = buf.reshape(-1)
    edges = np.linspace(0, flat.size, n + 1).astype(np.int64)
    chunk = lambda i: (int(edges[i % n]), int(edges[i % n + 1]))   # noqa: E731
    right, left = (r + 1) % n, (r - 1) % n
    per = max(1, SEGMENT // flat.itemsize)
    scratch = np.empty(int(np.diff(edges).max()), flat.dtype)

    def finish(requests, step):
        if not wait(requests, timeout):
            raise HorovodError(
                f'rank {r}: waited {timeout:g} s (HOROVOD_TIMEOUT) at step '
                f'{step + 1} of {2 * (n - 1)} of the ring, for a message from '
                f'rank {left} or to rank {right}')
    for s in range(n - 1):                              # reduce-scatter
        (slo, shi), (rlo, rhi) = chunk(r - s), chunk(r - s - 1)
        recvs = [comm.Irecv(scratch[a - rlo:b - rlo], source=left, tag=s)
                 for a, b in _segments(rlo, rhi, per)]
        sends = [comm.Isend(flat[a:b], dest=right, tag=s)
                 for a, b in _segments(slo, shi, per)]
        for req, (a, b) in zip(recvs, _segments(rlo, rhi, per)):
            finish(req, s)
            flat[a:b] += scratch[a - rlo:b - rlo]       # while the rest arrives
        finish(sends, s)
    for s in range(n - 1):                              # all-gather
        (slo, shi), (rlo, rhi) = chunk(r + 1 - s), chunk(r - s)
        reqs = [comm.Irecv(flat[a:b], source=left, tag=n + s)
                for a, b in _segments(rlo, rhi, per)]
        reqs += [comm.Isend(flat[a:b], dest=right, tag=n + s)
                 for a, b in _segments(slo, shi, per)]
        finish(reqs, n - 1 + s)
    return buf
