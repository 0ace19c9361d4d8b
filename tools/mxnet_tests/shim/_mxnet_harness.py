"""pytest plugin that runs MXNet 1.9.1's unit tests, unchanged, on d2lmini.

Loaded by run.py with ``-p _mxnet_harness`` (this directory is first on
PYTHONPATH, so ``import mxnet`` finds the alias package next to it). It

- appends ``fallback/`` to the END of sys.path: stand-ins for ``nose``,
  ``scipy`` and upstream's ``models`` that a real installed package beats;
- makes module-level ``import``s of MXNet names that d2lmini lacks, in the
  upstream test files only, bind placeholders instead of failing the whole
  file's collection; using a placeholder raises ``MissingInD2lmini``, so
  exactly the tests that need the name fail, with its name as the reason;
- registers upstream's markers, bounds each test by a per-test timeout
  (SIGALRM in the test body, plus a faulthandler hard stop for hangs the
  alarm cannot break), and records every outcome as a JSON line for run.py.

Environment (set by run.py): MXH_UPSTREAM_DIR (the temp copy of the test
files), MXH_RESULTS (JSON-lines file), MXH_TIMEOUT (seconds per test).
"""
import builtins
import faulthandler
import json
import os
import signal
import sys
import types

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_FALLBACK = os.path.join(os.path.dirname(_HERE), 'fallback')
if _FALLBACK not in sys.path:
    sys.path.append(_FALLBACK)

# MXNet 1.9.1's tests were written for NumPy 1.x; give back the aliases
# NumPy 1.24/2.0 removed (np.float, np.NaN, ...) so that they fail on
# d2lmini's behaviour, not on the NumPy version. Only missing names are set.
import numpy as _np  # noqa: E402
for _old, _new in [('NaN', _np.nan), ('NAN', _np.nan), ('Inf', _np.inf),
                   ('PINF', _np.inf), ('NINF', -_np.inf), ('float', float),
                   ('int', int), ('bool', bool), ('object', object),
                   ('str', str), ('complex', complex), ('long', int),
                   ('unicode', str), ('float_', _np.float64),
                   ('complex_', _np.complex128), ('round_', _np.round)]:
    if _old not in _np.__dict__:
        setattr(_np, _old, _new)


def _interpolation_keyword(fn):
    """NumPy 2 renamed percentile/quantile's ``interpolation=`` to ``method=``."""
    def wrapped(*args, interpolation=None, **kw):
        if interpolation is not None:
            kw['method'] = interpolation
        return fn(*args, **kw)
    wrapped.__name__, wrapped.__doc__ = fn.__name__, fn.__doc__
    return wrapped


if _np.lib.NumpyVersion(_np.__version__) >= '2.0.0':
    for _name in ('percentile', 'quantile', 'nanpercentile', 'nanquantile'):
        setattr(_np, _name, _interpolation_keyword(getattr(_np, _name)))

_UPSTREAM = os.path.realpath(os.environ.get('MXH_UPSTREAM_DIR', '/nonexistent'))
_RESULTS = os.environ.get('MXH_RESULTS')
_TIMEOUT = float(os.environ.get('MXH_TIMEOUT', '60'))
# faulthandler's hard stop writes the stacks here; run.py reads it.
_HANG = open(_RESULTS + '.hang', 'w') if _RESULTS else None


class MissingInD2lmini(ImportError):
    """A test used an MXNet name that d2lmini does not have."""


class TestTimeout(Exception):
    """A test ran past the harness's per-test timeout."""


# ------------------------------------------------------------ placeholders

def _fail(what):
    raise MissingInD2lmini(f'd2lmini lacks {what}')


class _MissingMeta(type):
    """Metaclass of placeholders: every use of the class raises."""

    def __getattr__(cls, attr):
        if attr.startswith('__') and attr.endswith('__') or attr.startswith('_pytest'):
            raise AttributeError(attr)      # protocol probes (pytest, copy...)
        _fail(cls._mxh_what)

    def __call__(cls, *args, **kwargs):
        _fail(cls._mxh_what)

    def __instancecheck__(cls, obj):
        _fail(cls._mxh_what)

    def __subclasscheck__(cls, sub):
        _fail(cls._mxh_what)

    def __getitem__(cls, key):
        _fail(cls._mxh_what)

    def __iter__(cls):
        _fail(cls._mxh_what)

    def __len__(cls):
        _fail(cls._mxh_what)

    def __contains__(cls, item):
        _fail(cls._mxh_what)


def _missing_name(what):
    # An Exception subclass, so that `except Placeholder:` is legal (it just
    # never matches) and the test fails on the real exception instead.
    return _MissingMeta(what.rsplit('.', 1)[-1], (Exception,),
                        {'_mxh_what': what, '__module__': 'mxnet (missing)'})


class _MissingModule(types.ModuleType):
    """Stands for an ``mxnet.X`` module d2lmini lacks; its names are placeholders."""

    def __init__(self, name):
        super().__init__(name, f'placeholder: d2lmini has no {name}')
        self._mxh_what = name

    def __getattr__(self, attr):
        if attr.startswith('__') and attr.endswith('__') or attr.startswith('_pytest'):
            raise AttributeError(attr)
        return _missing_name(f'{self._mxh_what}.{attr} (module {self._mxh_what})')


def _overlay(real, name, attrs):
    """A module object with ``attrs`` on top of ``real``'s attributes."""
    proxy = types.ModuleType(name)
    proxy.__dict__.update(attrs)
    if real is not None:
        proxy.__getattr__ = lambda attr: getattr(real, attr)
    return proxy


def _missing_chain(fullname):
    """For ``import a.b.c [as x]`` with a.b.c absent: a top-level ``a`` whose
    attribute path ``.b.c`` ends in a placeholder module."""
    parts = fullname.split('.')
    obj = _MissingModule(fullname)
    for i in range(len(parts) - 1, 0, -1):
        prefix = '.'.join(parts[:i])
        obj = _overlay(sys.modules.get(prefix), prefix, {parts[i]: obj})
    return obj


_original_import = builtins.__import__


def _from_upstream_module_level(globals_, locals_):
    if globals_ is None or locals_ is not globals_:
        return False            # only module-level code has locals is globals
    path = globals_.get('__file__') or ''
    return os.path.realpath(path).startswith(_UPSTREAM + os.sep)


def _absent(err):
    """Whether ``err`` says an mxnet/d2lmini module does not exist (rather
    than d2lmini failing while importing one: that must surface)."""
    return (isinstance(err, ModuleNotFoundError) and err.name is not None
            and err.name.split('.')[0] in ('mxnet', 'd2lmini'))


def _has(module, attr):
    # Not hasattr: d2lmini's lazy module __getattr__ may raise
    # ModuleNotFoundError for a submodule it does not have.
    try:
        getattr(module, attr)
    except AttributeError:
        return False
    except ModuleNotFoundError as err:
        if _absent(err):
            return False
        raise
    return True


def _lenient_import(name, globals=None, locals=None, fromlist=(), level=0):
    if (level != 0 or not (name == 'mxnet' or name.startswith('mxnet.'))
            or not _from_upstream_module_level(globals, locals)):
        return _original_import(name, globals, locals, fromlist, level)
    try:
        module = _original_import(name, globals, locals, fromlist, level)
    except ModuleNotFoundError as err:
        if not _absent(err):
            raise
        module = sys.modules.get(name) if fromlist else None
        if module is None:              # `name` itself does not exist
            return _MissingModule(name) if fromlist else _missing_chain(name)
        # else a name in the fromlist is a missing lazy submodule: below
    if fromlist:
        missing = {n: _missing_name(f'{name}.{n}') for n in fromlist
                   if n != '*' and not _has(module, n)}
        if missing:
            return _overlay(module, name, missing)
    return module


builtins.__import__ = _lenient_import


# ------------------------------------------------------------ pytest hooks

_MARKERS = ['seed(n): fixed random seed', 'serial: run serially',
            'gpu: needs a GPU', 'garbage_expected: leaks by design',
            'flaky: known to be flaky', 'integration: integration test',
            'slow: slow test']


def pytest_configure(config):
    for m in _MARKERS:
        config.addinivalue_line('markers', m)


def _record(**fields):
    if _RESULTS:
        with open(_RESULTS, 'a', encoding='utf-8') as f:
            f.write(json.dumps(fields) + '\n')


def _reason(report):
    crash = getattr(report.longrepr, 'reprcrash', None)
    if crash is not None:
        return crash.message
    if isinstance(report.longrepr, tuple):      # skips: (path, line, reason)
        return str(report.longrepr[2])
    text = str(report.longrepr or '').strip().splitlines()
    return text[-1] if text else ''


def pytest_sessionstart(session):
    import mxnet                     # the alias: tells run.py which d2lmini
    _record(event='env', d2lmini=os.path.dirname(os.path.abspath(mxnet.__file__)))


def pytest_sessionfinish(session, exitstatus):
    _record(event='finish', exitstatus=int(exitstatus))


def pytest_collectreport(report):
    if report.failed:
        _record(event='collect_error', nodeid=report.nodeid,
                reason=_reason(report))


def pytest_runtest_logstart(nodeid, location):
    _record(event='start', nodeid=nodeid)
    # A hard stop for hangs SIGALRM cannot interrupt (e.g. a deadlock in C):
    # dump every thread's stack and exit; run.py restarts after this test.
    # (To a file: pytest captures fd 2, and the capture dies with us.)
    if _HANG is not None:
        faulthandler.dump_traceback_later(_TIMEOUT + 30, exit=True, file=_HANG)


def pytest_runtest_logfinish(nodeid, location):
    faulthandler.cancel_dump_traceback_later()


def pytest_runtest_logreport(report):
    reason = '' if report.passed else _reason(report)
    _record(event='report', nodeid=report.nodeid, when=report.when,
            outcome=report.outcome, reason=reason)


def _on_alarm(signum, frame):
    raise TestTimeout(f'test ran longer than {_TIMEOUT:g} s (harness timeout)')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, _TIMEOUT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
