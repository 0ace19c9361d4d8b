"""The asynchronous execution engine.

The front end (your Python code) only *pushes* operations; each device has a
:class:`Stream`, a worker thread that runs the pushed operations in issue
order.  An array records which stream produces it and the sequence number of
that operation, so "is it ready?" is one integer comparison::

    x = nd.dot(a, b)        # returns at once: x._stream, x._seq = s, 17
    x.wait_to_read()        # blocks until s.done >= 17

Cross-device reads carry their dependency: an operation on stream B that
reads an array produced on stream A first waits for A to reach that array's
sequence number, and a later write to the array on A waits for B's read.

``D2LMINI_ENGINE=naive`` (or :func:`set_engine('naive')`) runs every
operation synchronously on the calling thread, like MXNet's NaiveEngine:
errors then surface at the line that caused them.
"""
import os
import sys
import threading
import time
import traceback
from queue import SimpleQueue

from . import backend

__all__ = ['waitall', 'set_engine', 'engine_type', 'EngineError',
           'set_max_inflight', 'Trace']


class EngineError(RuntimeError):
    """An operation failed inside the engine; raised at the next sync point."""


MXNetError = EngineError


class _Naive:
    """Stand-in "stream" for arrays made in naive mode: always ready."""
    done = 1 << 62
    ctx = None
    is_gpu = False

    def wait(self, seq):
        pass


_NAIVE = _Naive()


class Stream:
    """One device's ordered queue of operations and the thread that runs them."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.is_gpu = ctx.device_type == 'gpu'
        self.pushed = 0                 # seq of the last op pushed (front end)
        self.done = 0                   # seq of the last op finished (worker)
        self._q = SimpleQueue()
        self._lock = threading.Lock()
        self._waiters = []              # [(seq, threading.Event)]
        self.errors = []                # failures not yet reported by waitall
        self.cuda_stream = backend.new_stream(ctx) if self.is_gpu else None
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f'd2lmini-{ctx}')
        self._thread.start()

    # -- front end ----------------------------------------------------------
    def push(self, item):
        """Queue ``item = [fn, args, outs, name, deps]``; returns its seq."""
        self.pushed = seq = self.pushed + 1
        item.append(seq)
        self._q.put(item)
        if seq - self.done > _MAX_INFLIGHT[0]:
            # Back-pressure: a front end that never syncs would otherwise
            # queue unbounded work (and memory).  Let the worker catch up.
            self.wait(seq - _MAX_INFLIGHT[0] // 2)
        return seq

    def wait(self, seq):
        """Block until the op numbered ``seq`` has run (launched, on GPU)."""
        if self.done >= seq:
            return
        ev = threading.Event()
        with self._lock:
            if self.done >= seq:
                return
            self._waiters.append((seq, ev))
        ev.wait()

    # -- worker -------------------------------------------------------------
    def _loop(self):
        get = self._q.get
        if self.is_gpu:
            backend.device_guard(self.ctx).__enter__()
            self.cuda_stream.__enter__()        # make it current for this thread
        while True:
            fn, args, outs, name, deps, seq = get()
            tracing = _TRACE[0]
            if tracing is not None:
                t0 = time.perf_counter()
            if deps:                            # cross-stream dependencies
                for stream, dseq in deps:
                    stream.wait(dseq)
                    if stream.is_gpu and stream is not self:
                        stream.cuda_stream.synchronize()
            try:
                res = fn(*[a._data for a in args])
                if len(outs) == 1:
                    outs[0]._data = res
                elif outs:
                    for o, r in zip(outs, res):
                        o._data = r
            except BaseException as e:          # noqa: B902 - we re-raise later
                self._fail(e, name, args, outs)
            if tracing is not None:
                tracing.append((self.ctx, name, t0, time.perf_counter()))
            self.done = seq
            if self._waiters:
                self._wake()

    def _wake(self):
        with self._lock:
            done, keep = self.done, []
            for s, ev in self._waiters:
                if s <= done:
                    ev.set()
                else:
                    keep.append((s, ev))
            self._waiters = keep

    def _fail(self, e, name, args, outs):
        # An input that failed earlier poisons this op's outputs with the
        # original error, so the user sees the first cause, not a symptom.
        for a in args:
            if a._exc is not None:
                err = a._exc
                break
        else:
            tb = ''.join(traceback.format_exception(type(e), e, e.__traceback__))
            err = EngineError(f"operator '{name}' failed on {self.ctx}: "
                              f"{type(e).__name__}: {e}\n\nOriginal traceback "
                              f"(from the engine's {self.ctx} worker):\n{tb}")
            err.__cause__ = e
            self.errors.append(err)
        for o in outs:
            o._exc = err


# ---------------------------------------------------------------------------
_STREAMS = {}
_STREAMS_LOCK = threading.Lock()
_MAX_INFLIGHT = [4096]
_TRACE = [None]


def _engine_from_env():
    name = os.environ.get('D2LMINI_ENGINE', 'threaded').lower()
    if name in ('naive', 'naiveengine', 'sync'):
        return True
    if name in ('threaded', 'async', 'threadedengine', 'threadedenginepooled',
                'threadedengineperdevice'):
        return False
    raise ValueError(f"D2LMINI_ENGINE={name!r}: use 'threaded' or 'naive'")


_NAIVE_MODE = [_engine_from_env()]


def stream_for(ctx):
    s = _STREAMS.get(ctx)
    if s is None:
        backend.check_context(ctx)
        with _STREAMS_LOCK:
            s = _STREAMS.get(ctx)
            if s is None:
                s = _STREAMS[ctx] = Stream(ctx)
    return s


def is_naive():
    return _NAIVE_MODE[0]


def engine_type():
    """``'naive'`` (synchronous) or ``'threaded'`` (asynchronous)."""
    return 'naive' if _NAIVE_MODE[0] else 'threaded'


def set_engine(kind):
    """Switch between ``'threaded'`` (async, default) and ``'naive'`` (sync).

    Returns the previous kind, so it can be restored.  Waits for all pending
    work first, so no operation straddles the switch.
    """
    if kind not in ('naive', 'threaded'):
        raise ValueError(f"engine kind must be 'naive' or 'threaded', got {kind!r}")
    old = engine_type()
    waitall()
    _NAIVE_MODE[0] = kind == 'naive'
    return old


class engine_mode:
    """``with engine_mode('naive'):`` runs a block synchronously."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        self.old = set_engine(self.kind)

    def __exit__(self, *a):
        set_engine(self.old)


def set_max_inflight(n):
    """Bound the ops a stream may hold un-run before the front end blocks."""
    old = _MAX_INFLIGHT[0]
    _MAX_INFLIGHT[0] = max(2, int(n))
    return old


def waitall():
    """Block until every pushed operation has finished, on every device.

    Raises the first error that happened inside the engine since the last
    ``waitall`` (then forgets them: the engine keeps working).
    """
    for s in list(_STREAMS.values()):
        s.wait(s.pushed)
        if s.is_gpu:
            s.cuda_stream.synchronize()
    errors = []
    for s in list(_STREAMS.values()):
        errors += s.errors
        s.errors = []
    if errors:
        raise errors[0]


def wait_for(arr):
    """Wait until ``arr`` is computed; re-raise its producer's error."""
    s = arr._stream
    if s.done < arr._seq:
        s.wait(arr._seq)
    if s.is_gpu:
        s.cuda_stream.synchronize()
    if arr._exc is not None:
        err = arr._exc
        for st in _STREAMS.values():     # reported here: waitall need not repeat it
            if err in st.errors:
                st.errors.remove(err)
        raise err


# --- tracing ----------------------------------------------------------------
class Trace:
    """Record each op's start/end per device stream.

    >>> with Trace() as tr:
    ...     y = nd.dot(x, x); nd.waitall()
    >>> tr.to_chrome('trace.json'); tr.plot()
    """

    def __init__(self):
        self.events = []

    def __enter__(self):
        waitall()
        self.events = []
        self.t0 = time.perf_counter()
        _TRACE[0] = self.events
        return self

    def __exit__(self, *a):
        try:
            waitall()
        finally:
            _TRACE[0] = None
        return False

    def spans(self):
        """List of ``(ctx, name, start_s, end_s)`` relative to the trace start."""
        return [(c, n, a - self.t0, b - self.t0) for c, n, a, b in self.events]

    def to_chrome(self, fname=None):
        """Chrome trace JSON (open in chrome://tracing or ui.perfetto.dev)."""
        import json
        ctxs = sorted({c for c, *_ in self.events})
        tid = {c: i for i, c in enumerate(ctxs)}
        ev = [{'name': 'thread_name', 'ph': 'M', 'pid': 0, 'tid': tid[c],
               'args': {'name': str(c)}} for c in ctxs]
        ev += [{'name': n, 'ph': 'X', 'pid': 0, 'tid': tid[c],
                'ts': (a - self.t0) * 1e6, 'dur': (b - a) * 1e6}
               for c, n, a, b in self.events]
        doc = {'traceEvents': ev, 'displayTimeUnit': 'ms'}
        if fname is not None:
            with open(fname, 'w') as f:
                json.dump(doc, f)
        return doc

    def overlap(self, ctx_a, ctx_b):
        """Seconds during which ``ctx_a`` and ``ctx_b`` were both busy."""
        def busy(c):
            return [(a, b) for cc, _, a, b in self.events if cc == c]
        total = 0.0
        for a0, a1 in busy(ctx_a):
            for b0, b1 in busy(ctx_b):
                total += max(0.0, min(a1, b1) - max(a0, b0))
        return total

    def plot(self, ax=None, min_dur=0.0):
        """Draw a timeline: one row per device, one bar per op."""
        import matplotlib.pyplot as plt
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 0.6 + 0.5 * len({c for c, *_ in self.events})))
        ctxs = sorted({c for c, *_ in self.events})
        names = sorted({n for _, n, *_ in self.events})
        cmap = plt.get_cmap('tab10')
        color = {n: cmap(i % 10) for i, n in enumerate(names)}
        for row, c in enumerate(ctxs):
            bars = [((a - self.t0) * 1e3, (b - a) * 1e3, n)
                    for cc, n, a, b in self.events if cc == c and b - a >= min_dur]
            ax.broken_barh([(s, d) for s, d, _ in bars], (row - 0.4, 0.8),
                           facecolors=[color[n] for *_, n in bars])
        ax.set_yticks(range(len(ctxs)), [str(c) for c in ctxs])
        ax.set_xlabel('time (ms)')
        handles = [plt.Rectangle((0, 0), 1, 1, color=color[n]) for n in names[:10]]
        ax.legend(handles, names[:10], loc='upper right', fontsize='small')
        return ax
