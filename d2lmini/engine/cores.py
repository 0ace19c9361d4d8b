"""Sharing the CPU cores: BLAS threads per operation, and the machine's load.

Each ``cpu(i)`` device runs its kernels on its own stream's worker thread
(:mod:`.stream`), and both NumPy's matmul (OpenBLAS) and the elementwise
kernels of :mod:`d2lmini.ndarray.cpu_kernels` can split one operation over
several threads.  This module decides how many: :func:`cpu_threads` shares
the usable cores among the CPU devices at work and leaves the cores other
programs keep busy (:func:`free_cores`); :func:`set_blas_threads` fixes the
number instead.  OpenBLAS's thread count is set through its own C API,
found among the loaded libraries (``/proc/self/maps`` and ``ctypes``).
"""
import ctypes
import os
import threading
import time

from . import stream as _stream

__all__ = ['blas_threads', 'cpu_threads', 'free_cores', 'set_blas_threads']

_now = time.perf_counter


# --- CPU threads: sharing the cores among cpu(i) devices -------------------------
# Each cpu(i) runs its kernels on its own worker thread, and NumPy's matmul
# calls OpenBLAS, which by default uses every core for each call.  Two devices
# each running a 2-thread GEMM on 2 cores oversubscribe: 4 busy threads, and
# OpenBLAS's threads spin while they wait for each other.  Measured on the
# 2-core development machine, eight 1000x1000 float32 matmuls split over
# cpu(0) and cpu(1) took 0.28-0.33 s with 2 BLAS threads per call and 0.16 s
# with 1.  So, as MXNet sizes its OpenMP pools by cores / workers, while k
# CPU devices are at work every BLAS call gets cores // k threads (never more
# than OpenBLAS started with); with one device at work nothing changes.  A
# device is at work while it has operations queued or has run one in the
# last half second, so a program that trains on cpu(0) alone after using
# cpu(1) gets every core again, with no setting to change.
# set_blas_threads(n) fixes the number, set_blas_threads(None) restores the
# policy.  The count is set through OpenBLAS's own C API, found among the
# loaded libraries (as threadpoolctl does); other BLAS libraries are left
# alone.  NumPy's elementwise kernels are single-threaded; ndarray/cpu_kernels.py
# splits large ones over the same number of threads (cpu_threads()).
_BLAS = {'lib': None, 'initial': None, 'fixed': None}


def _blas_api():
    if _BLAS['lib'] is None:
        _BLAS['lib'] = False
        try:
            with open('/proc/self/maps') as f:
                paths = sorted({ln.split()[-1] for ln in f
                                if 'openblas' in ln.lower() and '/' in ln})
        except OSError:                  # not Linux
            paths = []
        for path in paths:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix in ('', 'scipy_'):
                for suffix in ('', '64_'):
                    get = getattr(lib, f'{prefix}openblas_get_num_threads{suffix}', None)
                    put = getattr(lib, f'{prefix}openblas_set_num_threads{suffix}', None)
                    if get is not None and put is not None:
                        _BLAS['lib'] = (get, put)
                        _BLAS['initial'] = get()
                        return _BLAS['lib']
    return _BLAS['lib']


def blas_threads():
    """Threads OpenBLAS uses per call now (``None`` if it is not OpenBLAS)."""
    api = _blas_api()
    return api[0]() if api else None


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cpu_threads():
    """Threads one CPU operation may use now: ``set_blas_threads``'s number
    if fixed, else the usable cores shared out among the CPU devices at
    work (all of them while only one device computes), and no more than
    the cores other programs leave free (:func:`free_cores`).  BLAS calls
    and the elementwise kernels of :mod:`d2lmini.ndarray.cpu_kernels` both
    follow it."""
    n = _BLAS['fixed']
    if n is None:
        n = max(1, _cores() // max(1, _cpu_devices_at_work()))
        free = _LOAD['free']
        if free is not None and free < n:
            n = max(1, free)
    return n


def _cpu_devices_at_work():
    # A CPU stream is at work when it has ops queued or ran one in the last
    # _AT_WORK_S seconds; a stream made just now counts too, so that two
    # devices starting together do not both take every core.  A device used
    # once and then left alone (a copy of the parameters kept on cpu(1))
    # takes no cores from one that trains alone.
    since = _now() - _AT_WORK_S
    return sum(1 for s in list(_stream._STREAMS.values())
               if not s.is_gpu and (s.busy_at >= since or s.pushed > s.done))


def _share_cores():
    api = _blas_api()
    if not api:
        return
    n = cpu_threads() if _BLAS['fixed'] is not None else \
        min(_BLAS['initial'], cpu_threads())
    if api[0]() != n:
        api[1](n)


# --- CPU threads: sharing the cores with other programs ---------------------------
# A busy machine (a browser, a second notebook, a build) changes what the
# threads above are worth.  A GEMM split over two threads finishes when the
# slower of them does, and with more runnable threads than cores one of
# them is often waiting for a core; after each call OpenBLAS's idle threads
# spin for a while (measured: a loop of 300x300 products with 5 ms pauses
# used 1.8 s of CPU with the spinning, 0.9 s without) on the cores the
# other programs need.  So, like OpenMP's dynamic mode, a CPU stream looks
# at the machine's load every _LOAD_EVERY seconds, between two operations:
# the runnable threads of the whole machine (/proc/loadavg) less this
# process's own (/proc/self/task), the median of the last _LOAD_SAMPLES
# looks, is what other programs use, and the cores they leave free cap the
# threads per operation.  set_blas_threads(n) fixes the number instead.
# Not Linux: no /proc, no cap.
_LOAD_EVERY = 0.25           # seconds between two looks at the load
_AT_WORK_S = 0.5             # a CPU stream idle longer takes no cores
_LOAD_SAMPLES = 3            # looks whose median counts
_LOAD = {'next': 0.0, 'others': [], 'free': None}
_LOAD_LOCK = threading.Lock()


def _others_running():
    """Threads of other processes running or ready to run now, or None."""
    try:
        with open('/proc/loadavg') as f:
            running = int(f.read().split()[3].split('/')[0])
        ours = 0
        for tid in os.listdir('/proc/self/task'):
            try:
                with open(f'/proc/self/task/{tid}/stat') as f:
                    ours += f.read().rsplit(')', 1)[1].split()[0] == 'R'
            except OSError:                  # a thread that has just ended
                pass
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - ours)


def free_cores():
    """Cores that other programs left free at the last looks (None before
    the first look, or where the load cannot be read)."""
    return _LOAD['free']


def _watch_load(now):
    # Called by a CPU stream's worker between two operations, at most every
    # _LOAD_EVERY seconds; one worker looks at a time, the others go on.
    if not _LOAD_LOCK.acquire(blocking=False):
        return
    try:
        _LOAD['next'] = now + _LOAD_EVERY
        others = _others_running()
        if others is None:
            return
        looks = (_LOAD['others'] + [others])[-_LOAD_SAMPLES:]
        _LOAD['others'] = looks
        _LOAD['free'] = max(1, _cores() - sorted(looks)[len(looks) // 2])
        if _BLAS['fixed'] is None:       # the load or the devices at work
            _share_cores()               # may have changed
    finally:
        _LOAD_LOCK.release()


def set_blas_threads(n):
    """Threads per BLAS call: an int, or ``None`` for cores // CPU devices.

    Returns the previous setting.
    """
    old = _BLAS['fixed']
    _BLAS['fixed'] = None if n is None else max(1, int(n))
    _share_cores()
    return old
