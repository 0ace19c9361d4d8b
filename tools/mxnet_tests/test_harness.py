"""Self-test of the harness: the alias, test_utils' semantics, placeholders.

Run from a checkout root:
    python -m pytest -q -p no:cacheprovider tools/mxnet_tests/test_harness.py
"""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'shim'))
sys.path.append(os.path.join(HERE, 'fallback'))

import d2lmini  # noqa: E402
import mxnet as mx  # noqa: E402
from mxnet import test_utils as tu  # noqa: E402
import _mxnet_harness as harness  # noqa: E402


# ------------------------------------------------------------------ alias

def test_alias_is_d2lmini_itself():
    import mxnet.ndarray as nd
    from mxnet import autograd
    from mxnet.gluon import nn
    assert mx is d2lmini
    assert nd is d2lmini.ndarray
    assert autograd is d2lmini.autograd
    assert nn is d2lmini.gluon.nn
    assert sys.modules['mxnet.gluon'] is sys.modules['d2lmini.gluon']
    # The alias does not rename d2lmini's modules (relative imports rely on it).
    assert nd.__spec__.name == 'd2lmini.ndarray'


def test_alias_missing_submodule_is_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        import mxnet.no_such_module  # noqa: F401


def test_test_utils_is_ours_and_reexports_like_upstream():
    assert tu.__file__.startswith(HERE)
    assert tu.mx is d2lmini and tu.np is np
    assert tu.array is d2lmini.nd.array


# ------------------------------------------------------------- test_utils

def test_default_tolerances_per_dtype():
    assert tu.get_rtol() == 1e-5 and tu.get_atol() == 1e-20       # float64
    assert tu.get_rtol(None, np.float32) == 1e-4
    assert tu.get_atol(0.5) == 0.5
    assert tu.get_tols(np.float16(1), np.ones(2, np.float32), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(np.ones(1, np.int32), np.ones(1, np.int64), None, None) == (0, 0)


def test_assert_almost_equal_float32_bounds():
    a = np.ones((3, 4), np.float32)
    tu.assert_almost_equal(a, a + 1e-3)                 # atol 1e-3 + rtol 1e-4
    with pytest.raises(AssertionError, match='exceeds tolerance'):
        tu.assert_almost_equal(a, a + 2e-3)
    tu.assert_almost_equal(a, a + 1e-2, rtol=0, atol=1e-2)


def test_assert_almost_equal_names_the_worst_element():
    a = np.zeros((2, 3), np.float64)
    b = a.copy()
    b[1, 2] = 5.0
    b[0, 0] = 1.0
    with pytest.raises(AssertionError, match=r'\(1, 2\).*x=0\.0+, y=5\.0+'):
        tu.assert_almost_equal(a, b, names=('x', 'y'))


def test_assert_almost_equal_ndarrays_and_numbers():
    x = mx.nd.array([1.0, 2.0])
    tu.assert_almost_equal(x, np.array([1.0, 2.0], np.float32))
    tu.assert_almost_equal(x, x)
    tu.assert_almost_equal(x.sum().asscalar(), 3.0)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(x, np.array([1.0, 2.5], np.float32))


def test_assert_almost_equal_bool_is_exact_and_nan_optional():
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True]), np.array([False]))
    n = np.array([np.nan, 1.0])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(n, n)
    tu.assert_almost_equal(n, n, equal_nan=True)
    tu.assert_almost_equal_ignore_nan(n, np.array([3.0, 1.0]))


def test_almost_equal_and_same():
    assert tu.almost_equal(np.ones(3), np.ones(3) + 1e-7)
    assert not tu.almost_equal(np.ones(3), np.ones(3) + 1e-4)  # float64 default
    assert tu.same(np.arange(3), np.arange(3))
    assert not tu.same(np.arange(3), np.arange(3).reshape(3, 1))


def test_np_reduce_matches_numpy():
    x = np.random.rand(2, 3, 4)
    for axis in (None, 1, (0, 2), [2, 0]):
        for keepdims in (False, True):
            want = np.sum(x, axis=tuple(axis) if isinstance(axis, list) else axis,
                          keepdims=keepdims)
            np.testing.assert_allclose(tu.np_reduce(x, axis, keepdims, np.sum), want)


def test_random_helpers_shapes_and_ranges():
    for _ in range(20):
        s = tu.rand_shape_nd(4, dim=3)
        assert len(s) == 4 and all(1 <= d <= 3 for d in s)
        assert all(0 <= d <= 2 for d in tu.rand_shape_3d(2, 2, 2, allow_zero_size=True))
    assert tu.random_arrays((2, 3)).shape == (2, 3)
    assert [a.shape for a in tu.random_arrays((2,), ())] == [(2,), ()]
    x = tu.rand_ndarray((2, 5))
    assert isinstance(x, mx.nd.NDArray) and x.shape == (2, 5)
    with pytest.raises(ImportError, match='sparse'):
        tu.rand_ndarray((2, 5), 'csr')
    assert sorted(tu.random_sample([1, 2, 3], 3)) == [1, 2, 3]


def test_environment_sets_and_restores():
    os.environ.pop('MXH_SELFTEST', None)
    with tu.environment('MXH_SELFTEST', '1'):
        assert os.environ['MXH_SELFTEST'] == '1'
        with tu.environment({'MXH_SELFTEST': None}):
            assert 'MXH_SELFTEST' not in os.environ
        assert os.environ['MXH_SELFTEST'] == '1'
    assert 'MXH_SELFTEST' not in os.environ


def test_assert_exception():
    tu.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError, match='did not raise'):
        tu.assert_exception(lambda: 1, ZeroDivisionError)
    with pytest.raises(ZeroDivisionError):        # the wrong error propagates
        tu.assert_exception(lambda: 1 / 0, KeyError)


def test_numeric_grad_central_differences():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    g, = tu.numeric_grad(lambda a: a * a * a, [x], eps=1e-3, dtype=np.float64)
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-5)


def test_check_numeric_gradient_accepts_right_and_rejects_wrong():
    loc = [np.random.rand(3, 2) + 0.5, np.random.rand(3, 2)]
    tu.check_numeric_gradient(lambda a, b: a * b + mx.nd.exp(a), loc,
                              dtype=np.float64, rtol=1e-4, atol=1e-6)
    tu.check_numeric_gradient(lambda x: (x * x).sum(), {'x': loc[0]},
                              dtype=np.float64)

    class WrongGrad(mx.autograd.Function):      # claims d(x^2)/dx = x
        def forward(self, x):
            self.save_for_backward(x)
            return x * x

        def backward(self, dy):
            x, = self.saved_tensors
            return dy * x

    with pytest.raises(AssertionError, match='NUMERICAL_arg0'):
        tu.check_numeric_gradient(lambda x: WrongGrad()(x), [loc[0]],
                                  dtype=np.float64)


def test_compare_optimizer_same_optimizer_agrees():
    opt1 = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    opt2 = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    tu.compare_optimizer(opt1, opt2, (3, 4), np.float32)


# ----------------------------------------------------------- placeholders

def _exec_as_upstream(tmp_path, monkeypatch, source):
    monkeypatch.setattr(harness, '_UPSTREAM', os.path.realpath(str(tmp_path)))
    g = {'__name__': 'test_upstream_fake', '__file__': str(tmp_path / 'test_x.py')}
    exec(compile(source, g['__file__'], 'exec'), g)    # module level: locals is globals
    return g


def test_missing_names_become_placeholders_at_module_level(tmp_path, monkeypatch):
    g = _exec_as_upstream(tmp_path, monkeypatch, (
        'from mxnet.ndarray import array, no_such_name\n'
        'from mxnet.no_such_mod import thing\n'
        'import mxnet.no_such_mod2 as nsm\n'
        'import mxnet.ndarray.no_such_sub as nss\n'
        'def later():\n'
        '    from mxnet.ndarray import no_such_name\n'))
    assert g['array'] is d2lmini.nd.array
    for name, what in [('no_such_name', 'mxnet.ndarray.no_such_name'),
                       ('thing', 'mxnet.no_such_mod.thing')]:
        with pytest.raises(harness.MissingInD2lmini, match=what):
            g[name]()
        with pytest.raises(harness.MissingInD2lmini):
            isinstance(1, g[name])
        try:                      # legal in an except clause, never matches
            raise KeyError
        except g[name]:
            raise AssertionError('placeholder matched')
        except KeyError:
            pass
    with pytest.raises(harness.MissingInD2lmini, match='no_such_mod2'):
        g['nsm'].ndarray()
    with pytest.raises(harness.MissingInD2lmini, match='no_such_sub'):
        g['nss'].f()
    # Imports in function bodies keep failing normally.
    with pytest.raises(ImportError):
        g['later']()
    assert not hasattr(d2lmini.ndarray, 'no_such_name')


def test_other_modules_imports_untouched(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, '_UPSTREAM', os.path.realpath(str(tmp_path)))
    with pytest.raises(ImportError):
        exec('from mxnet.ndarray import no_such_name', {'__file__': '/elsewhere/x.py'})


# ---------------------------------------------------------------- nose

def test_nose_tools():
    from nose.tools import assert_raises, raises, make_decorator

    @raises(ValueError, KeyError)
    def test_ok():
        raise KeyError

    @raises(ValueError)
    def test_bad():
        pass

    test_ok()
    with pytest.raises(AssertionError, match='did not raise ValueError'):
        test_bad()
    assert test_ok.__name__ == 'test_ok' and not hasattr(test_ok, '__wrapped__')
    assert_raises(ZeroDivisionError, lambda: 1 / 0)
    with assert_raises(KeyError):
        {}['x']

    def orig():
        """doc"""
    wrapped = make_decorator(orig)(lambda *a: None)
    assert wrapped.__name__ == 'orig' and wrapped.__doc__ == 'doc'


# ---------------------------------------------------------------- scope

UNITTEST = '/tmp/mx191/tests/python/unittest'


@pytest.mark.skipif(not os.path.isdir(UNITTEST), reason='no MXNet checkout at /tmp/mx191')
def test_scope_names_exist_upstream():
    sys.path.insert(0, HERE)
    import run
    import scope
    known = {f'{f}::{t}' for f in run.DEFAULT_FILES
             for t in run.static_tests(os.path.join(UNITTEST, f))}
    assert set(scope.OUT_OF_SCOPE) <= known, set(scope.OUT_OF_SCOPE) - known
    assert set(scope.PARTLY_IN_SCOPE) <= set(scope.OUT_OF_SCOPE)
    assert scope.reason('test_ndarray.py::test_ndarray_setitem') is None
    assert 'sparse' in scope.reason('test_optimizer.py::test_sgd')


def test_real_import_errors_inside_d2lmini_are_not_hidden():
    import types as _types

    class Broken(_types.ModuleType):
        def __getattr__(self, attr):
            raise ModuleNotFoundError("No module named 'cupy'", name='cupy')

    with pytest.raises(ModuleNotFoundError, match='cupy'):
        harness._has(Broken('x'), 'gluon')

    class Lazy(_types.ModuleType):
        def __getattr__(self, attr):
            raise ModuleNotFoundError("No module named 'd2lmini.kv'", name='d2lmini.kv')

    assert harness._has(Lazy('x'), 'kv') is False


def test_tolerance_of_other_exact_types_is_zero():
    assert tu.get_tols(np.ones(1, np.int16), np.ones(1, np.int16), None, None) == (0, 0)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1], np.int16), np.array([2], np.int16))


# ------------------------------------------------------------------ run.py

def test_run_helpers(tmp_path):
    sys.path.insert(0, HERE)
    import run
    assert run.normalise('AssertionError: \nItems are not equal:\nError 3') == \
        'AssertionError: Items are not equal:'
    assert run.normalise('KeyError: x at 0x7f00ab\nmore', 2) == 'KeyError: x at 0x… / more'
    f = tmp_path / 'test_x.py'
    f.write_text('def test_a(): pass\ndef helper(): pass\n'
                 'class TestB:\n    def test_c(self): pass\n')
    assert run.static_tests(str(f)) == ['test_a', 'TestB::test_c']
    base = tmp_path / 'base.json'
    base.write_text('{"test_x.py": {"test_x.py::test_a": ["passed", ""], '
                    '"test_x.py::test_d": ["failed", "E"]}}')
    text = run.baseline_section(
        {'test_x.py': ({'test_x.py::test_a': ('failed', 'ValueError: v'),
                        'test_x.py::test_d': ('passed', '')}, [], [])}, str(base))
    assert '### Now failing, passed before (1)\n- `test_x.py::test_a`: failed: ValueError: v' in text
    assert '### Now passing (1)\n- `test_x.py::test_d` (was failed)' in text


def test_runner_survives_a_crash_and_a_timeout(tmp_path):
    unit = tmp_path / 'tests' / 'python' / 'unittest'
    unit.mkdir(parents=True)
    (unit / 'test_fake.py').write_text(
        'import os, time\n'
        'import mxnet as mx\n'
        'from mxnet.base import NoSuchThing\n'
        'from mxnet.test_utils import assert_almost_equal\n'
        'def test_ok():\n    assert_almost_equal(mx.nd.ones((2,)), [1, 1])\n'
        'def test_crash():\n    os._exit(3)\n'
        'def test_after():\n    pass\n'
        'def test_slow():\n    time.sleep(30)\n'
        'def test_missing():\n    NoSuchThing()\n')
    out = tmp_path / 'out.json'
    import subprocess
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, 'run.py'), '--mxnet', str(tmp_path),
         '--timeout', '2', '--json', str(out), 'test_fake.py'],
        cwd=os.path.dirname(os.path.dirname(d2lmini.__file__)),
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    import json
    got = json.load(open(out))['test_fake.py']
    assert got['test_fake.py::test_ok'][0] == 'passed'
    assert got['test_fake.py::test_after'][0] == 'passed'
    assert got['test_fake.py::test_crash'] == [
        'failed', 'CRASHED: test process died (exit status 3); the harness went on after it']
    assert 'TestTimeout' in got['test_fake.py::test_slow'][1]
    assert 'd2lmini lacks mxnet.base.NoSuchThing' in got['test_fake.py::test_missing'][1]


# ------------------------------------- mx.np tests' helpers (issue 27)

def test_chi_square_generator_checks():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: 2 + 4 * q, 4)
    assert buckets == [(2.0, 3.0), (3.0, 4.0), (4.0, 5.0), (5.0, 6.0)]
    assert probs == [0.25] * 4
    rng = np.random.default_rng(0)
    good = lambda n: rng.uniform(2, 6, n)                         # noqa: E731
    biased = lambda n: np.sqrt(rng.uniform(4, 36, n))              # noqa: E731
    assert len(tu.verify_generator(good, buckets, probs, nsamples=20000, nrepeat=5)) == 5
    with pytest.raises(AssertionError, match='Generator test fails'):
        tu.verify_generator(biased, buckets, probs, nsamples=20000, nrepeat=5)
    # discrete buckets: the values themselves
    p, obs, _ = tu.chi_square_check(lambda n: rng.integers(0, 3, n), [0, 1, 2],
                                    [1 / 3] * 3, nsamples=3000)
    assert obs.sum() == 3000 and 0 <= p <= 1


def test_chisquare_p_value_and_special_functions_against_torch():
    torch = pytest.importorskip('torch')
    import scipy.special as sp
    import scipy.stats as ss
    f64 = lambda v: torch.tensor(v, dtype=torch.float64)           # noqa: E731
    for obs in ([10, 20, 30, 40], [24, 26, 25, 25], [0, 0, 100, 0, 0, 0, 0, 0]):
        k = len(obs)
        stat, p = ss.chisquare(obs, [sum(obs) / k] * k)
        want = torch.special.gammaincc(f64(k / 2 - 0.5), f64(stat / 2)).item()
        assert p == pytest.approx(want, rel=1e-9, abs=1e-300)
    x = np.array([-0.95, -0.3, 0.0, 0.4, 0.99])
    np.testing.assert_allclose(sp.erf(x), torch.erf(f64(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(sp.erfinv(x), torch.erfinv(f64(x)).numpy(), rtol=1e-9)
    y = np.array([-2.5, -0.5, 0.3, 1.0, 4.7, 30.0])
    np.testing.assert_allclose(sp.gammaln(y), torch.lgamma(f64(y)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(sp.psi(y), torch.digamma(f64(y)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(sp.gamma(y), np.exp(torch.lgamma(f64(y)).numpy())
                               * np.sign(sp.gamma(y)), rtol=1e-10)
    assert sp.erf(np.ones(2, np.float32)).dtype == np.float32
    np.testing.assert_allclose(ss.uniform.ppf([0, 0.5], loc=2, scale=4), [2, 4])
    np.testing.assert_allclose(ss.uniform.cdf([1, 3, 7], 2, 4), [0, 0.25, 1])


def test_matrices_with_real_eigenvalues():
    a = tu.new_matrix_with_real_eigvals_nd((2, 3, 4, 4))
    assert a.shape == (2, 3, 4, 4)
    eig = np.linalg.eigvals(a)
    assert np.abs(eig.imag).max() < 1e-8 and np.abs(eig.real).max() < 10 + 1e-8
    s = tu.new_sym_matrix_with_real_eigvals_nd((3, 5, 5))
    np.testing.assert_allclose(s, np.swapaxes(s, -1, -2), atol=1e-12)
    assert np.abs(np.linalg.eigvalsh(s)).max() < 10 + 1e-8


def test_collapse_sum_like_inverts_broadcasting():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (3, 1)), a.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (1, 3, 4)), a.sum(axis=0, keepdims=True))
    assert tu.collapse_sum_like(a, (0, 4)).shape == (0, 4)


def test_use_np_falls_back_to_set_np_or_fails_the_test(monkeypatch):
    import types
    import _mxnet_test_utils_np as tnp

    class Block:
        pass
    # a d2lmini without util.use_np, and first without npx either
    monkeypatch.setitem(sys.modules, 'd2lmini.util', types.SimpleNamespace())
    fake_mx = types.SimpleNamespace(util=types.SimpleNamespace())
    monkeypatch.setattr(tnp, 'mx', fake_mx)
    assert tnp.use_np(Block) is Block
    with pytest.raises(ImportError, match='lacks mxnet.util.use_np'):
        tnp.use_np(lambda: 1)()
    calls = []
    fake_mx.npx = types.SimpleNamespace(set_np=lambda **kw: calls.append('set'),
                                        reset_np=lambda: calls.append('reset'))
    assert tnp.use_np(lambda x: x + 1)(1) == 2
    assert calls == ['set', 'reset']


@pytest.mark.skipif(not hasattr(mx, 'np'), reason='d2lmini has no mx.np yet')
def test_check_gluon_hybridize_consistency():
    def builder(prefix):
        return mx.gluon.nn.Dense(3, in_units=4, prefix=prefix)
    x = mx.np.array(np.random.uniform(size=(2, 4)).astype(np.float32))
    tu.check_gluon_hybridize_consistency(builder, [x])


def test_failure_causes():
    sys.path.insert(0, HERE)
    import causes
    c = causes.classify
    assert c("AttributeError: module 'd2lmini.numpy' has no attribute 'pad'") == \
        ('`mx.np.<name>` missing', 'pad')
    assert c("AttributeError: module 'd2lmini.numpy.random' has no attribute 'gamma'") == \
        ('`mx.np.random.<name>` missing', 'gamma')
    assert c("_mxnet_harness.MissingInD2lmini: d2lmini lacks mxnet.npx.erf (module "
             "mxnet.npx)") == ('`mx.npx.<name>` missing', 'erf')
    cause, name = c("AttributeError: module 'd2lmini.symbol.numpy' has no attribute 'tril'")
    assert cause.startswith('`mx.sym.np.<name>` missing') and 'symbolic' in cause
    assert name == 'tril'
    assert c("AttributeError: module 'd2lmini.ndarray' has no attribute 'np'") == \
        ('`F.np` / `F.npx` missing (imperative HybridBlock)', 'mx.nd.np')
    assert c("AttributeError: 'ndarray' object has no attribute 'tolist'") == \
        ('`mx.np.ndarray` attribute/method missing', 'tolist')
    assert c("TypeError: einsum() got an unexpected keyword argument 'optimize'") == \
        ('keyword argument not supported', 'einsum(optimize=)')
    assert c('AssertionError: \nItems are not equal:\n')[0] == 'values not equal (exact comparison)'
    assert c('AssertionError: Error 3.5 exceeds tolerance rtol=1e-4')[0] == \
        'values differ beyond tolerance'
    assert c("assert dtype('float32') == dtype('float64')")[0] == 'dtype mismatch'
    # numpy.testing's arrays after the message do not count (dtype=float32)
    assert c('AssertionError: \nItems are not equal:\n ACTUAL: array([1.], dtype=float32)'
             )[0] == 'values not equal (exact comparison)'
    assert c('AssertionError: \nItems are not equal:\n a.shape = (1,) and b.shape = (1, 1) '
             'are not equal\n ACTUAL: array([1.], dtype=float32)')[0] == 'shape mismatch'
    assert c('TestTimeout: test ran longer than 60 s (harness timeout)')[0] == \
        'ran past the per-test timeout'
    assert c('[setup] ValueError: bad x')[0] == '`ValueError` raised'
    lines = causes.table({'a': "AttributeError: module 'd2lmini.numpy' has no attribute 'pad'",
                          'b': "AttributeError: module 'd2lmini.numpy' has no attribute 'pad'",
                          'c': "AttributeError: module 'd2lmini.numpy' has no attribute 'tile'",
                          'd': 'ZeroDivisionError: x'})
    assert lines[2] == '| `mx.np.<name>` missing | 3 | `pad` (2), `tile` (1) |'
    assert lines[-1] == '| **total** | 4 | |'
