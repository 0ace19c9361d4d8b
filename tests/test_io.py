"""nd.save / nd.load: round trips, atomic writes, clear errors, no pickle."""
import io
import json
import os
import stat
import zipfile

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd
from d2lmini.ndarray import io as ndio

DTYPES = ['float32', 'float64', 'float16', 'int32', 'int64', 'int8', 'uint8', 'bool']


def _arrays(ctx):
    rng = np.random.default_rng(0)
    out = {}
    for i, dt in enumerate(DTYPES):
        shape = [(2, 3), (4,), (), (1, 2, 3), (0, 5), (3, 1), (5,), (2, 2)][i]
        out[dt] = (rng.standard_normal(shape) * 50).astype(dt)
    return out


def test_list_round_trip(tmp_path, ctx):
    src = list(_arrays(ctx).values())
    f = tmp_path / 'a.params'
    nd.save(str(f), [nd.array(a, dtype=a.dtype) for a in src])
    back = nd.load(str(f))
    assert isinstance(back, list) and len(back) == len(src)
    for b, a in zip(back, src):
        assert isinstance(b, nd.NDArray)
        assert b.dtype is a.dtype.type and b.shape == a.shape
        np.testing.assert_array_equal(b.asnumpy(), a)


def test_dict_round_trip_keeps_order(tmp_path, ctx):
    arrays = _arrays(ctx)
    keys = ['z.weight', 'a.bias', 'm', 'b'] + [f'k{i}' for i in range(len(arrays) - 4)]
    d = {k: nd.array(a, dtype=a.dtype) for k, a in zip(keys, arrays.values())}
    f = tmp_path / 'net.params'
    nd.save(f, d)                         # a pathlib.Path works too
    back = nd.load(f)
    assert isinstance(back, dict) and list(back) == keys
    for k, a in zip(keys, arrays.values()):
        assert back[k].dtype is a.dtype.type and back[k].shape == a.shape
        np.testing.assert_array_equal(back[k].asnumpy(), a)


def test_single_array_and_empty(tmp_path):
    f = str(tmp_path / 'x')
    nd.save(f, nd.arange(4))
    (x,) = nd.load(f)
    np.testing.assert_array_equal(x.asnumpy(), np.arange(4, dtype=np.float32))
    nd.save(f, [])
    assert nd.load(f) == []
    nd.save(f, {})
    assert nd.load(f) == {}


def test_save_from_other_context_and_load_to_ctx(tmp_path):
    f = str(tmp_path / 'x')
    nd.save(f, [nd.ones((2,), ctx=mx.cpu(1)) * 3])
    (x,) = nd.load(f)
    assert x.context == mx.cpu(0)
    (y,) = nd.load(f, ctx=mx.cpu(1))
    assert y.context == mx.cpu(1)
    np.testing.assert_array_equal(y.asnumpy(), [3, 3])


def test_pending_values_are_saved(tmp_path, engine_kind):
    x = nd.zeros((100, 100))
    for _ in range(10):
        x += 1                           # queued on the engine
    f = str(tmp_path / 'x')
    nd.save(f, [x])
    np.testing.assert_array_equal(nd.load(f)[0].asnumpy(), np.full((100, 100), 10))


def test_overwrite_replaces(tmp_path):
    f = str(tmp_path / 'x')
    nd.save(f, [nd.ones(3)])
    nd.save(f, {'w': nd.zeros(2)})
    back = nd.load(f)
    assert list(back) == ['w'] and back['w'].shape == (2,)


def test_format_is_documented_npz(tmp_path):
    """Any NumPy can read the file: an npz with a JSON header entry."""
    f = str(tmp_path / 'x')
    nd.save(f, {'w': nd.ones((2, 2)), 'b': nd.zeros(3)})
    with zipfile.ZipFile(f) as z:
        meta = json.loads(z.read('__d2lmini__.json'))
    assert meta['format'] == 'd2lmini-ndarray' and meta['version'] == 1
    assert meta['kind'] == 'dict' and meta['keys'] == ['w', 'b']
    with np.load(f, allow_pickle=False) as npz:
        np.testing.assert_array_equal(npz['arr_0'], np.ones((2, 2)))
        np.testing.assert_array_equal(npz['arr_1'], np.zeros(3))


def test_file_permissions_follow_umask(tmp_path):
    f = str(tmp_path / 'x')
    nd.save(f, [nd.ones(1)])
    um = os.umask(0)
    os.umask(um)
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o666 & ~um


# --- atomic writes ---------------------------------------------------------------------
@pytest.mark.parametrize('exc', [RuntimeError('disk full'), KeyboardInterrupt()],
                         ids=['error', 'interrupt'])
def test_failure_mid_save_leaves_old_file_intact(tmp_path, monkeypatch, exc):
    f = str(tmp_path / 'ckpt.params')
    nd.save(f, {'w': nd.ones((3,))})
    before = open(f, 'rb').read()
    real_save, calls = np.save, []

    def failing_save(*a, **kw):            # fail after the first array is written
        calls.append(1)
        if len(calls) == 2:
            raise exc
        return real_save(*a, **kw)
    monkeypatch.setattr(ndio.np, 'save', failing_save)
    with pytest.raises(type(exc)):
        nd.save(f, {'w': nd.zeros((3,)), 'b': nd.zeros((5,)), 'c': nd.zeros((1,))})
    monkeypatch.undo()
    assert len(calls) == 2
    assert os.listdir(tmp_path) == ['ckpt.params']       # no partial/temp file
    assert open(f, 'rb').read() == before
    np.testing.assert_array_equal(nd.load(f)['w'].asnumpy(), np.ones(3))


def test_failure_on_first_save_leaves_nothing(tmp_path, monkeypatch):
    def boom(*a, **kw):
        raise OSError('no space left on device')
    monkeypatch.setattr(ndio.np, 'save', boom)
    with pytest.raises(OSError):
        nd.save(str(tmp_path / 'new.params'), [nd.ones(2)])
    assert os.listdir(tmp_path) == []


def test_bad_values_rejected_before_writing(tmp_path):
    f = str(tmp_path / 'x')
    nd.save(f, [nd.ones(1)])
    before = open(f, 'rb').read()
    with pytest.raises(TypeError, match='NDArray'):
        nd.save(f, [nd.ones(1), np.ones(2)])
    with pytest.raises(TypeError, match='str'):
        nd.save(f, {1: nd.ones(1)})
    with pytest.raises(TypeError):
        nd.save(f, 'not arrays')
    assert open(f, 'rb').read() == before and os.listdir(tmp_path) == ['x']


# --- loading files that are not ours ------------------------------------------------------
def _zip(path, entries):
    with zipfile.ZipFile(path, 'w') as z:
        for name, data in entries.items():
            z.writestr(name, data)


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)
    return buf.getvalue()


def test_load_foreign_files_gives_clear_errors(tmp_path):
    cases = {}
    cases['text'] = b'hello, this is not an NDArray file\n'
    cases['empty'] = b''
    np.save(tmp_path / 'plain.npy', np.ones(3))
    cases['npy'] = (tmp_path / 'plain.npy').read_bytes()
    np.savez(tmp_path / 'plain.npz', a=np.ones(3))
    cases['npz'] = (tmp_path / 'plain.npz').read_bytes()
    _zip(tmp_path / 'other.zip', {'__d2lmini__.json': json.dumps({'format': 'other'})})
    cases['other-format'] = (tmp_path / 'other.zip').read_bytes()
    _zip(tmp_path / 'badjson.zip', {'__d2lmini__.json': b'{not json'})
    cases['bad-json'] = (tmp_path / 'badjson.zip').read_bytes()
    meta = {'format': 'd2lmini-ndarray', 'version': 1, 'kind': 'list', 'keys': None,
            'count': 2}
    _zip(tmp_path / 'missing.zip', {'__d2lmini__.json': json.dumps(meta),
                                    'arr_0.npy': _npy(np.ones(2))})
    cases['missing-entry'] = (tmp_path / 'missing.zip').read_bytes()
    nd.save(str(tmp_path / 'good'), [nd.ones((50, 50))])
    cases['truncated'] = (tmp_path / 'good').read_bytes()[:-300]
    for name, data in cases.items():
        f = tmp_path / f'case-{name}'
        f.write_bytes(data)
        with pytest.raises(ValueError, match='d2lmini') as e:
            nd.load(str(f))
        assert str(f) in str(e.value), name
    with pytest.raises(FileNotFoundError):
        nd.load(str(tmp_path / 'does-not-exist'))


def test_load_never_unpickles(tmp_path):
    meta = {'format': 'd2lmini-ndarray', 'version': 1, 'kind': 'list', 'keys': None,
            'count': 1}
    f = tmp_path / 'evil'
    _zip(f, {'__d2lmini__.json': json.dumps(meta),
             'arr_0.npy': _npy(np.array([{'x': 1}], dtype=object))})
    with pytest.raises(ValueError, match='d2lmini'):
        nd.load(str(f))
