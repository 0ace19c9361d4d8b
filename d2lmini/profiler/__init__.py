"""``mx.profiler``: what the engine ran, where and for how long, as in MXNet.

The profiler is the engine's trace (:mod:`d2lmini.engine.trace`, chapter
3) behind MXNet 1.9.1's API::

    profiler.set_config(profile_all=True, aggregate_stats=True,
                        filename='profile.json')
    profiler.set_state('run')
    train_one_epoch()                  # every operation, on every device
    profiler.set_state('stop')
    print(profiler.dumps())            # a table per operator: count, times
    profiler.dump()                    # profile.json for chrome://tracing

``dump`` writes a Chrome trace (open it in ``chrome://tracing`` or
https://ui.perfetto.dev): one process per device, named as MXNet names it
(``cpu/0``, ``gpu/0``), whose row holds a bar per operation of that
device's stream, named as in MXNet's profile; then a process per category
of the user's scopes (:mod:`.scopes`).  ``dumps`` returns MXNet's table
(or JSON) of aggregate statistics (:mod:`.stats`).  Which operations are
profiled is decided when they are pushed (:mod:`.core`): ``pause`` and
``resume`` wait for nothing, ``set_state('stop')``, ``dump`` and ``dumps``
wait for the operations pushed while profiling (not for other work, and
they raise no engine error: that is the next sync point's job).

``profile_memory`` draws each device's memory in use as MXNet's
``Device Storage`` counters (``Memory: cpu/0``), counted where the engine
hands an operation its outputs (:mod:`.memory`).  What is not here:
``profile_api`` records nothing, as there is
no C API; ``continuous_dump`` starts no background writer (every ``dump``
writes the whole profile, a complete JSON file); ``profile_process=
'server'`` is refused (a parameter server's timeline is
``D2LMINI_PS_TRACE``, chapter 12).  ``profile_symbolic`` covers the
graphs of symbols and hybridized blocks, each one engine operation named
``graph``; ``profile_imperative`` all other operations.  A copy between
devices is ``copyto`` (MXNet's ``CopyCPU2GPU`` names both devices; the
engine's span knows only the destination).  As in MXNet, a profile that
was run but never dumped is written when the program exits.
"""
import atexit
import difflib
import json
import warnings

from ..engine.trace import to_chrome
from . import stats as _stats
from .core import OPERATOR, STATE, error
from .memory import COUNTERS as _MEMORY
from .scopes import Counter, Domain, Event, Frame, Marker, Task

__all__ = ['set_config', 'set_state', 'pause', 'resume', 'dump', 'dumps',
           'Domain', 'Task', 'Frame', 'Event', 'Counter', 'Marker',
           'profiler_set_config', 'profiler_set_state', 'dump_profile']

# MXNet's keywords and their defaults (src/c_api/c_api_profile.cc).
_DEFAULTS = {'profile_all': False, 'profile_symbolic': True,
             'profile_imperative': True, 'profile_memory': True,
             'profile_api': True, 'filename': 'profile.json',
             'continuous_dump': True, 'dump_period': 1.0,
             'aggregate_stats': False, 'profile_process': 'worker'}
_CONFIG = dict(_DEFAULTS)


def set_config(**kwargs):
    """Configure the profiler (keywords only, MXNet's).

    ``profile_all``, ``profile_symbolic``, ``profile_imperative``,
    ``profile_memory``, ``profile_api``, ``continuous_dump``,
    ``aggregate_stats``: booleans; ``filename``: the trace ``dump``
    writes; ``dump_period``: seconds (accepted, see the module's notes);
    ``profile_process``: ``'worker'``.  ``aggregate_stats=True`` keeps the
    statistics that :func:`dumps` prints; turning it off drops them.
    """
    new = dict(_CONFIG)
    for key, value in kwargs.items():
        if key not in _DEFAULTS:
            near = difflib.get_close_matches(key, _DEFAULTS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ''
            raise error(TypeError, f'profiler.set_config: unknown keyword {key!r}'
                                   f'{hint} (its keywords are {", ".join(_DEFAULTS)})')
        new[key] = _parse(key, value)
    _check_process(new['profile_process'])
    _CONFIG.update(new)
    on = _CONFIG['profile_all']
    STATE.imperative = on or _CONFIG['profile_imperative']
    STATE.symbolic = on or _CONFIG['profile_symbolic']
    memory = on or _CONFIG['profile_memory']
    if STATE.running and memory != STATE.memory:
        (_MEMORY.start if memory else _MEMORY.stop)()
    STATE.memory = memory
    if _CONFIG['aggregate_stats'] != STATE.aggregate:
        STATE.aggregate, STATE.stats = _CONFIG['aggregate_stats'], {}


def _parse(key, value):
    default = _DEFAULTS[key]
    if isinstance(default, bool):
        text = str(value).strip().lower()
        if text in ('true', '1'):
            return True
        if text in ('false', '0'):
            return False
    elif key == 'dump_period':
        try:
            if float(value) > 0:
                return float(value)
        except (TypeError, ValueError):
            pass
    elif isinstance(value, str) and (value or key != 'filename'):
        return value
    kind = {bool: 'a boolean', float: 'a positive number'}.get(type(default), 'a string')
    raise error(ValueError, f'profiler.set_config: {key} must be {kind}, got {value!r}')


def _check_process(profile_process):
    if profile_process == 'worker':
        return
    if profile_process == 'server':
        raise error(NotImplementedError,
                    "profiler: profile_process='server' is not supported; a "
                    "parameter server's timeline is D2LMINI_PS_TRACE=<dir>")
    raise error(ValueError, f"profiler: profile_process must be 'worker' or "
                            f"'server', got {profile_process!r}")


def set_state(state='stop', profile_process='worker'):
    """``'run'``: start profiling (and resume if paused); ``'stop'``: stop,
    once the operations pushed while running have run."""
    _check_process(profile_process)
    if state == 'run':
        if STATE.memory and not STATE.running:
            _MEMORY.start()
        STATE.start()
        STATE.paused = False
    elif state == 'stop':
        STATE.stop()
        _MEMORY.stop()
    else:
        raise error(ValueError, f"profiler.set_state: state must be 'run' or "
                                f"'stop', got {state!r}")


def pause(profile_process='worker'):
    """Leave out the operations pushed, and the scopes ended, from now on."""
    _check_process(profile_process)
    STATE.paused = True
    STATE.close_window()


def resume(profile_process='worker'):
    """Undo :func:`pause`."""
    _check_process(profile_process)
    STATE.paused = False
    if STATE.running:
        STATE.open_window()


def dump(finished=True, profile_process='worker'):
    """Write the profile so far to the configured ``filename``, as a Chrome
    trace.  ``finished=True`` also ends this profile: the next run starts a
    new one (MXNet then refuses to dump until the profiler runs again)."""
    _check_process(profile_process)
    if not STATE.output:
        raise error(RuntimeError, "profiler.dump: the profiler hasn't run; call "
                                  "set_config(...) and set_state('run') first")
    STATE.catch_up()
    with open(_CONFIG['filename'], 'w') as f:
        json.dump(chrome(), f)
    if finished:
        STATE.clear_records()
        STATE.output = STATE.running


def dumps(reset=False, format='table', sort_by='total', ascending=False):
    """MXNet's aggregate statistics, as a table (``format='table'``) or
    JSON (``'json'``), sorted by ``'total'``, ``'avg'``, ``'min'``,
    ``'max'`` or ``'count'``.  Needs ``set_config(aggregate_stats=True)``
    (else it returns ``''``, as MXNet does); ``reset=True`` clears them."""
    checks = [('format', format, _stats.FORMATS), ('sort_by', sort_by, _stats.SORT_BY),
              ('ascending', ascending, (False, True)), ('reset', reset, (False, True))]
    for name, value, allowed in checks:
        if value not in allowed:
            raise error(ValueError, f'profiler.dumps: {name} must be one of '
                                    f'{", ".join(map(repr, allowed))}, got {value!r}')
    if STATE.output:
        STATE.catch_up()
    if not STATE.aggregate:
        warnings.warn('profiler.dumps: no statistics are kept; call '
                      'set_config(aggregate_stats=True) first', stacklevel=2)
        return ''
    with STATE.lock:
        text = (_stats.table if format == 'table' else _stats.as_json)(
            STATE.stats, sort_by, ascending)
        if reset:
            STATE.stats = {}
    return text


def chrome():
    """The profile so far as a Chrome trace document (a dict): a process
    per device (its operations), then one per category of user scopes."""
    t0 = STATE.t0
    groups = {}                          # process -> [span], [counter], [marker]
    for proc, lane, name, a, b, cat in STATE.spans:
        groups.setdefault(proc, ([], [], []))[0].append((lane, name, a, b, {'cat': cat}))
    for kind, records in ((1, STATE.counters), (2, STATE.markers)):
        for rec in records:
            groups.setdefault(rec[0], ([], [], []))[kind].append(rec)
    devices = {proc for proc, _, _, _, _, cat in STATE.spans if cat == OPERATOR}
    order = sorted(devices, key=lambda p: (p.split('/')[0], int(p.split('/')[1])))
    order += sorted(set(groups) - devices)
    events = []
    for pid, proc in enumerate(order):
        spans, counters, markers = groups[proc]
        lanes = list(dict.fromkeys([s[0] for s in spans] + [r[1] for r in counters]
                                   + [r[1] for r in markers]))
        events += to_chrome(spans, None, proc, pid, t0, lanes)['traceEvents']
        tid = {lane: i for i, lane in enumerate(lanes)}
        for _, lane, name, t, value in counters:
            events.append({'name': name, 'cat': proc, 'ph': 'C', 'pid': pid,
                           'tid': tid[lane], 'ts': round(1e6 * (t - t0), 1),
                           'args': {name: value}})
        for _, lane, name, t, scope in markers:
            events.append({'name': name, 'cat': proc, 'ph': 'i', 's': scope,
                           'pid': pid, 'tid': tid[lane],
                           'ts': round(1e6 * (t - t0), 1)})
    return {'traceEvents': events, 'displayTimeUnit': 'ms'}


# --- MXNet's deprecated spellings -------------------------------------------------
def profiler_set_config(mode='symbolic', filename='profile.json'):
    """Deprecated: ``set_config(profile_<mode>=True, filename=filename)``."""
    warnings.warn('profiler.profiler_set_config() is deprecated; use '
                  'profiler.set_config()', DeprecationWarning, stacklevel=2)
    set_config(**{f'profile_{mode}': True, 'filename': filename})


def profiler_set_state(state='stop'):
    """Deprecated: :func:`set_state`."""
    warnings.warn('profiler.profiler_set_state() is deprecated; use '
                  'profiler.set_state()', DeprecationWarning, stacklevel=2)
    set_state(state)


def dump_profile():
    """Deprecated: ``dump(True)``."""
    warnings.warn('profiler.dump_profile() is deprecated; use profiler.dump()',
                  DeprecationWarning, stacklevel=2)
    dump(True)


def _reset():
    """Back to the state of a fresh import (for tests)."""
    _MEMORY.stop()
    STATE.stop()
    STATE.__init__()
    _CONFIG.clear()
    _CONFIG.update(_DEFAULTS)


@atexit.register
def _dump_at_exit():
    # MXNet writes a profile that was run and not dumped when it exits.
    if STATE.output and (STATE.running or STATE.spans or STATE.counters
                         or STATE.markers):
        try:
            dump(True)
        except Exception as e:           # noqa: BLE001 - exiting: say, go on
            warnings.warn(f'profiler: could not write the profile at exit: {e}')
