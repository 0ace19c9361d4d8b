"""nd's and mx.sym's namespaces are what the operator families declare.

Each family (``nd.FAMILIES``) lists its front ends in ``__all__`` and, in
``NOT_SYMBOLIC``, those that are no graph operator; a helper it does not
list must reach neither ``nd`` nor ``mx.sym``.
"""
import inspect

import d2lmini as mx
from d2lmini import nd
from d2lmini.ndarray import fluent
from d2lmini.symbol import ops as sym_ops


def _declared():
    names = {}
    for family in nd.FAMILIES:
        for name in family.__all__:
            assert name not in names, (name, family.__name__, names.get(name))
            names[name] = family
    return names


def test_each_family_declares_functions_and_its_non_symbolic_ones():
    for family in nd.FAMILIES:
        skip = set(getattr(family, 'NOT_SYMBOLIC', ()))
        assert skip <= set(family.__all__), (family.__name__, skip)
        for name in family.__all__:
            obj = getattr(family, name)
            assert callable(obj), (family.__name__, name)
    assert set(nd.random.NOT_SYMBOLIC) <= set(nd.random.__all__)


def test_nd_holds_exactly_the_declared_front_ends():
    declared = _declared()
    for name, family in declared.items():
        assert getattr(nd, name) is getattr(family, name), name
    for name, fn in nd.random.TOP_LEVEL.items():
        assert getattr(nd, name) is fn, name
    functions = {n for n in dir(nd) if inspect.isfunction(getattr(nd, n))}
    undeclared = functions - set(declared) - set(nd.random.TOP_LEVEL)
    # __getattr__ serves nd.np and nd.npx (mx.np, mx.npx) lazily
    assert undeclared == {'op_names', '__getattr__'}, undeclared
    assert nd.np is mx.np and nd.npx is mx.npx


def test_sym_makes_exactly_the_declared_operators():
    want = {name for name, family in _declared().items()
            if name not in getattr(family, 'NOT_SYMBOLIC', ())}
    want |= set(nd.random.TOP_LEVEL)
    assert set(sym_ops.__all__) == want
    for name in ('reset_arrays', 'save', 'NDArray', 'waitall', 'op_names'):
        assert name not in sym_ops.__all__
    assert mx.sym.load is mx.symbol.loading.load         # a Symbol's, not nd's
    random = set(nd.random.__all__) - set(nd.random.NOT_SYMBOLIC)
    assert {n for n in dir(mx.sym.random) if not n.startswith('_')} == random


def test_one_fluent_list_with_named_differences():
    ndarray_own = {n for n in fluent.NDARRAY_OWN if n in vars(nd.NDArray)}
    assert ndarray_own == set(fluent.NDARRAY_OWN)       # defined in ndarray.py
    for name in fluent.ndarray_methods():
        assert vars(nd.NDArray)[name].__module__ == fluent.__name__, name
    want = {m for m, op in fluent.symbol_methods().items() if hasattr(mx.sym, op)}
    assert set(sym_ops.FLUENT) == want
    assert sym_ops.FLUENT['astype'] is mx.sym.cast
    x = mx.sym.var('x')
    assert x.floor().list_arguments() == ['x']
