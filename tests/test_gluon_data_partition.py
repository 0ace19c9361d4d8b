"""Data partitioned per worker: Dataset.shard, SplitSampler, and the d2l
loader's num_parts / part_index.

Oracle for the part sizes: ``np.array_split``, which cuts a range exactly as
MXNet's ``Dataset.shard`` does (the first ``n % k`` parts one longer).
"""
import numpy as np
import pytest

from d2lmini import d2l, gluon
from d2lmini.gluon import data as gdata

SIZES = [(10, 1), (10, 3), (10, 4), (12, 4), (3, 5), (0, 2), (60000, 7)]


def _reference(n, k):
    return [p.tolist() for p in np.array_split(np.arange(n), k)]


def _labels(dataset):
    return [int(dataset[i][1]) for i in range(len(dataset))]


@pytest.mark.parametrize('n,k', SIZES)
def test_shard_is_mxnets_split(n, k):
    ds = gdata.ArrayDataset(np.zeros((n, 2), np.float32),
                            np.arange(n, dtype=np.int32))
    shards = [ds.shard(k, i) for i in range(k)]
    assert [_labels(s) for s in shards] == _reference(n, k)
    # Disjoint and covering: every index exactly once.
    assert sorted(sum((_labels(s) for s in shards), [])) == list(range(n))


@pytest.mark.parametrize('n,k', SIZES)
def test_split_sampler_parts(n, k):
    parts = [list(gdata.SplitSampler(n, k, i)) for i in range(k)]
    assert parts == _reference(n, k)
    assert [len(gdata.SplitSampler(n, k, i)) for i in range(k)] == \
        [len(p) for p in parts]


@pytest.mark.parametrize('n,k', SIZES)
def test_split_sampler_even_parts(n, k):
    """even=True: MXNet's example SplitSampler, n // k each, rest unused."""
    size = n // k
    parts = [list(gdata.SplitSampler(n, k, i, even=True)) for i in range(k)]
    assert parts == [list(range(i * size, (i + 1) * size)) for i in range(k)]
    assert {len(p) for p in parts} == {size}
    assert n - sum(map(len, parts)) == n % k


def test_split_sampler_shuffles_inside_its_part():
    sampler = gdata.SplitSampler(100, 3, 1, shuffle=True, seed=7)
    part = list(range(34, 67))
    epochs = [list(sampler) for _ in range(3)]
    for e in epochs:
        assert sorted(e) == part
    assert epochs[0] != part and epochs[0] != epochs[1]       # reordered
    # The same seed gives the same sequence of epochs.
    again = gdata.SplitSampler(100, 3, 1, shuffle=True, seed=7)
    assert [list(again) for _ in range(3)] == epochs
    # seed=None draws from np.random, as RandomSampler does.
    np.random.seed(3)
    a = list(gdata.SplitSampler(100, 3, 1, shuffle=True))
    np.random.seed(3)
    assert list(gdata.SplitSampler(100, 3, 1, shuffle=True)) == a


def test_split_sampler_in_a_dataloader():
    X = np.arange(40, dtype=np.float32).reshape(20, 2)
    y = np.arange(20, dtype=np.int32)
    ds = gdata.ArrayDataset(X, y)
    got = []
    for rank in range(3):
        loader = gdata.DataLoader(
            ds, batch_size=4, sampler=gdata.SplitSampler(20, 3, rank,
                                                         shuffle=True, seed=0))
        labels = np.concatenate([yb.asnumpy() for _, yb in loader])
        feats = np.concatenate([xb.asnumpy() for xb, _ in loader])
        got.append(sorted(labels.tolist()))
        np.testing.assert_array_equal(np.sort(feats[:, 0]), X[sorted(labels), 0])
    assert got == _reference(20, 3)


@pytest.mark.parametrize('make', [
    lambda n, i: gdata.SplitSampler(10, n, i),
    lambda n, i: gdata.SplitSampler(10, n, i, even=True),
    lambda n, i: gdata.SimpleDataset(list(range(10))).shard(n, i),
], ids=['SplitSampler', 'even', 'shard'])
def test_bad_part_arguments(make):
    with pytest.raises(ValueError, match=r'must be in \[0, 3\).*got 3'):
        make(3, 3)
    with pytest.raises(ValueError, match=r'got -1'):
        make(3, -1)
    with pytest.raises(ValueError, match='at least 1, got 0'):
        make(0, 0)
    with pytest.raises(TypeError, match='must be an int'):
        make(2.0, 0)
    with pytest.raises(TypeError, match='must be an int'):
        make(2, '0')


def test_shard_error_names_its_own_arguments():
    with pytest.raises(ValueError, match='index must be in'):
        gdata.SimpleDataset([1, 2]).shard(2, 2)
    with pytest.raises(ValueError, match='num_shards must be at least 1'):
        gdata.SimpleDataset([1, 2]).shard(0, 0)


def test_samplers_where_mxnet_code_finds_them():
    assert gluon.data.sampler.SplitSampler is gdata.SplitSampler

    class Evens(gluon.data.sampler.Sampler):      # as classic examples do
        def __iter__(self):
            return iter(range(0, 10, 2))

        def __len__(self):
            return 5

    loader = gdata.DataLoader(gdata.SimpleDataset(np.arange(10.)), 5,
                              sampler=Evens())
    np.testing.assert_array_equal(next(iter(loader)).asnumpy(),
                                  [0, 2, 4, 6, 8])


# === the d2l loader on the real data ==========================================
def _rows(images):
    """The multiset of images, as sorted byte strings (order-free compare)."""
    flat = np.ascontiguousarray(images.reshape(len(images), -1))
    return np.sort(flat.view(np.dtype((np.void, flat.shape[1]))).ravel())


def _read_all(loader):
    X, y = [], []
    for xb, yb in loader:
        X.append(np.rint(xb.asnumpy() * 255).astype(np.uint8))
        y.append(yb.asnumpy())
    return np.concatenate(X), np.concatenate(y)


def test_d2l_loader_gives_each_worker_its_part(fashion_mnist_dir):
    root = str(fashion_mnist_dir)
    train = gdata.vision.FashionMNIST(root=root, train=True)
    images, labels = train[:len(train)]
    images = images.asnumpy().reshape(len(train), 28, 28)
    seen = []
    for rank in range(2):
        train_iter, test_iter = d2l.load_data_fashion_mnist(
            1000, root=root, num_parts=2, part_index=rank)
        assert len(train_iter) == 30
        X, y = _read_all(train_iter)
        assert X.shape == (30000, 1, 28, 28) and y.dtype == np.int32
        lo, hi = rank * 30000, (rank + 1) * 30000
        # Exactly this worker's contiguous half, in a shuffled order.
        assert np.array_equal(_rows(X[:, 0]), _rows(images[lo:hi]))
        np.testing.assert_array_equal(np.sort(y), np.sort(labels[lo:hi]))
        assert not np.array_equal(y, labels[lo:hi])
        seen.append(_rows(X[:, 0]))
        # The test set is whole for every worker.
        assert sum(len(yb) for _, yb in test_iter) == 10000
    # Together the two parts are the training set.
    assert np.array_equal(np.sort(np.concatenate(seen)), _rows(images))


def test_d2l_loader_parts_run_the_same_number_of_batches(fashion_mnist_dir):
    root = str(fashion_mnist_dir)
    lens = [len(d2l.load_data_fashion_mnist(256, root=root, num_parts=7,
                                            part_index=i)[0])
            for i in range(7)]
    assert lens == [-(-(60000 // 7) // 256)] * 7
    whole, _ = d2l.load_data_fashion_mnist(256, root=root)
    assert len(whole) == -(-60000 // 256)
    with pytest.raises(ValueError, match='part_index must be in'):
        d2l.load_data_fashion_mnist(256, root=root, num_parts=2, part_index=2)
