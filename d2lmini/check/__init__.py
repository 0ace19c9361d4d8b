"""Checks for the book's coding exercises: ``d2l.check.<chapter>.<name>``.

Every chapter ends with a coding exercise: a function (or a class) to
write, and a check to call on it::

    >>> from d2lmini import d2l
    >>> d2l.check.ndarray.sum_to(sum_to)
    ✓ correct on 7 inputs

The verdict is printed, in a notebook and in a script alike, and returned
as a :class:`Result`, true when the solution is correct.

A check runs the solution on several inputs, edge cases included, and
compares each answer with an oracle: NumPy, a small simulation, or the
package's own version of what the exercise re-builds.  It stops at the
first wrong answer and says which input it was, what was expected and
what came back.  A solution that still raises ``NotImplementedError``
(the stub in the notebook) is "not attempted yet", not an error, and an
exception raised by the solution is reported with the input that caused
it, never raised.

One module per chapter, named after its concept, each loaded on first
use.  This module holds what they share: :class:`Result`,
:func:`run_cases`, :func:`show` and the comparisons.
"""
import importlib

import numpy as np

from .. import ndarray as nd

CHAPTERS = ('ndarray', 'autograd', 'engine', 'layers', 'lenet',
            'auto_parallelism', 'multi_device', 'data_parallel', 'kvstore',
            'model_parallelism', 'parameter_server', 'dist_kvstore',
            'horovod', 'symbolic', 'serving')

__all__ = ['Result', 'Case', 'run_cases', 'show', 'compare_array',
           'compare_equal', *CHAPTERS]


def __getattr__(name):           # d2l.check.autograd: loaded on first use
    if name in CHAPTERS:
        return importlib.import_module(f'.{name}', __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Result:
    """What a check found: true when the solution is correct.

    ``str()`` is its message: ``✓ correct on N inputs``, ``✗ on input ...``
    or ``not attempted yet: ...``.  The check has printed that message
    already, so a notebook shows nothing more for a cell that ends with
    the check's call.
    """

    def __init__(self, ok, message, attempted=True):
        self.ok, self.message, self.attempted = ok, message, attempted

    def __bool__(self):
        return self.ok

    def __str__(self):
        return self.message

    def __repr__(self):
        return f'Result(ok={self.ok}, attempted={self.attempted})'

    def _ipython_display_(self):             # printed already: show no more
        pass


class Case:
    """One input of a check: the arguments, and how to show them.

    Shown as ``name=value, ...`` when ``names`` are given, or as ``text``.
    """

    def __init__(self, *args, names=None, text=None):
        self.args, self.names, self.text = args, names, text

    def __str__(self):
        if self.text is not None:
            return self.text
        if self.names is None:
            return ', '.join(show(a) for a in self.args)
        return ', '.join(f'{n}={show(a)}'
                         for n, a in zip(self.names, self.args))


def run_cases(solution, cases, expect, compare, todo, prepare=None):
    """Run ``solution`` on each case and compare with ``expect(*args)``;
    print the verdict and return it as a :class:`Result`.

    ``compare(expected, got, args)`` returns None when ``got`` is right,
    else a sentence saying what is wrong.  ``prepare(args)`` makes fresh
    arguments for each call (a solution may change its inputs); ``todo``
    says what to write, for a solution not attempted yet.
    """
    result = _verdict(solution, cases, expect, compare, todo, prepare)
    print(result.message)
    return result


def _verdict(solution, cases, expect, compare, todo, prepare):
    for case in cases:
        args = prepare(case.args) if prepare else case.args
        try:
            got = solution(*args)
        except NotImplementedError:
            return Result(False, f'not attempted yet: {todo}', attempted=False)
        except Exception as e:                  # the learner's bug: report it
            return Result(False, f'✗ on input {case}:\n  your code raised '
                                 f'{type(e).__name__}: {e}')
        expected = expect(*case.args)
        problem = compare(expected, got, args)
        if problem is not None:
            return Result(False, f'✗ on input {case}:\n  {problem}')
    return Result(True, f'✓ correct on {len(cases)} inputs')


# === showing values compactly ================================================
def show(value, limit=60):
    """A short one-line text for ``value`` (arrays by shape and values)."""
    if isinstance(value, nd.NDArray):
        return (f'NDArray{value.shape} {np.dtype(value.dtype)} on '
                f'{value.context} {_values(value.asnumpy(), limit)}')
    if isinstance(value, np.ndarray):
        return f'array{value.shape} {value.dtype} {_values(value, limit)}'
    if isinstance(value, (list, tuple)) and any(
            isinstance(v, (nd.NDArray, np.ndarray)) for v in value):
        items = ', '.join(show(v, limit // 2) for v in value)
        return f'[{items}]' if isinstance(value, list) else f'({items})'
    if isinstance(value, type):
        return value.__name__
    if callable(value):
        return getattr(value, '__name__', repr(value))
    text = repr(value)
    return text if len(text) <= 2 * limit else text[:2 * limit - 3] + '...'


def _values(a, limit):
    text = np.array2string(np.asarray(a), separator=', ', threshold=8,
                           edgeitems=2, max_line_width=10_000)
    text = ' '.join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


# === comparisons: None when right, else what is wrong ========================
def compare_equal(expected, got, args=None):
    """Plain Python values (numbers, tuples, lists, dicts) compared with ==."""
    if got == expected:
        return None
    return f'expected {show(expected)}, got {show(got)}'


def compare_array(expected, got, ctx=None, rtol=1e-5, atol=1e-6, what=''):
    """An NDArray ``got`` against the NumPy array ``expected``.

    Names the first difference of kind: type, shape, dtype, context (when
    ``ctx`` is given), then values (with the first index that differs).
    """
    what = f'{what}: ' if what else ''
    if not isinstance(got, nd.NDArray):
        return (f'{what}expected an NDArray, got {type(got).__name__} '
                f'{show(got)}')
    if got.shape != expected.shape:
        return f'{what}expected shape {expected.shape}, got shape {got.shape}'
    if np.dtype(got.dtype) != expected.dtype:
        return (f'{what}expected dtype {expected.dtype}, got dtype '
                f'{np.dtype(got.dtype)}')
    if ctx is not None and got.context != ctx:
        return f'{what}expected an array on {ctx}, got one on {got.context}'
    values = got.asnumpy()
    if np.allclose(values, expected, rtol=rtol, atol=atol, equal_nan=True):
        return None
    bad = np.argwhere(~np.isclose(values, expected, rtol=rtol, atol=atol,
                                  equal_nan=True))[0]
    index = tuple(int(i) for i in bad)
    return (f'{what}expected {_values(expected, 60)}, got '
            f'{_values(values, 60)} (first difference at index {index}: '
            f'expected {_values(expected[index], 20)}, got '
            f'{_values(values[index], 20)})')
