"""num_parts / part_index on every reader: NDArrayIter, DataLoader (with a
SplitSampler), MNISTIter and Dataset.shard cut the examples alike.

Oracle: ``np.array_split(np.arange(n), k)``, which cuts a range as MXNet's
``Dataset.shard`` does (contiguous, the first ``n % k`` parts one longer).
Every example carries its own index as its value and label, so what a
reader returns says which examples it read.
"""
import struct

import numpy as np
import pytest

import d2lmini as mx
from d2lmini.gluon import data as gdata

N = 23
PARTS = [1, 2, 3, 4, 5]


def _parts(n, k):
    return [p.tolist() for p in np.array_split(np.arange(n), k)]


def _ndarray_iter(k, i, batch_size=4, **kwargs):
    X = np.arange(N, dtype=np.float32).reshape(N, 1).repeat(3, axis=1)
    return mx.io.NDArrayIter(X, np.arange(N), batch_size=batch_size,
                             num_parts=k, part_index=i, **kwargs)


def _epoch(it):
    """[(rows, pad)] of one epoch: the example ids of each batch."""
    out = []
    for batch in it:
        rows = batch.data[0].asnumpy()[:, 0].astype(int)
        np.testing.assert_array_equal(rows, batch.label[0].asnumpy())
        out.append((rows.tolist(), batch.pad))
    return out


# === NDArrayIter ==============================================================
@pytest.mark.parametrize('k', PARTS)
@pytest.mark.parametrize('shuffle', [False, True])
def test_ndarray_iter_pad_reads_each_example_once(k, shuffle):
    seen = []
    for i, part in enumerate(_parts(N, k)):
        it = _ndarray_iter(k, i, shuffle=shuffle)
        for _ in range(2):                      # two epochs, each whole
            batches = _epoch(it)
            real = sum((rows[:len(rows) - pad] for rows, pad in batches), [])
            padding = sum((rows[len(rows) - pad:] for rows, pad in batches), [])
            assert sorted(real) == part          # its part, each once
            assert set(padding) <= set(part)     # padding from the part too
            assert len(batches) == -(-len(part) // 4)
            it.reset()
        seen += real
    assert sorted(seen) == list(range(N))


@pytest.mark.parametrize('k', PARTS)
def test_ndarray_iter_discard_and_roll_over_stay_in_the_part(k):
    for i, part in enumerate(_parts(N, k)):
        batches = _epoch(_ndarray_iter(k, i, last_batch_handle='discard'))
        assert [r for r, _ in batches] == \
            [part[j:j + 4] for j in range(0, len(part) // 4 * 4, 4)]
        it = _ndarray_iter(k, i, last_batch_handle='roll_over')
        stream = []
        for _ in range(3):
            stream += sum((rows for rows, _ in _epoch(it)), [])
            it.reset()
        # Three epochs of the part, cut into whole batches: the rows left
        # at an epoch's end open the next one.
        assert stream == (part * 3)[:len(stream)]
        assert len(stream) == 3 * len(part) // 4 * 4


def test_ndarray_iter_bad_parts():
    with pytest.raises(ValueError, match=r'part_index must be in \[0, 3\).*got 3'):
        _ndarray_iter(3, 3)
    with pytest.raises(ValueError, match='num_parts must be at least 1'):
        _ndarray_iter(0, 0)
    with pytest.raises(TypeError, match='num_parts must be an int'):
        _ndarray_iter(2.0, 0)
    with pytest.raises(ValueError, match='part 25 of 30 is empty: 23 examples'):
        _ndarray_iter(30, 25)
    # provide_data keeps the batch shape; the data is still all there.
    it = _ndarray_iter(5, 4)
    assert it.provide_data[0].shape == (4, 3) and it.num_data == 4


# === DataLoader with a SplitSampler ===========================================
def _loader(k, i, shuffle, last_batch):
    ds = gdata.ArrayDataset(np.arange(N, dtype=np.float32), np.arange(N))
    sampler = gdata.SplitSampler(N, k, i, shuffle=shuffle)
    return gdata.DataLoader(ds, batch_size=4, sampler=sampler,
                            last_batch=last_batch)


def _loader_epoch(loader):
    out = []
    for x, y in loader:
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
        out.append(y.asnumpy().tolist())
    return out


@pytest.mark.parametrize('k', PARTS)
@pytest.mark.parametrize('shuffle', [False, True])
@pytest.mark.parametrize('last_batch', ['keep', 'discard', 'rollover'])
def test_dataloader_parts(k, shuffle, last_batch):
    seen = []
    for i, part in enumerate(_parts(N, k)):
        loader = _loader(k, i, shuffle, last_batch)
        epochs = [_loader_epoch(loader) for _ in range(3)]
        stream = [sum(e, []) for e in epochs]
        assert all(len(b) == 4 for e in epochs for b in e[:-1])
        if last_batch == 'keep':
            assert all(sorted(s) == part for s in stream)
            assert len(epochs[0]) == len(loader) == -(-len(part) // 4)
        elif last_batch == 'discard':
            for s in stream:
                assert len(s) == len(part) // 4 * 4 == len(set(s))
                assert set(s) <= set(part)
        else:                                    # the rest opens the next epoch
            total = sum(stream, [])
            assert len(total) == 3 * len(part) // 4 * 4
            counts = np.bincount(total, minlength=N)
            assert set(np.flatnonzero(counts)) <= set(part)
            assert counts.max() - counts[part].min() <= 1
        if shuffle and len(part) > 4:
            assert stream[0] != stream[1] or stream[1] != stream[2]
        seen += sorted(stream[0]) if last_batch == 'keep' else part
    assert sorted(seen) == list(range(N))


# === MNISTIter ================================================================
def _idx_files(folder, n, rows=2, cols=3):
    """IDX files whose image i holds the value i in every pixel."""
    images = np.arange(n, dtype=np.uint8).repeat(rows * cols)
    (folder / 'img').write_bytes(struct.pack('>IIII', 2051, n, rows, cols)
                                 + images.tobytes())
    (folder / 'lab').write_bytes(struct.pack('>II', 2049, n)
                                 + np.arange(n, dtype=np.uint8).tobytes())
    return str(folder / 'img'), str(folder / 'lab')


@pytest.mark.parametrize('k', PARTS)
@pytest.mark.parametrize('shuffle', [False, True])
def test_mnist_iter_parts(tmp_path, k, shuffle):
    image, label = _idx_files(tmp_path, N)
    seen = []
    for i, part in enumerate(_parts(N, k)):
        it = mx.io.MNISTIter(image=image, label=label, batch_size=1,
                             shuffle=shuffle, num_parts=k, part_index=i,
                             silent=True)
        rows = []
        for batch in it:
            x, y = batch.data[0].asnumpy(), batch.label[0].asnumpy()
            np.testing.assert_array_equal(x * 256, y.reshape(-1, 1, 1, 1)
                                          * np.ones((1, 1, 2, 3)))
            rows += y.astype(int).tolist()
        assert sorted(rows) == part
        if not shuffle:
            assert rows == part
        seen += rows
    assert sorted(seen) == list(range(N))


def test_all_readers_cut_alike(tmp_path):
    image, label = _idx_files(tmp_path, N)
    ds = gdata.SimpleDataset(np.arange(N))
    for k in PARTS:
        for i, part in enumerate(_parts(N, k)):
            ndarray_iter = _epoch(_ndarray_iter(k, i, batch_size=1))
            mnist = [int(b.label[0].asscalar()) for b in mx.io.MNISTIter(
                image=image, label=label, batch_size=1, shuffle=False,
                num_parts=k, part_index=i, silent=True)]
            assert [r[0][0] for r in ndarray_iter] == part
            assert mnist == part
            assert list(gdata.SplitSampler(N, k, i)) == part
            assert list(ds.shard(k, i)) == part
