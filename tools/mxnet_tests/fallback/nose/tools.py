"""``nose.tools``: make_decorator, raises, assert_raises and the pep8 asserts."""
import re
import unittest

__all__ = ['make_decorator', 'raises', 'assert_raises', 'ok_', 'eq_',
           'istest', 'nottest', 'with_setup']


def make_decorator(func):
    """Make a decorator's wrapper look like ``func`` to the test collector.

    Like nose's: copies name, docstring, module and attributes, and does NOT
    set ``__wrapped__`` (so pytest sees the wrapper's own ``*args`` signature
    and asks for no fixtures).
    """
    def decorate(newfunc):
        name = func.__name__
        try:
            newfunc.__doc__ = func.__doc__
            newfunc.__module__ = func.__module__
            newfunc.__dict__ = dict(func.__dict__, **newfunc.__dict__)
            newfunc.__name__ = name
            newfunc.__qualname__ = getattr(func, '__qualname__', name)
        except TypeError:
            newfunc.compat_func_name = name
        return newfunc
    return decorate


def raises(*exceptions):
    """Decorator: the test passes only if it raises one of ``exceptions``."""
    valid = ' or '.join(e.__name__ for e in exceptions)

    def decorate(func):
        name = func.__name__

        def newfunc(*arg, **kw):
            try:
                func(*arg, **kw)
            except exceptions:
                pass
            else:
                raise AssertionError(f'{name}() did not raise {valid}')
        return make_decorator(func)(newfunc)
    return decorate


def ok_(expr, msg=None):
    """Assert ``expr`` is true."""
    if not expr:
        raise AssertionError(msg)


def eq_(a, b, msg=None):
    """Assert ``a == b``."""
    if not a == b:
        raise AssertionError(msg or f'{a!r} != {b!r}')


def istest(func):
    """Mark ``func`` as a test."""
    func.__test__ = True
    return func


def nottest(func):
    """Mark ``func`` as not a test."""
    func.__test__ = False
    return func


def with_setup(setup=None, teardown=None):
    """Attach setup/teardown functions to a test (run around it here)."""
    def decorate(func):
        def newfunc(*arg, **kw):
            if setup:
                setup()
            try:
                func(*arg, **kw)
            finally:
                if teardown:
                    teardown()
        return make_decorator(func)(newfunc)
    return decorate


# unittest's assertions under nose's pep8 names: assert_raises,
# assert_equal, assert_true, ... (assert_raises also works as a context
# manager, as in nose).
class _Dummy(unittest.TestCase):
    def nop(self):
        pass


_t = _Dummy('nop')


def _pep8(name):
    return re.sub(r'([A-Z])', lambda m: '_' + m.group(1).lower(), name)


for _name in dir(_t):
    if _name.startswith('assert') and '_' not in _name:
        globals()[_pep8(_name)] = getattr(_t, _name)
        __all__.append(_pep8(_name))
del _name
