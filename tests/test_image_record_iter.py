"""mx.io.ImageRecordIter: MXNet 1.9.1's batches, shards, pads and threads.

Oracles: what MXNet 1.9.1's own ImageRecordIter gave for the images of
``tests/fixtures/recordio`` (``make_mx191_recordio.py`` there), and a model
of the crops and of the sharding (every record once across the parts).
"""
import json
import os

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import recordio
from d2lmini.gluon.data.dataset import part_range
from d2lmini.recordio import IRHeader, RecordIOError

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'recordio')
MX_SETTINGS = ['norm', 'gray', 'resize', 'upscale']   # see the fixture's settings


def write_rec(path, images, labels=None, index=True):
    """A .rec (and .idx) of PNGs of ``images`` (RGB), ids 0.., labels."""
    rec = recordio.MXIndexedRecordIO(str(path) + '.idx', str(path) + '.rec', 'w')
    for i, img in enumerate(images):
        label = float(i) if labels is None else labels[i]
        rec.write_idx(i, recordio.pack_img(IRHeader(0, label, i, 0),
                                           img[:, :, ::-1], img_fmt='.png'))
    rec.close()
    if not index:
        os.remove(str(path) + '.idx')
    return str(path) + '.rec'


def epochs(it, n):
    """``[(ids, labels, pads, data) per epoch]``, pads' slots dropped from ids."""
    out = []
    for _ in range(n):
        ids, labels, pads, data = [], [], [], []
        for batch in it:
            keep = len(batch.index) - batch.pad
            ids += list(batch.index[:keep])
            labels.append(batch.label[0].asnumpy())
            pads.append(batch.pad)
            data.append(batch.data[0].asnumpy())
        it.reset()
        out.append((ids, np.concatenate(labels), pads, np.concatenate(data)))
    return out


@pytest.mark.parametrize('name', MX_SETTINGS)
def test_matches_mxnet(name):
    """Same data (resizes: within one level, OpenCV's fixed point), labels
    and pads over two epochs (round_batch goes on after the pad)."""
    z = np.load(os.path.join(FIXTURES, 'mx191_recordio.npz'))
    kwargs = json.loads(str(z['settings']))[name]
    it = mx.io.ImageRecordIter(path_imgrec=os.path.join(FIXTURES, 'mx191_images.rec'),
                               batch_size=4, preprocess_threads=2, **kwargs)
    (ids0, labels0, pads0, data), (ids1, labels1, pads1, _) = epochs(it, 2)
    np.testing.assert_array_equal(np.concatenate([labels0, labels1]), z[name + '_label'])
    assert pads0 + pads1 == list(z[name + '_pad'])
    assert ids0 == list(range(6)) and ids1 == [2, 3, 4, 5]
    want = z[name + '_data'].astype(np.float32)
    if name == 'norm':
        np.testing.assert_allclose(data[:6], want, rtol=1e-6)
    else:
        np.testing.assert_allclose(data[:6], want, atol=1)


def test_batches_and_descriptions(tmp_path):
    rng = np.random.default_rng(0)
    path = write_rec(tmp_path / 'a', rng.integers(0, 256, (5, 4, 6, 3), dtype=np.uint8))
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=2,
                               dtype='uint8', data_name='x', label_name='y')
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == [('x', (2, 3, 4, 4), np.uint8)]
    assert [(d.name, d.shape) for d in it.provide_label] == [('y', (2,))]
    assert it.iter_next()
    assert isinstance(it.getdata(), mx.nd.NDArray) and it.getdata().dtype == np.uint8
    np.testing.assert_array_equal(it.getlabel().asnumpy(), [0, 1])
    assert it.getpad() == 0 and list(it.getindex()) == [0, 1]
    batch = it.next()
    assert isinstance(batch, mx.io.DataBatch) and batch.provide_data == it.provide_data
    it.close()


def test_crops_and_mirrors(tmp_path):
    """Every output is a window of the image (pixel values encode x, y),
    mirrored or not; rand_crop moves it, rand_mirror flips about half."""
    y, x = np.mgrid[0:12, 0:16]
    img = np.stack([x * 10, y * 10, np.full_like(x, 7)], -1).astype(np.uint8)
    path = write_rec(tmp_path / 'c', [img] * 40)
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 5, 6), batch_size=40,
                               rand_crop=True, rand_mirror=True, mean_b=7, seed=3)
    data = it.next().data[0].asnumpy()
    corners, mirrored = set(), 0
    for d in data:
        xs, ys = d[0, 0] / 10, d[1, :, 0] / 10
        assert (d[2] == 0).all() and (np.diff(ys) == 1).all()
        step = np.diff(xs)
        assert (step == 1).all() or (step == -1).all()
        mirrored += step[0] < 0
        corners.add((int(ys[0]), int(xs.min())))
    assert 10 <= mirrored <= 30 and len(corners) > 10
    centred = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 5, 6), batch_size=1)
    d = centred.next().data[0].asnumpy()[0]
    assert d[1, 0, 0] == 30 and d[0, 0, 0] == 50           # y0 = 3, x0 = 5


def test_threads_and_seeds_repeat(tmp_path):
    rng = np.random.default_rng(1)
    path = write_rec(tmp_path / 't', rng.integers(0, 256, (11, 6, 7, 3), dtype=np.uint8))
    kwargs = dict(path_imgrec=path, data_shape=(3, 4, 4), batch_size=3, shuffle=True,
                  rand_crop=True, rand_mirror=True, seed=5)
    runs = [epochs(mx.io.ImageRecordIter(preprocess_threads=n, **kwargs), 2)
            for n in (1, 3)]
    for (ids_a, _, _, data_a), (ids_b, _, _, data_b) in zip(*runs):
        assert ids_a == ids_b
        np.testing.assert_array_equal(data_a, data_b)
    (first, *_), (second, *_) = runs[0]
    assert sorted(first) == list(range(11)) and first != list(range(11))
    assert first != second[:len(first)]                     # reshuffled
    other = epochs(mx.io.ImageRecordIter(**dict(kwargs, seed=6)), 1)[0][0]
    assert other != first


def test_round_batch(tmp_path):
    path = write_rec(tmp_path / 'r', np.zeros((6, 4, 4, 3), np.uint8))
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=4,
                               mean_r=1)
    got = []
    for _ in range(3):
        got.append([list(b.index) for b in it])
        it.reset()
    assert got == [[[0, 1, 2, 3], [4, 5, 0, 1]], [[2, 3, 4, 5]],
                   [[0, 1, 2, 3], [4, 5, 0, 1]]]
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=4,
                               mean_r=1, round_batch=False)
    for _ in range(2):
        batches = list(it)
        it.reset()
        assert [b.pad for b in batches] == [0, 2]
        assert list(batches[1].index) == [4, 5, -1, -1]
        last = batches[1].data[0].asnumpy()
        assert (last[:2, 0] == -1).all() and (last[2:] == 0).all()
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=4)
    it.next()
    it.reset()                                    # half way: start over
    assert list(it.next().index) == [0, 1, 2, 3]
    big = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=9)
    batch = big.next()                            # more slots than records
    assert list(batch.index) == [0, 1, 2, 3, 4, 5, 0, 1, 2] and batch.pad == 3


@pytest.mark.parametrize('index', [True, False])
def test_parts_read_every_record_once(tmp_path, index):
    path = write_rec(tmp_path / 's', np.zeros((10, 2, 2, 3), np.uint8), index=index)
    idx = path[:-4] + '.idx' if index else ''
    for num_parts in range(1, 5):
        seen = []
        for part in range(num_parts):
            it = mx.io.ImageRecordIter(path_imgrec=path, path_imgidx=idx,
                                       data_shape=(3, 2, 2), batch_size=3,
                                       shuffle=True, num_parts=num_parts,
                                       part_index=part)
            ids = epochs(it, 1)[0][0]
            start, end = part_range(10, num_parts, part)
            assert sorted(ids) == list(range(start, end))    # contiguous share
            seen += ids
        assert sorted(seen) == list(range(10))
    with pytest.raises(ValueError, match='part_index must be in'):
        mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 2, 2), batch_size=1,
                              num_parts=2, part_index=2)
    with pytest.raises(ValueError, match='has 10 records, so part 11 of 12 gets none'):
        mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 2, 2), batch_size=1,
                              num_parts=12, part_index=11)


def test_label_width(tmp_path):
    labels = [np.float32([i, -i]) for i in range(3)]
    path = write_rec(tmp_path / 'l', np.zeros((3, 2, 2, 3), np.uint8), labels)
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 2, 2), batch_size=3,
                               label_width=2)
    assert it.provide_label[0].shape == (3, 2)
    np.testing.assert_array_equal(it.next().label[0].asnumpy(), labels)
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 2, 2), batch_size=3)
    with pytest.raises(ValueError, match=r'l.rec: the record at byte 0 holds 2 '
                                         r'labels but label_width is 1'):
        it.next()


def test_errors(tmp_path):
    path = write_rec(tmp_path / 'e', np.zeros((3, 2, 2, 3), np.uint8))
    with pytest.raises(TypeError, match=r"unsupported arguments \['max_rotate_angle'\]"):
        mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 2, 2), batch_size=1,
                              max_rotate_angle=10)
    with pytest.raises(ValueError, match='1 or 3 channels'):
        mx.io.ImageRecordIter(path_imgrec=path, data_shape=(4, 2, 2), batch_size=1)
    data = open(path, 'rb').read()
    offsets = recordio._offsets(path)
    open(path, 'wb').write(data[:offsets[2] + 10])           # last record cut
    with pytest.raises(RecordIOError, match=f'e.rec: truncated at byte {offsets[2]}'):
        mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 2, 2), batch_size=1)
    it = mx.io.ImageRecordIter(path_imgrec=path, path_imgidx=path[:-4] + '.idx',
                               data_shape=(3, 2, 2), batch_size=1)
    it.next(), it.next()
    with pytest.raises(RecordIOError, match=f'truncated at byte {offsets[2]}'):
        it.next()
    with pytest.raises(StopIteration):          # that batch is spent
        it.next()
    open(path, 'wb').write(data[:offsets[1]] + recordio._frame(b'no header'))
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 2, 2), batch_size=2)
    with pytest.raises(RecordIOError, match=f'record at byte {offsets[1]}: unpack: '):
        it.next()
