"""x[key] = value: NumPy's broadcasting, every kind of value and key, and
in-place writes under autograd (refused as MXNet does, or recorded)."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd

SHAPE = (4, 5, 3)
KEYS = [0, -1, slice(1, 3), slice(None, None, -2), (1, 2), (1, 2, 0),
        (slice(None), 2), (Ellipsis, 1), (1, Ellipsis), (slice(1, 4, 2), slice(0, 5, 2)),
        (None, 1), (1, None, slice(0, 2)), [2, 0], np.array([[1], [3]]),
        (1, [0, 4], slice(None)), ([0, 2], slice(1, 3), [1, 2]),
        (slice(None), [1, 2], None, [0, 1])]


def _values(target_shape, rng):
    """(value, what NumPy is given) pairs for a target of ``target_shape``."""
    vals = [rng.integers(-50, 0), float(rng.integers(-50, 0)), np.int32(-7),
            rng.integers(-50, 0, target_shape)]                  # exact shape
    vals = [(v, v) for v in vals]
    if target_shape:
        last = rng.integers(-50, 0, target_shape[-1:])
        extra = rng.integers(-50, 0, (1, 1) + target_shape)      # leading 1s
        vals += [(last, last), (last.tolist(), last), (extra, extra)]
    else:                                   # a size-1 value into one element
        vals += [([-3], -3), (np.array([-4]), -4), (np.array([[-5]]), -5)]
    return vals


@pytest.mark.parametrize('key', KEYS, ids=repr)
def test_setitem_matches_numpy(key):
    rng = np.random.default_rng(0)
    base = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)
    for v, np_v in _values(base[key].shape, rng):
        want = base.copy()
        want[key] = np_v
        forms = [v] + ([nd.array(v, dtype='int32')] if isinstance(v, np.ndarray) else [])
        for value in forms:
            got = nd.array(base, dtype='int32')
            got[key] = value
            np.testing.assert_array_equal(got.asnumpy(), want,
                                          err_msg=f'key={key!r} value={value!r}')


def test_setitem_with_ndarray_keys_and_new_axis():
    a = np.zeros((3, 4), np.float32)
    x = nd.array(a)
    x[nd.array([2, 0], dtype='int64')] = nd.array([1, 2, 3, 4])
    a[[2, 0]] = [1, 2, 3, 4]
    x[(1, nd.array([3, 1], dtype='int32'))] = 9
    a[1, [3, 1]] = 9
    np.testing.assert_array_equal(x.asnumpy(), a)
    y = nd.zeros((2, 3))
    y[None] = nd.arange(3).reshape(1, 1, 3)            # a[None] = v: all of a
    np.testing.assert_array_equal(y.asnumpy(), np.tile(np.arange(3), (2, 1)))
    y[...] = 7
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 3), 7))


def test_setitem_one_element_and_zero_d():
    x = nd.zeros((2, 2))
    x[1, 1] = nd.array([5])                            # size-1 array, one element
    x[0, 1] = nd.array([[6]])
    np.testing.assert_array_equal(x.asnumpy(), [[0, 6], [0, 5]])
    s = nd.array(1.0).reshape(())
    s[:] = 3
    assert s.asscalar() == 3
    s[()] = nd.array([4])
    assert s.asscalar() == 4


def test_setitem_shape_errors_name_the_shapes():
    x = nd.zeros((4, 5))
    with pytest.raises(ValueError, match=r'shape \(3,\).*target shape \(2, 5\)'):
        x[1:3] = nd.ones(3)
    with pytest.raises(ValueError, match=r'\(2, 5\)'):
        x[1:3] = nd.ones((2, 2, 5))                    # a leading 2 is not a 1
    with pytest.raises(ValueError):
        x[:] = [1, 2]
    np.testing.assert_array_equal(x.asnumpy(), np.zeros((4, 5)))


def test_setitem_writes_through_views():
    x = nd.zeros((3, 4))
    row = x[1]
    row[1:3] = nd.array([7, 8])
    np.testing.assert_array_equal(x.asnumpy()[1], [0, 7, 8, 0])


# --- under autograd.record() ----------------------------------------------------------
MSG = 'Inplace operations \\(\\+=, -=, x\\[:\\]=, etc\\) are not supported when recording'


@pytest.mark.parametrize('key', [0, slice(1, 3), (1, 2), [0, 2], (slice(None), 1)],
                         ids=repr)
def test_partial_write_of_a_graph_value_is_refused(key, engine_kind):
    x = nd.zeros((3, 4))
    y = nd.ones(x[key].shape)
    y.attach_grad()
    with autograd.record():
        with pytest.raises(mx.engine.MXNetError, match=MSG):
            x[key] = y * 2
    np.testing.assert_array_equal(x.asnumpy(), np.zeros((3, 4)))   # untouched


def test_write_into_an_array_in_the_graph_is_refused():
    w = nd.ones((2, 3))
    w.attach_grad()
    with autograd.record():
        h = w * 3
        for write in (lambda: w.__setitem__(0, 5), lambda: w.__setitem__(slice(None), 0),
                      lambda: h.__setitem__((0, 1), 1.0),
                      lambda: nd.zeros((2, 3)).copyto(w)):
            with pytest.raises(mx.engine.MXNetError, match=MSG):
                write()
        v = w[0]                                       # a view of a graph array
        with pytest.raises(mx.engine.MXNetError, match=MSG):
            v[:] = 1
    h.backward()
    np.testing.assert_array_equal(w.grad.asnumpy(), np.full((2, 3), 3))
    w[0] = 5                                           # outside record: allowed
    assert w.asnumpy()[0, 0] == 5


def test_writes_outside_the_graph_are_allowed_while_recording():
    w = nd.ones((3,))
    w.attach_grad()
    c = nd.zeros((3,))
    with autograd.record():
        c[1] = 4                                       # nothing here is in the graph
        c[0:1] = nd.array([2])
        y = (w * c).sum()
    y.backward()
    np.testing.assert_array_equal(w.grad.asnumpy(), [2, 4, 0])


def _numeric_grad(f, x, eps=1e-3):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize('how', ['x[:] = y', 'y.copyto(x)', 'out=', 'broadcast',
                                 'leading 1s'])
def test_whole_array_write_into_a_fresh_array_is_recorded(how, engine_kind):
    """As in MXNet, ``x[:] = y`` (and copyto, out=) into an array outside the
    graph records a copy: gradients reach ``y``'s inputs (central differences)."""
    a = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float64)

    def f(w_np, record):
        w = nd.array(w_np, dtype='float64')
        if record:
            w.attach_grad()
        z = nd.zeros((2, 3), dtype='float64')
        with autograd.record():
            y = w * 2 + 1
            if how == 'x[:] = y':
                z[:] = y
            elif how == 'y.copyto(x)':
                y.copyto(z)
            elif how == 'broadcast':
                z[:] = y[0] * y[1]                     # (3,) into (2, 3)
            elif how == 'leading 1s':
                z[...] = y.reshape(1, 1, 2, 3) * 3
            else:
                nd.exp(w, out=z)
            loss = (z * z * w).sum()
        if record:
            loss.backward()
            return w.grad.asnumpy()
        return loss.asscalar()
    np.testing.assert_allclose(f(a, True), _numeric_grad(lambda v: f(v, False), a),
                               rtol=1e-5, atol=1e-6)


def test_basic_indexing_slice_is_contiguous_matches_numpy():
    from itertools import product
    shape = (4, 5, 6)
    x = np.arange(np.prod(shape)).reshape(shape)
    slices = [slice(None), slice(2), slice(1, 3), slice(None, None, 2),
              slice(0, 1), slice(None, None, -1), slice(3, 9)]
    f = nd.NDArray._basic_indexing_slice_is_contiguous
    for key in product(slices, repeat=3):
        assert f(key, shape) == x[key].flags.c_contiguous, key
        if f(key, shape):                              # a view: writes show in x
            y = nd.array(x)
            y[key][:] = -1
            assert (y[key].asnumpy() == -1).all()


def test_error_message_names_the_write():
    x = nd.zeros((3, 4))
    y = nd.ones((2, 4))
    y.attach_grad()
    with autograd.record():
        with pytest.raises(mx.engine.MXNetError,
                           match=r'x\[1:3\] = value, x of shape \(3, 4\), value of '
                                 r'shape \(2, 4\)'):
            x[1:3] = y
        with pytest.raises(mx.engine.MXNetError, match=r'x\[1:, ::2\]'):
            x[1:, ::2] = 1 + y[:, :2]


# --- property: any basic key, any value NumPy accepts --------------------------------
from hypothesis import HealthCheck, given, settings              # noqa: E402
from hypothesis import strategies as st                          # noqa: E402
from hypothesis.extra import numpy as hnp                        # noqa: E402


@st.composite
def key_and_value(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4))
    key = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    target = np.empty(shape)[key].shape
    # A value shape that broadcasts to the target, maybe with leading 1s.
    vshape = draw(hnp.broadcastable_shapes(target, min_dims=0, max_dims=len(target),
                                           min_side=0 if 0 in target else 1))
    if np.broadcast_shapes(vshape, target) != target:   # mutually, not *to* target
        vshape = target
    vshape = (1,) * draw(st.integers(0, 2)) + vshape
    return shape, key, vshape


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(key_and_value())
def test_setitem_broadcasting_property(case):
    shape, key, vshape = case
    base = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    value = -1 - np.arange(np.prod(vshape), dtype=np.float32).reshape(vshape)
    want = base.copy()
    # NumPy 2 refuses a size-1 array for one element; MXNet takes it
    want[key] = value.reshape(()) if not want[key].shape else value
    for v in (value, nd.array(value)):
        x = nd.array(base)
        x[key] = v
        np.testing.assert_array_equal(x.asnumpy(), want, err_msg=f'{key!r} {vshape}')
