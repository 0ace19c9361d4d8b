"""The user's own scopes in a profile: MXNet's ``Domain``, ``Task``,
``Frame``, ``Event``, ``Counter`` and ``Marker``.

A :class:`Domain` is a name that groups the others.  ``Task``, ``Frame``
and ``Event`` time the code between their ``start()`` and ``stop()``: a
task's and a frame's bar go to a row of their domain (``<domain>`` and
``<domain>,frame``), an event's to the row ``event``; the row's thread is
the Python thread that called ``stop()``.  A :class:`Counter` draws a
value over time (``set_value``, ``increment``, ``decrement``, ``+=``,
``-=``); a :class:`Marker` is an instant.  As in MXNet, each is recorded
when it happens (a duration when it stops) if the profiler is running
and not paused, and a counter keeps its value in any case.

>>> domain = profiler.Domain('training')
>>> task = domain.new_task('batch')
>>> task.start(); train_one_batch(); task.stop()         # doctest: +SKIP
"""
from .core import STATE, _lane, _now, error

__all__ = ['Domain', 'Task', 'Frame', 'Event', 'Counter', 'Marker']

# A marker's scope, and its letter in the Chrome trace format (MXNet
# shows the task and marker scopes as process-wide).
SCOPES = {'global': 'g', 'process': 'p', 'thread': 't', 'task': 'p', 'marker': 'p'}


class Domain:
    """A group of tasks, frames, counters and markers (a row in the trace).

    >>> d = Domain('data'); d.new_counter('batches', 0)    # doctest: +SKIP
    """

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A :class:`Task` of this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A :class:`Frame` of this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A :class:`Counter` of this domain, set to ``value`` if given."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A :class:`Marker` of this domain."""
        return Marker(self, name)


class _Duration:
    category = None

    def __init__(self, name):
        self.name = str(name)
        self._start = None

    def __str__(self):
        return self.name

    def start(self):
        """Start timing."""
        self._start = _now()

    def stop(self):
        """Stop timing: the span since ``start()`` joins the profile."""
        if self._start is None:
            raise error(RuntimeError, f'{type(self).__name__} {self.name!r}: '
                                      f'stop() without start()')
        start, self._start = self._start, None
        if STATE.recording():
            STATE.add_span(self.category, _lane(), self.name, start, _now(),
                           self.category)


def _domain(domain):
    if not isinstance(domain, Domain):
        raise error(TypeError, f'expected a profiler.Domain, got {domain!r}')
    return domain


class Task(_Duration):
    """A unit of work in ``domain``: all its runs add up to one row of the
    statistics (in the category named after the domain)."""

    def __init__(self, domain, name):
        super().__init__(name)
        self.category = _domain(domain).name


class Frame(_Duration):
    """Like a :class:`Task`, in the category ``<domain>,frame``: MXNet (and
    Intel VTune) count each frame separately, like the frames of a video."""

    def __init__(self, domain, name):
        super().__init__(name)
        self.category = f'{_domain(domain).name},frame'


class Event(_Duration):
    """A timed region without a domain (category ``event``)."""
    category = 'event'


class Counter:
    """A value that changes over time, in ``domain``.

    >>> c = Counter(Domain('data'), 'queued', 0)
    >>> c += 4; c -= 1; c.set_value(10)
    """

    def __init__(self, domain, name, value=None):
        self.name = str(name)
        self.category = _domain(domain).name
        self._value = 0
        if value is not None:
            self.set_value(value)

    def __str__(self):
        return self.name

    def set_value(self, value):
        """Set the counter to ``value`` (an integer)."""
        self._value = int(value)
        if STATE.recording():
            STATE.add_counter(self.category, self.name, self._value)

    def increment(self, delta=1):
        """Add ``delta``."""
        self.set_value(self._value + int(delta))

    def decrement(self, delta=1):
        """Subtract ``delta``."""
        self.set_value(self._value - int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self


class Marker:
    """An instant in ``domain`` (category ``<domain>,instant_marker``)."""

    def __init__(self, domain, name):
        self.name = str(name)
        self.domain = _domain(domain)

    def mark(self, scope='process'):
        """Mark now; ``scope`` is ``'global'``, ``'process'``, ``'thread'``,
        ``'task'`` or ``'marker'`` (how far the line runs in the trace)."""
        if scope not in SCOPES:
            raise error(ValueError, f'Marker.mark: scope must be one of '
                                    f'{", ".join(map(repr, SCOPES))}, got {scope!r}')
        if STATE.recording():
            STATE.add_marker(f'{self.domain.name},instant_marker', self.name,
                             SCOPES[scope])
