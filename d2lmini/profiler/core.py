"""The profiler's recorder: which operations it keeps, and what it keeps of them.

While the profiler runs, the engine's workers append one span per
operation ``(ctx, name, start, end, seq)`` to a list, as they do for
:class:`d2lmini.engine.Trace` (the engine has one such slot, so the two
cannot record at once).  Whether an operation belongs to the profile is
decided, as in MXNet, when it is *pushed*: each ``set_state('run')`` or
``resume()`` opens a *window* that notes how many operations every stream
had been given (``Stream.pushed``), and ``pause()`` or ``set_state('stop')``
closes it the same way.  An operation belongs to the profile if its seq
falls inside a window of its stream.  So pausing costs nothing and waits
for nothing, and an operation pushed while running is profiled even if it
runs after ``pause()``.  (The naive engine runs each operation on the spot
and gives it seq 0: then the start time decides.)

:func:`harvest` moves the spans that have ended from the engine's list
into :data:`STATE`'s records, naming each operator as MXNet's profile
does, and adds them to the aggregate statistics.  Spans of user objects
(:mod:`.scopes`) go there directly.
"""
import threading

from ..base import MXNetError, mixed_class
from ..engine.stream import _STREAMS, _TRACE
from ..engine.trace import _now

# Where d2lmini's name for an operator differs from the name in MXNet's
# profile.  (Found with MXNet 1.9.1: an alias is shown under the name it
# was registered with.)  Unlisted names are MXNet's already.  d2lmini
# has one op where MXNet has elemwise_* and broadcast_*; ``x + y`` is
# broadcast_add in MXNet, so that is its name here.
MXNET_NAMES = {
    'ones': '_ones', 'zeros': '_zeros', 'full': '_full', 'arange': '_arange',
    'linspace': '_linspace', 'eye': '_eye',
    'ones_like_op': 'ones_like', 'zeros_like_op': 'zeros_like',
    'add': 'broadcast_add', 'subtract': 'broadcast_sub',
    'multiply': 'broadcast_mul', 'divide': 'broadcast_div',
    'mod': 'broadcast_mod', 'power': 'broadcast_power',
    'maximum': 'broadcast_maximum', 'minimum': 'broadcast_minimum',
    'hypot': 'broadcast_hypot', 'equal': 'broadcast_equal',
    'not_equal': 'broadcast_not_equal', 'greater': 'broadcast_greater',
    'greater_equal': 'broadcast_greater_equal', 'lesser': 'broadcast_lesser',
    'lesser_equal': 'broadcast_lesser_equal',
    'cast': 'Cast', 'concat': 'Concat', 'flatten': 'Flatten', 'flip': 'reverse',
    'pad': 'Pad', 'reshape': 'Reshape', 'split': 'SliceChannel',
    'swapaxes': 'SwapAxis'}
MXNET_NAMES.update({f'random_{d}': f'_random_{d}' for d in (
    'uniform', 'normal', 'randint', 'exponential', 'gamma', 'poisson',
    'negative_binomial', 'generalized_negative_binomial')})

OPERATOR = 'operator'        # the category of the engine's operations


def error(builtin, msg):
    """An MXNetError that is also ``builtin`` (as MXNet 1.6+ raises them)."""
    return mixed_class(MXNetError, builtin)(msg)


def device_label(ctx):
    """MXNet's name for a device's row in the trace: ``cpu/0``, ``gpu/1``."""
    return f'{ctx.device_type}/{ctx.device_id}'


class State:
    """Everything the profiler knows; one instance, :data:`STATE`.

    ``spans``: ``(process, lane, name, start, end, category)``, the engine's
    operations (process: the device) and the user's tasks, frames and
    events (process: the category); ``counters``: ``(category, lane, name,
    time, value)``; ``markers``: ``(category, lane, name, time, scope)``.
    ``stats``: ``{category: {name: [kind, count, total, min, max]}}``, in
    microseconds (durations) or as values (counters), kept only with
    ``aggregate_stats``.
    """

    def __init__(self):
        self.running = self.paused = False
        self.output = False              # MXNet: may dump (has run since)
        self.aggregate = False
        self.imperative = self.symbolic = self.memory = True
        self.ops = None                  # the list the engine appends to
        self.windows = []                # [start marks, t, end marks | None, t]
        self.spans, self.counters, self.markers = [], [], []
        self.stats = {}
        self.t0 = _now()
        self.lock = threading.Lock()

    # -- state ------------------------------------------------------------
    def recording(self):
        """Do user objects record now?  (Running, not paused.)"""
        return self.running and not self.paused

    def start(self):
        if self.ops is None:
            if _TRACE[0] is not None:
                raise error(RuntimeError,
                            'profiler: an engine.Trace is recording; the '
                            'engine records for one of them at a time')
            if not (self.spans or self.counters or self.markers):
                self.t0 = _now()
            self.ops = _TRACE[0] = []    # before the marks: see the top
        self.running = self.output = True
        self.open_window()

    def open_window(self):
        if not self.windows or self.windows[-1][2] is not None:
            self.windows.append([_marks(), _now(), None, None])

    def close_window(self):
        if self.windows and self.windows[-1][2] is None:
            self.windows[-1][2:] = [_marks(), _now()]

    def stop(self):
        self.close_window()
        self.running = False
        self.catch_up()
        if self.ops is not None and _TRACE[0] is self.ops:
            _TRACE[0] = None
        self.ops = None
        self.windows = []

    def catch_up(self):
        """Wait for the operations pushed so far in a window, then harvest."""
        now = _marks()
        for s in list(_STREAMS.values()):
            target = 0
            for start, _, end, _ in self.windows:
                hi = (now if end is None else end).get(s.ctx, 0)
                if hi > start.get(s.ctx, 0):
                    target = max(target, hi)
            if target:
                s.wait(target)           # no error raised: that is waitall's
        self.harvest()

    # -- records ----------------------------------------------------------
    def harvest(self):
        """Move the engine's finished spans that belong to the profile into
        ``spans`` (see the top) and the statistics."""
        ops = self.ops
        if ops is None:
            return
        if _TRACE[0] is not ops:         # an engine.Trace took the slot
            import warnings
            warnings.warn('profiler: an engine.Trace recorded while the '
                          'profiler ran; its operations are not in the profile')
            if self.running and _TRACE[0] is None:
                _TRACE[0] = ops
        n = len(ops)
        batch = ops[:n]
        del ops[:n]                      # the workers append at the end
        windows = self.windows
        keep_graph, keep_ops = self.symbolic, self.imperative
        labels = {}
        for ctx, name, a, b, seq in batch:
            if not (keep_graph if name == 'graph' else keep_ops):
                continue
            for w in windows:
                if seq:
                    end = w[2]
                    if w[0].get(ctx, 0) < seq and (end is None or seq <= end.get(ctx, 0)):
                        break
                elif w[1] <= a and (w[3] is None or a < w[3]):
                    break
            else:
                continue
            label = labels.get(ctx)
            if label is None:
                label = labels[ctx] = device_label(ctx)
            self.add_span(label, f'{ctx} stream', MXNET_NAMES.get(name, name),
                          a, b, OPERATOR)

    def add_span(self, process, lane, name, start, end, category):
        self.spans.append((process, lane, name, start, end, category))
        if self.aggregate:
            self._stat(category, name, 'duration', (end - start) * 1e6)

    def add_counter(self, category, name, value, lane=None):
        self.counters.append((category, lane or _lane(), name, _now(), value))
        if self.aggregate:
            self._stat(category, name, 'counter', value)

    def add_marker(self, category, name, scope):
        self.markers.append((category, _lane(), name, _now(), scope))
        if self.aggregate:               # MXNet lists the category, no rows
            self.stats.setdefault(category, {})

    def _stat(self, category, name, kind, value):
        with self.lock:
            row = self.stats.setdefault(category, {}).get(name)
            if row is None:
                self.stats[category][name] = [kind, 1, value, value, value]
            else:
                row[1] += 1
                row[2] = row[2] + value if kind == 'duration' else value
                row[3] = min(row[3], value)
                row[4] = max(row[4], value)

    def clear_records(self):
        self.spans, self.counters, self.markers = [], [], []


def _marks():
    """How many operations each stream has been given so far."""
    return {s.ctx: s.pushed for s in list(_STREAMS.values())}


def _lane():
    return threading.current_thread().name


STATE = State()
