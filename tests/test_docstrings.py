"""The API reference has no empty entries: every public name of ``nd``,
``autograd``, ``gluon``, ``kvstore``, ``d2l`` and ``d2l.classic`` says what
it does, and NDArray's methods show their real arguments.

Public means: in the module's ``__all__`` (submodules named there are
followed), else any name without a leading underscore; for a class, its
public methods and properties too.  Names that d2lmini takes from elsewhere
(``np``, ``math``) are not its to document, nor are NDArray's placeholders
for MXNet methods whose nd function d2lmini lacks (they only raise, and the
reference leaves them out).  Each test lists every offender at once.
"""
import importlib
import inspect
import re
import types

from d2lmini import nd
from d2lmini.ndarray import fluent

MODULES = ('d2lmini.ndarray', 'd2lmini.ndarray.random', 'd2lmini.autograd',
           'd2lmini.gluon', 'd2lmini.kvstore', 'd2lmini.d2l',
           'd2lmini.d2l.classic')

# A docstring that only restates a call: "``nd.abs(self, *args, **kwargs)``."
_CALL = re.compile(r'[\w.]+\([^()]*\)')
PLACEHOLDERS = set(fluent.ndarray_methods()) - set(fluent.available())


def _ours(obj):
    return (getattr(obj, '__module__', None) or '').startswith('d2lmini')


def _public(module):
    names = getattr(module, '__all__', None)
    return names if names is not None else \
        [n for n in vars(module) if not n.startswith('_')]


def public_objects():
    """``(label, object)`` for each public function, class, method and
    property, each object once (under the first name found for it)."""
    seen, todo = set(), [importlib.import_module(m) for m in MODULES]
    visited = set(todo)
    while todo:
        module = todo.pop(0)
        for name in _public(module):
            obj = getattr(module, name)
            label = f'{module.__name__}.{name}'
            if isinstance(obj, types.ModuleType):
                if getattr(module, '__all__', None) is not None and \
                        obj.__name__.startswith('d2lmini') and obj not in visited:
                    visited.add(obj)
                    todo.append(obj)
            elif (inspect.isfunction(obj) or inspect.isclass(obj)) and _ours(obj) \
                    and id(obj) not in seen:
                seen.add(id(obj))
                yield label, obj
                if inspect.isclass(obj):
                    yield from _members(label, obj, seen)


def _members(label, cls, seen):
    for name in dir(cls):
        if name.startswith('_') or cls is nd.NDArray and name in PLACEHOLDERS:
            continue
        owner = next(c for c in cls.__mro__ if name in vars(c))
        member = vars(owner)[name]
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if not (inspect.isfunction(member) or isinstance(member, property)):
            continue
        key = id(member.fget if isinstance(member, property) else member)
        if key not in seen and (_ours(owner) or _ours(member)):
            seen.add(key)
            yield f'{label}.{name}', member


def undocumented(objects):
    """The labels whose docstring is missing or only restates a call."""
    bad = []
    for label, obj in objects:
        doc = inspect.getdoc(obj) or ''
        text = doc.strip().replace('`', '').rstrip('.').strip()
        if not text or _CALL.fullmatch(text) or '*args, **kwargs)' in text:
            bad.append(label)
    return bad


def test_every_public_name_has_a_docstring():
    bad = undocumented(public_objects())
    assert not bad, (f'{len(bad)} public names have no docstring (or one that only '
                     f'restates a call); write a short NumPy-style one with an '
                     f'example:\n  ' + '\n  '.join(bad))


def test_the_check_sees_what_it_should():
    labels = dict(public_objects())
    for name in ('d2lmini.ndarray.zeros', 'd2lmini.ndarray.NDArray.abs',
                 'd2lmini.ndarray.NDArray.shape', 'd2lmini.gluon.nn.Dense',
                 'd2lmini.gluon.Trainer.step', 'd2lmini.gluon.data.DataLoader',
                 'd2lmini.kvstore.create', 'd2lmini.d2l.classic.train_ch3',
                 'd2lmini.ndarray.random.uniform', 'd2lmini.autograd.record'):
        assert name in labels, name
    assert 'd2lmini.ndarray.np' not in labels      # numpy is not ours

    def restated(self, *args, **kwargs):
        """``nd.abs(self, *args, **kwargs)``."""

    def empty():
        pass
    assert undocumented([('restated', restated), ('empty', empty)]) == \
        ['restated', 'empty']
    assert undocumented([('ok', undocumented)]) == []


def test_ndarray_methods_show_their_real_arguments():
    # (*shape, **kwargs) is MXNet's own reshape; (*args, **kwargs) says nothing.
    bare = [name for name in dir(nd.NDArray)
            if not name.startswith('_') and name not in PLACEHOLDERS
            and inspect.isfunction(getattr(nd.NDArray, name))
            and str(inspect.signature(getattr(nd.NDArray, name))) ==
            '(self, *args, **kwargs)']
    assert not bare, f'NDArray methods shown as (*args, **kwargs): {bare}'


def test_fluent_methods_have_their_functions_signature_and_summary():
    wrong = []
    for name in fluent.available():
        if name in vars(nd.NDArray) and \
                vars(nd.NDArray)[name].__module__ != fluent.__name__:
            continue                        # an NDArray method of its own
        fn, method = getattr(nd, name), getattr(nd.NDArray, name)
        want = list(inspect.signature(fn).parameters.values())
        got = list(inspect.signature(method).parameters.values())
        summary = inspect.getdoc(fn).split('\n\n')[0]
        if got[0].name != 'self' or got[1:] != want[1:] or \
                not inspect.getdoc(method).startswith(summary):
            wrong.append(f'{name}{inspect.signature(method)} vs nd.{name}'
                         f'{inspect.signature(fn)}')
    assert not wrong, '\n'.join(wrong)
    assert str(inspect.signature(nd.NDArray.abs)) == '(self, out=None, name=None)'
    assert str(inspect.signature(nd.abs)) == '(data, out=None, name=None)'
