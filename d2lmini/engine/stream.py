"""The engine's stream: how an operation is pushed, ordered, run and waited for.

Why one long file (a little over 600 lines): the stream, its sync
points, its rule for errors, the naive engine, the in-flight bound and
bulk execution are one mechanism, each part changing what the others
see; the rest of the engine is in its sibling modules.

This is the file to read for chapter 3.  The front end (your Python code)
only *pushes* operations; each device has a :class:`Stream`, a worker
thread that runs the pushed operations in issue order.  An array records which stream produces it and the sequence number of
that operation, so "is it ready?" is one integer comparison::

    x = nd.dot(a, b)        # returns at once: x._stream, x._seq = s, 17
    x.wait_to_read()        # blocks until s.done >= 17

An array's ``_stream`` is either the stream of its own context or ``_NAIVE``
(made synchronously: always ready), so the front end finds the stream to push
to on the first input without a dictionary lookup.

Dependencies across streams are explicit ``(stream, seq)`` pairs that the
worker waits for before running an operation; only copies read across
devices, so :func:`read_dep` and :func:`take_readers` (used by
``_copy_across`` and ``_assign`` in :mod:`d2lmini.ndarray.ndarray`) are the
whole story: a copy waits for its source's producer, and a later in-place
write to the source waits for every pending copy of it.  On GPUs the worker
turns such a pair into a CUDA event recorded on the producer's stream that
the consumer's stream waits on, so no thread blocks on the GPU.

Errors inside the engine are kept on the failed operation's outputs (and on
the outputs of everything computed from them) and re-raised, with the
operation's name and the original traceback, at the next sync point:
``wait_to_read``, ``asnumpy``, ``print`` or :func:`waitall`.  As in MXNet,
each error is reported once: the sync point that raises it clears it for
every array that carries it.  These errors are instances of
:class:`MXNetError` (:mod:`d2lmini.base`) that also have the kernel's
built-in error type.

``D2LMINI_ENGINE=naive`` (or ``set_engine('naive')``, or
``with engine_mode('naive'):``) runs every operation synchronously on the
calling thread, like MXNet's NaiveEngine: errors then surface at the line
that caused them.

A stream holds a bounded number of un-run operations; past that, ``push``
blocks until the worker catches up, so a loop that never syncs cannot queue
unbounded work and memory.  By default the bound adapts
(``Stream._throttle``): 256 while the operations are tiny, which runs them
fastest, and up to 8192 when they are big, so the front end runs far ahead
as on MXNet.  :func:`set_max_inflight` (or ``D2LMINI_MAX_INFLIGHT``) fixes
it instead.  ``bulk(size)`` is MXNet's op batching; here it changes nothing.

What runs beside the stream lives next to it: :mod:`.cores` shares the CPU
cores among the devices (and with other programs), :mod:`.lifecycle`
finishes the work at exit and around ``fork``, :mod:`.trace` records what
ran when.

Two decisions worth knowing:

* The GIL.  Worker and front end share it; NumPy releases it inside big
  kernels (matmul, large elementwise ops), which is when devices overlap.
  For tiny ops the worker simply drains whatever is queued whenever it
  holds the GIL, so no batching scheme is needed, and we leave
  ``sys.setswitchinterval`` (the interpreter's setting) alone: shorter
  intervals measured no faster.
* Threads.  Pushing to one device from several front-end threads at once
  is not supported (a sequence number would race; a lock would cost every
  op); different threads may use different devices.
"""
import os
import threading
import time
import traceback
from queue import SimpleQueue

from .. import backend
from ..base import MXNetError, mixed_class, _builtin_of
from .cores import _LOAD, _share_cores, _watch_load

__all__ = ['waitall', 'wait_for', 'set_engine', 'engine_mode', 'engine_type',
           'is_naive', 'EngineError', 'MXNetError', 'bulk', 'set_bulk_size',
           'bulk_size', 'set_max_inflight', 'stream_for', 'Stream',
           'read_dep', 'add_reader', 'take_readers', 'run_sync', 'op_error']

_now = time.perf_counter


class EngineError(MXNetError):
    """An operation failed; raised at the next sync point (at once in naive mode).

    ``op`` is the operator's name, ``ctx`` its context and ``__cause__`` the
    original exception, whose built-in type the error also has (a kernel's
    ``ValueError`` is caught by ``except ValueError`` too), as in MXNet 1.6+.
    """

    def __init__(self, msg, op=None, ctx=None):
        super().__init__(msg)
        self.op, self.ctx = op, ctx
        self.reported = False            # raised at a sync point already?


def op_error(name, ctx, exc, where='engine'):
    """The :class:`EngineError` reported for ``exc`` raised by operator ``name``."""
    try:
        tb = ''.join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        what = f'{type(exc).__name__}: {exc}'
    except Exception:                    # an exception that cannot print itself
        tb, what = '', type(exc).__name__
    builtin = _builtin_of(type(exc))
    cls = EngineError if builtin is None else mixed_class(EngineError, builtin)
    err = cls(f"operator '{name}' failed on {ctx}: {what}\n\n"
              f"Original traceback (from the {where}):\n{tb}", op=name, ctx=ctx)
    err.__cause__ = exc
    return err


class _Naive:
    """Stand-in "stream" for arrays made in naive mode: always ready."""
    done = 1 << 62
    last_write = 0
    ctx = None
    is_gpu = False

    def wait(self, seq):
        pass


_NAIVE = _Naive()
_STREAMS = {}                # ctx._key -> Stream
_STREAMS_LOCK = threading.Lock()
# Back-pressure (Stream._throttle).  _MAX_INFLIGHT[0] is the fixed bound on
# un-run ops per stream (set_max_inflight, D2LMINI_MAX_INFLIGHT), or None:
# adapt.  Then the bound is _DEFAULT_INFLIGHT, which lets the async chapter's
# MLP (44 ops a batch) queue 100 batches without a sync, as on MXNet, whose
# queue is unbounded; but while ops are tiny (the worker spends under
# _BIG_OP_S on each) the queue is kept at _SHORT_QUEUE: tiny ops drained
# from a queue of 256 at ~2 us each, from one of 5000 at ~5 us (cold caches).
_DEFAULT_INFLIGHT = 8192
_SHORT_QUEUE = 256
_BIG_OP_S = 200e-6
_TRACE = [None]              # the list a Trace collects into, or None
_TRACER = [None]             # the active Trace itself (for backward_pass)
_MEMORY = [None]             # the profiler's memory count (ctx, args, outs), or None
_FAILED = [False]            # has any op ever failed?  (then check inputs)


class Stream:
    """One device's ordered queue of operations and the thread that runs them.

    ``pushed`` counts operations pushed by the front end, ``done`` those the
    worker has finished (on a GPU: launched), so ``pushed - done`` is the work
    still pending.  ``last_write`` is the seq of the latest in-place write.
    """

    def __init__(self, ctx):
        self.ctx = ctx
        self.is_gpu = ctx.device_type == 'gpu'
        self.pushed = 0
        self.done = 0
        self.last_write = 0
        self.errors = []                 # failures not yet reported
        self.limit = _MAX_INFLIGHT[0] or _SHORT_QUEUE   # pending ops before push waits
        self.busy_at = _now()            # when it last ran an op (CPU: cpu_threads)
        self._pace = (None, 0.0)         # (seconds per op, when measured)
        self.cuda_stream = backend.new_stream(ctx) if self.is_gpu else None
        self._held = []                  # [(cuda event, source arrays)]
        self._start()

    def _start(self):
        self._q = SimpleQueue()
        self._lock = threading.Lock()
        self._waiters = []               # [(seq, threading.Event)]
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f'd2lmini-{self.ctx}')
        self._thread.start()

    def __repr__(self):
        return f'<Stream {self.ctx}: pushed {self.pushed}, done {self.done}>'

    # -- front end ----------------------------------------------------------
    def push(self, fn, args, outs, name, attrs, deps=None):
        """Queue ``fn(*[a._data for a in args], **attrs)`` into ``outs``.

        ``deps`` lists ``(stream, seq)`` pairs of other streams to wait for.
        Returns the operation's seq.
        """
        seq = self.pushed + 1
        if seq - self.done > self.limit:
            self._throttle(seq)
        self.pushed = seq
        self._q.put((fn, args, outs, attrs, name, deps, seq))
        return seq

    def _throttle(self, seq):
        # A front end that never syncs would queue work (and memory) without
        # bound.  Past `limit` pending ops it waits until half of them have
        # run, so it does not stop and start again on every push.  Unless
        # set_max_inflight fixed it, the limit depends on the worker's pace,
        # timed while the front end waits: the short queue for tiny ops, the
        # whole bound for ops slower than _BIG_OP_S, which lose nothing by
        # queueing.
        fixed = _MAX_INFLIGHT[0]
        if fixed is not None:
            self.limit = fixed
            self.wait(seq - max(1, fixed // 2))
            return
        pace, when = self._pace
        now = _now()
        if pace is None or now - when > 1.0:     # unknown or stale: measure
            pace = self._measure_pace()
            now = _now()
        self.limit = _DEFAULT_INFLIGHT if pace > _BIG_OP_S else _SHORT_QUEUE
        self._pace = (pace, now)
        if seq - self.done <= self.limit:
            return
        d0 = self.done
        self.wait(seq - max(1, self.limit // 2))
        t = _now()
        self._pace = ((t - now) / max(1, self.done - d0), t)

    def _measure_pace(self, n=10):
        # Seconds per op, averaged over the next `n` ops, or over what runs
        # in the time `n` ops of _BIG_OP_S would take: the front end waits
        # at most that long (2 ms) to find out.
        window = n * _BIG_OP_S
        d0 = self.done
        target = min(d0 + n, self.pushed)
        t0 = _now()
        self.wait(target, window)
        return (_now() - t0) / max(1, self.done - d0)

    def wait(self, seq, timeout=None):
        """Block until the op numbered ``seq`` has run (launched, on a GPU).

        Returns False if ``timeout`` seconds passed first, else True.
        """
        if self.done >= seq:
            return True
        ev = threading.Event()
        with self._lock:
            if self.done >= seq:
                return True
            self._waiters.append((seq, ev))
        return ev.wait(timeout)     # a waiter left behind is dropped at its seq

    # -- worker -------------------------------------------------------------
    def _loop(self):
        get = self._q.get
        watch = not self.is_gpu          # the machine's load (_watch_load)
        if self.is_gpu:
            backend.device_guard(self.ctx).__enter__()
            self.cuda_stream.__enter__()     # the current stream of this thread
        while True:
            fn, args, outs, attrs, name, deps, seq = get()
            trace = _TRACE[0]
            if trace is not None:
                t0 = _now()
            try:
                if deps is not None:         # other streams' ops we read
                    self._wait_deps(deps)
                    if trace is not None:
                        t0 = _now()          # waiting is not working
                if _FAILED[0] and self._inherit(args, outs):
                    pass                     # an input failed: so does this op
                else:
                    n = len(args)
                    if n == 1:
                        res = fn(args[0]._data, **attrs)
                    elif n == 2:
                        res = fn(args[0]._data, args[1]._data, **attrs)
                    else:
                        res = fn(*[a._data for a in args], **attrs)
                    if len(outs) == 1:
                        outs[0]._data = res
                    else:
                        for o, r in zip(outs, res):
                            o._data = r
                    if deps is not None and self.is_gpu:
                        self._hold_sources(args)
            except BaseException as e:       # noqa: B902 - re-raised at a sync point
                self._fail(e, name, outs)
            if trace is not None:
                trace.append((self.ctx, name, t0, _now(), seq))
                if _MEMORY[0] is not None:
                    _MEMORY[0](self.ctx, args, outs)
            # Drop this op's arrays now: get() may block for a long time.
            fn = args = outs = attrs = res = o = r = None
            self.done = seq
            if self._waiters:
                self._wake()
            if watch:
                now = self.busy_at = _now()
                if now >= _LOAD['next']:
                    _watch_load(now)

    def _wait_deps(self, deps):
        for st, dseq in deps:
            if st is self:
                continue                     # same stream: already in order
            if st.done < dseq:
                st.wait(dseq)
            if st.is_gpu:
                # The producer's kernels are launched, maybe not finished.
                if self.is_gpu:              # GPU -> GPU: order on the device
                    with backend.device_guard(st.ctx):
                        ev = backend.new_event()
                        ev.record(st.cuda_stream)
                    self.cuda_stream.wait_event(ev)
                else:                        # GPU -> host: this thread waits
                    st.cuda_stream.synchronize()

    def _hold_sources(self, args):
        # A copy from another GPU is only queued on our stream; if its source
        # were freed now, the memory pool could hand that memory to a kernel
        # on the source's stream before our copy has read it.  Keep the
        # sources until an event after the copy says it is done.
        held = [(e, d) for e, d in self._held if not e.done]
        with backend.device_guard(self.ctx):
            ev = backend.new_event()
            ev.record(self.cuda_stream)
        held.append((ev, [a._data for a in args]))
        self._held = held

    def _wake(self):
        with self._lock:
            done, keep = self.done, []
            for s, ev in self._waiters:
                if s <= done:
                    ev.set()
                else:
                    keep.append((s, ev))
            self._waiters = keep

    @staticmethod
    def _inherit(args, outs):
        # An input that failed earlier poisons this op's outputs with the
        # original error, so the user sees the first cause, not a symptom.
        # Once a sync point has reported that error it poisons nothing more
        # (MXNet clears it): the op then runs on the placeholder values.
        for a in args:
            err = a._exc
            if err is not None and not err.reported:
                _poison(outs, err)
                return True
        return False

    def _fail(self, e, name, outs):
        _FAILED[0] = True
        err = op_error(name, self.ctx, e, f"engine's {self.ctx} worker")
        self.errors.append(err)
        _poison(outs, err)


def _poison(outs, err):
    """Mark ``outs`` failed with ``err``, and give them placeholder values.

    The values are what a later read sees once the error has been reported
    (MXNet leaves the memory uninitialized): NaN, or 0 for integer types,
    so that ops reading them still run.  In-place outputs keep their data.
    """
    for o in outs:
        o._exc = err
        if getattr(o, '_data', None) is None:
            try:
                xp = backend.xp(o._ctx)
                fill = float('nan') if o._dtype.kind in 'fc' else 0
                o._data = xp.full(o._shape, fill, dtype=o._dtype)
            except Exception:            # e.g. a shape the op never made
                o._data = None


# ---------------------------------------------------------------------------
def _engine_from_env():
    name = os.environ.get('D2LMINI_ENGINE', 'threaded').lower()
    if name in ('naive', 'naiveengine', 'sync'):
        return True
    if name in ('', 'threaded', 'async', 'threadedengine', 'threadedenginepooled',
                'threadedengineperdevice'):
        return False
    raise ValueError(f"D2LMINI_ENGINE={name!r}: use 'threaded' or 'naive'")


_NAIVE_MODE = [_engine_from_env()]


def stream_for(ctx):
    """The :class:`Stream` of context ``ctx`` (started on first use)."""
    s = _STREAMS.get(ctx._key)
    if s is None:
        backend.check_context(ctx)
        with _STREAMS_LOCK:
            s = _STREAMS.get(ctx._key)
            if s is None:
                s = _STREAMS[ctx._key] = Stream(ctx)
                if not s.is_gpu:
                    _share_cores()
    return s


def is_naive():
    return _NAIVE_MODE[0]


def engine_type():
    """``'naive'`` (synchronous) or ``'threaded'`` (asynchronous)."""
    return 'naive' if _NAIVE_MODE[0] else 'threaded'


def set_engine(kind):
    """Switch between ``'threaded'`` (async, default) and ``'naive'`` (sync).

    Returns the previous kind, so it can be restored.  Waits for all pending
    work first, so no operation straddles the switch (and raises its errors,
    after switching).
    """
    if kind not in ('naive', 'threaded'):
        raise ValueError(f"engine kind must be 'naive' or 'threaded', got {kind!r}")
    old = engine_type()
    try:
        waitall()
    finally:
        _NAIVE_MODE[0] = kind == 'naive'
    return old


class engine_mode:
    """``with engine_mode('naive'):`` runs a block synchronously."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        self.old = set_engine(self.kind)
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            set_engine(self.old)
        else:                                # keep the block's own error
            try:
                set_engine(self.old)
            except EngineError:
                pass
        return False


def _inflight_from_env():
    value = os.environ.get('D2LMINI_MAX_INFLIGHT', '')
    if not value:
        return None                          # adapt
    try:
        n = int(value)
        if n >= 1:
            return n
    except ValueError:
        pass
    raise ValueError(f'D2LMINI_MAX_INFLIGHT={value!r}: use a positive integer '
                     f'(operations a stream may hold un-run), or leave it unset')


_MAX_INFLIGHT = [_inflight_from_env()]


def set_max_inflight(n):
    """Fix the number of ops a stream may hold un-run before ``push`` blocks.

    ``None`` restores the default, an adaptive bound: 256 ops while they
    are tiny (the fastest way to run them), up to 8192 when they are big,
    so that a front end that never syncs runs far ahead, as on MXNet.
    Returns the previous setting (an int, or None).
    """
    old = _MAX_INFLIGHT[0]
    _MAX_INFLIGHT[0] = None if n is None else max(1, int(n))
    for s in list(_STREAMS.values()):
        s.limit = _MAX_INFLIGHT[0] or _SHORT_QUEUE
        s._pace = (None, 0.0)
    return old


# --- bulk execution: MXNet's name, no effect here ---------------------------------
# MXNet fuses up to `size` consecutive ops into one engine operation, to pay
# its per-op engine overhead once per segment.  d2lmini's worker already runs
# whatever is queued back to back while it holds the GIL, so there is
# nothing to fuse: the size is recorded, and results, ordering and sync
# points are exactly as without it.
_BULK_SIZE = [15]            # MXNet's default (MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN)


def set_bulk_size(size):
    """Set the bulk size (MXNet's op batching; recorded, no effect here).

    Returns the previous size.
    """
    old = _BULK_SIZE[0]
    _BULK_SIZE[0] = int(size)
    return old


def bulk_size():
    """The size set by :func:`set_bulk_size` or :class:`bulk`."""
    return _BULK_SIZE[0]


class bulk:
    """``with mx.engine.bulk(size):`` sets the bulk size inside a block.

    MXNet batches up to ``size`` operations into one engine operation; in
    d2lmini this only records the size (see :func:`set_bulk_size`).
    """

    def __init__(self, size):
        self.size = size

    def __enter__(self):
        self.old = set_bulk_size(self.size)
        return self

    def __exit__(self, *exc):
        set_bulk_size(self.old)
        return False


# --- synchronization -----------------------------------------------------------
def waitall():
    """Block until every pushed operation has finished, on every device.

    Raises the first error that happened inside the engine since the last
    sync point that reported it.  Every error is reported once, as in
    MXNet: after this call no array raises the errors it reported (the
    engine keeps working, and those arrays hold placeholder values).
    """
    for s in list(_STREAMS.values()):
        s.wait(s.pushed)
        if s.is_gpu:
            s.cuda_stream.synchronize()
            s._held = []
    errors = []
    for s in list(_STREAMS.values()):
        errors += s.errors
        s.errors = []
    for err in errors:
        err.reported = True
    if errors:
        raise errors[0].with_traceback(None)


def wait_for(arr):
    """Wait until ``arr`` is computed; raise its producer's error if unreported.

    An error is reported once, at the first sync point that meets it (as in
    MXNet): later reads of ``arr``, or of other arrays that carry the same
    error, return their placeholder values.
    """
    s = arr._stream
    seq = arr._seq
    if s.done < seq:
        s.wait(seq)
    w = _writer(arr)
    lw = w.last_write
    if lw > (seq if w is s else 0) and w.done < lw and _is_view(arr):
        # ``arr`` shares memory with another array (a slice, a reshape, a
        # detach) that a later in-place write may be changing right now.
        w.wait(lw)
    if w.is_gpu:
        w.cuda_stream.synchronize()
    err = arr._exc
    if err is not None:
        arr._exc = None
        if not err.reported:
            err.reported = True
            for st in list(_STREAMS.values()):  # waitall need not repeat it
                if err in st.errors:
                    st.errors.remove(err)
            raise err.with_traceback(None)


def _writer(arr):
    # Every write to memory on a context runs on that context's stream.
    s = arr._stream
    return s if s is not _NAIVE else _STREAMS.get(arr._ctx._key, _NAIVE)


def _is_view(arr):
    if arr._base is not None:
        return True
    return getattr(getattr(arr, '_data', None), 'base', None) is not None


def read_dep(arr):
    """The ``(stream, seq)`` a reader of ``arr`` on another stream waits for.

    ``None`` when ``arr`` is ready.  It includes the latest in-place write on
    ``arr``'s context, as ``arr`` may share memory with the written array.
    """
    s = _writer(arr)
    seq = arr._seq if s is arr._stream else 0
    if s.last_write > seq:
        seq = s.last_write
    if s.done < seq or (s.is_gpu and seq):   # on a GPU "done" means launched
        return (s, seq)
    return None


def add_reader(arr, stream, seq):
    """Record that op ``seq`` on ``stream`` reads ``arr`` (a cross-device copy)."""
    owner = arr._base if arr._base is not None else arr
    if owner._foreign is None:
        owner._foreign = {}
    owner._foreign[stream] = seq      # the latest read per stream covers the rest


def take_readers(arr):
    """The pending cross-device reads a write to ``arr`` must wait for."""
    owner = arr._base if arr._base is not None else arr
    readers = owner._foreign
    if readers is None:
        return None
    owner._foreign = None             # the write is ordered after them now
    pending = [(st, sq) for st, sq in readers.items() if st.done < sq or st.is_gpu]
    return pending or None


def run_sync(name, fn, args, outs, ctx, attrs):
    """Run an operation now on the calling thread (the naive engine)."""
    for a in args:                       # arrays pushed before a switch to naive
        if a._stream is not _NAIVE:
            wait_for(a)
    trace = _TRACE[0]
    if trace is not None:
        t0 = _now()
    try:
        if ctx.device_type == 'gpu':     # on the device's stream, then finish it
            cs = stream_for(ctx).cuda_stream
            with backend.device_guard(ctx), cs:
                res = fn(*[a._data for a in args], **attrs)
                cs.synchronize()
        else:
            res = fn(*[a._data for a in args], **attrs)
    except Exception as e:
        raise op_error(name, ctx, e, 'naive engine') from e
    if len(outs) == 1:
        outs[0]._data = res
    else:
        for o, r in zip(outs, res):
            o._data = r
    for o in outs:
        o._stream = _NAIVE
        o._seq = 0
    if trace is not None:
        trace.append((ctx, name, t0, _now(), 0))
        if _MEMORY[0] is not None:
            _MEMORY[0](ctx, args, outs)
