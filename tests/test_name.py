"""mx.name: automatic names per hint, prefixes, and how Gluon uses them."""
import threading

import pytest

from d2lmini import name
from d2lmini.gluon import nn


def test_name_manager_counts_per_hint_and_keeps_given_names():
    with name.NameManager() as nm:
        assert [nm.get(None, 'fc'), nm.get(None, 'fc'), nm.get(None, 'conv')] == \
            ['fc0', 'fc1', 'conv0']
        assert nm.get('mine', 'fc') == 'mine' and nm.get(None, 'fc') == 'fc2'


def test_prefix_prepends_to_given_and_generated_names():
    with name.Prefix('net_') as nm:
        assert nm.get(None, 'fc') == 'net_fc0' and nm.get('out', 'fc') == 'net_out'


def test_with_restores_the_previous_manager():
    outer = name._current()
    with name.NameManager() as a:
        assert name._current() is a
        with name.Prefix('p_') as b:
            assert name._current() is b
        assert name._current() is a
    assert name._current() is outer


def test_current_is_deprecated_but_works():
    with name.NameManager() as nm:
        with pytest.warns(DeprecationWarning, match='deprecated'):
            assert name.NameManager.current is nm
    saved = name._current()
    fresh = name.NameManager()
    name.NameManager.current = fresh
    try:
        assert name._current() is fresh
    finally:
        name.NameManager.current = saved


def test_each_thread_has_its_own_manager():
    seen = []
    with name.Prefix('main_'):
        t = threading.Thread(target=lambda: seen.append(name._current().get(None, 'x')))
        t.start()
        t.join(timeout=10)
    assert seen == ['x0']


def test_top_level_blocks_are_named_by_the_current_manager():
    with name.NameManager():
        assert nn.Dense(2).prefix == 'dense0_' and nn.Dense(2).prefix == 'dense1_'
    with name.NameManager():                     # a fresh count
        assert nn.Dense(2).prefix == 'dense0_'
    with name.Prefix('net1_'):
        d = nn.Dense(2, in_units=3)
        assert d.prefix == 'net1_dense0_'
        assert sorted(d.collect_params()) == ['net1_dense0_bias', 'net1_dense0_weight']
        assert nn.Dense(2, prefix='given_').prefix == 'given_'


def test_name_scope_makes_the_block_prefix_current():
    net = nn.Sequential(prefix='model_')
    before = name._current()
    with net.name_scope():
        assert name._current().get(None, 'fc') == 'model_fc0'
        net.add(nn.Dense(2))                     # children: the Block's own count
    assert net[0].prefix == 'model_dense0_'
    assert name._current() is before
