"""The engine across a process's life: draining at exit, and ``fork``.

The streams' workers (:mod:`.stream`) are daemon threads.  At a normal exit
this module finishes the pushed work first, as MXNet does (an error no sync
point read is then printed); after Ctrl-C it drops it.  Around a ``fork``
it finishes the queued work in the parent and gives the child's CPU
streams new workers.
"""
import atexit
import concurrent.futures.thread  # noqa: F401 - its exit hook before ours
import functools
import os
import sys
import threading
from queue import Empty

from ..base import MXNetError
from . import stream as _stream
from .stream import EngineError, waitall


# --- process life ------------------------------------------------------------------
# At a normal exit the engine finishes the pushed work, as MXNet does: the
# worker threads are daemons, so the interpreter would not wait for them on
# its own, and a worker left inside a kernel while Python tears itself down
# may crash.  The drain must run early: the elementwise kernels
# (ndarray/cpu_kernels.py) hand work to a concurrent.futures pool, which
# refuses new work ("cannot schedule new futures after interpreter
# shutdown") once its own exit hook has run.  Both hooks are
# threading._register_atexit hooks, run in reverse order of registration,
# before the atexit ones; importing concurrent.futures.thread above
# registers its hook before ours, so ours runs first.  A process ended by
# Ctrl-C (an uncaught KeyboardInterrupt, or a second one while draining)
# drops its pending work instead of computing results no one will read;
# one killed by a signal runs no Python at all.
_EXIT = {'done': False}


def _interrupted():
    # The uncaught exception that ends the program (set before the hooks run).
    last = getattr(sys, 'last_exc', None) or getattr(sys, 'last_value', None)
    return isinstance(last, KeyboardInterrupt)


def _drop_pending():
    # Empty every queue: a worker finishes at most the op it is running.
    for s in list(_stream._STREAMS.values()):
        try:
            while True:
                s._q.get_nowait()
        except Empty:
            pass


def _at_exit():
    if _EXIT['done']:
        return
    _EXIT['done'] = True
    if _interrupted():
        _drop_pending()
        return
    try:
        waitall()
    except KeyboardInterrupt:            # Ctrl-C while draining: stop now
        _drop_pending()
    except EngineError as e:             # a real failure no one has read
        first = str(e).splitlines()[0]
        print(f'd2lmini: an operation failed and no sync point read its error: '
              f'{first}', file=sys.stderr)


def _before_fork():
    # Only the forking thread survives a fork, so no operation may be half
    # done then: finish the queued work first (as MXNet stops its engine).
    for s in list(_stream._STREAMS.values()):
        s.wait(s.pushed)


def _after_fork_in_child():
    # Give the CPU streams new workers; forget the GPU ones (CUDA does not
    # survive a fork).  Errors not yet reported stay with the streams.
    _stream._STREAMS_LOCK = threading.Lock()
    for key, s in list(_stream._STREAMS.items()):
        if s.is_gpu:
            del _stream._STREAMS[key]
            # The parent's GPU arrays still name this stream, whose worker did
            # not survive: an operation on one fails at once instead of
            # waiting forever for it.
            s.push = functools.partial(_forked_gpu_push, s)
        else:
            s._start()


def _forked_gpu_push(stream, *args, **kwargs):
    raise MXNetError(
        f'{stream.ctx}: this array was made on a GPU by the parent process, '
        f'before a fork; CUDA does not survive a fork, so a forked child '
        f'cannot use it. Make the arrays again in the child (or fork before '
        f'the first GPU work, or use multiprocessing with "spawn").')


if hasattr(threading, '_register_atexit'):      # CPython 3.9+
    threading._register_atexit(_at_exit)
else:
    atexit.register(_at_exit)
if hasattr(os, 'register_at_fork'):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
