"""The CuPy stand-in is only useful if it is as strict as CuPy at the
host/device boundary (and as strict as its docstring says beyond it): these
tests hold it to that, on any machine, without changing d2lmini's backend."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cupy_standin as cp


def test_arrays_are_not_numpy_arrays():
    x = cp.arange(6, dtype=np.float32).reshape(2, 3)
    assert isinstance(x, cp.ndarray) and not isinstance(x, np.ndarray)
    assert x.shape == (2, 3) and x.dtype == np.float32 and x.ndim == 2 and x.size == 6
    for host in (lambda: np.asarray(x), lambda: np.array(x), lambda: np.exp(x),
                 lambda: np.where(x > 1, x, 0), lambda: np.concatenate([x, x]),
                 lambda: np.add(x, 1)):
        with pytest.raises(TypeError, match='device array|does not support ufuncs'):
            host()


@pytest.mark.parametrize('sync', [float, int, bool, complex,
                                  lambda v: [0, 1][v], lambda v: 1 if v else 0])
def test_implicit_host_syncs_raise(sync):
    with pytest.raises(TypeError, match='implicit GPU sync'):
        sync(cp.asarray(np.array(1)))


def test_mixing_with_numpy_arrays_raises_either_way_round():
    x, h = cp.ones((3,)), np.ones((3,))
    for mix in (lambda: x + h, lambda: h + x, lambda: x * h, lambda: h < x,
                lambda: cp.add(x, h), lambda: cp.where(x > 0, h, x)):
        with pytest.raises(TypeError):
            mix()
    # Python and NumPy scalars are fine, as in CuPy
    assert (x + 1).get().tolist() == [2, 2, 2]
    assert (x * np.float32(2)).dtype == np.float64


def test_host_data_crosses_only_explicitly():
    h = np.arange(4.0)
    x = cp.asarray(h)
    h[0] = 99                                # a copy, not a view of host memory
    assert x.get().tolist() == [0, 1, 2, 3]
    assert isinstance(x.get(), np.ndarray) and isinstance(cp.asnumpy(x), np.ndarray)
    assert x.sum().item() == 6 and x.tolist() == [0, 1, 2, 3]
    y = cp.empty((4,))
    y.set(np.ones(4))
    assert cp.asnumpy(y).tolist() == [1, 1, 1, 1]
    with pytest.raises(TypeError):
        y.set([1, 2, 3, 4])                  # set() takes a NumPy array


def test_reductions_and_integer_indexing_give_0d_arrays():
    x = cp.arange(6).reshape(2, 3)
    for r in (x.sum(), cp.max(x), x[1, 2], cp.linalg.norm(x.astype(np.float64))):
        assert isinstance(r, cp.ndarray) and r.shape == ()
    assert x.sum(axis=0).get().tolist() == [3, 5, 7]


def test_out_ufunc_methods_and_views():
    x = cp.zeros((3,))
    out = cp.add(x, 2, out=x)
    assert out is x and x.get().tolist() == [2, 2, 2]
    cp.add.at(x, cp.asarray(np.array([0, 0])), 1)
    assert x.get().tolist() == [4, 2, 2]
    v = x[1:]
    v[...] = 7
    assert x.get().tolist() == [4, 7, 7]
    w = cp.lib.stride_tricks.as_strided(x, (2, 2), (8, 8))
    assert w.get().tolist() == [[4, 7], [7, 7]]


def test_arrays_live_on_the_device_current_when_made():
    assert cp.cuda.runtime.getDeviceCount() >= 2
    a = cp.ones((2,))
    with cp.cuda.Device(1):
        b = cp.ones((2,))
        c = cp.array(a)                      # a device-to-device copy
        assert b.device == cp.cuda.Device(1) and c.device.id == 1
        with pytest.raises(ValueError, match='device'):
            a + b
        assert (b + c).get().tolist() == [2, 2]
    assert a.device.id == 0
    with pytest.raises(ValueError, match='device'):
        b + 1
    with pytest.raises(RuntimeError, match='invalid device'):
        cp.cuda.Device(99)


def test_current_device_is_per_thread():
    import threading
    seen = []
    with cp.cuda.Device(1):
        t = threading.Thread(target=lambda: seen.append(cp.ones(1).device.id))
        t.start()
        t.join(10)
    assert seen == [0]


def test_streams_and_events():
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.ones((3,)) * 2
        ev = cp.cuda.Event(disable_timing=True)
        ev.record(s)
    other = cp.cuda.Stream()
    other.wait_event(ev)
    with pytest.raises(TypeError):
        other.wait_event(s)
    s.synchronize()
    ev.synchronize()
    assert ev.done and s.done and x.get().tolist() == [2, 2, 2]


def test_get_array_module_and_memory_pool():
    x = cp.ones((256,), dtype=np.float32)
    assert cp.get_array_module(x) is cp and cp.get_array_module(np.ones(1)) is np
    assert cp.get_default_memory_pool().used_bytes() >= x.nbytes
    cp.get_default_memory_pool().free_all_blocks()


def test_pickling_a_device_array_is_refused():
    import pickle
    with pytest.raises(TypeError, match='device array'):
        pickle.dumps(cp.ones(2))


def _run(code, **env):
    here = os.path.dirname(os.path.abspath(__file__))
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [here, os.path.dirname(here)]), **env)
    return subprocess.run([sys.executable, '-c', code], env=e, capture_output=True,
                          text=True, timeout=120)


def test_backend_switch_and_default_context():
    r = _run('import d2lmini as mx\n'
             'from d2lmini import nd\n'
             'x = nd.ones((2, 3))\n'
             'x.wait_to_read()\n'
             'print(mx.num_gpus(), x.context, type(x._data).__module__,\n'
             '      (x * 2 + 1).sum().asscalar())',
             D2LMINI_CUPY='cupy_standin', D2LMINI_DEFAULT_CONTEXT='gpu(0)',
             D2LMINI_STANDIN_GPUS='2')
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ['2', 'gpu(0)', 'cupy_standin', '18.0']


def test_a_named_backend_that_is_missing_is_an_error():
    r = _run('import d2lmini', D2LMINI_CUPY='no_such_cupy_module')
    assert r.returncode != 0 and 'no_such_cupy_module' in r.stderr


@pytest.mark.parametrize('text, want', [('gpu(1)', 'gpu(1)'), ('gpu', 'gpu(0)'),
                                        (' cpu(2) ', 'cpu(2)')])
def test_default_context_from_the_environment(text, want):
    from d2lmini import context
    assert repr(context._from_env(text)) == want
    with pytest.raises(ValueError, match='D2LMINI_DEFAULT_CONTEXT'):
        context._from_env('tpu(0)')
