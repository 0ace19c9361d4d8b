"""The part of ``mxnet.test_utils`` that MXNet's NumPy-interface tests use.

test_numpy_ndarray.py, test_numpy_gluon.py and test_numpy_op.py import, on
top of the classic helpers in ``mxnet/_test_utils.py``: ``use_np``, the
random-generator checks (``gen_buckets_probs_with_ppf``,
``verify_generator``: Pearson's chi-square over buckets), matrices with
known real eigenvalues (``new_matrix_with_real_eigvals_nd``,
``new_sym_matrix_with_real_eigvals_nd``) and
``check_gluon_hybridize_consistency``. Implemented here in NumPy with the
semantics of MXNet 1.9.1's versions (read, not copied); ``mxnet.test_utils``
re-exports them, so a test finds them where upstream's would be.
"""
import functools
import sys

import numpy as np

import mxnet as mx
from mxnet.test_utils import MissingInD2lmini, assert_almost_equal

__all__ = ['use_np', 'gen_buckets_probs_with_ppf', 'mean_check', 'var_check',
           'chi_square_check', 'verify_generator',
           'new_matrix_with_real_eigvals_2d', 'new_matrix_with_real_eigvals_nd',
           'new_orthonormal_matrix_2d', 'new_sym_matrix_with_real_eigvals_2d',
           'new_sym_matrix_with_real_eigvals_nd',
           'check_gluon_hybridize_consistency']


# ------------------------------------------------------------------ use_np

def _np_scope(func):
    """``func`` run with NumPy semantics switched on (npx.set_np), and the
    previous semantics restored afterwards: use_np for a d2lmini whose
    ``mxnet.util`` has no ``use_np`` but whose ``npx`` has ``set_np``."""
    npx = mx.npx

    @functools.wraps(func)
    def scoped(*args, **kwargs):
        was = (mx.util.is_np_shape(), mx.util.is_np_array()) \
            if hasattr(mx.util, 'is_np_array') else None
        npx.set_np()
        try:
            return func(*args, **kwargs)
        finally:
            if was is None or not any(was):
                npx.reset_np()
            else:
                npx.set_np(shape=was[0], array=was[1])
    return scoped


def use_np(func):
    """MXNet's decorator: ``func`` (a test, or a Block class) runs with NumPy
    shape and array semantics. d2lmini's own ``mxnet.util.use_np`` when it
    has one; else npx.set_np around a function (a class is left as is: the
    test that uses it runs under set_np); else calling ``func`` raises
    MissingInD2lmini, so the test fails on the missing name, not at import."""
    util = sys.modules.get('d2lmini.util')
    if util is not None and hasattr(util, 'use_np'):
        return util.use_np(func)
    npx = getattr(mx, 'npx', None)
    if npx is not None and hasattr(npx, 'set_np'):
        return func if isinstance(func, type) else _np_scope(func)
    if isinstance(func, type):
        return func

    @functools.wraps(func)
    def unavailable(*args, **kwargs):
        raise MissingInD2lmini('d2lmini lacks mxnet.util.use_np '
                               '(and npx.set_np): no NumPy semantics')
    return unavailable


# ------------------------------------------------- random-generator checks

def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equally likely buckets [ppf(i/n), ppf((i+1)/n)) of the
    distribution whose quantile function is ``ppf``, and their probabilities."""
    assert nbuckets > 0
    edges = [ppf(i / float(nbuckets)) for i in range(nbuckets + 1)]
    return list(zip(edges[:-1], edges[1:])), [1.0 / nbuckets] * nbuckets


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the sample mean of ``generator(nsamples)`` is within 3 standard
    errors of ``mu``."""
    mean = np.array(generator(nsamples)).mean()
    half = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half < mean < mu + half)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of ``generator(nsamples)`` is within 3
    standard errors of ``sigma ** 2``."""
    var = np.array(generator(nsamples)).var(ddof=1)
    half = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - half < var < sigma ** 2 + half)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of ``generator(nsamples)`` against ``probs``.

    ``buckets`` holds (low, high) ranges, in ascending order and disjoint,
    for a continuous distribution, or the possible values of a discrete one.
    Returns (p-value, observed counts, expected counts)."""
    import scipy.stats     # the real SciPy, or the harness's NumPy fallback
    assert isinstance(buckets, list) and len(probs) == len(buckets)
    samples = np.asarray(generator(nsamples))
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.array(buckets, dtype=np.float32).reshape(-1)
        assert np.all(np.diff(edges) >= 0), 'buckets must be ascending and disjoint'
        # Bucket i spans edges 2i..2i+1; as in MXNet, a sample below the
        # first bucket or in the gap before bucket i counts for bucket i.
        ids = np.searchsorted(edges, samples, side='right') // 2
        observed = np.array([np.count_nonzero(ids == i)
                             for i in range(len(buckets))])
    else:
        observed = np.array([np.count_nonzero(samples == b) for b in buckets])
    _, p = scipy.stats.chisquare(f_obs=observed, f_exp=expected)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5,
                     success_rate=0.2, alpha=0.05):
    """Repeat chi_square_check ``nrepeat`` times; raise AssertionError unless
    at least ``success_rate`` of the p-values exceed ``alpha``. Returns them."""
    results = [chi_square_check(generator, buckets, probs, nsamples)
               for _ in range(nrepeat)]
    pvalues = [r[0] for r in results]
    if (np.array(pvalues) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(
            f'Generator test fails, chi-square p={pvalues}, '
            f'obs_freq={[list(r[1]) for r in results]}, '
            f'expected_freq={[list(r[2]) for r in results]}.\n'
            f'buckets={buckets}, probs={probs}')
    return pvalues


# ------------------------------------------------- matrices for linalg ops

def new_matrix_with_real_eigvals_2d(n):
    """A random n x n matrix Q^-1 D Q with real eigenvalues D in [-10, 10)
    and Q well conditioned (a Householder reflection times a diagonal, with
    2-norm condition number below 3)."""
    while True:
        diag = np.diag(np.random.uniform(-1.0, 1.0, n))
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v /= np.linalg.norm(v, axis=0, keepdims=True)
        q = (np.eye(n) - 2 * v @ v.T) @ diag
        if np.linalg.cond(q, 2) < 3:
            break
    eig = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.linalg.inv(q) @ eig @ q


def new_matrix_with_real_eigvals_nd(shape):
    """A stack of new_matrix_with_real_eigvals_2d of ``shape`` (..., n, n)."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(count)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random n x n orthonormal matrix (Q of the QR of X^T X)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric n x n matrix with eigenvalues in [-10, 10)."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A stack of new_sym_matrix_with_real_eigvals_2d of ``shape`` (..., n, n)."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(count)]).reshape(shape)


# ------------------------------------------------------ hybridize checks

def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None,
                                      test_grad=True, rtol=1e-4, atol=1e-4):
    """A HybridBlock gives the same outputs (and input gradients, with
    ``test_grad``) imperative and hybridized, with the same parameters.

    ``net_builder(prefix=...)`` builds the block (no random operators
    inside); ``data_l`` are the np inputs; ``numpy_func``, when given, is the
    NumPy ground truth of the output."""
    return use_np(_hybridize_consistency)(net_builder, data_l, numpy_func,
                                          test_grad, rtol, atol)


def _hybridize_consistency(net_builder, data_l, numpy_func, test_grad, rtol, atol):
    class _FromSaved(mx.init.Initializer):
        """Weights from the first net's values (other parameters by name rule)."""

        def __init__(self, saved):
            super().__init__()
            self._saved = saved

        def _init_weight(self, name, arr):
            arr[()] = self._saved[name]

    want_out, want_grads, init = None, None, None
    for hybridize in (False, True):
        for use_autograd in ((False, True) if test_grad else (False,)):
            net = net_builder(prefix='net_')
            net.initialize(init) if init is not None else net.initialize()
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with mx.autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if init is None:
                init = _FromSaved({k: v.data().asnumpy()
                                   for k, v in net.collect_params().items()})
            if want_out is None:
                want_out = out.asnumpy()
            else:
                assert_almost_equal(out.asnumpy(), want_out, rtol=rtol, atol=atol)
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                if want_grads is None:
                    want_grads = grads
                for got, want in zip(grads, want_grads):
                    assert_almost_equal(got, want, rtol=rtol, atol=atol)
    if numpy_func is not None:
        truth = numpy_func(*[x.asnumpy() for x in data_l])
        assert_almost_equal(want_out, truth, rtol=rtol, atol=atol)
