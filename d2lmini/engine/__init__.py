"""The asynchronous execution engine (chapter 3), one concern per module.

Read them in this order:

* :mod:`.stream`: each device's ordered stream of operations, the
  dependencies between streams, sync points (:func:`waitall`,
  ``wait_to_read``), errors, the naive engine and the bound on queued
  work.  This is the engine chapter 3 teaches.
* :mod:`.cores`: how many threads one CPU operation gets (BLAS and the
  elementwise kernels), shared among the CPU devices at work and with
  the other programs on the machine.
* :mod:`.lifecycle`: finishing the pushed work at exit and around ``fork``.
* :mod:`.trace`: what ran when: :class:`Trace` for the engine, and the span
  recorder that the parameter server and Horovod write their timelines with.

``mx.engine`` re-exports their public names (and the private ones that the
dispatch path in :mod:`d2lmini.ndarray.ndarray` reads on every operation:
the same objects, not copies).
"""
from ..base import MXNetError
from .stream import (EngineError, Stream, add_reader, bulk, bulk_size,
                     engine_mode, engine_type, is_naive, op_error, read_dep,
                     run_sync, set_bulk_size, set_engine, set_max_inflight,
                     stream_for, take_readers, wait_for, waitall,
                     _FAILED, _MAX_INFLIGHT, _MEMORY, _NAIVE, _NAIVE_MODE,
                     _STREAMS, _TRACE, _TRACER)
from .cores import blas_threads, cpu_threads, free_cores, set_blas_threads, _cores
from . import lifecycle                                   # noqa: F401 - its hooks

# Tracebacks name the error by its public path, mx.engine.EngineError, as
# before the engine was split (and pickles find it there).
EngineError.__module__ = __name__
from .trace import Spans, Trace, backward_pass

__all__ = ['waitall', 'set_engine', 'engine_mode', 'engine_type', 'EngineError',
           'MXNetError', 'bulk', 'set_bulk_size',
           'set_max_inflight', 'set_blas_threads', 'free_cores', 'Trace',
           'stream_for']
