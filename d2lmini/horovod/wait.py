"""Waiting for the other ranks, for at most ``HOROVOD_TIMEOUT`` seconds.

MPI's blocking calls (``Allreduce``, ``Bcast``, ``Request.Wait``) wait
forever: a rank that dies or is stopped in the middle of a collective
keeps the others inside the call, spinning on a core.  So every transfer
of :mod:`d2lmini.horovod` is posted non-blocking (``Iallreduce``,
``Isend``/``Irecv``, ``Iallgather``, ``Ibcast``) and :func:`wait` polls it
until it completes or the deadline passes.  Past the deadline the
transfer is still posted and may complete later, into the buffers of a
collective the program has given up, so nothing of the job can be trusted:
:func:`give_up` raises ``HorovodError``, every later collective of this
rank raises it again, and the error, uncaught, aborts the job (see
:func:`.basics.init`).

Polling is also what moves the bytes: MPICH makes progress inside MPI
calls, so a wait begins with ``spin`` seconds of back-to-back polls, as
MPI's own ``Wait`` does (yielding the core after each one, to ranks that
share it: on 4 ranks and 2 cores, yielding every 16th poll made a 64 KB
ring 25% slower).  A wait that lasts longer naps between polls,
the pauses doubling up to ``nap``, so that a rank waiting for one that
has stopped leaves its core idle.
"""
import os
import time

from .basics import HorovodError, _State

__all__ = ['wait', 'finish', 'give_up', 'SPIN', 'NAP']

SPIN = 0.05             # seconds of busy polling before the first nap
NAP = 1e-3              # the longest nap between two polls
_YIELD_EVERY = 1        # polls between two yields of the core while spinning
_yield = getattr(os, 'sched_yield', lambda: time.sleep(0))


def wait(requests, timeout, spin=SPIN, nap=NAP):
    """Wait until ``requests`` (an mpi4py request, a list of them, or a
    function that says whether the work is done) complete: True, or
    False when ``timeout`` seconds (``None``: no limit) passed first.

    After False the requests are still posted: the caller raises
    :class:`HorovodError`, and the job cannot go on.  With no limit,
    requests are left to MPI's own blocking wait, which has nothing to
    check and polls faster than Python can: on 4 ranks sharing 2 cores,
    ``ring_allreduce`` of 64 KB moved 100-150 MB/s that way against 70-100
    polled from here.

    >>> wait(comm.Iallreduce(MPI.IN_PLACE, buf), 60.0)  # doctest: +SKIP
    True
    """
    if callable(requests):
        done = requests
    elif isinstance(requests, list):
        from mpi4py import MPI
        if timeout is None:
            MPI.Request.Waitall(requests)
            return True
        done = lambda: MPI.Request.Testall(requests)          # noqa: E731
    elif timeout is None:
        requests.Wait()
        return True
    else:
        done = requests.Test
    if done():
        return True
    start, pause, polls = time.monotonic(), 1e-6, 0
    while not done():
        waited = time.monotonic() - start
        if timeout is not None and waited > timeout:
            return False
        if waited < spin:
            polls += 1
            if polls % _YIELD_EVERY == 0:
                _yield()
        else:
            time.sleep(pause)
            pause = min(2 * pause, nap)
    return True


def finish(requests, what, spin=SPIN, nap=NAP):
    """:func:`wait` for ``requests`` at most ``HOROVOD_TIMEOUT`` seconds;
    past that, :func:`give_up`: ``'rank <r>: waited <t> s (HOROVOD_TIMEOUT)
    <what>'``."""
    timeout = _State.settings['timeout']
    if not wait(requests, timeout, spin, nap):
        give_up(f'rank {_State.comm.rank}: waited {timeout:g} s (HOROVOD_TIMEOUT) {what}')


def give_up(message):
    """Raise ``HorovodError(message)``, and make every later collective of
    this rank raise it too (a transfer is still posted: the job cannot go on)."""
    _State.failed = message
    raise HorovodError(message)
