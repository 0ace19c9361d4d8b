"""mx.recordio and im2rec: MXNet 1.9.1's RecordIO bytes, both ways.

The oracle is ``tests/fixtures/recordio`` (written by MXNet 1.9.1 itself,
see ``make_mx191_recordio.py`` there): its records are read back, and
writing the same records here gives the same bytes.
"""
import os
import pickle
import random
import struct
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import d2lmini as mx
from d2lmini import recordio
from d2lmini.recordio import IRHeader, RecordIOError
from d2lmini.tools import im2rec

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'recordio')
MAGIC = struct.pack('<I', 0xced7230a)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fixture(name):
    return os.path.join(FIXTURES, name)


@pytest.fixture(scope='module')
def mx191():
    z = np.load(fixture('mx191_recordio.npz'))
    payloads, ends = z['payloads'].tobytes(), np.cumsum(z['lengths'])
    records = [payloads[e - n:e] for e, n in zip(ends, z['lengths'])]
    return records, z['pixels']


# --- the format ------------------------------------------------------------------

def test_reads_mxnet_records(mx191):
    records, _ = mx191
    rec = recordio.MXIndexedRecordIO(fixture('mx191_records.idx'),
                                     fixture('mx191_records.rec'), 'r')
    assert rec.keys == list(range(len(records)))
    assert [rec.read() for _ in records] == records
    assert rec.read() is None                           # the end
    assert [rec.read_idx(k) for k in reversed(rec.keys)] == records[::-1]
    rec.close()
    assert recordio._offsets(fixture('mx191_records.rec')) == \
        [rec.idx[k] for k in rec.keys]


@pytest.mark.parametrize('indexed', [True, False])
def test_writes_mxnet_bytes(tmp_path, mx191, indexed):
    records, _ = mx191
    path = str(tmp_path / 'a.rec')
    rec = recordio.MXIndexedRecordIO(str(tmp_path / 'a.idx'), path, 'w') \
        if indexed else recordio.MXRecordIO(path, 'w')
    for i, r in enumerate(records):
        rec.write_idx(i, r) if indexed else rec.write(r)
    rec.close()
    with open(path, 'rb') as f, open(fixture('mx191_records.rec'), 'rb') as g:
        assert f.read() == g.read()
    if indexed:
        with open(tmp_path / 'a.idx') as f, open(fixture('mx191_records.idx')) as g:
            assert f.read() == g.read()


def test_round_trip_random_records(tmp_path):
    """Payloads full of magic words, aligned and not, come back whole; the
    file holds the magic only at piece boundaries (what readers scan for)."""
    rng = random.Random(0)
    records = []
    for _ in range(150):
        parts = [rng.choice([MAGIC, b'x', b'yz', bytes(rng.randrange(9))])
                 for _ in range(rng.randrange(8))]
        records.append(b''.join(parts))
    path = str(tmp_path / 'r.rec')
    with recordio.MXRecordIO(path, 'w') as rec:
        offsets = []
        for r in records:
            offsets.append(rec.tell())
            rec.write(r)
    data = open(path, 'rb').read()
    assert len(data) % 4 == 0
    rec = recordio.MXRecordIO(path, 'r')
    assert [rec.read() for _ in records] == records and rec.read() is None
    assert recordio._offsets(path) == offsets
    heads, pos = [], 0                  # walk the pieces as a reader does
    while pos < len(data):
        heads.append(pos)
        n = struct.unpack('<I', data[pos + 4:pos + 8])[0] & ((1 << 29) - 1)
        pos += 8 + (n + 3) // 4 * 4
    aligned = [i for i in range(0, len(data), 4) if data[i:i + 4] == MAGIC]
    assert aligned == heads


def test_pack_and_unpack_as_mxnet(mx191):
    records, _ = mx191
    cases = [(IRHeader(0, 3.0, 7, 0), b'payload'), (IRHeader(5, 2.5, 8, 9), b'xyz'),
             (IRHeader(0, [1, 2.5, -3], 9, 0), MAGIC + b'img')]
    for (header, payload), record in zip(cases, records[-3:]):
        assert recordio.pack(header, payload) == record         # MXNet's bytes
    h, s = recordio.unpack(records[-2])
    assert h == IRHeader(0, 2.5, 8, 9) and s == b'xyz'          # flag reset
    h, s = recordio.unpack(records[-1])
    assert h.flag == 3 and h.id == 9 and s == MAGIC + b'img'
    np.testing.assert_array_equal(h.label, np.float32([1, 2.5, -3]))


def test_unpack_img_of_mxnet_images(mx191):
    _, pixels = mx191
    rec = recordio.MXIndexedRecordIO(fixture('mx191_images.idx'),
                                     fixture('mx191_images.rec'), 'r')
    for i in rec.keys:
        header, img = recordio.unpack_img(rec.read_idx(i), iscolor=1)
        assert header == IRHeader(0, float(i), i, 0)
        np.testing.assert_array_equal(img[:, :, ::-1], pixels[i])   # BGR
    _, gray = recordio.unpack_img(rec.read_idx(5))               # as stored
    np.testing.assert_array_equal(gray, pixels[5, :, :, 0])
    rec.close()


def test_pack_img_round_trip():
    rng = np.random.default_rng(0)
    bgr = rng.integers(0, 256, (6, 7, 3), dtype=np.uint8)
    h = IRHeader(0, 1.0, 3, 0)
    for img, iscolor in [(bgr, 1), (bgr[:, :, 0], 0), (bgr[:, :, :1], 0)]:
        header, back = recordio.unpack_img(recordio.pack_img(h, img, 9, '.png'), iscolor)
        assert header == h
        np.testing.assert_array_equal(back, img.reshape(back.shape))
    bgra = rng.integers(0, 256, (6, 7, 4), dtype=np.uint8)
    _, back = recordio.unpack_img(recordio.pack_img(h, bgra, img_fmt='.png'))
    np.testing.assert_array_equal(back, bgra)
    smooth = np.broadcast_to(np.arange(0, 160, 10, dtype=np.uint8)[:, None, None],
                             (16, 16, 3)).copy()
    record = recordio.pack_img(IRHeader(0, [1, 2], 4, 0), mx.nd.array(smooth, dtype='uint8'))
    header, back = recordio.unpack_img(record)
    assert recordio.unpack(record)[1][:2] == b'\xff\xd8'        # a JPEG
    assert header.flag == 2 and np.abs(back.astype(int) - smooth).mean() < 2
    with pytest.raises(ValueError, match='uint8'):
        recordio.pack_img(h, bgr.astype(np.float32))
    with pytest.raises(ValueError, match='img_fmt'):
        recordio.pack_img(h, bgr, img_fmt='.xyz')


# --- the API ---------------------------------------------------------------------

def test_indexed_keys_tell_and_reset(tmp_path):
    idx, path = str(tmp_path / 'k.idx'), str(tmp_path / 'k.rec')
    rec = recordio.MXIndexedRecordIO(idx, path, 'w', key_type=str)
    assert rec.tell() == 0
    for key in ['b', 'a', 'c']:
        rec.write_idx(key, key.encode() * 5)
    assert rec.idx == {'b': 0, 'a': 16, 'c': 32} and rec.tell() == 48
    rec.close()
    rec.close()                                     # twice: nothing
    rec = recordio.MXIndexedRecordIO(idx, path, 'r', key_type=str)
    assert rec.keys == ['b', 'a', 'c'] and rec.read_idx('a') == b'aaaaa'
    assert rec.read() == b'ccccc'                   # goes on from there
    rec.reset()
    assert rec.read() == b'bbbbb'
    with pytest.raises(KeyError, match="'z' is not a key of .*k.idx"):
        rec.read_idx('z')
    with pytest.raises(ValueError, match="opened with flag 'r', cannot write"):
        rec.write(b'x')
    rec.close()
    with pytest.raises(ValueError, match='closed'):
        rec.read()


def test_pickle_and_processes(tmp_path):
    path = str(tmp_path / 'p.rec')
    writer = recordio.MXIndexedRecordIO(str(tmp_path / 'p.idx'), path, 'w')
    for i in range(3):
        writer.write_idx(i, b'r%d' % i)
    with pytest.raises(TypeError, match='close it first'):
        pickle.dumps(writer)                        # its copy would truncate
    writer.close()
    assert pickle.loads(pickle.dumps(writer)).is_open is False
    reader = recordio.MXIndexedRecordIO(str(tmp_path / 'p.idx'), path, 'r')
    assert reader.read() == b'r0'
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.read() == b'r0' and reader.read() == b'r1'    # both open
    copy.pid = -1                                   # as if forked
    with pytest.raises(RuntimeError, match='multiple processes'):
        copy.read()
    assert copy.read_idx(2) == b'r2'                # seek reopens, as MXNet


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="Invalid flag 'a'"):
        recordio.MXRecordIO(str(tmp_path / 'x.rec'), 'a')
    rec = recordio.MXRecordIO(str(tmp_path / 'x.rec'), 'w')
    with pytest.raises(TypeError, match='encode the str first'):
        rec.write('text')
    rec.close()
    with pytest.raises(FileNotFoundError):
        recordio.MXIndexedRecordIO(str(tmp_path / 'none.idx'),
                                   str(tmp_path / 'x.rec'), 'r')


# --- damaged files ---------------------------------------------------------------

def _write(path, records):
    with recordio.MXRecordIO(str(path), 'w') as rec:
        for r in records:
            rec.write(r)
    return open(path, 'rb').read()


@pytest.mark.parametrize('cut, where, what', [
    (3, 0, 'header needs 8 bytes'),
    (12, 0, 'declares 5 bytes, 4 follow'),
    (20, 16, 'header needs 8 bytes'),
    (28, 28, 'the file has 0 left'),       # the split record's last piece lost
    (36, 28, 'declares 4 bytes, 0 follow'),
])
def test_truncated_file(tmp_path, cut, where, what):
    path = tmp_path / 't.rec'
    data = _write(path, [b'hello', b'abcd' + MAGIC + b'efgh'])
    path.write_bytes(data[:cut])
    rec = recordio.MXRecordIO(str(path), 'r')
    with pytest.raises(RecordIOError, match=f't.rec: truncated at byte {where}: .*{what}'):
        while rec.read() is not None:
            pass
    with pytest.raises(RecordIOError, match=f'truncated at byte {where}'):
        recordio._offsets(str(path))


def test_garbage_and_wrong_offsets(tmp_path):
    path = tmp_path / 'g.rec'
    path.write_bytes(b'GIF89a, not a record file')
    with pytest.raises(RecordIOError, match=r'g.rec: no record at byte 0: .*found 0x'):
        recordio.MXRecordIO(str(path), 'r').read()
    data = _write(path, [b'abcd', b'abcd' + MAGIC + b'efgh'])
    path.write_bytes(data[:12] + b'XXXX' + data[16:])
    rec = recordio.MXRecordIO(str(path), 'r')
    assert rec.read() == b'abcd'
    with pytest.raises(RecordIOError, match='no record at byte 12'):
        rec.read()
    path.write_bytes(data)                 # a reader sent into a split record
    with open(path, 'rb') as f:
        f.seek(24)
        with pytest.raises(RecordIOError, match=r'byte 24: continuation flag 3 '
                                                r'where 0 or 1 \(a record starts\)'):
            recordio._read_record(f, str(path))
    with pytest.raises(RecordIOError, match='shorter than the 24-byte IRHeader'):
        recordio.unpack(b'short')
    with pytest.raises(RecordIOError, match='announces 4 labels'):
        recordio.unpack(struct.pack('<IfQQ', 4, 0, 0, 0) + b'abc')


def test_malformed_index(tmp_path):
    _write(tmp_path / 'i.rec', [b'a', b'b'])
    (tmp_path / 'i.idx').write_text('0\t0\n\n1\tsixteen\n')
    with pytest.raises(RecordIOError, match=r"i.idx: line 3 \(byte 5\): expected "
                                            r"'key<TAB>offset', got b'1\\tsixteen\\n'"):
        recordio.MXIndexedRecordIO(str(tmp_path / 'i.idx'), str(tmp_path / 'i.rec'), 'r')
    (tmp_path / 'i.idx').write_text('0\t0\n1\t4\n')         # 4: inside record 0
    rec = recordio.MXIndexedRecordIO(str(tmp_path / 'i.idx'), str(tmp_path / 'i.rec'), 'r')
    with pytest.raises(RecordIOError, match='i.rec: no record at byte 4'):
        rec.read_idx(1)


# --- im2rec ----------------------------------------------------------------------

@pytest.fixture
def image_folder(tmp_path):
    """pets/{cat,dog}/: three images each, PNG and JPEG, sizes 6..8 x 10."""
    rng = np.random.default_rng(0)
    root = tmp_path / 'pets'
    for label, kind in enumerate(['cat', 'dog']):
        (root / kind).mkdir(parents=True)
        for i in range(3):
            img = rng.integers(0, 256, (6 + i, 10, 3), dtype=np.uint8)
            Image.fromarray(img).save(root / kind / f'{i}.{"png" if i % 2 else "jpg"}')
    (root / 'notes.txt').write_text('not an image')
    return root


def test_im2rec_list(image_folder, tmp_path, capsys):
    prefix = str(tmp_path / 'petlist')
    assert im2rec.main(['--list', '--recursive', prefix, str(image_folder)]) == 0
    assert 'cat 0\ndog 1\n' in capsys.readouterr().out
    listed = [(i, f'{kind}/{n}.{"png" if n % 2 else "jpg"}', label)
              for i, (label, kind, n) in enumerate(
                  (label, kind, n) for label, kind in enumerate(['cat', 'dog'])
                  for n in range(3))]
    random.seed(100)                                  # MXNet's shuffle
    random.shuffle(listed)
    expect = ''.join(f'{i}\t{label:f}\t{path}\n' for i, path, label in listed)
    assert open(prefix + '.lst').read() == expect
    assert im2rec.main(['--list', '--recursive', '--no-shuffle', '--train-ratio',
                        '0.5', '--test-ratio', '0.2', prefix, str(image_folder)]) == 0
    lines = {s: open(f'{prefix}_{s}.lst').read().splitlines()
             for s in ('train', 'val', 'test')}
    assert [len(lines[s]) for s in ('train', 'val', 'test')] == [3, 2, 1]
    assert lines['test'][0].endswith('cat/0.jpg')     # sorted: test part first
    assert im2rec.main(['--list', prefix, str(image_folder)]) == 1   # none at top
    assert 'need --recursive' in capsys.readouterr().err


def test_im2rec_pack(image_folder, tmp_path, capsys):
    prefix = str(tmp_path / 'petlist')
    im2rec.make_list(prefix, str(image_folder), recursive=True)
    items = list(im2rec.read_list(prefix + '.lst'))
    assert im2rec.main(['--pass-through', prefix, str(image_folder)]) == 0
    rec = recordio.MXIndexedRecordIO(prefix + '.idx', prefix + '.rec', 'r')
    for index, path, label in items:                   # the file, byte for byte
        header, payload = recordio.unpack(rec.read_idx(index))
        assert header == IRHeader(0, label, index, 0)
        assert payload == (image_folder / path).read_bytes()
    rec.close()
    outputs = []
    for threads in ('1', '3'):
        assert im2rec.main(['--resize', '4', '--encoding', '.png', '--num-thread',
                            threads, prefix, str(image_folder)]) == 0
        outputs.append(open(prefix + '.rec', 'rb').read())
    assert outputs[0] == outputs[1]                    # order kept with threads
    rec = recordio.MXIndexedRecordIO(prefix + '.idx', prefix + '.rec', 'r')
    assert [k for k in rec.keys] == [item[0] for item in items]
    _, img = recordio.unpack_img(rec.read_idx(items[0][0]))
    src = np.asarray(Image.open(image_folder / items[0][1]))
    assert img.shape == (4, 10 * 4 // src.shape[0], 3)  # shorter edge 4
    assert not os.path.exists(prefix + '.rec.tmp')


def test_im2rec_errors(image_folder, tmp_path, capsys):
    prefix = str(tmp_path / 'x')
    with open(prefix + '.lst', 'w') as f:
        f.write('0\t1.0\tcat/0.jpg\n1\t0.0\tnotes.txt\n2\t1.0\tmissing.png\n')
    assert im2rec.main([prefix, str(image_folder)]) == 0
    err = capsys.readouterr().err
    assert 'skipping notes.txt: ' in err and 'not an image Pillow can read' in err
    assert 'skipping missing.png: ' in err and 'No such file' in err
    assert recordio.MXIndexedRecordIO(prefix + '.idx', prefix + '.rec', 'r').keys == [0]
    with open(prefix + '.lst', 'a') as f:
        f.write('3\tcat/1.png\n')
    assert im2rec.main([prefix, str(image_folder)]) == 1
    assert "x.lst, line 4: expected 'index<TAB>label(s)<TAB>path'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        im2rec.main([str(tmp_path / 'nothing'), str(image_folder)])
    assert 'make one with --list first' in capsys.readouterr().err


def test_im2rec_command_line(image_folder, tmp_path):
    out = subprocess.run([sys.executable, '-m', 'd2lmini.tools.im2rec', '--list',
                          '--recursive', str(tmp_path / 'p'), str(image_folder)],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert len(open(tmp_path / 'p.lst').read().splitlines()) == 6
