"""MXNet 1.x's NDArray surface: fluent methods, asscalar, bool, inplace views,
from_numpy, reset_arrays, out= of the creation functions."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd
from d2lmini.ndarray import fluent


@pytest.mark.filterwarnings('ignore:invalid value:RuntimeWarning')   # log(-1.5) & co.
def test_every_mxnet_fluent_method_exists_and_forwards():
    for name in fluent.FLUENT:
        assert callable(getattr(nd.NDArray, name)), name
    x = nd.array([[1.5, -2.5, 0.2], [3.7, -0.4, 2.0]])
    a = x.asnumpy()
    # Each method whose nd function exists gives exactly what the function gives.
    one_arg = {'clip': (0, 1), 'repeat': (2,), 'tile': ((2, 1),), 'flip': (1,),
               'split': (3,), 'slice_axis': (1, 0, 2), 'one_hot': (4,),
               'broadcast_to': ((2, 2, 3),), 'take': (nd.array([1, 0]),),
               'pick': (nd.array([0, 2]),), 'swapaxes': (0, 1),
               'slice': ((0, 1), (2, 3)), 'reshape_like': (nd.zeros((3, 2)),),
               'broadcast_like': (nd.zeros((2, 2, 3)),), 'pad': None,
               'broadcast_axes': None, 'depth_to_space': None,
               'space_to_depth': None, 'slice_like': (nd.zeros((1, 2)),),
               'split_v2': (3, 1), 'topk': (), 'argmax_channel': ()}
    checked = 0
    for name in fluent.available():
        args = one_arg.get(name, ())
        if args is None:                   # needs a 4-D input: tested by its op
            continue
        want = getattr(nd, name)(x, *args)
        got = getattr(x, name)(*args)
        for w, g in zip(want if isinstance(want, list) else [want],
                        got if isinstance(got, list) else [got]):
            np.testing.assert_array_equal(g.asnumpy(), w.asnumpy(), err_msg=name)
        checked += 1
    assert checked >= 30
    np.testing.assert_array_equal(x.abs().asnumpy(), np.abs(a))


def test_fluent_methods_take_the_functions_arguments():
    x = nd.arange(24).reshape(2, 3, 4)
    a = x.asnumpy()
    np.testing.assert_array_equal(x.sum(axis=1, exclude=True).asnumpy(),
                                  a.sum(axis=(0, 2)))
    np.testing.assert_array_equal(x.max(axis=(0, 2), keepdims=True).asnumpy(),
                                  a.max(axis=(0, 2), keepdims=True))
    out = nd.zeros((2, 3, 4))
    if 'out' in nd.exp.__code__.co_varnames:
        assert x.exp(out=out) is out
        np.testing.assert_allclose(out.asnumpy(), np.exp(a), rtol=1e-6)


def test_missing_operator_fails_clearly(monkeypatch):
    monkeypatch.setattr(fluent, 'FLUENT', fluent.FLUENT + ('no_such_op',))

    class Probe(nd.NDArray):
        __slots__ = ()
    fluent.install(Probe)
    with pytest.raises(NotImplementedError, match=r'nd\.no_such_op'):
        Probe.no_such_op(nd.ones(1))


def test_asscalar_is_a_numpy_scalar_of_the_dtype():
    for dt in ['float32', 'float64', 'float16', 'int32', 'int64', 'uint8']:
        v = nd.array([3], dtype=dt).asscalar()
        assert type(v) is np.dtype(dt).type and v == 3
    assert type(nd.array([2.5]).item()) is float
    with pytest.raises(ValueError, match='size 1'):
        nd.ones(2).asscalar()


def test_bool_as_mxnet():
    assert not nd.zeros((0,))
    assert not nd.zeros((3, 0))
    assert nd.ones((1, 1)) and not nd.zeros((1,))
    with pytest.raises(ValueError, match='multiple elements is ambiguous'):
        bool(nd.ones(2))


@pytest.mark.parametrize('method, args, shape', [
    ('flatten', (), (2, 12)), ('expand_dims', (1,), (2, 1, 3, 4)),
    ('expand_dims', (-1,), (2, 3, 4, 1)), ('squeeze', (), (2, 3, 4))])
def test_inplace_returns_a_view_that_shares_data(method, args, shape, engine_kind):
    x = nd.arange(24).reshape(2, 3, 4)
    if method == 'squeeze':
        x = x.reshape(2, 1, 3, 1, 4)
    y = getattr(x, method)(*args, inplace=True)
    z = getattr(x, method)(*args)
    assert y.shape == z.shape == shape
    y[:] = -1
    np.testing.assert_array_equal(x.asnumpy(), -np.ones(x.shape))
    x[:] = 3                               # and the other way round
    np.testing.assert_array_equal(y.asnumpy(), np.full(shape, 3))
    np.testing.assert_array_equal(z.asnumpy().ravel(), np.arange(24))   # a copy
    z[:] = 5
    np.testing.assert_array_equal(x.asnumpy(), np.full(x.shape, 3))


def test_inplace_squeeze_checks_axes():
    x = nd.zeros((2, 1, 3))
    assert x.squeeze(axis=1, inplace=True).shape == (2, 3)
    assert x.squeeze(axis=-2, inplace=True).shape == (2, 3)
    with pytest.raises(ValueError, match='size 2'):
        x.squeeze(axis=0, inplace=True)
    with pytest.raises(ValueError, match='out of range'):
        x.expand_dims(4, inplace=True)


def test_from_numpy_shares_memory():
    a = np.array([[1, 2], [3, 4], [5, 6]], dtype='float32')
    x = nd.from_numpy(a)
    with pytest.raises(ValueError):
        a[2, 1] = 0                        # MXNet's rule: hands off the numpy array
    x[2, 1] = 100
    x.wait_to_read()                       # the write is asynchronous
    assert a[2, 1] == 100
    np.testing.assert_array_equal(x.asnumpy(), a)
    for b in [np.array(1.5).reshape(()), np.zeros((1, 0, 2)), np.arange(3)]:
        for zc in (True, False):
            y = nd.from_numpy(b.copy(), zero_copy=zc)
            assert y.shape == b.shape and y.dtype is b.dtype.type
            np.testing.assert_array_equal(y.asnumpy(), b)
    x2 = nd.from_numpy(a)                  # the same array again: still shared
    x2[0, 0] = -1
    x2.wait_to_read()
    assert a[0, 0] == -1
    frozen = np.frombuffer(b'\0' * 8, dtype='float32')   # read-only memory
    y = nd.from_numpy(frozen)
    y[:] = 1                               # written into a copy, never the bytes
    np.testing.assert_array_equal(y.asnumpy(), [1, 1])
    assert not frozen.any()
    with pytest.raises(ValueError, match='C-contiguous'):
        nd.from_numpy(np.ones((2, 3)).T)
    c = np.ones((2, 3)).T
    np.testing.assert_array_equal(nd.from_numpy(c, zero_copy=False).asnumpy(), c)


def test_reset_arrays():
    arrs = [nd.ones((2, 3)), nd.full((4,), 7, dtype='int32')]
    assert nd.reset_arrays(*arrs, num_arrays=2) is None
    for a in arrs:
        assert not a.asnumpy().any()
    with pytest.raises(ValueError, match='num_arrays'):
        nd.reset_arrays(arrs[0], num_arrays=2)


@pytest.mark.parametrize('fn, args, val', [(nd.zeros, (), 0), (nd.ones, (), 1),
                                            (nd.full, (2.5,), 2.5)])
def test_creation_out(fn, args, val):
    out = nd.empty((2, 3), ctx=mx.cpu(1), dtype='float64')
    assert fn((2, 3), *args, out=out) is out
    assert out.context == mx.cpu(1) and out.dtype is np.float64
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), val))
    with pytest.raises(ValueError, match=r'shape \(2, 3\).*\(3, 2\)'):
        fn((3, 2), *args, out=out)


def test_slice_assign_fluent():
    x = nd.zeros((3, 4))
    assert x.slice_assign(nd.ones((2, 2)), (0, 1), (2, 3), (None, None)) is x
    x.slice_assign_scalar(5, (2, 0), (3, 4), (1, 2))
    want = np.zeros((3, 4))
    want[0:2, 1:3] = 1
    want[2, 0:4:2] = 5
    np.testing.assert_array_equal(x.asnumpy(), want)
    assert x.tostype('default').shape == (3, 4)
    with pytest.raises(NotImplementedError):
        x.tostype('csr')


def test_py_slice_is_the_builtin():
    from d2lmini.ndarray import ndarray as mod       # MXNet tests import it
    assert mod.py_slice is slice and nd.slice is not slice
