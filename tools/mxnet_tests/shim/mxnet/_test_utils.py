"""``mxnet.test_utils`` for running MXNet 1.9.1's unit tests on d2lmini.

The harness's own NumPy implementation of the names MXNet's tests import from
``mxnet.test_utils`` (semantics read from MXNet 1.9.1's docstrings and code,
not copied). Symbol/executor helpers are absent: Symbol is out of scope for
d2lmini, and a test reaching for one fails with a clear ``ImportError``.

Like the upstream module it re-exports ``mx``, ``np`` and ``array`` (and the
standard modules it uses), because the tests do ``from mxnet.test_utils
import *`` and then use ``mx`` without importing it.
"""
# pylint: disable=invalid-name
import copy
import functools
import json            # noqa: F401  (re-exported by `import *`, as upstream)
import logging         # noqa: F401
import numbers
import os
import platform
import sys
import time            # noqa: F401
import traceback       # noqa: F401
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

import mxnet as mx
from mxnet.context import Context, current_context   # noqa: F401
from mxnet.ndarray import array                      # noqa: F401


class MissingInD2lmini(ImportError):
    """A test reached for an MXNet feature d2lmini does not have."""


def _missing(what):
    raise MissingInD2lmini(f'd2lmini has no {what} (harness test_utils)')


# ---------------------------------------------------------------- contexts

def default_context():
    """The context tests run on: d2lmini's current context."""
    return mx.current_context()


def set_default_context(ctx):
    """Make ``ctx`` the process-wide default context."""
    mx.context.set_default_context(ctx)


def list_gpus():
    """Indices of the GPUs d2lmini can see."""
    return list(range(mx.num_gpus()))


# ------------------------------------------------------------- tolerances

_FLOATS = (np.float16, np.float32, np.float64)
_EXACT = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64,
          np.uint64)


def default_dtype():
    """The dtype random test data is drawn in."""
    return np.float32


def default_rtols():
    """Relative tolerance per dtype (exact types compare exactly)."""
    tols = dict(zip(map(np.dtype, _FLOATS), (1e-2, 1e-4, 1e-5)))
    tols.update({np.dtype(t): 0 for t in _EXACT})
    return tols


def default_atols():
    """Absolute tolerance per dtype (exact types compare exactly)."""
    tols = dict(zip(map(np.dtype, _FLOATS), (1e-1, 1e-3, 1e-20)))
    tols.update({np.dtype(t): 0 for t in _EXACT})
    return tols


def default_numeric_eps():
    """Finite-difference step per dtype (powers of two: exact deltas)."""
    return dict(zip(map(np.dtype, _FLOATS), (2.0 ** -6, 2.0 ** -9, 2.0 ** -14)))


def effective_dtype(dat):
    """The dtype whose tolerance applies to ``dat`` (no TF32 on d2lmini)."""
    return np.dtype(dat.dtype)


def get_tolerance(dat, tol, default_tol):
    """``tol`` if it is a number, else its (or the default) entry for dat's dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = {} if tol is None else tol
    if dtype in tol:
        return tol[dtype]
    if dtype not in default_tol and dtype.kind in 'biu':
        return 0                # any other exact type (int16, ...) compares exactly
    return default_tol[dtype]


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing x and y: the looser of their dtypes' defaults."""
    x = x if hasattr(x, 'dtype') else np.asarray(x)
    y = y if hasattr(y, 'dtype') else np.asarray(y)
    return (max(get_tolerance(x, rtol, default_rtols()),
                get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()),
                get_tolerance(y, atol, default_atols())))


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """``atol``, or the default absolute tolerance of ``dtype``."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """``rtol``, or the default relative tolerance of ``dtype``."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol=None):
    """``etol``, or 0: the fraction of elements allowed to mismatch."""
    return 0 if etol is None else etol


# ------------------------------------------------------------ random data

def random_arrays(*shapes):
    """Standard-normal NumPy arrays of the given shapes (one array if one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None):
    """Uniform [low, high) NumPy arrays of the given shapes (always a list)."""
    dtype = default_dtype() if dtype is None else dtype
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """k elements of ``population``, drawn without replacement."""
    assert 0 <= k <= len(population)
    population = list(population)
    np.random.shuffle(population)
    return population[:k]


def rand_ndarray(shape, stype='default', density=None, dtype=None,
                 modifier_func=None, shuffle_csr_indices=False,
                 distribution=None, ctx=None):
    """A standard-normal NDArray (dense storage only on d2lmini)."""
    if stype != 'default':
        _missing(f"sparse storage (stype={stype!r})")
    ctx = ctx if ctx else default_context()
    return mx.nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)


def rand_sparse_ndarray(shape, stype, *args, **kwargs):
    """Sparse storage is out of d2lmini's scope."""
    _missing(f"sparse storage (stype={stype!r})")


def create_sparse_array(shape, stype, *args, **kwargs):
    """Sparse storage is out of d2lmini's scope."""
    _missing(f"sparse storage (stype={stype!r})")


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-d shape, each extent in [1 (or 0), dim]."""
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-d shape, each extent in [1 (or 0), dim]."""
    low = 0 if allow_zero_size else 1
    return (rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1),
            rnd.randint(low, dim2 + 1))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random ``num_dim``-d shape, each extent in [1 (or 0), dim]."""
    low = 0 if allow_zero_size else 1
    return tuple(rnd.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random (x, y) integer point in the half-open box."""
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce ``dat`` over ``axis`` (int, list or None) one axis at a time."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else range(dat.ndim)
    ret = dat
    for i in sorted(axis, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axis:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


# ------------------------------------------------------------ comparisons

def _to_numpy(a):
    return a.asnumpy() if hasattr(a, 'asnumpy') else a


def same(a, b):
    """Whether two arrays have the same shape and exactly equal elements."""
    return np.array_equal(_to_numpy(a), _to_numpy(b))


def checkShapes(a, b):
    """Raise AssertionError unless a and b have the same shape."""
    if a.shape != b.shape:
        raise AssertionError(npt.build_err_msg(
            [a, b], err_msg=f'a.shape = {a.shape} and b.shape = {b.shape} '
                            'are not equal'))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False,
                 use_broadcast=True):
    """np.allclose with MXNet's default tolerances (float64's when None)."""
    a, b = _to_numpy(a), _to_numpy(b)
    if not use_broadcast:
        checkShapes(a, b)
    return np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol),
                       equal_nan=equal_nan)


def _max_violation(a, b, rtol, atol):
    # Equal infinities count as equal, as in np.allclose.
    with np.errstate(invalid='ignore'):
        absdiff = np.where(np.equal(a, b), 0, np.abs(a - b))
        violation = absdiff / (atol + rtol * np.abs(b) + 1e-20)
    violation = np.where(np.isnan(violation), np.inf, violation)
    idx = np.unravel_index(np.argmax(violation), violation.shape)
    return idx, np.max(violation)


def assert_almost_equal(a, b, rtol=None, atol=None, names=('a', 'b'),
                        equal_nan=False, use_broadcast=True,
                        mismatches=(10, 10)):
    """Raise AssertionError unless ``|a - b| <= atol + rtol * |b|`` everywhere.

    ``a`` and ``b`` may be NDArrays, NumPy arrays or numbers; tolerances
    default to the looser of the two dtypes' defaults. Boolean arrays must be
    equal. The message names the worst element, as MXNet's does.
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_to_numpy(a)), np.asarray(_to_numpy(b))
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if almost_equal(a, b, rtol, atol, equal_nan=equal_nan):
        return
    a_b = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    index, rel = _max_violation(a_b[0], a_b[1], rtol, atol)
    index = tuple(int(i) for i in index)
    where = ''
    if index != ():
        where = (f'\nLocation of maximum error: {index}, '
                 f'{names[0]}={a_b[0][index]:.8f}, {names[1]}={a_b[1][index]:.8f}')
    with np.printoptions(threshold=4, suppress=True):
        msg = npt.build_err_msg(
            [a, b], err_msg=f'Error {rel:f} exceeds tolerance rtol={rtol:e}, '
                            f'atol={atol:e}.{where}', names=names)
    raise AssertionError(msg)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """assert_almost_equal with NumPy's assert_allclose defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None,
                                 names=('a', 'b'), equal_nan=False,
                                 mismatches=(10, 10)):
    """Like assert_almost_equal, but a fraction ``etol`` of elements may differ."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol, atol, names, equal_nan)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_to_numpy(a)), np.asarray(_to_numpy(b))
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    err = 1 - np.count_nonzero(close) / max(close.size, 1)
    if err > etol:
        raise AssertionError(f'{names[0]} and {names[1]}: {err:.2%} of the '
                             f'elements differ, more than etol={etol}')


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None,
                                   names=('a', 'b')):
    """assert_almost_equal after zeroing positions where either is NaN."""
    a, b = np.copy(_to_numpy(a)), np.copy(_to_numpy(b))
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f'{getattr(f, "__name__", f)} did not raise '
                         f'{getattr(exception_type, "__name__", exception_type)}')


def assertRaises(expected_exception, func, *args, **kwargs):
    """Assert that ``func(*args, **kwargs)`` raises ``expected_exception``."""
    assert_exception(func, expected_exception, *args, **kwargs)


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """assert_almost_equal over two (nested) tuples of arrays; None matches all."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype='default',
                      g_stype='default', rtol=1e-4, atol=1e-5,
                      compare_states=True, ntensors=1):
    """Apply one update of opt1 and of opt2 to equal random weights/gradients
    and assert equal states and weights. A list ``shape`` updates ``ntensors``
    tensors at once with opt2 (multi-tensor) against opt1 one by one."""
    if w_stype != 'default' or g_stype != 'default':
        if os.environ.get('MXH_DENSE_ONLY') == '1':
            return              # run.py --dense-only: measure the dense parts
        _missing(f'sparse storage (w_stype={w_stype!r}, g_stype={g_stype!r})')
    ctx = default_context()
    if not isinstance(shape, list):
        assert ntensors == 1
        w2 = mx.nd.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        w1 = w2.copyto(ctx)
        g2 = mx.nd.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        g1 = g2.copyto(ctx)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(mx.nd.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(mx.nd.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2 = copy.deepcopy(w1)      # as upstream: NDArray deepcopy is part of the test
    g2 = copy.deepcopy(g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_array(array1, array2):
    """Whether two NDArrays share memory (a write to one shows in the other)."""
    array1[:] += 1
    shared = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return shared and same(array1.asnumpy(), array2.asnumpy())


def collapse_sum_like(a, shape):
    """Sum NumPy array ``a`` down to ``shape`` (the inverse of broadcasting)."""
    assert len(a.shape) >= len(shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and a.shape[lead + i] != 1)
    return a.sum(axis=axes).reshape(shape)


# ------------------------------------------------------- numeric gradient

def numeric_grad(f, location, eps=1e-4, use_forward_train=True, dtype=np.float32):
    """Central-difference gradients of ``sum(f(*location))``.

    ``f`` maps NDArrays to one NDArray (or a list of them, summed); ``location``
    is a list or dict of NumPy arrays. Returns NumPy gradients in the same
    structure. (MXNet's version takes an executor.)
    """
    names = list(location) if isinstance(location, dict) else None
    values = [np.array(v, dtype=np.float64) for v in
              (location.values() if names else location)]

    def total(vals):
        args = [mx.nd.array(v, dtype=dtype) for v in vals]
        outs = f(**dict(zip(names, args))) if names else f(*args)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return sum(float(o.asnumpy().astype(np.float64).sum()) for o in outs)

    grads = []
    for v in values:
        g = np.zeros_like(v)
        flat, gflat = v.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2
            up = total(values)
            flat[i] = old - eps / 2
            down = total(values)
            flat[i] = old
            gflat[i] = (up - down) / eps
        grads.append(g)
    return dict(zip(names, grads)) if names else grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None,
                           rtol=None, atol=None, grad_nodes=None,
                           use_forward_train=True, ctx=None, grad_stype_dict=None,
                           dtype=default_dtype()):
    """Check autograd's gradient of ``sum(sym(*location))`` by central differences.

    ``sym`` is a Symbol (run through its plan, so autograd differentiates it)
    or a callable on NDArrays. ``location`` is a list or dict of arrays.
    """
    if isinstance(sym, mx.sym.Symbol):          # a Symbol: run it as a function
        if not isinstance(location, dict):
            location = dict(zip(sym.list_arguments(), location))
        sym = _differentiable(sym, aux_states)
    dtype = np.dtype(dtype)
    eps = numeric_eps if numeric_eps is not None else default_numeric_eps()[dtype]
    rtol = get_rtol(rtol, dtype) if not isinstance(rtol, numbers.Number) else rtol
    atol = get_atol(atol, dtype) if not isinstance(atol, numbers.Number) else atol
    if atol == 0 or atol < 1e-12:
        atol = 1e-6
    names = list(location) if isinstance(location, dict) else None
    values = [_to_numpy(v) for v in (location.values() if names else location)]
    args = [mx.nd.array(v, dtype=dtype, ctx=ctx) for v in values]
    for a in args:
        a.attach_grad()
    with mx.autograd.record():
        outs = sym(**dict(zip(names, args))) if names else sym(*args)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    mx.autograd.backward(outs, [mx.nd.ones_like(o) for o in outs])
    numeric = numeric_grad(sym, dict(zip(names, values)) if names else values,
                           eps=eps, dtype=dtype)
    numeric = [numeric[n] for n in names] if names else numeric
    keys = names or [f'arg{i}' for i in range(len(args))]
    for key, arg, num in zip(keys, args, numeric):
        if grad_nodes is not None and key not in grad_nodes:
            continue
        assert_almost_equal(num, arg.grad.asnumpy(), rtol=rtol, atol=atol,
                            names=(f'NUMERICAL_{key}', f'BACKWARD_{key}'))


# ------------------------------------------------------ symbolic checks

def _bind_inputs(sym, location, ctx, aux_states=None, grad_req='write'):
    """An executor of ``sym`` on ``location`` (list in list_arguments order
    or dict), with ``aux_states``; its arguments hold copies."""
    ctx = ctx or default_context()
    names = sym.list_arguments()
    if not isinstance(location, dict):
        location = dict(zip(names, location))
    args = {k: mx.nd.array(_to_numpy(v), ctx=ctx,
                           dtype=getattr(v, 'dtype', default_dtype()))
            for k, v in location.items()}
    aux = aux_states or {}
    if not isinstance(aux, dict):
        aux = dict(zip(sym.list_auxiliary_states(), aux))
    aux = {k: mx.nd.array(_to_numpy(v), ctx=ctx) for k, v in aux.items()}
    grads = {k: mx.nd.zeros(a.shape, ctx=ctx, dtype=a.dtype) for k, a in args.items()}
    return sym.bind(ctx, args, args_grad=grads, grad_req=grad_req, aux_states=aux)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None,
                           aux_states=None, ctx=None, equal_nan=False,
                           dtype=np.float32):
    """The outputs of ``sym`` bound to ``location`` equal ``expected``."""
    ex = _bind_inputs(sym, location, ctx, aux_states, grad_req='null')
    outs = [o.asnumpy() for o in ex.forward(is_train=False)]
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, out, want in zip(sym.list_outputs(), outs, expected):
        assert_almost_equal(want, out, rtol, atol, (f'EXPECTED_{name}',
                                                    f'FORWARD_{name}'),
                            equal_nan=equal_nan)
    return outs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None,
                            atol=None, aux_states=None, grad_req='write', ctx=None,
                            grad_stypes=None, equal_nan=False, dtype=np.float32):
    """The gradients of ``sym`` for head gradients ``out_grads`` equal
    ``expected`` (list in list_arguments order, or dict)."""
    ex = _bind_inputs(sym, location, ctx, aux_states, grad_req=grad_req)
    ex.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    ex.backward([mx.nd.array(_to_numpy(g), ctx=ex._ctx) for g in out_grads])
    names = sym.list_arguments()
    if not isinstance(expected, dict):
        expected = dict(zip(names, expected))
    got = {}
    for name, want in expected.items():
        g = ex.grad_dict[name]
        if g is None or want is None:
            continue
        got[name] = g.asnumpy()
        assert_almost_equal(want, got[name], rtol, atol, (f'EXPECTED_{name}',
                                                          f'BACKWARD_{name}'),
                            equal_nan=equal_nan)
    return got


def check_consistency(sym, ctx_list, scale=1.0, grad_req='write', arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """The same symbol (or one per entry) gives the same outputs and
    gradients on every entry of ``ctx_list`` (contexts, shapes, dtypes),
    compared with the entry of the widest dtype."""
    syms = list(sym) if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    exes = []
    for s, entry in zip(syms, ctx_list):
        entry = dict(entry)
        ctx = entry.pop('ctx')
        types = entry.pop('type_dict', None)
        exes.append(s.simple_bind(ctx=ctx, grad_req=grad_req, type_dict=types,
                                  **entry))
    ref_k = max(range(len(exes)), key=lambda k: max(
        [np.dtype(a.dtype).itemsize for a in exes[k].arg_arrays] or [0]))
    ref = exes[ref_k]
    rng = np.random.default_rng(0)
    arg_params = dict(arg_params or {})
    for name, arr in ref.arg_dict.items():
        if name not in arg_params:
            v = rng.uniform(-1, 1, arr.shape) if use_uniform else \
                rng.normal(size=arr.shape) * scale
            arg_params[name] = v.astype(rand_type)
    aux_params = dict(aux_params or {})
    for name, arr in ref.aux_dict.items():
        aux_params.setdefault(name, np.zeros(arr.shape, rand_type))
    for ex in exes:
        for name, arr in ex.arg_dict.items():
            arr[:] = _to_numpy(arg_params[name]).astype(arr.dtype)
        for name, arr in ex.aux_dict.items():
            arr[:] = _to_numpy(aux_params[name]).astype(arr.dtype)
    outs = [[o.asnumpy() for o in ex.forward(is_train=False)] for ex in exes]
    gt = ground_truth or dict(zip(syms[ref_k].list_outputs(), outs[ref_k]))
    for k, ex in enumerate(exes):
        for name, out in zip(syms[k].list_outputs(), outs[k]):
            assert_almost_equal(gt[name], out, rtol, atol,
                                (f'{name} (ref)', f'{name} (ctx {k})'),
                                equal_nan=equal_nan)
    if grad_req == 'null':
        return gt
    for ex in exes:
        ex.forward(is_train=True)
        ex.backward([o.copy() for o in ex.outputs])
    ref_grads = {n: g.asnumpy() for n, g in ref.grad_dict.items() if g is not None}
    for k, ex in enumerate(exes):
        for name, g in ex.grad_dict.items():
            if g is None or name not in ref_grads:
                continue
            assert_almost_equal(ref_grads[name], g.asnumpy(), rtol, atol,
                                (f'{name} grad (ref)', f'{name} grad (ctx {k})'),
                                equal_nan=equal_nan)
    return gt


def _differentiable(graph, aux):
    """``graph`` as a function of NDArrays (keyword per argument) that
    autograd differentiates: its plan runs on the given arrays themselves."""
    from mxnet.symbol.graph import lower
    nodes = graph._nodes()
    inputs = [n for n in nodes if n.is_variable]

    def f(**named):
        ctx = next(iter(named.values())).context
        aux_d = aux if isinstance(aux, dict) else \
            dict(zip(graph.list_auxiliary_states(), aux or []))
        values = dict(named)
        values.update({k: mx.nd.array(_to_numpy(v), ctx=ctx) for k, v in aux_d.items()})
        arrays = [values[n.name] for n in inputs]
        plan = lower(nodes, inputs, graph._outputs, [a.shape for a in arrays],
                     [a.dtype for a in arrays], ctx, mx.autograd.is_training())
        outs = plan.launch(arrays)
        return outs[0] if len(outs) == 1 else outs
    return f


# ----------------------------------------------------------- environment

def getenv(name):
    """The value of environment variable ``name``, or None."""
    return os.environ.get(name)


def setenv(name, value):
    """Set (or, with None, unset) environment variable ``name``."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextmanager
def environment(*args):
    """Set environment variables for the body of a ``with``, then restore them.

    ``environment('NAME', 'value')`` or ``environment({'A': '1', 'B': None})``;
    None unsets. Waits for all pending work before restoring, as MXNet does.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        env = args[0]
    else:
        assert len(args) == 2, ('Expecting one dict arg or two args: env var '
                                'name and value')
        env = {args[0]: args[1]}
    snapshot = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        setenv(k, v)
    try:
        yield
    finally:
        mx.nd.waitall()
        for k, v in snapshot.items():
            setenv(k, v)


@contextmanager
def discard_stderr():
    """Silence the process's stderr (file descriptor 2) inside a ``with``."""
    with open(os.devnull, 'w') as bit_bucket:
        try:
            fd = sys.stderr.fileno()
        except (AttributeError, ValueError, OSError):
            yield               # stderr is not a real file (e.g. captured)
            return
        old = os.dup(fd)
        try:
            os.dup2(bit_bucket.fileno(), fd)
            yield
        finally:
            os.dup2(old, fd)
            os.close(old)


def retry(n):
    """Decorator: re-run a stochastic test up to n times on AssertionError."""
    assert n > 0

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if i == n - 1:
                        raise
                    mx.nd.waitall()
        return wrapper
    return decorate


def is_cd_run():
    """Whether this is MXNet's continuous-delivery run (never here)."""
    return os.environ.get('CD_JOB', 0) == '1'


def is_aarch64_run():
    """Whether the machine is aarch64."""
    return platform.machine() == 'aarch64'


def has_tvm_ops():
    """d2lmini has no TVM operators."""
    return False


def is_op_runnable():
    """Every op d2lmini has runs on the CPU."""
    return True


# The helpers of MXNet's NumPy-interface tests (use_np, verify_generator,
# matrices with real eigenvalues, check_gluon_hybridize_consistency) live in
# their own module next to this package's directory (shim/ is on sys.path).
from _mxnet_test_utils_np import *   # noqa: E402,F401,F403
