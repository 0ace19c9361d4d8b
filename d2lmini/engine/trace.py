"""What ran when: one span recorder for the engine, the parameter server and Horovod.

A *span* is a tuple ``(lane, name, start, end, info)``: the row it belongs
on (a device, a process, a rank), what ran, when it started and ended (in
seconds), and a dict of details or None.  :class:`Spans` collects them, in
memory or streamed to a file as one JSON line each; :func:`to_chrome`
writes them in the Chrome trace format (open in ``chrome://tracing`` or
https://ui.perfetto.dev), :func:`load` reads either kind of file back, and
:func:`plot` draws one row of bars per lane.  Three users share it:

* the engine's :class:`Trace` (below): every operation on every device's
  stream, with times from ``time.perf_counter`` (chapter 3).  Its workers
  append spans whose ``info`` is the operation's seq (an int: no dict per
  operation on the hot path), which :meth:`Trace.to_chrome` turns into
  ``{'seq': seq}``;
* :mod:`d2lmini.kvstore.dist.trace`: with ``D2LMINI_PS_TRACE=<dir>`` each
  process of a parameter-server job streams its pushes, pulls and updates
  to ``<dir>/<who>.jsonl`` (chapter 12);
* :mod:`d2lmini.horovod.basics`: with ``HOROVOD_TIMELINE=<file>`` each rank
  writes its collectives as a Chrome trace (chapter 13).

A streamed span is the JSON object ``{"who": lane, "what": name, "t0":
start, "t1": end, ...info}``.
"""
import json
import os
import time

from . import stream as _stream
from .stream import _TRACE, _TRACER, EngineError, waitall

__all__ = ['Spans', 'to_chrome', 'load', 'plot', 'as_dict', 'from_dict', 'Trace',
           'backward_pass']

_now = time.perf_counter


class Spans:
    """A span recorder: spans kept in ``events``, or with ``path`` written
    to that file (one JSON line per span) as they end.

    ``lane`` is the lane of the spans :meth:`record` adds without one;
    ``clock`` gives the end of a span recorded without one.

    >>> tl = Spans(lane='rank 0')
    >>> tl.record('allreduce', time.time() - 0.01, bytes=4000)
    >>> tl.to_chrome('timeline.json')                    # doctest: +SKIP
    """

    def __init__(self, path=None, lane=None, clock=time.time):
        self.lane, self.clock = lane, clock
        self.events = []
        self._f = None
        if path is not None:
            os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
            self._f = open(path, 'w')

    def record(self, name, start, end=None, lane=None, **info):
        """Add the span ``name`` from ``start`` to ``end`` (default: now)."""
        span = (self.lane if lane is None else lane, name, start,
                self.clock() if end is None else end, info or None)
        if self._f is None:
            self.events.append(span)
        else:
            self._f.write(json.dumps(as_dict(span)) + '\n')

    def close(self):
        """Close the file spans are streamed to (if any)."""
        if self._f is not None:
            self._f.close()
            self._f = None

    def to_chrome(self, fname=None, process='d2lmini', pid=0, t0=0.0):
        """The spans as a Chrome trace (see :func:`to_chrome`)."""
        return to_chrome(self.events, fname, process, pid, t0)

    def plot(self, ax=None, **kwargs):
        """One row of bars per lane (see :func:`plot`)."""
        return plot(self.events, ax, **kwargs)


def as_dict(span):
    """A span as the JSON object a streamed file holds (see the top)."""
    lane, name, start, end, info = span
    return dict(info or {}, who=lane, what=name, t0=start, t1=end)


def from_dict(event):
    """The span that :func:`as_dict` wrote as ``event``."""
    info = {k: v for k, v in event.items() if k not in ('who', 'what', 't0', 't1')}
    return (event['who'], event['what'], event['t0'], event['t1'], info or None)


def to_chrome(spans, fname=None, process='d2lmini', pid=0, t0=0.0, lanes=None):
    """Chrome trace JSON of ``spans``: one process, a thread per lane
    (``lanes`` in order; default: as they first appear).

    Times become microseconds after ``t0``; an ``info`` dict becomes the
    event's ``args``, except its ``'cat'`` (the category, default
    ``'span'``).  Returns the document as a dict; also writes it to
    ``fname`` if given.
    """
    if lanes is None:
        lanes = list(dict.fromkeys(s[0] for s in spans))
    tid = {lane: i for i, lane in enumerate(lanes)}
    ev = [{'name': 'process_name', 'ph': 'M', 'pid': pid, 'tid': 0,
           'args': {'name': process}}]
    ev += [{'name': 'thread_name', 'ph': 'M', 'pid': pid, 'tid': tid[lane],
            'args': {'name': str(lane)}} for lane in lanes]
    for lane, name, start, end, info in spans:
        args = dict(info or {})
        ev.append({'name': name, 'cat': args.pop('cat', 'span'), 'ph': 'X',
                   'pid': pid, 'tid': tid[lane],
                   'ts': round(1e6 * (start - t0), 1),
                   'dur': round(1e6 * (end - start), 1), 'args': args})
    doc = {'traceEvents': ev, 'displayTimeUnit': 'ms'}
    if fname is not None:
        with open(fname, 'w') as f:
            json.dump(doc, f)
    return doc


def load(path):
    """The spans of a file, or of every ``*.jsonl`` file in a directory,
    sorted by start.  A Chrome trace's (``.json``) lanes are its threads'
    names, its times seconds, its ``info`` the ``args`` and the ``cat``."""
    if os.path.isdir(path):
        paths = sorted(os.path.join(path, p) for p in os.listdir(path)
                       if p.endswith('.jsonl'))
    else:
        paths = [path]
    spans = []
    for p in paths:
        with open(p) as f:
            if p.endswith('.jsonl'):
                spans += [from_dict(json.loads(line)) for line in f if line.strip()]
            else:
                spans += _from_chrome(json.load(f))
    return sorted(spans, key=lambda s: s[2])


def _from_chrome(doc):
    events = doc['traceEvents'] if isinstance(doc, dict) else doc
    names = {(e['pid'], e.get('tid', 0)): e['args']['name'] for e in events
             if e['ph'] == 'M' and e['name'] == 'thread_name'}
    return [(names.get((e['pid'], e.get('tid', 0)), e['pid']), e['name'],
             e['ts'] / 1e6, (e['ts'] + e['dur']) / 1e6,
             dict(e.get('args', {}), cat=e.get('cat')))
            for e in events if e['ph'] == 'X']


def plot(spans, ax=None, lanes=None, colors=None, t0=None, min_dur=0.0,
         height=0.8):
    """Draw ``spans``: one row per lane (``lanes`` in order, from the bottom;
    default: sorted), one bar per span, in milliseconds after ``t0``
    (default: the first start).  ``colors`` maps each name to its color
    (default: ``tab10``, the longest names in total first); each name's
    first bars carry it as their label, in ``colors``' order, so
    ``ax.legend()`` lists them.  Spans shorter than ``min_dur`` seconds are
    left out.  Returns the axes (matplotlib)."""
    import matplotlib.pyplot as plt
    spans = list(spans)
    lanes = sorted({s[0] for s in spans}) if lanes is None else list(lanes)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.8 + 0.5 * len(lanes)))
    if t0 is None:
        t0 = min((s[2] for s in spans), default=0.0)
    if colors is None:
        cmap = plt.get_cmap('tab10')
        colors = {n: cmap(i % 10) for i, n in enumerate(by_total_time(spans))}
    bars = {}
    for lane, name, start, end, _ in spans:
        if end - start >= min_dur:
            bars.setdefault((name, lane), []).append(
                ((start - t0) * 1e3, (end - start) * 1e3))
    for name, color in colors.items():
        label = name
        for row, lane in enumerate(lanes):
            if (name, lane) in bars:
                ax.broken_barh(bars[name, lane], (row - height / 2, height),
                               color=color, label=label)
                label = None
    ax.set_yticks(range(len(lanes)), [str(lane) for lane in lanes])
    ax.set_xlabel('time (ms)')
    return ax


def by_total_time(spans):
    """The names of ``spans``, the longest in total first."""
    total = {}
    for _, name, start, end, _ in spans:
        total[name] = total.get(name, 0.0) + (end - start)
    return sorted(total, key=lambda n: (-total[n], n))


# --- the engine's trace -------------------------------------------------------
class Trace(Spans):
    """Record each op's start and end on each device's stream.

    >>> with Trace() as tr:
    ...     y = nd.dot(x, x)
    >>> tr.overlap(mx.cpu(0), mx.cpu(1)); tr.to_chrome('trace.json'); tr.plot()

    Entering and leaving wait for all pending work, so the trace holds
    exactly the operations pushed inside the ``with`` block.  The streams'
    workers append ``(ctx, name, start, end, seq)`` spans to ``events``
    (and :func:`run_sync` appends them in naive mode, with seq 0).
    """

    def __init__(self):
        super().__init__(clock=_now)  # events: (ctx, name, start_s, end_s, seq)
        self.t0 = _now()
        self._backward = []          # see backward_pass

    def __enter__(self):
        waitall()
        self.events = []
        self._backward = []
        self.t0 = _now()
        _TRACE[0] = self.events
        _TRACER[0] = self
        return self

    def __exit__(self, exc_type, *exc):
        try:
            waitall()
        except EngineError:
            if exc_type is None:             # else keep the block's own error
                raise
        finally:
            _TRACE[0] = None
            _TRACER[0] = None
        return False

    def contexts(self):
        return sorted({e[0] for e in self.events})

    def spans(self, ctx=None, backward=False):
        """``(ctx, name, start, end)`` in seconds from the trace's start.

        With ``backward=True`` each span has a fifth item: True for an op
        that autograd's backward pass pushed (a gradient computation, or
        the write of a gradient), False for any other (the forward pass,
        an update, a copy the program asked for).
        """
        if not backward:
            return [(c, n, a - self.t0, b - self.t0) for c, n, a, b, _ in self.events
                    if ctx is None or c == ctx]
        return [(c, n, a - self.t0, b - self.t0, self._pushed_by_backward(i, c, seq))
                for i, (c, n, a, b, seq) in enumerate(self.events)
                if ctx is None or c == ctx]

    def _pushed_by_backward(self, index, ctx, seq):
        for c, lo, hi in self._backward:
            if c is None:            # naive engine: events appended as ops ran
                if seq == 0 and lo <= index < hi:
                    return True
            elif seq and lo < seq <= hi and c == ctx:
                return True
        return False

    def by_stream(self):
        """``{ctx: [(seq, name, start, end), ...]}`` in the order they ran."""
        out = {}
        for c, n, a, b, seq in self.events:
            out.setdefault(c, []).append((seq, n, a - self.t0, b - self.t0))
        return out

    def _busy(self, ctx):
        """The union of ``ctx``'s spans, as sorted disjoint intervals."""
        merged = []
        for c, _, a, b, _ in sorted(self.events, key=lambda e: e[2]):
            if c != ctx:
                continue
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return merged

    def busy(self, ctx):
        """Seconds during which ``ctx`` ran an operation."""
        return sum(b - a for a, b in self._busy(ctx))

    def overlap(self, ctx_a, ctx_b):
        """Seconds during which ``ctx_a`` and ``ctx_b`` both ran an operation."""
        xs, ys = self._busy(ctx_a), self._busy(ctx_b)
        i = j = 0
        total = 0.0
        while i < len(xs) and j < len(ys):
            lo = max(xs[i][0], ys[j][0])
            hi = min(xs[i][1], ys[j][1])
            if hi > lo:
                total += hi - lo
            if xs[i][1] < ys[j][1]:
                i += 1
            else:
                j += 1
        return total

    def to_chrome(self, fname=None):
        """Chrome trace JSON (open in chrome://tracing or ui.perfetto.dev).

        Returns the document as a dict; also writes it to ``fname`` if given.
        """
        spans = [(c, n, a, b, {'cat': 'op', 'seq': s}) for c, n, a, b, s in self.events]
        return to_chrome(spans, fname, 'd2lmini engine', 0, self.t0, self.contexts())

    def plot(self, ax=None, min_dur=0.0, legend=10):
        """Draw a timeline: one row per device, one bar per op (matplotlib).

        The legend lists the ``legend`` operators that took the most time,
        longest first; they get distinct colors.
        """
        import matplotlib.pyplot as plt
        ctxs = self.contexts()
        names = by_total_time(self.events)
        cmap = plt.get_cmap('tab10')
        color = {n: cmap(i % 10) for i, n in enumerate(names)}
        ax = plot(self.events, ax, ctxs, color, self.t0, min_dur)
        ax.set_ylim(-0.6, len(ctxs) - 0.4)
        if legend and names:
            handles = [plt.Rectangle((0, 0), 1, 1, color=color[n]) for n in names[:legend]]
            ax.legend(handles, names[:legend], loc='upper right', fontsize='small')
        return ax


class _BackwardPass:
    # Which ops autograd's backward pushes: each stream numbers the ops
    # pushed to it, so the ops of a backward pass are the seqs in
    # (pushed at the start, pushed at the end] of each stream; in naive
    # mode (seq 0) the events appended meanwhile.  Marking costs two
    # passes over the streams per backward(), and nothing per op.
    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        self.start = {k: s.pushed for k, s in list(_stream._STREAMS.items())}
        self.first = len(self.trace.events)

    def __exit__(self, *exc):
        marks = self.trace._backward
        for k, s in list(_stream._STREAMS.items()):
            lo = self.start.get(k, 0)
            if s.pushed > lo:
                marks.append((s.ctx, lo, s.pushed))
        marks.append((None, self.first, len(self.trace.events)))
        return False


class _NotTraced:
    def __enter__(self):
        pass

    def __exit__(self, *exc):
        return False


_NOT_TRACED = _NotTraced()


def backward_pass():
    """``with backward_pass():`` around a backward pass (autograd uses it).

    While a :class:`Trace` is recording, it remembers which ops the block
    pushed, for ``Trace.spans(backward=True)``; otherwise it does nothing.
    """
    trace = _TRACER[0]
    return _NOT_TRACED if trace is None else _BackwardPass(trace)
