"""gluon.data: datasets, samplers, DataLoader, FashionMNIST, transforms."""
import threading
import time

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd
from d2lmini.gluon import data as gdata
from d2lmini.gluon.data.vision import FashionMNIST, transforms


def _batches(loader):
    out = []
    for batch in loader:
        fields = batch if isinstance(batch, list) else [batch]
        out.append([f.asnumpy() for f in fields])
    return out


def _dataset(n=10):
    X = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int32)
    return gdata.ArrayDataset(X, y), X, y


# === datasets =========================================================================
def test_array_dataset_items():
    X = nd.arange(12).reshape((4, 3))
    y = nd.array([0, 1, 2, 3])
    ds = gdata.ArrayDataset(X, y, [10, 11, 12, 13])
    assert len(ds) == 4
    x0, y0, z0 = ds[1]
    assert isinstance(x0, nd.NDArray) and x0.shape == (3,)
    assert isinstance(y0, np.float32) and y0 == 1        # 1-d NDArray -> NumPy
    assert z0 == 11
    single = gdata.ArrayDataset(np.ones((5, 2)))
    assert single[0].shape == (2,)
    with pytest.raises(ValueError, match='same length'):
        gdata.ArrayDataset(np.ones(3), np.ones(4))


def test_transform_and_transform_first():
    ds, X, y = _dataset(4)
    t = ds.transform(lambda a, b: (a * 2, b + 1))
    np.testing.assert_array_equal(t[2][0], X[2] * 2)
    assert t[2][1] == 3
    tf = ds.transform_first(lambda a: a - 1)
    np.testing.assert_array_equal(tf[3][0], X[3] - 1)
    assert tf[3][1] == 3
    eager = ds.transform(lambda a, b: (a, b * 10), lazy=False)
    assert isinstance(eager, gdata.SimpleDataset) and eager[2][1] == 20


def test_take_shard_filter_sample():
    ds, X, y = _dataset(10)
    assert [ds.take(3)[i][1] for i in range(3)] == [0, 1, 2]
    shards = [ds.shard(3, i) for i in range(3)]
    assert [len(s) for s in shards] == [4, 3, 3]
    assert [s[0][1] for s in shards] == [0, 4, 7]
    even = ds.filter(lambda item: item[1] % 2 == 0)
    assert [even[i][1] for i in range(len(even))] == [0, 2, 4, 6, 8]
    back = ds.sample(gdata.SequentialSampler(3, start=5))
    assert [back[i][1] for i in range(3)] == [5, 6, 7]
    # Derived datasets still load batch-wise, with the right rows.
    (xb, yb), = _batches(gdata.DataLoader(even, 5))
    np.testing.assert_array_equal(yb, [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(xb, X[::2])


# === DataLoader ===========================================================================
def test_batches_are_ndarrays_of_the_right_dtype_and_shape():
    ds, X, y = _dataset(10)
    loader = gdata.DataLoader(ds, batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    xb, yb = batches[0]
    assert isinstance(xb, nd.NDArray) and isinstance(yb, nd.NDArray)
    assert xb.shape == (4, 3) and xb.dtype == np.float32
    assert yb.shape == (4,) and yb.dtype == np.int32
    assert xb.context == mx.cpu(0)
    np.testing.assert_array_equal(batches[2][0].asnumpy(), X[8:])


def test_shuffle_covers_every_sample_once_per_epoch():
    ds, X, y = _dataset(103)
    loader = gdata.DataLoader(ds, batch_size=10, shuffle=True)
    orders = []
    for _ in range(2):
        labels = np.concatenate([b[1] for b in _batches(loader)])
        assert sorted(labels.tolist()) == list(range(103))
        orders.append(labels)
        for xb, yb in _batches(loader):       # rows stay paired with labels
            np.testing.assert_array_equal(xb, X[yb])
    assert not np.array_equal(orders[0], orders[1])
    np.random.seed(7)
    a = np.concatenate([b[1] for b in _batches(loader)])
    np.random.seed(7)
    b = np.concatenate([b[1] for b in _batches(loader)])
    np.testing.assert_array_equal(a, b)                  # np.random.seed repeats


@pytest.mark.parametrize('last_batch,sizes', [
    ('keep', [4, 4, 2]), ('discard', [4, 4]), ('rollover', [4, 4])])
def test_last_batch(last_batch, sizes):
    ds, X, y = _dataset(10)
    loader = gdata.DataLoader(ds, batch_size=4, last_batch=last_batch)
    assert len(loader) == len(sizes)
    epoch1 = [b[1] for b in _batches(loader)]
    assert [len(b) for b in epoch1] == sizes
    assert np.concatenate(epoch1).tolist() == list(range(sum(sizes)))
    if last_batch == 'rollover':
        # The 2 left-over samples open the next epoch: 12 samples, 3 batches.
        assert len(loader) == 3
        epoch2 = [b[1] for b in _batches(loader)]
        assert np.concatenate(epoch2).tolist() == [8, 9] + list(range(10))
        assert len(loader) == 2


def test_workers_prefetch_and_sync_give_the_same_batches():
    ds, X, y = _dataset(50)
    trans = ds.transform_first(transforms.Cast('float64'))
    ref = _batches(gdata.DataLoader(trans, 7, num_workers=0))
    for kw in ({'num_workers': 3}, {'num_workers': 2, 'prefetch': 1},
               {'prefetch': 0}, {'num_workers': 4, 'prefetch': 16}):
        got = _batches(gdata.DataLoader(trans, 7, **kw))
        assert len(got) == len(ref)
        for a, b in zip(ref, got):
            for fa, fb in zip(a, b):
                np.testing.assert_array_equal(fa, fb)
                assert fa.dtype == fb.dtype == (np.float64 if fa.ndim == 2
                                                else np.int32)


def test_vectorized_and_one_by_one_paths_agree():
    ds, X, y = _dataset(20)
    fast = ds.transform_first(transforms.Cast('float64'))
    slow = ds.transform_first(lambda a: a.astype('float64'))    # not batchable
    assert fast._can_batch() and not slow._can_batch()
    for a, b in zip(_batches(gdata.DataLoader(fast, 6)),
                    _batches(gdata.DataLoader(slow, 6, num_workers=2))):
        for fa, fb in zip(a, b):
            np.testing.assert_array_equal(fa, fb)
            assert fa.dtype == fb.dtype


def test_ndarray_examples_are_stacked_and_keep_their_context():
    X = nd.arange(24).reshape((6, 4))
    ds = gdata.SimpleDataset([X[i] for i in range(6)])
    (b0,), (b1,) = _batches(gdata.DataLoader(ds, 3))
    np.testing.assert_array_equal(np.concatenate([b0, b1]), X.asnumpy())
    X1 = nd.arange(6, ctx=mx.cpu(1))
    batch = next(iter(gdata.DataLoader(gdata.SimpleDataset([X1[i] for i in
                                                            range(6)]), 6)))
    assert batch.context == mx.cpu(1)


def test_samplers_and_batchify_fn():
    ds, X, y = _dataset(10)
    sampler = gdata.SequentialSampler(5, start=3)
    got = _batches(gdata.DataLoader(ds, 2, sampler=sampler))
    assert [b[1].tolist() for b in got] == [[3, 4], [5, 6], [7]]
    bs = gdata.BatchSampler(gdata.SequentialSampler(6), 4, 'keep')
    assert list(bs) == [[0, 1, 2, 3], [4, 5]]
    got = _batches(gdata.DataLoader(ds, batch_sampler=[[9, 0], [5]]))
    assert [b[1].tolist() for b in got] == [[9, 0], [5]]

    def batchify(examples):
        return nd.array([e[1] * 100 for e in examples])
    out = [b.asnumpy().tolist() for b in gdata.DataLoader(ds, 4,
                                                          batchify_fn=batchify)]
    assert out[0] == [0, 100, 200, 300]
    with pytest.raises(ValueError, match='batch_sampler'):
        gdata.DataLoader(ds, 4, batch_sampler=bs)
    with pytest.raises(ValueError, match='shuffle must not'):
        gdata.DataLoader(ds, 4, shuffle=True, sampler=sampler)
    with pytest.raises(ValueError, match='last_batch'):
        gdata.DataLoader(ds, 4, last_batch='drop')


def test_errors_in_workers_reach_the_caller():
    class Boom(transforms.Transform):
        def forward(self, x):
            raise RuntimeError('boom in a worker')
    ds, X, y = _dataset(10)
    for nw in (0, 2):
        loader = gdata.DataLoader(ds.transform_first(Boom()), 4, num_workers=nw)
        with pytest.raises(RuntimeError, match='boom in a worker'):
            list(loader)


def test_breaking_out_stops_the_background_thread():
    ds, X, y = _dataset(1000)
    before = threading.active_count()
    for nw in (0, 2):
        loader = gdata.DataLoader(ds.transform_first(transforms.Cast()), 2,
                                  num_workers=nw, prefetch=2)
        for i, _ in enumerate(loader):
            if i == 3:
                break
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before


def test_auto_reload_prepares_the_next_epoch_when_one_ends():
    """MXNet 1.9.1's auto_reload: the first epoch's shuffle is drawn at
    construction and the next one's as soon as an epoch ends."""
    ds, X, y = _dataset(12)
    np.random.seed(0)
    loader = gdata.DataLoader(ds, 4, shuffle=True, auto_reload=True)
    np.random.seed(1)                         # too late for epoch 1
    epoch1 = np.concatenate([b[1] for b in _batches(loader)])
    np.random.seed(0)
    expect = np.arange(12)
    np.random.shuffle(expect)
    np.testing.assert_array_equal(epoch1, expect)
    # Epoch 2 was drawn when epoch 1 ended (seed 1's stream, after its
    # epoch-1 draw was skipped); re-seeding now changes nothing.
    np.random.seed(2)
    epoch2 = np.concatenate([b[1] for b in _batches(loader)])
    assert sorted(epoch2.tolist()) == list(range(12))
    np.random.seed(1)
    expect2 = np.arange(12)
    np.random.shuffle(expect2)
    np.testing.assert_array_equal(epoch2, expect2)
    # Without auto_reload the order is drawn when iteration starts.
    loader = gdata.DataLoader(ds, 4, shuffle=True)
    np.random.seed(0)
    got = np.concatenate([b[1] for b in _batches(loader)])
    np.testing.assert_array_equal(got, expect)
    assert loader.auto_reload is False


def test_auto_reload_with_workers_and_examples_read_one_by_one():
    class Full(gdata.Dataset):                # MXNet's test_multi_worker
        def __len__(self):
            return 20

        def __getitem__(self, key):
            return nd.full((3,), key)
    for workers in (0, 3):
        for thread_pool in (True, False):
            for auto_reload in (True, False):
                loader = gdata.DataLoader(Full(), batch_size=1,
                                          num_workers=workers,
                                          thread_pool=thread_pool,
                                          auto_reload=auto_reload)
                for _ in range(2):
                    got = [b.asnumpy() for b in loader]
                    assert len(got) == 20
                    for i, b in enumerate(got):
                        np.testing.assert_array_equal(b, np.full((1, 3), i))


def test_pin_memory_puts_batches_on_cpu_pinned():
    ds, X, y = _dataset(6)
    for nw in (0, 2):
        for batch in gdata.DataLoader(ds, 4, pin_memory=True, num_workers=nw):
            assert [f.context for f in batch] == [mx.cpu_pinned(0)] * 2
        loader = gdata.DataLoader(ds, 4, pin_memory=True, pin_device_id=1,
                                  num_workers=nw)
        got = list(loader)
        assert [f.context for f in got[0]] == [mx.cpu_pinned(1)] * 2
        np.testing.assert_array_equal(got[1][0].asnumpy(), X[4:])
    assert mx.cpu_pinned(1) == mx.cpu(1)      # plain host memory here
    with pytest.raises(ValueError, match='timeout'):
        gdata.DataLoader(ds, 4, timeout=0)


def test_shared_and_pinned_host_contexts_are_cpu():
    assert mx.Context('cpu_shared', 0) == mx.cpu(0)
    assert mx.Context('cpu_pinned', 2) == mx.cpu(2)
    a = nd.array([1, 2], ctx=mx.Context('cpu_shared', 0))
    assert a.context == mx.cpu(0) and a.asnumpy().tolist() == [1, 2]
    with pytest.raises(ValueError, match='unknown device type'):
        mx.Context('tpu', 0)


def test_a_list_and_a_numpy_array_are_datasets():
    """As in MXNet: any indexable with a length works."""
    for nw in (0, 2):
        loader = gdata.DataLoader([([1, 2], 0), ([3, 4], 1)], batch_size=1,
                                  num_workers=nw)
        got = [(d.asnumpy().tolist(), l.asnumpy().tolist()) for d, l in loader]
        assert got == [([[1, 2]], [0]), ([[3, 4]], [1])]
    A = np.arange(20.0).reshape(10, 2)
    got = list(gdata.DataLoader(A, batch_size=4, num_workers=2))
    assert [b.shape for b in got] == [(4, 2), (4, 2), (2, 2)]
    np.testing.assert_array_equal(got[2].asnumpy(), A[8:])
    # batchify_fn may return anything, e.g. the examples themselves
    first = next(iter(gdata.DataLoader(nd.ones(5), batch_size=2,
                                       batchify_fn=lambda a: a, num_workers=1)))
    assert len(first) == 2 and float(first[0].asscalar()) == 1.0


# === FashionMNIST =======================================================================
def test_fashion_mnist(fashion_mnist_dir):
    train = FashionMNIST(root=fashion_mnist_dir, train=True)
    test = FashionMNIST(root=fashion_mnist_dir, train=False)
    assert (len(train), len(test)) == (60000, 10000)
    x, label = train[0]
    assert isinstance(x, nd.NDArray)
    assert x.shape == (28, 28, 1) and x.dtype == np.uint8
    assert isinstance(label, np.int32) and label == 9
    assert [int(test[i][1]) for i in range(3)] == [9, 2, 1]
    X, y = train[:18]
    assert X.shape == (18, 28, 28, 1) and y.dtype == np.int32 and y.shape == (18,)
    assert 0 <= int(X.asnumpy().min()) and int(X.asnumpy().max()) <= 255
    # A second dataset reuses the arrays read the first time.
    assert FashionMNIST(root=fashion_mnist_dir)._images is train._images


def test_fashion_mnist_loader(fashion_mnist_dir):
    test = FashionMNIST(root=fashion_mnist_dir, train=False)
    loader = gdata.DataLoader(test.transform_first(transforms.ToTensor()), 256,
                              num_workers=2)
    X, y = next(iter(loader))
    assert X.shape == (256, 1, 28, 28) and X.dtype == np.float32
    assert y.shape == (256,) and y.dtype == np.int32
    np.testing.assert_allclose(X.asnumpy()[5, 0], test[5][0].asnumpy()[..., 0] / 255,
                               rtol=1e-6)
    # MXNet-style constructor transform (data, label) -> (data, label).
    t = FashionMNIST(root=fashion_mnist_dir, train=False,
                     transform=lambda d, l: (d.astype('float32') / 255, l))
    Xs, ys = next(iter(gdata.DataLoader(t, 256)))
    np.testing.assert_allclose(Xs.asnumpy(), X.asnumpy().transpose(0, 2, 3, 1),
                               rtol=1e-6)
    np.testing.assert_array_equal(ys.asnumpy(), y.asnumpy())


def test_a_fashion_mnist_epoch_is_fast(fashion_mnist_dir):
    """60,000 examples in batches of 256: well under a second of loading."""
    train = FashionMNIST(root=fashion_mnist_dir, train=True)
    loader = gdata.DataLoader(train.transform_first(transforms.ToTensor()), 256,
                              shuffle=True, num_workers=2)
    for X, y in loader:                   # warm up (threads, caches)
        break
    t = time.perf_counter()
    n = sum(X.shape[0] for X, y in loader)
    elapsed = time.perf_counter() - t
    assert n == 60000
    assert elapsed < 1.0, f'an epoch of loading took {elapsed:.2f} s'


# === transforms ===========================================================================
def _bilinear_reference(img, oh, ow):
    """Per-pixel bilinear resampling at pixel centres (OpenCV INTER_LINEAR)."""
    h, w = img.shape[:2]
    out = np.zeros((oh, ow) + img.shape[2:], dtype=np.float64)
    for i in range(oh):
        sy = min(max((i + 0.5) * h / oh - 0.5, 0), h - 1)
        y0 = int(np.floor(sy))
        y1, fy = min(y0 + 1, h - 1), sy - y0
        for j in range(ow):
            sx = min(max((j + 0.5) * w / ow - 0.5, 0), w - 1)
            x0 = int(np.floor(sx))
            x1, fx = min(x0 + 1, w - 1), sx - x0
            out[i, j] = ((1 - fy) * ((1 - fx) * img[y0, x0] + fx * img[y0, x1])
                         + fy * ((1 - fx) * img[y1, x0] + fx * img[y1, x1]))
    return out


def test_to_tensor():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)
    out = transforms.ToTensor()(img)
    assert out.shape == (3, 5, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out, img.transpose(2, 0, 1).astype(np.float32) / 255)
    batch = rng.integers(0, 256, (6, 5, 4, 3), dtype=np.uint8)
    outb = transforms.ToTensor()(batch)
    assert outb.shape == (6, 3, 5, 4)
    np.testing.assert_array_equal(outb[2], transforms.ToTensor()(batch[2]))
    nd_out = transforms.ToTensor()(nd.array(img, dtype='uint8', ctx=mx.cpu(1)))
    assert isinstance(nd_out, nd.NDArray) and nd_out.context == mx.cpu(1)
    np.testing.assert_array_equal(nd_out.asnumpy(), out)
    with pytest.raises(ValueError, match='ToTensor'):
        transforms.ToTensor()(np.zeros((2, 2)))


def test_normalize():
    rng = np.random.default_rng(1)
    x = rng.random((2, 3, 4, 5)).astype(np.float32)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    out = transforms.Normalize(mean, std)(x)
    ref = (x - np.array(mean).reshape(3, 1, 1)) / np.array(std).reshape(3, 1, 1)
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    assert out.dtype == np.float32
    np.testing.assert_allclose(transforms.Normalize(0.5, 0.5)(x[0]),
                               (x[0] - 0.5) / 0.5, rtol=1e-6)
    with pytest.raises(ValueError, match='channels'):
        transforms.Normalize((0.1, 0.2), 1.0)(x)


@pytest.mark.parametrize('shape,size', [((5, 7, 1), (4, 9)), ((28, 28, 1), 56),
                                        ((6, 6, 3), 4), ((3, 8, 2), (8, 3))])
def test_resize_bilinear_matches_a_per_pixel_reference(shape, size):
    rng = np.random.default_rng(2)
    img = rng.random(shape).astype(np.float32) * 255
    oh, ow = (size, size) if isinstance(size, int) else (size[1], size[0])
    out = transforms.Resize(size)(img)
    assert out.shape == (oh, ow, shape[2]) and out.dtype == np.float32
    np.testing.assert_allclose(out, _bilinear_reference(img.astype(np.float64), oh,
                                                        ow), rtol=1e-4, atol=1e-3)
    u8 = img.astype(np.uint8)
    out8 = transforms.Resize(size)(u8)
    assert out8.dtype == np.uint8
    ref8 = np.rint(_bilinear_reference(u8.astype(np.float64), oh, ow))
    assert np.abs(out8.astype(int) - ref8).max() <= 1      # float32 rounding ties
    batch = np.stack([u8, u8[::-1]])
    np.testing.assert_array_equal(transforms.Resize(size)(batch)[1],
                                  transforms.Resize(size)(u8[::-1]))


def test_resize_against_torch():
    torch = pytest.importorskip('torch')
    rng = np.random.default_rng(3)
    img = rng.random((2, 9, 13, 3)).astype(np.float32)
    for mode, interp in (('bilinear', 1), ('nearest', 0)):
        ref = torch.nn.functional.interpolate(
            torch.tensor(img.transpose(0, 3, 1, 2)), size=(20, 6), mode=mode,
            **({'align_corners': False} if mode == 'bilinear' else {}))
        out = transforms.Resize((6, 20), interpolation=interp)(img)
        np.testing.assert_allclose(out, ref.numpy().transpose(0, 2, 3, 1),
                                   rtol=1e-5, atol=1e-6)


def test_resize_options_and_compose():
    img = np.arange(2 * 4 * 1, dtype=np.uint8).reshape(2, 4, 1)
    assert transforms.Resize(4, keep_ratio=True)(img).shape == (4, 8, 1)
    np.testing.assert_array_equal(transforms.Resize((4, 2))(img), img)
    const = np.full((3, 5, 2), 77, np.uint8)
    np.testing.assert_array_equal(transforms.Resize(11)(const), 77)
    trans = transforms.Compose([transforms.Resize(8), transforms.ToTensor(),
                                transforms.Normalize(0.5, 0.5)])
    assert trans.batchable
    x = np.random.default_rng(4).integers(0, 256, (3, 5, 5, 1), dtype=np.uint8)
    out = trans(nd.array(x, dtype='uint8'))
    assert isinstance(out, nd.NDArray) and out.shape == (3, 1, 8, 8)
    step = transforms.Normalize(0.5, 0.5)(transforms.ToTensor()(
        transforms.Resize(8)(x)))
    np.testing.assert_array_equal(out.asnumpy(), step)
    mixed = transforms.Compose([transforms.ToTensor(), lambda t: t * 2])
    assert not mixed.batchable
    np.testing.assert_allclose(mixed(x[0]), transforms.ToTensor()(x[0]) * 2)


def test_filter_sampler_and_mp_batchify():
    ds = gdata.SimpleDataset(list(range(10)))
    sampler = gdata.FilterSampler(lambda x: x % 3 == 0, ds)
    assert list(sampler) == [0, 3, 6, 9] and len(sampler) == 4
    got = [b.asnumpy().tolist() for b in gdata.DataLoader(ds, 3, sampler=sampler)]
    assert got == [[0, 3, 6], [9]]
    rows = [nd.ones((2,), ctx=mx.cpu(1)) * i for i in range(3)]
    batch = gdata.default_mp_batchify_fn(rows)
    assert batch.context == mx.cpu(0) and batch.shape == (3, 2)
    np.testing.assert_array_equal(batch.asnumpy()[:, 0], [0, 1, 2])
    assert gdata.default_batchify_fn(rows).context == mx.cpu(1)
    X, y = gdata.default_mp_batchify_fn([(np.ones(2), 1), (np.zeros(2), 0)])
    assert X.shape == (2, 2) and y.asnumpy().tolist() == [1, 0]
