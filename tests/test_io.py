"""nd.save / nd.load: MXNet's file format, round trips, atomic writes, clear errors."""
import io
import json
import os
import stat
import struct
import zipfile

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd
from d2lmini.ndarray import utils as ndutils

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


def test_exact_bytes_of_a_small_dict_file(tmp_path):
    """The header, one V2 record and the names, computed by hand from the spec."""
    f = str(tmp_path / 'x')
    nd.save(f, {'w': nd.array([[1, 2, 3], [4, 5, 6]], ctx=mx.cpu(0), dtype='int32')})
    want = (b'\x12\x01\0\0\0\0\0\0'            # u64 0x112: list magic
            + b'\0' * 8                               # u64 reserved
            + b'\x01' + b'\0' * 7                     # u64: one array
            + b'\xc9\xfa\x93\xf9'                     # u32 0xF993FAC9: V2
            + b'\0\0\0\0'                             # i32 storage: dense
            + b'\x02\0\0\0'                           # i32 ndim 2
            + b'\x02' + b'\0' * 7 + b'\x03' + b'\0' * 7  # i64 dims 2, 3
            + b'\x01\0\0\0' + b'\0\0\0\0'              # cpu (1), dev_id 0
            + b'\x04\0\0\0'                           # dtype flag 4: int32
            + b''.join(bytes([i, 0, 0, 0]) for i in range(1, 7))
            + b'\x01' + b'\0' * 7                     # u64: one name
            + b'\x01' + b'\0' * 7 + b'w')             # u64 length 1, 'w'
    assert open(f, 'rb').read() == want


def test_list_file_has_no_names_and_keeps_context_and_dtype_flags(tmp_path):
    f = str(tmp_path / 'x')
    arrays = [nd.ones((1,), ctx=mx.cpu(3), dtype=dt) for dt in ndutils.DTYPES]
    nd.save(f, arrays)
    b = open(f, 'rb').read()
    assert b.endswith(b'\0' * 8)                    # zero names: a list
    pos = 24
    for flag, a in enumerate(arrays):
        magic, stype, ndim, dim, dev_type, dev_id, dflag = struct.unpack_from(
            '<IiiqiiI', b, pos)
        assert (magic, stype, ndim, dim) == (0xF993FAC9, 0, 1, 1)
        assert (dev_type, dev_id, dflag) == (1, 3, flag)
        pos += 32 + a.asnumpy().itemsize
    assert pos == len(b) - 8


def test_zero_d_arrays_use_the_numpy_shape_magic(tmp_path):
    f = str(tmp_path / 'x')
    nd.save(f, [nd.array(2.5).reshape(()), nd.ones((2,))])
    b = open(f, 'rb').read()
    # MXNet refuses files mixing V2 and V3 records: both are V3.
    assert struct.unpack_from('<Iii', b, 24) == (0xF993FACA, 0, 0)
    assert struct.unpack_from('<Iiiq', b, 24 + 24 + 4) == (0xF993FACA, 0, 1, 2)
    x, y = nd.load(f)
    assert x.shape == () and x.asscalar() == 2.5 and y.shape == (2,)


def _legacy_record(magic_and_shape, ctx=(1, 0), flag=0, data=b''):
    return magic_and_shape + struct.pack('<ii', *ctx) + struct.pack('<i', flag) + data


def test_reads_legacy_v0_and_v1_records():
    vals = np.arange(6, dtype=np.float32)
    v0 = _legacy_record(struct.pack('<III', 2, 2, 3), data=vals.tobytes())
    v1 = _legacy_record(struct.pack('<Iiqq', 0xF993FAC8, 2, 3, 2), flag=1,
                        data=vals.astype(np.float64).tobytes())
    buf = struct.pack('<QQQ', 0x112, 0, 2) + v0 + v1 + struct.pack('<Q', 0)
    a, b = nd.load_frombuffer(buf)
    np.testing.assert_array_equal(a.asnumpy(), vals.reshape(2, 3))
    assert b.dtype is np.float64
    np.testing.assert_array_equal(b.asnumpy(), vals.reshape(3, 2))


MXNET_LEGACY = '/tmp/mx191/tests/python/unittest/legacy_ndarray.v0'


@pytest.mark.skipif(not os.path.exists(MXNET_LEGACY),
                    reason="MXNet's legacy_ndarray.v0 is not unpacked here")
def test_reads_mxnet_legacy_file():
    data = nd.load(MXNET_LEGACY)
    assert len(data) == 6
    for a in data:
        np.testing.assert_array_equal(a.asnumpy(), np.arange(128, dtype=np.float32))


def test_empty_dict_loads_as_empty_list_as_in_mxnet(tmp_path):
    f = str(tmp_path / 'x')
    nd.save(f, {})
    assert nd.load(f) == []


def test_load_frombuffer_and_old_npz_files(tmp_path):
    f = str(tmp_path / 'x')
    nd.save(f, {'a': nd.arange(3), 'b': nd.ones((2, 2), dtype='float16')})
    buf = open(f, 'rb').read()
    back = nd.load_frombuffer(buf)
    assert list(back) == ['a', 'b'] and back['b'].dtype is np.float16
    np.testing.assert_array_equal(back['a'].asnumpy(), [0, 1, 2])
    with pytest.raises(TypeError):
        nd.load_frombuffer(12)
    # d2lmini's earlier format (an npz with a JSON header) still loads.
    meta = {'format': 'd2lmini-ndarray', 'version': 1, 'kind': 'dict',
            'keys': ['w'], 'count': 1}
    _zip(tmp_path / 'old', {'__d2lmini__.json': json.dumps(meta),
                            'arr_0.npy': _npy(np.eye(2))})
    old = nd.load(str(tmp_path / 'old'))
    np.testing.assert_array_equal(old['w'].asnumpy(), np.eye(2))


def test_truncated_or_garbled_buffers_raise_mxnet_error(tmp_path):
    buf = ndutils.dumps({'w': nd.ones((3, 4)), 'bias': nd.zeros(4)})
    cut = [buf[:n] for n in (0, 7, 16, 24, 30, 60, len(buf) - 10, len(buf) - 1)]
    for bad in cut + [buf + b'\0', b'\x13' + buf[1:]]:
        with pytest.raises(mx.engine.MXNetError, match='not a valid NDArray') as e:
            nd.load_frombuffer(bad)
        assert isinstance(e.value, ValueError)
    wrong_flag = bytearray(buf)
    wrong_flag[24 + 4 + 4 + 4 + 16 + 8:24 + 4 + 4 + 4 + 16 + 12] = b'\x63\0\0\0'
    with pytest.raises(ValueError, match='dtype flag 99'):
        nd.load_frombuffer(bytes(wrong_flag))


def test_unsupported_dtype_is_refused_before_writing(tmp_path):
    x = nd.ones(2, dtype='complex64')               # MXNet has no flag for it
    with pytest.raises(TypeError, match='complex64'):
        nd.save(str(tmp_path / 'x'), [x])
    assert os.listdir(tmp_path) == []


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
    calls = []

    def failing_fsync(fd):                  # the new bytes are written, not synced
        calls.append(fd)
        raise exc
    monkeypatch.setattr(ndutils.os, 'fsync', failing_fsync)
    with pytest.raises(type(exc)):
        nd.save(f, {'w': nd.zeros((3,)), 'b': nd.zeros((5,)), 'c': nd.zeros((1,))})
    monkeypatch.undo()
    assert len(calls) == 1
    assert os.listdir(tmp_path) == ['ckpt.params']       # no partial/temp file
    assert open(f, 'rb').read() == before
    np.testing.assert_array_equal(nd.load(f)['w'].asnumpy(), np.ones(3))


def test_failure_on_first_save_leaves_nothing(tmp_path, monkeypatch):
    def boom(*a, **kw):
        raise OSError('no space left on device')
    monkeypatch.setattr(ndutils.os, 'fsync', boom)
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
        with pytest.raises(ValueError, match='not a valid NDArray file') as e:
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
    with pytest.raises(ValueError, match='not a valid NDArray file'):
        nd.load(str(f))


# --- what a file may make a load allocate (d2lmini.limits) -------------------------------
def _legacy_npz(path, arrays, compression=zipfile.ZIP_DEFLATED):
    meta = {'format': 'd2lmini-ndarray', 'version': 1, 'kind': 'list', 'keys': None,
            'count': len(arrays)}
    with zipfile.ZipFile(path, 'w', compression) as z:
        z.writestr('__d2lmini__.json', json.dumps(meta))
        for i, a in enumerate(arrays):
            z.writestr(f'arr_{i}.npy', _npy(a))


def test_npz_bomb_is_refused_before_inflating(tmp_path, monkeypatch):
    """A small legacy .npz that inflates past the load limit is refused from
    its headers: the error names the file, the declared size, the limit and
    how to raise it, and the load allocated next to nothing."""
    import tracemalloc
    f = tmp_path / 'bomb.params'
    _legacy_npz(f, [np.zeros(5_000_000, np.float32)] * 2)     # 2 x 20 MB of zeros
    assert f.stat().st_size < 100_000
    monkeypatch.setenv('D2LMINI_MAX_LOAD_BYTES', '1M')
    tracemalloc.start()
    try:
        with pytest.raises(mx.limits.LoadLimitError) as e:
            nd.load(str(f))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak                             # not 20 MB, not 40 MB
    msg = str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, mx.MXNetError)
    assert str(f) in msg and 'its 2 arrays' in msg
    assert '40,000,256 bytes' in msg and '1,048,576 bytes' in msg
    assert 'D2LMINI_MAX_LOAD_BYTES=1G' in msg
    monkeypatch.setenv('D2LMINI_MAX_LOAD_BYTES', '1G')        # raised: it loads
    back = nd.load(str(f))
    assert [b.shape for b in back] == [(5_000_000,)] * 2


def test_npz_limit_defaults_to_the_module_constant(tmp_path, monkeypatch):
    f = tmp_path / 'x.params'
    _legacy_npz(f, [np.zeros(1000, np.float32)])
    monkeypatch.delenv('D2LMINI_MAX_LOAD_BYTES', raising=False)
    monkeypatch.setattr(mx.limits, 'MAX_LOAD_BYTES', 1000)
    with pytest.raises(mx.limits.LoadLimitError, match='4,128 bytes'):
        nd.load(str(f))
    monkeypatch.setattr(mx.limits, 'MAX_LOAD_BYTES', 4 << 30)
    assert nd.load(str(f))[0].shape == (1000,)


def test_npz_header_that_disagrees_with_the_member_is_refused(tmp_path):
    # An .npy header declaring 10**12 float64 in front of 16 bytes: refused
    # from the header, without reading (or allocating) the declared size.
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {'descr': '<f8', 'fortran_order': False, 'shape': (10 ** 12,)})
    meta = {'format': 'd2lmini-ndarray', 'version': 1, 'kind': 'list', 'keys': None,
            'count': 1}
    f = tmp_path / 'liar.params'
    with zipfile.ZipFile(f, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('__d2lmini__.json', json.dumps(meta))
        z.writestr('arr_0.npy', header.getvalue() + b'\0' * 16)
    with pytest.raises(ndutils.NDArrayFileError,
                       match=r'not a valid NDArray file: arr_0.npy: its header '
                             r'declares shape \(1000000000000,\) of float64, '
                             r'8,000,000,000,000 bytes, but the member holds 16'):
        nd.load(str(f))


def _params_header(shape, flag=0):
    return (struct.pack('<QQQ', ndutils.LIST_MAGIC, 0, 1)
            + struct.pack('<Iii', ndutils.V2_MAGIC, 0, len(shape))
            + struct.pack(f'<{len(shape)}q', *shape)
            + struct.pack('<iii', 1, 0, flag))


@pytest.mark.parametrize('shape, declared', [
    ((1_000_000, 1_000_000), '4,000,000,000,000 bytes'),
    ((1 << 62, 8), '147,573,952,589,676,412,928 bytes'),     # past int64: exact
], ids=['huge', 'int64-overflow'])
def test_params_declaring_more_than_the_file_holds(tmp_path, shape, declared):
    f = tmp_path / 'huge.params'
    f.write_bytes(_params_header(shape) + b'\0' * 16 + struct.pack('<Q', 0))
    with pytest.raises(ndutils.NDArrayFileError) as e:
        nd.load(str(f))
    msg = str(e.value)
    assert str(f) in msg and f'declares shape {shape} of float32' in msg
    assert declared in msg and 'only 24 bytes are left in the file' in msg

