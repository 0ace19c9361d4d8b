"""Automatic names (``mx.name``): ``dense0``, ``dense1``, ... and prefixes.

A :class:`NameManager` turns a *hint* (``'dense'``) into a fresh name
(``'dense0'``, then ``'dense1'``) by counting per hint; a name given by the
user is kept as it is.  One manager is current per thread; ``with
NameManager():`` makes a new one current (its counters start at 0 again) and
the old one comes back on exit.  :class:`Prefix` also puts a prefix in front
of every name.

Gluon names its top-level Blocks with the current manager, as MXNet does, so::

    with mx.name.Prefix('net1_'):
        d = nn.Dense(2)          # d.prefix == 'net1_dense0_'

Inside ``with block.name_scope():`` children are named by the Block instead
(``mlp0_dense0_``), and the current manager is a ``Prefix(block.prefix)``.

Examples
--------
>>> with NameManager() as nm:
...     nm.get(None, 'fc'), nm.get(None, 'fc'), nm.get('out', 'fc')
('fc0', 'fc1', 'out')
"""
import threading
import warnings

__all__ = ['NameManager', 'Prefix']


class _CurrentProperty(type):
    """Gives the class a ``current`` property (``NameManager.current``)."""

    @property
    def current(cls):
        warnings.warn('NameManager.current has been deprecated. It is advised to '
                      'use the `with` statement with NameManager.',
                      DeprecationWarning, stacklevel=2)
        return _current()

    @current.setter
    def current(cls, manager):
        NameManager._current.value = manager


class NameManager(metaclass=_CurrentProperty):
    """Gives a fresh name per hint: ``get(None, 'fc')`` -> ``'fc0'``, ``'fc1'``."""

    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """``name`` if given, else ``hint`` followed by this manager's count of it."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f'{hint}{count}'

    def __enter__(self):
        self._old_manager = _current()
        NameManager._current.value = self
        return self

    def __exit__(self, *exc):
        NameManager._current.value = self._old_manager
        return False


class Prefix(NameManager):
    """A NameManager that puts ``prefix`` in front of every name.

    >>> with Prefix('mynet_') as nm:
    ...     nm.get(None, 'fc'), nm.get('out', 'fc')
    ('mynet_fc0', 'mynet_out')
    """

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def _current():
    """This thread's current manager (each thread starts with a fresh one)."""
    manager = getattr(NameManager._current, 'value', None)
    if manager is None:
        manager = NameManager._current.value = NameManager()
    return manager
