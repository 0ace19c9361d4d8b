"""``mx.util``: the switches MXNet 1.x code asks about before choosing a path.

MXNet 1.x has two array front ends (the legacy ``nd`` and NumPy-compatible
``mx.np``) and two shape conventions (legacy: no 0-d arrays, 0 means
"unknown"; NumPy: 0-d and zero-size arrays).  d2lmini has both front ends,
switched per thread by ``npx.set_np()``/``npx.reset_np()`` (or the
``use_np`` decorators), and one shape convention, NumPy's.
"""

__all__ = ['is_np_array', 'is_np_shape', 'set_np', 'reset_np', 'set_np_shape',
           'np_array', 'np_shape', 'use_np', 'use_np_array', 'use_np_shape']

import contextlib
import functools
import inspect
import threading


class _Flags(threading.local):
    """Per thread, as MXNet's: ``np_array`` (make ``mx.np`` arrays) and
    ``np_shape`` (NumPy shapes; d2lmini always has them)."""
    np_array = False
    np_shape = True


_FLAGS = _Flags()


def is_np_array():
    """Whether NumPy-array mode is on (``npx.set_np()``): Gluon then makes
    and returns ``mx.np.ndarray`` arrays instead of ``nd.NDArray`` ones."""
    return _FLAGS.np_array


def is_np_shape():
    """Whether shapes follow NumPy (``x[1, 2]`` is 0-d, size-0 axes exist).
    d2lmini's arrays always do; ``set_np_shape(False)`` is remembered only so
    that MXNet code that saves and restores the flag reads back what it set."""
    return _FLAGS.np_shape


def set_np_shape(active):
    """Set the NumPy-shape flag; returns the previous value (MXNet's API)."""
    prev, _FLAGS.np_shape = _FLAGS.np_shape, bool(active)
    return prev


def _set_np_array(active):
    prev, _FLAGS.np_array = _FLAGS.np_array, bool(active)
    return prev


def set_np(shape=True, array=True):
    """Turn on NumPy semantics (``npx.set_np()``): ``mx.np`` arrays from
    Gluon, and NumPy shapes.  As in MXNet, NumPy arrays need NumPy shapes."""
    if array and not shape:
        raise ValueError('NumPy-array semantics need NumPy-shape semantics: '
                         'set_np(shape=True, array=True)')
    set_np_shape(shape)
    _set_np_array(array)


def reset_np():
    """Back to the legacy ``nd`` front end (``npx.reset_np()``)."""
    set_np(shape=True, array=False)


@contextlib.contextmanager
def np_array(active=True):
    """``with np_array():`` NumPy-array mode inside the block only."""
    prev = _set_np_array(active)
    try:
        yield
    finally:
        _set_np_array(prev)


@contextlib.contextmanager
def np_shape(active=True):
    """``with np_shape():`` the NumPy-shape flag inside the block only."""
    prev = set_np_shape(active)
    try:
        yield
    finally:
        set_np_shape(prev)


def _scoped(scope, func, name):
    """Wrap a function, or every method and property of a class, so that it
    runs inside ``scope()``."""
    if inspect.isclass(func):
        # Inherited methods too (Block.__call__, forward), as MXNet does.
        for attr, member in inspect.getmembers(
                func, lambda m: inspect.isfunction(m) or inspect.ismethod(m)
                or isinstance(m, property)):
            if isinstance(member, property):
                setattr(func, attr, property(_scoped(scope, member.fget, name)
                                             if member.fget else None,
                                             member.fset, member.fdel, member.__doc__))
            elif isinstance(vars(func).get(attr), staticmethod):
                setattr(func, attr, staticmethod(_scoped(scope, member, name)))
            else:
                setattr(func, attr, _scoped(scope, member, name))
        return func
    if not callable(func):
        raise TypeError(f'{name} decorates classes and callables, got '
                        f'{type(func).__name__}')

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with scope():
            return func(*args, **kwargs)
    return wrapper


def use_np_array(func):
    """Decorator: ``func`` (or every method of a class, such as a Block)
    runs in NumPy-array mode, so the arrays it makes are ``mx.np`` arrays."""
    return _scoped(np_array, func, 'use_np_array')


def use_np_shape(func):
    """Decorator: ``func`` runs with NumPy shapes (always so in d2lmini)."""
    return _scoped(np_shape, func, 'use_np_shape')


def use_np(func):
    """Decorator: NumPy shapes and NumPy arrays (MXNet's tests' ``@use_np``)."""
    return use_np_shape(use_np_array(func))
