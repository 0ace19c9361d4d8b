"""pickle and copy.deepcopy of NDArrays, as in MXNet: values, dtype, context."""
import copy
import pickle

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd


@pytest.mark.parametrize('dtype', ['float32', 'float16', 'float64', 'int32',
                                   'int64', 'uint8', 'bool'])
@pytest.mark.parametrize('shape', [(2, 3), (4,), (), (0, 3), (1, 2, 1, 2)])
def test_pickle_round_trip(dtype, shape, engine_kind):
    a = (np.random.uniform(-10, 10, shape) * 3).astype(dtype)
    x = nd.array(a, dtype=dtype) + nd.zeros(shape, dtype=dtype)   # pending value
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        y = pickle.loads(pickle.dumps(x, protocol=protocol))
        assert isinstance(y, nd.NDArray) and y is not x
        assert y.shape == shape and y.dtype is np.dtype(dtype).type
        np.testing.assert_array_equal(y.asnumpy(), a)


def test_pickle_keeps_the_context():
    x = nd.arange(4, ctx=mx.cpu(2))
    y = pickle.loads(pickle.dumps(x))
    assert y.context == mx.cpu(2)
    np.testing.assert_array_equal(y.asnumpy(), [0, 1, 2, 3])


def test_pickle_keeps_a_gpu_context():
    """Through the host and back onto the same GPU (the last one: not gpu(0))."""
    if mx.num_gpus() == 0:
        pytest.skip('no GPU')
    ctx = mx.gpu(mx.num_gpus() - 1)
    x = nd.arange(4, ctx=ctx) * 2                 # pending value
    y = pickle.loads(pickle.dumps(x))
    assert y.context == ctx
    np.testing.assert_array_equal(y.asnumpy(), [0, 2, 4, 6])
    z = copy.deepcopy(x)
    assert z.context == ctx
    np.testing.assert_array_equal(z.asnumpy(), [0, 2, 4, 6])


def test_deepcopy_is_an_independent_array():
    x = nd.ones((2, 2), ctx=mx.cpu(1))
    y = copy.deepcopy(x)
    z = copy.copy(x)
    x[:] = 5
    assert y.context == mx.cpu(1)
    np.testing.assert_array_equal(y.asnumpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(z.asnumpy(), np.ones((2, 2)))
    nested = copy.deepcopy({'w': [x, x]})
    np.testing.assert_array_equal(nested['w'][1].asnumpy(), np.full((2, 2), 5))


def test_state_is_mxnets_raw_bytes():
    """MXNet's state: {'handle': the array's V2 record}; a saved GPU array
    loads on the CPU when no GPU is there (MXNet's own example bytes)."""
    state = nd.array([1, 2], dtype='int32', ctx=mx.cpu(0)).__getstate__()
    assert set(state) == {'handle'}
    assert bytes(state['handle']) == (
        b'\xc9\xfa\x93\xf9' + b'\0' * 4 + b'\x01\0\0\0' + b'\x02' + b'\0' * 7
        + b'\x01\0\0\0' + b'\0' * 4 + b'\x04\0\0\0' + b'\x01\0\0\0\x02\0\0\0')
    gpu_state = {'handle': bytearray(
        b'\xc9\xfa\x93\xf9\0\0\0\0\x01\0\0\0\x01\0\0\0\0\0\0\0\x02\0\0\0'
        b'\0\0\0\0\0\0\0\0\0\0\0\0')}       # arange(1) on gpu(0), float32
    x = nd.arange(3)
    x.__setstate__(gpu_state)
    assert x.shape == (1,) and x.asscalar() == 0
    assert x.context == (mx.gpu(0) if mx.num_gpus() else mx.cpu(0))


def test_bad_state_raises_clearly():
    x = nd.arange(3)
    with pytest.raises(ValueError, match='not a valid NDArray record'):
        x.__setstate__({'handle': b'\xc9\xfa\x93\xf9\0\0'})
    np.testing.assert_array_equal(x.asnumpy(), [0, 1, 2])     # unchanged
