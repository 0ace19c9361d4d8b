"""gluon.Parameter: data and gradients on one or several contexts."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, init, nd
from d2lmini.gluon import nn


TWO = [mx.cpu(0), mx.cpu(1)]


def test_basic_attributes_and_repr(ctx):
    p = gluon.Parameter('w', shape=3, dtype='float64', lr_mult=0.5)
    assert p.shape == (3,) and p.dtype == np.float64 and p.lr_mult == 0.5
    assert p.grad_req == 'write' and p.wd_mult == 1.0
    assert repr(p) == 'Parameter w (shape=(3,), dtype=float64)'
    p.initialize(init.One())
    assert p.list_ctx() == [ctx] and p.data().context == ctx
    assert p.data().dtype == np.float64 and p.grad().dtype == np.float64
    np.testing.assert_array_equal(p.data().asnumpy(), np.ones(3))
    np.testing.assert_array_equal(p.grad().asnumpy(), np.zeros(3))
    assert p.list_data()[0] is p.data() and p.list_grad()[0] is p.grad()
    with pytest.raises(ValueError, match="grad_req must be"):
        p.grad_req = 'sum'
    with pytest.raises(ValueError, match='stype'):
        gluon.Parameter('s', shape=(1,), stype='row_sparse')


def test_data_is_an_autograd_leaf_writing_into_grad(ctx):
    p = gluon.Parameter('w', shape=(2, 2))
    p.initialize(init.Constant(3.0))
    with autograd.record():
        y = (p.data() * p.data()).sum()
    y.backward()
    np.testing.assert_allclose(p.grad().asnumpy(), np.full((2, 2), 6.0))
    p.grad_req = 'add'                 # as in MXNet: fresh zero buffers
    for _ in range(2):
        with autograd.record():
            y = p.data().sum()
        y.backward()
    np.testing.assert_allclose(p.grad().asnumpy(), np.full((2, 2), 2.0))
    p.zero_grad()
    np.testing.assert_array_equal(p.grad().asnumpy(), np.zeros((2, 2)))


def test_grad_req_null_detaches_and_back():
    p = gluon.Parameter('w', shape=(2,))
    p.initialize(init.One())
    p.grad_req = 'null'
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.grad()
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.list_grad()
    x = nd.ones((2,))
    x.attach_grad()
    with autograd.record():
        y = (p.data() * x).sum()
    y.backward()                     # p.data() is no leaf now: only x learns
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones(2))
    p.grad_req = 'write'
    with autograd.record():
        y = (p.data() * 2).sum()
    y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [2, 2])
    frozen = gluon.Parameter('m', shape=(2,), differentiable=False)
    assert frozen.grad_req == 'null'


def test_set_data_writes_every_copy_and_keeps_the_leaf():
    p = gluon.Parameter('w', shape=(2, 3))
    p.initialize(ctx=TWO)
    leaves = p.list_data()
    p.set_data(nd.arange(6).reshape((2, 3)))
    assert p.list_data() == leaves
    for d in p.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match='incompatible'):
        p.set_data(nd.ones((3, 2)))
    p.data(mx.cpu(1))[:] -= 1            # the hand-written SGD idiom
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(),
                                  np.arange(6).reshape(2, 3) - 1)
    np.testing.assert_array_equal(p.data(mx.cpu(0)).asnumpy(),
                                  np.arange(6).reshape(2, 3))


def test_multi_context_same_initial_values_and_separate_grads():
    p = gluon.Parameter('w', shape=(50, 40))
    p.initialize(init.Xavier(), ctx=TWO)
    assert p.list_ctx() == TWO
    a, b = p.list_data()
    assert a.context == mx.cpu(0) and b.context == mx.cpu(1)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert a.asnumpy().std() > 0
    with autograd.record():
        ya = (a * 2).sum()
        yb = (b * 3).sum()
    autograd.backward([ya, yb])
    ga, gb = p.list_grad()
    assert ga.context == mx.cpu(0) and gb.context == mx.cpu(1)
    assert np.all(ga.asnumpy() == 2) and np.all(gb.asnumpy() == 3)
    assert p.grad(mx.cpu(1)) is gb


def test_data_on_a_context_it_is_not_on_names_its_contexts():
    p = gluon.Parameter('w', shape=(2,))
    p.initialize(ctx=TWO)
    with pytest.raises(RuntimeError,
                       match=r"'w' was not initialized on cpu\(2\).*\[cpu\(0\), cpu\(1\)\]"):
        p.data(mx.cpu(2))
    # no ctx and several copies: the current context picks the copy
    before = mx.current_context()
    with mx.Context(mx.cpu(1)):
        assert p.data() is p.list_data()[1]
    assert mx.current_context() == before        # `with` leaves no trace


def test_uninitialized_and_deferred_errors():
    p = gluon.Parameter('w', shape=(2, 0), allow_deferred_init=True)
    with pytest.raises(RuntimeError, match='has not been initialized'):
        p.data()
    with pytest.raises(RuntimeError, match='has not been initialized'):
        p.list_ctx()
    p.initialize(ctx=TWO)
    assert p.list_ctx() == TWO            # the contexts it will live on
    with pytest.raises(gluon.DeferredInitializationError, match="'w'"):
        p.data()
    p.shape = (2, 5)
    p._finish_deferred_init()
    assert [d.shape for d in p.list_data()] == [(2, 5), (2, 5)]
    q = gluon.Parameter('q', shape=(2, 0))
    with pytest.raises(ValueError, match='not fully known'):
        q.initialize()
    with pytest.raises(ValueError, match='ctx lists a context twice'):
        gluon.Parameter('r', shape=(1,)).initialize(ctx=[mx.cpu(0), mx.cpu(0)])


def test_set_data_before_deferred_init_is_used():
    p = gluon.Parameter('w', shape=(0,), allow_deferred_init=True)
    p.initialize()
    p.set_data(nd.array([1.0, 2.0]))
    p._finish_deferred_init()
    np.testing.assert_array_equal(p.data().asnumpy(), [1.0, 2.0])


def test_reset_ctx_keeps_values():
    p = gluon.Parameter('w', shape=(3,))
    p.initialize(init.Normal(1.0), ctx=mx.cpu(0))
    v = p.data().asnumpy()
    p.reset_ctx(TWO)
    assert p.list_ctx() == TWO
    for d in p.list_data():
        np.testing.assert_array_equal(d.asnumpy(), v)
    d = gluon.Parameter('d', shape=(0,), allow_deferred_init=True)
    d.initialize(ctx=mx.cpu(0))
    d.reset_ctx(mx.cpu(1))
    assert d.list_ctx() == [mx.cpu(1)]
    with pytest.raises(ValueError, match='has not been initialized'):
        gluon.Parameter('u', shape=(1,)).reset_ctx(mx.cpu(1))


def test_net_on_two_contexts_uses_each_contexts_copy():
    net = nn.Sequential()
    net.add(nn.Dense(4, activation='relu'), nn.Dense(2))
    net.initialize(init.Normal(0.5), ctx=TWO)
    x = nd.random.uniform(shape=(3, 5))
    y0 = net(x.as_in_context(mx.cpu(0)))
    y1 = net(x.as_in_context(mx.cpu(1)))
    assert y0.context == mx.cpu(0) and y1.context == mx.cpu(1)
    np.testing.assert_allclose(y0.asnumpy(), y1.asnumpy(), rtol=1e-6)
    for p in net.collect_params().values():
        a, b = p.list_data()
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    net[1].bias.data(mx.cpu(1))[:] = 10.0     # change only cpu(1)'s copy
    y1 = net(x.as_in_context(mx.cpu(1)))
    np.testing.assert_allclose(
        y1.asnumpy(), y0.asnumpy() - net[1].bias.data(mx.cpu(0)).asnumpy() + 10.0,
        rtol=1e-5)
    with pytest.raises(RuntimeError, match=r'not initialized on cpu\(2\)'):
        net(x.as_in_context(mx.cpu(2)))
    # gradients stay per context
    with autograd.record():
        l0 = net(x.as_in_context(mx.cpu(0))).sum()
        l1 = (2 * net(x.as_in_context(mx.cpu(1)))).sum()
    autograd.backward([l0, l1])
    g0, g1 = net[1].bias.list_grad()
    np.testing.assert_allclose(g0.asnumpy(), [3, 3])
    np.testing.assert_allclose(g1.asnumpy(), [6, 6])


def test_cast_and_dtype():
    p = gluon.Parameter('w', shape=(2,))
    p.initialize(init.One())
    p.cast('float16')
    assert p.dtype == np.float16 and p.data().dtype == np.float16
    assert p.grad().dtype == np.float16
    p.dtype = 'float32'
    assert p.data().dtype == np.float32


def test_var_is_the_parameter_as_a_symbol_variable():
    p = gluon.Parameter('w', shape=(2, 3), lr_mult=2.0)
    v = p.var()
    assert v is p.var()                     # one variable per parameter
    assert v.list_arguments() == ['w']
    assert v.attr('__shape__') == '(2, 3)' and v.attr('__lr_mult__') == '2.0'
    assert gluon.Parameter('u', shape=(0, 3)).var().attr('__shape__') is None


def test_storage_types_other_than_the_known_ones_fail_an_assertion():
    for kw in ({'stype': 'invalid'}, {'grad_stype': 'invalid'}):
        with pytest.raises(AssertionError, match='not a storage type'):
            gluon.Parameter('w', shape=(2, 2), **kw)


def test_get_constant_checks_the_value_of_an_existing_constant():
    params = gluon.ParameterDict('b_')
    c = params.get_constant('c', [[1, 2], [3, 4]])
    assert params.get_constant('c') is c
    assert params.get_constant('c', nd.array([[1, 2], [3, 4]])) is c
    with pytest.raises(ValueError, match="Constant 'b_c' already exists"):
        params.get_constant('c', [[1, 2], [3, 5]])
    with pytest.raises(ValueError, match='already exists'):
        params.get_constant('c', [1, 2, 3, 4])
    with pytest.raises(KeyError, match='give a value'):
        params.get_constant('d')


def test_parameter_dict_load_dict_and_dtype_source(tmp_path):
    src = gluon.ParameterDict('')
    src.get('w0', shape=(2, 3), dtype='float32')
    src.get('w1', shape=(2,), dtype='int8')
    src.initialize(init.One())
    f = str(tmp_path / 'p.params')
    src.save(f)
    dst = gluon.ParameterDict('net_')
    dst.get('w0', shape=(2, 3), dtype='float16')
    dst.get('w1', shape=(2,), dtype='float64')
    dst.load(f, restore_prefix='net_', cast_dtype=True, dtype_source='current')
    assert dst['net_w0'].data().dtype == np.float16
    assert dst['net_w1'].data().dtype == np.float64
    dst.load(f, restore_prefix='net_', cast_dtype=True, dtype_source='saved')
    assert dst['net_w0'].data().dtype == np.float32
    assert dst['net_w1'].data().dtype == np.int8
    np.testing.assert_array_equal(dst['net_w1'].data().asnumpy(), [1, 1])
    with pytest.raises(ValueError, match='dtype_source'):
        dst.load(f, restore_prefix='net_', cast_dtype=True, dtype_source='file')
    # load_dict: a dict in memory, MXNet's 'arg:'/'aux:' names accepted
    d = gluon.ParameterDict('')
    d.get('w0', shape=(2, 3))
    d.load_dict({'arg:w0': nd.full((2, 3), 7)}, ctx=mx.cpu(1))
    assert d['w0'].list_ctx() == [mx.cpu(1)]
    np.testing.assert_array_equal(d['w0'].data().asnumpy(), np.full((2, 3), 7))
    d2 = gluon.ParameterDict('')
    d2.get('w0', shape=(2, 3))
    d2.get('w9', shape=(1,))
    with pytest.raises(ValueError, match="(?s)'param_dict'.*missing.*'w9'"):
        d2.load_dict({'w0': nd.ones((2, 3))})
