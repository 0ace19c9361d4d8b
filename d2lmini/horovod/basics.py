"""Who am I among the ranks: MPI's world, and Horovod's settings.

``init()`` joins ``MPI.COMM_WORLD`` (mpi4py): a script started by
``mpiexec -n 4 python train.py`` has four ranks; started by plain
``python`` it is one rank of one.  The settings are Horovod's names, read
here and nowhere else:

===============================  ===========================================
``HOROVOD_ALLREDUCE``            ``mpi`` (default: the MPI library's own
                                 Allreduce) or ``ring`` (:mod:`.ring`)
``HOROVOD_FUSION_THRESHOLD``     bytes of small tensors packed into one
                                 buffer by ``grouped_allreduce`` (64 MB)
``HOROVOD_TIMELINE``             a file: each rank writes a Chrome trace of
                                 its collectives (``.rank<r>`` added before
                                 the extension when there are several ranks)
``HOROVOD_TIMEOUT``              the longest wait of a collective, in
                                 seconds: for the other ranks to reach it,
                                 and for each of its transfers (60); see
                                 :mod:`.wait`
===============================  ===========================================
"""
import os
import sys
import traceback

from ..base import MXNetError
from ..engine.trace import Spans

__all__ = ['HorovodError', 'init', 'shutdown', 'is_initialized', 'size', 'rank',
           'local_rank', 'local_size', 'mpi_built', 'mpi_enabled', 'nccl_built',
           'settings']


class HorovodError(MXNetError, RuntimeError):
    """A collective failed: ranks that disagree, or a rank that never came."""


class _State:
    comm = None
    local = None
    settings = None
    timeline = None
    failed = None        # why the job cannot go on (a wait timed out)


def settings():
    """The settings in effect (read at ``init``)."""
    _check()
    return dict(_State.settings)


def _read_settings(env):
    def number(name, kind, default):
        raw = env.get(name)
        try:
            return default if raw in (None, '') else kind(raw)
        except ValueError:
            raise HorovodError(f'{name}={raw!r} is not a {kind.__name__}') from None
    algorithm = env.get('HOROVOD_ALLREDUCE', 'mpi') or 'mpi'
    if algorithm not in ('mpi', 'ring'):
        raise HorovodError(f"HOROVOD_ALLREDUCE={algorithm!r}: use 'mpi' or 'ring'")
    return {'allreduce': algorithm,
            'fusion_threshold': number('HOROVOD_FUSION_THRESHOLD', int, 64 << 20),
            'timeline': env.get('HOROVOD_TIMELINE') or None,
            'timeout': number('HOROVOD_TIMEOUT', float, 60.0)}


def nccl_built():
    """Whether GPU tensors are summed by NCCL (CuPy with NCCL and a GPU);
    otherwise they go through host memory and MPI."""
    from .. import backend
    return backend.nccl() is not None


def mpi_enabled():
    return mpi_built()


def mpi_built():
    """Whether mpi4py (and an MPI library) can be imported."""
    try:
        from mpi4py import MPI  # noqa: F401
        return True
    except ImportError:
        return False


def init(comm=None):
    """Join the job: every rank calls it once, before any collective.

    ``comm``: an mpi4py communicator (default ``MPI.COMM_WORLD``).
    """
    if _State.comm is not None:
        return
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise HorovodError(f'd2lmini.horovod needs mpi4py and an MPI library '
                           f'(pip install mpi4py mpich): {e}') from None
    _State.settings = _read_settings(os.environ)
    _State.comm = comm or MPI.COMM_WORLD
    _State.local = _State.comm.Split_type(MPI.COMM_TYPE_SHARED)
    path = _State.settings['timeline']
    if path:
        if _State.comm.size > 1:
            stem, ext = os.path.splitext(path)
            path = f'{stem}.rank{_State.comm.rank}{ext or ".json"}'
        _State.timeline = Timeline(path, _State.comm.rank)
    if _State.comm.size > 1:
        _abort_on_uncaught_error()


def _abort_on_uncaught_error():
    """An exception that ends one rank ends the job: the other ranks would
    wait in their next collective for a rank that is gone."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.flush()
        if _State.comm is not None:
            if _State.timeline is not None:
                _State.timeline.close()
            _State.comm.Abort(1)
    sys.excepthook = hook


def _check():
    if _State.comm is None:
        raise HorovodError('call hvd.init() first')


def is_initialized():
    return _State.comm is not None


def shutdown():
    """Leave the job (writes the timeline); ``init`` may be called again."""
    if _State.timeline is not None:
        _State.timeline.close()
    _State.comm = _State.local = _State.timeline = None


def size():
    """Number of ranks (processes) in the job."""
    _check()
    return _State.comm.size


def rank():
    """This process's rank, ``0 .. size() - 1``."""
    _check()
    return _State.comm.rank


def local_size():
    """Number of ranks on this machine."""
    _check()
    return _State.local.size


def local_rank():
    """This process's rank among those on this machine (pick its GPU with it)."""
    _check()
    return _State.local.rank


class Timeline(Spans):
    """Each collective of this rank as a Chrome trace event (``chrome://tracing``),
    written to ``path`` at :meth:`close` (the span recorder of
    :mod:`d2lmini.engine.trace`, one lane per rank).

    Times are wall-clock microseconds, so the files of all ranks (one
    machine, or clocks kept in step) can be laid side by side.
    """

    def __init__(self, path, rank):
        super().__init__(lane=f'rank {rank}')
        self.path, self.rank = path, rank
        import atexit
        atexit.register(self.close)

    def record(self, name, op, t0, nbytes, algorithm):
        """``t0``: ``time.time()`` when the collective began."""
        if self.events is not None:
            super().record(name, t0, cat=op, bytes=nbytes, algorithm=algorithm)

    def close(self):
        if self.events is None:
            return
        try:
            self.to_chrome(self.path, process=f'rank {self.rank}', pid=self.rank)
        except OSError:
            traceback.print_exc()
        self.events = None
