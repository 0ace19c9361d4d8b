"""The error types of d2lmini, as in MXNet 1.x's ``mxnet.base``.

Every error the package raises on purpose is an :class:`MXNetError`, the
class the classic code catches::

    try:
        nd.zeros((1,), ctx=mx.gpu())
    except mx.base.MXNetError:           # no GPU: fall back to the CPU
        ctx = mx.cpu()

Since MXNet 1.6 an error also carries the built-in type that says what went
wrong, so a shape error is caught by ``except MXNetError`` *and* by
``except ValueError``.  MXNet reads that type from the C++ message's prefix
(``"ValueError: ..."``); here :func:`as_mxnet_error` mixes it in from the
Python exception that the front end or a kernel raised::

    >>> e = as_mxnet_error(ValueError('add: shapes (2, 3) and (4, 5)'))
    >>> isinstance(e, MXNetError), isinstance(e, ValueError)
    (True, True)

:class:`MXNetError` derives from ``RuntimeError``, as MXNet's does.

:func:`_check_kwargs` is the one check every operator front end (``nd.ones``,
``nd.exp``, ``nd.Convolution``...) makes of the keywords its ``**kwargs``
caught: a typo fails at once, with a guess at the keyword meant.
"""
import difflib
import functools
import inspect

import numpy as np

__all__ = ['MXNetError', 'InternalError', 'NotImplementedForSymbol', 'register_error', 'error_types',
           'as_mxnet_error', 'integer_types', 'numeric_types', 'string_types',
           'py_str', 'mx_real_t']

# The type tuples and helpers of MXNet's base that user code imports.
integer_types = (int, np.int32, np.int64)
numeric_types = (float, int, np.generic)
string_types = (str,)
mx_real_t = np.float32


def py_str(x):
    """``bytes`` from a C string as ``str`` (MXNet's helper)."""
    return x.decode('utf-8')


class _NullType:
    """MXNet's placeholder for an argument that was not given."""

    def __repr__(self):
        return '_Null'


_Null = _NullType()


class MXNetError(RuntimeError):
    """The base of every error d2lmini raises on purpose (MXNet's name)."""


error_types = {}              # name -> class, MXNet's registry of error types


def register_error(func_name=None, cls=None):
    """Register an error class under a name (``mx.base.register_error``).

    Used as a decorator (``@register_error``), with a name
    (``register_error('ShapeError')``), or with both arguments.
    """
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(mycls):
        error_types[func_name if isinstance(func_name, str) else mycls.__name__] = mycls
        return mycls
    return register if cls is None else register(cls)


@register_error
class NotImplementedForSymbol(MXNetError):
    """What a Symbol cannot do because it holds no values (``bool(sym)``)."""

    def __init__(self, function, alias=None, *args):
        name = getattr(function, '__name__', str(function))
        msg = f'Function {name}'
        if alias:
            msg += f' (namely operator "{alias}")'
        if args:
            msg += f' with arguments ({", ".join(type(a).__name__ for a in args)})'
        super().__init__(msg + ' is not implemented for Symbol and only available '
                         'in NDArray.')
        self.function, self.alias = name, alias


@register_error
class InternalError(MXNetError):
    """A bug in d2lmini itself rather than in the calling code."""

    def __init__(self, msg=''):
        if 'd2lmini hint:' not in msg:
            msg += ('\nd2lmini hint: this is an internal error; please report it '
                    'with the code that triggered it.')
        super().__init__(msg)


# The built-in types that an MXNetError may carry.  All share
# BaseException's instance layout, so each can be a second base of
# RuntimeError (OSError and StopIteration could not).
_MIXABLE = (ValueError, TypeError, IndexError, KeyError, AttributeError,
            NotImplementedError, ArithmeticError, AssertionError)
_MIXED = {}                   # (base, builtin) -> the mixed class


def mixed_class(base, builtin):
    """The subclass of ``base`` (an MXNetError class) that is also ``builtin``."""
    key = (base, builtin)
    cls = _MIXED.get(key)
    if cls is None:
        cls = _MIXED[key] = type(base.__name__, (base, builtin), {
            '__module__': base.__module__,
            '__doc__': f'{base.__name__} that is also a {builtin.__name__}.'})
    return cls


def _builtin_of(exc_type):
    """The most specific built-in type of ``exc_type`` that can be mixed in."""
    for t in exc_type.__mro__:
        if t.__module__ == 'builtins' and issubclass(t, _MIXABLE):
            if t in _MIXABLE or t.__basicsize__ == Exception.__basicsize__:
                return t      # (UnicodeError & co. have fields of their own)
    return None


def as_mxnet_error(exc, base=MXNetError):
    """``exc`` as an instance of ``base`` with its built-in type mixed in.

    An exception that already is a ``base`` is returned as it is; otherwise
    the result has ``exc``'s message, and ``exc`` as its ``__cause__`` if
    ``exc`` was raised (its traceback says where).  An ``exc`` made only to
    carry a message is not chained: the traceback would print the same
    message twice.
    """
    if isinstance(exc, base):
        return exc
    builtin = _builtin_of(type(exc))
    cls = base if builtin is None else mixed_class(base, builtin)
    err = cls(*exc.args) if exc.args else cls(str(exc))
    if exc.__traceback__ is not None:
        err.__cause__ = exc
    return err


for _t in _MIXABLE:           # MXNet's names for the types it registers
    error_types[_t.__name__] = mixed_class(MXNetError, _t)
error_types['MXNetError'] = MXNetError
del _t


# === keywords: the one check of every operator front end ==========================
@functools.lru_cache(maxsize=None)
def _keywords(fn):
    """The names ``fn`` takes as keywords (its signature, less ``*args``/``**kw``)."""
    return tuple(p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def _check_kwargs(fn, kwargs, ignored=()):
    """Refuse the keywords in ``kwargs`` that front end ``fn`` does not take.

    ``kwargs`` is what ``fn``'s ``**kwargs`` caught; ``ignored`` are MXNet
    keywords ``fn`` accepts and ignores (``stype``, ``cudnn_tune``...), and
    ``out=None`` (MXNet's default) is always accepted.  The TypeError names
    ``fn`` and guesses the keyword meant from ``fn``'s signature::

        >>> nd.ones(shape=(2, 2), ctxx=mx.cpu())
        Traceback (most recent call last):
        TypeError: ones() got an unexpected keyword argument 'ctxx'; did you mean 'ctx'?
    """
    bad = [k for k in kwargs
           if k not in ignored and not (k == 'out' and kwargs[k] is None)]
    if not bad:
        return
    known = _keywords(fn)
    near = {k: difflib.get_close_matches(k, known + tuple(ignored), n=1) for k in bad}
    if len(bad) == 1 and near[bad[0]]:
        raise TypeError(f"{fn.__name__}() got an unexpected keyword argument "
                        f"'{bad[0]}'; did you mean '{near[bad[0]][0]}'?")
    head = ('an unexpected keyword argument' if len(bad) == 1
            else 'unexpected keyword arguments')
    what = ', '.join(f"'{k}'" + (f" (did you mean '{near[k][0]}'?)" if near[k] else '')
                     for k in bad)
    raise TypeError(f"{fn.__name__}() got {head} {what}; its keywords are "
                    f"{', '.join(known)}")
