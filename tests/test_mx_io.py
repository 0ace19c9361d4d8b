"""mx.io: DataDesc, DataBatch, NDArrayIter (every last-batch mode, against a
stream oracle), ResizeIter, PrefetchingIter (threads stopped, errors passed on)."""
import copy
import gc
import gzip
import math
import pickle
import threading

import numpy as np
import pytest

import d2lmini as mx

HANDLES = ['pad', 'discard', 'roll_over']


# ------------------------------------------------------------------ oracle

def expected_epoch(order, bs, handle, carry):
    """The batches of one epoch as (rows, pad), and the rows carried on.

    A reading of MXNet's rules independent of its cursor arithmetic:
    'pad' wraps round the epoch's order, 'discard' keeps full batches only,
    'roll_over' cuts the stream (last epoch's leftover + this epoch's order)
    into full batches, the leftover going to the next epoch, and the first
    batch's pad counts the rows it carried.
    """
    n = len(order)
    if handle == 'pad':
        return [([order[(start + j) % n] for j in range(bs)],
                 max(0, start + bs - n)) for start in range(0, n, bs)], []
    if handle == 'discard':
        return [(list(order[s:s + bs]), 0) for s in range(0, n - bs + 1, bs)], []
    stream = list(carry) + list(order)
    full = len(stream) // bs
    batches = [(stream[i * bs:(i + 1) * bs], 0) for i in range(full)]
    if batches and carry:
        batches[0] = (batches[0][0], len(carry))
    return batches, stream[full * bs:]


def run_epochs(it, num_epochs):
    """What the iterator yields: per epoch, the rows (read back from the
    label) and pad of each batch, and the epoch's order (it.idx)."""
    seen = []
    for _ in range(num_epochs):
        order = it.idx.copy()
        batches = []
        for batch in it:
            rows = batch.label[0].asnumpy().astype(int).tolist()
            batches.append((rows, batch.pad, batch))
        seen.append((order, batches))
        it.reset()
    return seen


@pytest.mark.parametrize('handle', HANDLES)
@pytest.mark.parametrize('n,bs', [(10, 4), (12, 4), (10, 1), (10, 10),
                                  (3, 4), (10, 25), (7, 3)])
@pytest.mark.parametrize('shuffle', [False, True])
def test_ndarrayiter_matches_oracle(handle, n, bs, shuffle):
    x = np.arange(n * 3, dtype=np.float64).reshape(n, 3)
    it = mx.io.NDArrayIter(x, np.arange(n), batch_size=bs, shuffle=shuffle,
                           last_batch_handle=handle)
    carry = []
    orders = []
    for order, batches in run_epochs(it, 4):
        orders.append(order.tolist())
        want, carry = expected_epoch(order.tolist(), bs, handle, carry)
        assert [(r, p) for r, p, _ in batches] == want
        for rows, _, batch in batches:
            assert batch.data[0].shape == (bs, 3)
            assert batch.data[0].context == mx.cpu()
            assert batch.data[0].dtype == np.float32
            np.testing.assert_array_equal(batch.data[0].asnumpy(), x[rows])
    for order in orders:
        assert sorted(order) == list(range(n))
    if shuffle and n >= 7:
        assert len({tuple(o) for o in orders}) > 1      # a new order per epoch
    if not shuffle:
        assert all(o == list(range(n)) for o in orders)


def test_mxnet_docstring_example_roll_over():
    # MXNet's docstring: 10 examples, batches of 3, roll_over, no shuffle:
    # 3 batches, then the next epoch starts with example 9, then 0, 1.
    data = np.arange(40).reshape((10, 2, 2))
    it = mx.io.NDArrayIter(data, np.ones([10, 1]), 3, False,
                           last_batch_handle='roll_over')
    assert len(list(it)) == 3
    it.reset()
    first = it.next()
    np.testing.assert_array_equal(first.data[0].asnumpy(), data[[9, 0, 1]])
    assert first.pad == 1 and it.getpad() == 1


def test_pad_larger_than_the_data_tiles_it():
    it = mx.io.NDArrayIter(np.arange(10), batch_size=205)
    batch = it.next()
    expect = np.concatenate([np.tile(np.arange(10), 20), np.arange(5)])
    np.testing.assert_array_equal(batch.data[0].asnumpy(), expect)
    assert batch.pad == 195
    with pytest.raises(StopIteration):
        it.next()


def test_hard_reset_drops_the_rolled_over_rows():
    it = mx.io.NDArrayIter(np.arange(10), batch_size=4,
                           last_batch_handle='roll_over')
    list(it)
    it.hard_reset()
    batch = it.next()
    np.testing.assert_array_equal(batch.data[0].asnumpy(), [0, 1, 2, 3])
    assert batch.pad == 0


def test_iter_next_getdata_protocol():
    x = np.arange(5.0)
    it = mx.io.NDArrayIter(x, x * 10, batch_size=2)
    with pytest.raises(RuntimeError, match='iter_next'):
        it.getdata()
    got = []
    while it.iter_next():
        got.append((it.getdata()[0].asnumpy().tolist(),
                    it.getlabel()[0].asnumpy().tolist(), it.getpad()))
    assert got == [([0, 1], [0, 10], 0), ([2, 3], [20, 30], 0),
                   ([4, 0], [40, 0], 1)]
    with pytest.raises(RuntimeError, match='reset'):
        it.getdata()


def test_names_order_and_descs():
    a = np.zeros((6, 2, 3))
    b = mx.nd.ones((6, 4), dtype='int32')
    it = mx.io.NDArrayIter({'zeta': a, 'alpha': b}, [np.arange(6), np.ones(6)],
                           batch_size=4)
    # dict entries sorted by name; several list entries named _i_<name>
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == \
        [('alpha', (4, 4), np.int32), ('zeta', (4, 2, 3), np.float32)]
    assert [(d.name, d.shape) for d in it.provide_label] == \
        [('_0_softmax_label', (4,)), ('_1_softmax_label', (4,))]
    batch = it.next()
    assert [d.shape for d in batch.data] == [(4, 4), (4, 2, 3)]
    assert batch.data[0].dtype == np.int32
    one = mx.io.NDArrayIter(a, data_name='img', label_name='y', batch_size=3)
    assert [d.name for d in one.provide_data] == ['img']
    assert one.provide_label == [] and one.next().label == []


def test_layout_with_batch_on_axis_one():
    x = np.arange(2 * 6 * 3).reshape(2, 6, 3)          # T, N, C
    it = mx.io.NDArrayIter(x, batch_size=4, layout='TNC',
                           last_batch_handle='pad')
    assert it.provide_data[0].shape == (2, 4, 3)
    batches = [b.data[0].asnumpy() for b in it]
    np.testing.assert_array_equal(batches[0], x[:, 0:4])
    np.testing.assert_array_equal(batches[1], x[:, [4, 5, 0, 1]])


def test_data_is_snapshotted_at_construction():
    x = np.arange(4.0)
    it = mx.io.NDArrayIter(x, batch_size=4)
    x[:] = -1
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), [0, 1, 2, 3])


@pytest.mark.parametrize('kwargs,match', [
    (dict(batch_size=0), 'batch_size must be a positive integer'),
    (dict(batch_size=-3), 'batch_size must be a positive integer'),
    (dict(batch_size=2.5), 'batch_size must be a positive integer'),
    (dict(last_batch_handle='keep'), "last_batch_handle must be one of"),
    (dict(label=np.zeros(9)), r"same number of examples.*'data': 10.*9"),
    (dict(layout='CHW'), 'no batch axis'),
])
def test_bad_arguments(kwargs, match):
    kwargs.setdefault('batch_size', 2)
    with pytest.raises(ValueError, match=match):
        mx.io.NDArrayIter(np.zeros((10, 2)), **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match='empty'):
        mx.io.NDArrayIter([], batch_size=1)
    with pytest.raises(ValueError, match='no examples'):
        mx.io.NDArrayIter(np.zeros((0, 3)), batch_size=1)
    with pytest.raises(TypeError, match='must be an NDArray'):
        mx.io.NDArrayIter('abc', batch_size=1)
    with pytest.raises(TypeError, match="'x'"):
        mx.io.NDArrayIter({'x': 'abc'}, batch_size=1)
    with pytest.raises(ValueError, match=r"\['x'\] are used for both"):
        mx.io.NDArrayIter({'x': np.ones(3)}, {'x': np.ones(3)}, batch_size=1)


def test_data_is_held_once_and_shared_with_self_data():
    it = mx.io.NDArrayIter(np.arange(4.0), batch_size=2)
    name, arr = it.data[0]
    assert name == 'data' and isinstance(arr, mx.nd.NDArray)
    arr[:] = 7                              # MXNet: it.data is what is read
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), [7, 7])


# -------------------------------------------------------- DataDesc, batch

def test_datadesc():
    d = mx.io.DataDesc('data', (8, 3, 4, 4), 'float16', 'NHWC')
    assert d == ('data', (8, 3, 4, 4)) and d.name == 'data'
    assert (d.dtype, d.layout) == ('float16', 'NHWC')
    assert repr(d) == 'DataDesc[data,(8, 3, 4, 4),float16,NHWC]'
    default = mx.io.DataDesc('x', (2,))
    assert (default.dtype, default.layout) == (np.float32, 'NCHW')
    for clone in (copy.deepcopy(d), pickle.loads(pickle.dumps(d))):
        assert clone == d and (clone.dtype, clone.layout) == ('float16', 'NHWC')
    assert mx.io.DataDesc.get_batch_axis('TNC') == 1
    assert mx.io.DataDesc.get_batch_axis(None) == 0
    descs = mx.io.DataDesc.get_list([('a', (1, 2)), ('b', (3,))],
                                    [('a', 'int32'), ('b', 'float64')])
    assert [(x.name, x.shape, x.dtype) for x in descs] == \
        [('a', (1, 2), 'int32'), ('b', (3,), 'float64')]
    assert mx.io.DataDesc.get_list([('a', (1,))], None)[0].dtype == np.float32


def test_databatch():
    b = mx.io.DataBatch(data=[mx.nd.ones((2, 3))])
    assert str(b) == 'DataBatch: data shapes: [(2, 3)] label shapes: None'
    b = mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.ones((4, 5))], pad=1,
                        index=np.arange(2), bucket_key=7)
    assert repr(b) == 'DataBatch: data shapes: [(2, 3)] label shapes: [(4, 5)]'
    assert (b.pad, b.bucket_key, b.provide_data) == (1, 7, None)
    with pytest.raises(TypeError, match='list of NDArrays'):
        mx.io.DataBatch(mx.nd.ones((2, 3)))


class _Countdown(mx.io.DataIter):
    """A DataIter written against the base class protocol only."""

    def __init__(self, n):
        super().__init__(batch_size=1)
        self.n, self.i = n, 0

    def reset(self):
        self.i = 0

    def iter_next(self):
        self.i += 1
        return self.i <= self.n

    def getdata(self):
        return [mx.nd.array([self.n - self.i])]

    def getlabel(self):
        return [mx.nd.array([self.i])]

    def getpad(self):
        return 0


def test_dataiter_base_protocol():
    it = _Countdown(3)
    assert iter(it) is it
    got = [(b.data[0].asscalar(), b.label[0].asscalar(), b.pad, b.index)
           for b in it]
    assert got == [(2, 1, 0, None), (1, 2, 0, None), (0, 3, 0, None)]
    it.reset()
    assert next(it).label[0].asscalar() == 1


def test_dataiter_defaults():
    class DataOnly(mx.io.DataIter):
        def __init__(self):
            super().__init__()
            self.left = 2

        def iter_next(self):
            self.left -= 1
            return self.left >= 0

        def getdata(self):
            return [mx.nd.zeros((1,))]
    batches = list(DataOnly())
    assert [(b.label, b.pad, b.index) for b in batches] == [(None, 0, None)] * 2
    assert DataOnly().batch_size == 0
    with pytest.raises(NotImplementedError, match='must define iter_next'):
        mx.io.DataIter().next()


# ------------------------------------------------------------ ResizeIter

def test_resize_iter():
    base = mx.io.NDArrayIter(np.arange(10), batch_size=4,
                             last_batch_handle='discard')
    it = mx.io.ResizeIter(base, 5)
    assert it.batch_size == 4 and it.provide_data == base.provide_data
    rows = [b.data[0].asnumpy().tolist() for b in it]
    assert rows == [[0, 1, 2, 3], [4, 5, 6, 7]] * 2 + [[0, 1, 2, 3]]
    it.reset()                          # resets the inner iterator too
    assert it.next().data[0].asnumpy().tolist() == [0, 1, 2, 3]
    short = mx.io.ResizeIter(base, 1, reset_internal=False)
    short.reset()
    assert short.next().data[0].asnumpy().tolist() == [4, 5, 6, 7]
    with pytest.raises(StopIteration):
        short.next()


# -------------------------------------------------------- PrefetchingIter

def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == 'PrefetchingIter']


def _pair(n=10, bs=4, handle='pad'):
    a = mx.io.NDArrayIter({'data': np.arange(n)}, np.arange(n) * 10,
                          batch_size=bs, last_batch_handle=handle)
    b = mx.io.NDArrayIter({'data': -np.arange(n)}, batch_size=bs,
                          last_batch_handle=handle)
    return a, b


def test_prefetching_joins_batches_and_renames():
    before = len(_prefetch_threads())
    it = mx.io.PrefetchingIter(list(_pair()), rename_data=[{'data': 'a'},
                                                            {'data': 'b'}])
    assert len(_prefetch_threads()) == before + 1
    assert [(d.name, d.shape) for d in it.provide_data] == [('a', (4,)),
                                                            ('b', (4,))]
    assert [d.name for d in it.provide_label] == ['softmax_label']
    assert it.batch_size == 4
    for epoch in range(2):
        got = [(b.data[0].asnumpy().tolist(), b.data[1].asnumpy().tolist(),
                b.label[0].asnumpy().tolist(), b.pad) for b in it]
        assert got == [([0, 1, 2, 3], [0, -1, -2, -3], [0, 10, 20, 30], 0),
                       ([4, 5, 6, 7], [-4, -5, -6, -7], [40, 50, 60, 70], 0),
                       ([8, 9, 0, 1], [-8, -9, 0, -1], [80, 90, 0, 10], 2)]
        assert not it.iter_next()                 # stays at the end
        it.reset()
    it.close()
    assert len(_prefetch_threads()) == before


def test_prefetching_reset_mid_epoch_and_single_iter():
    it = mx.io.PrefetchingIter(mx.io.NDArrayIter(np.arange(6), batch_size=2))
    assert it.next().data[0].asnumpy().tolist() == [0, 1]
    it.reset()
    assert [b.data[0].asnumpy().tolist() for b in it] == [[0, 1], [2, 3], [4, 5]]
    assert it.getdata()[0].asnumpy().tolist() == [4, 5] and it.getpad() == 0
    it.close()


def test_prefetching_thread_ends_when_iterator_is_dropped():
    before = len(_prefetch_threads())
    it = mx.io.PrefetchingIter(list(_pair()))
    it.next()
    thread = _prefetch_threads()[-1]
    del it
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert len(_prefetch_threads()) == before


def test_prefetching_errors():
    a = mx.io.NDArrayIter(np.arange(8), batch_size=4)
    b = mx.io.NDArrayIter(np.arange(12), batch_size=4)
    it = mx.io.PrefetchingIter([a, b])
    list_ok = [it.next(), it.next()]
    assert len(list_ok) == 2
    with pytest.raises(ValueError, match='different numbers of batches'):
        it.next()
    it.close()

    class Broken(_Countdown):
        def iter_next(self):
            raise RuntimeError('disk on fire')
    broken = Broken(3)
    broken.provide_data = [mx.io.DataDesc('data', (1,))]
    broken.provide_label = []
    it = mx.io.PrefetchingIter(broken)
    with pytest.raises(RuntimeError, match='disk on fire'):
        it.next()
    with pytest.raises(RuntimeError, match='call reset'):   # no hang after
        it.next()
    it.close()
    with pytest.raises(RuntimeError, match='thread has stopped'):
        it.reset()
        it.next()
    with pytest.raises(ValueError, match='one dict per iterator'):
        mx.io.PrefetchingIter([a, b], rename_data=[{'data': 'x'}])


def test_epoch_count_formulas():
    # the number of batches per epoch in each mode, for one odd size
    n, bs = 1000, 128
    counts = {h: len(list(mx.io.NDArrayIter(np.zeros(n), batch_size=bs,
                                            last_batch_handle=h)))
              for h in HANDLES}
    assert counts == {'pad': math.ceil(n / bs), 'discard': n // bs,
                      'roll_over': n // bs}


# --------------------------------------------------------------- CSVIter

def _write_csv(path, rows):
    path.write_text('\n'.join(','.join(str(v) for v in r) for r in rows) + '\n')
    return str(path)


@pytest.mark.parametrize('round_batch', [True, False])
def test_csv_iter_batches_and_round_batch(tmp_path, round_batch):
    n, bs = 10, 4
    x = np.arange(n * 6).reshape(n, 6)
    data = _write_csv(tmp_path / 'x.csv', x)
    label = _write_csv(tmp_path / 'y.csv', np.arange(n)[:, None])
    it = mx.io.CSVIter(data_csv=data, data_shape=(2, 3), label_csv=label,
                       batch_size=bs, round_batch=round_batch)
    assert [(d.name, d.shape) for d in it.provide_data] == [('data', (4, 2, 3))]
    assert [(d.name, d.shape) for d in it.provide_label] == \
        [('softmax_label', (4,))]
    # oracle: a stream over the file; an epoch ends with the batch that
    # wraps round, and with round_batch the next one starts after its rows
    start = 0
    for _ in range(3):
        want = []
        c = start
        while c < n:
            rows = [(c + j) % n for j in range(bs)]
            want.append((rows, max(0, c + bs - n)))
            c += bs
        got = []
        for batch in it:
            rows = batch.label[0].asnumpy().astype(int).tolist()
            np.testing.assert_array_equal(batch.data[0].asnumpy(),
                                          x[rows].reshape(bs, 2, 3))
            assert it.getdata().shape == (bs, 2, 3)     # one NDArray
            assert list(batch.index) == rows
            got.append((rows, batch.pad))
        assert got == want
        start = want[-1][1] if round_batch else 0
        it.reset()


@pytest.mark.parametrize('dtype,entry', [('int32', 200000001),
                                         ('int64', 2147483648),
                                         ('float32', 1.5)])
def test_csv_iter_dtype_and_no_labels(tmp_path, dtype, entry):
    data = _write_csv(tmp_path / 'x.csv', [[entry] * 4] * 5)
    it = mx.io.CSVIter(data_csv=data, data_shape=(4,), batch_size=5,
                       dtype=dtype)
    batch = it.next()
    assert batch.data[0].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(batch.data[0].asnumpy(),
                                  np.full((5, 4), entry, dtype))
    np.testing.assert_array_equal(batch.label[0].asnumpy(), np.zeros(5))
    assert it.provide_data[0].dtype == np.dtype(dtype).type


def test_csv_iter_errors(tmp_path):
    data = _write_csv(tmp_path / 'x.csv', [[1, 2, 3]] * 4)
    short = _write_csv(tmp_path / 'y.csv', [[0]] * 3)
    with pytest.raises(ValueError, match=r'hold 3 values, but shape \(2, 2\) needs 4'):
        mx.io.CSVIter(data_csv=data, data_shape=(2, 2))
    with pytest.raises(ValueError, match='has 4 rows but .* has 3'):
        mx.io.CSVIter(data_csv=data, data_shape=(3,), label_csv=short)
    with pytest.raises(ValueError, match='dtype must be one of'):
        mx.io.CSVIter(data_csv=data, data_shape=(3,), dtype='float16')
    with pytest.raises(TypeError, match=r"unknown arguments \['shufle'\]"):
        mx.io.CSVIter(data_csv=data, data_shape=(3,), shufle=True)
    with pytest.raises(ValueError, match='batch_size'):
        mx.io.CSVIter(data_csv=data, data_shape=(3,), batch_size=0)


@pytest.mark.parametrize('ext, opener', [('.gz', 'gzip'), ('.bz2', 'bz2'),
                                         ('.xz', 'lzma')])
def test_csv_iter_compressed_files_stop_at_the_load_limit(tmp_path, monkeypatch,
                                                          ext, opener):
    """NumPy inflates x.csv.gz by its extension; the text read is counted,
    and reading stops at d2lmini's load limit (compressed text declares no
    size), with an error that says what to do."""
    import importlib
    module = importlib.import_module(opener)
    rows = np.arange(30).reshape(10, 3)
    text = ''.join(','.join(map(str, r)) + '\n' for r in rows).encode()
    path = tmp_path / f'x.csv{ext}'
    with module.open(path, 'wb') as f:
        f.write(text)
    it = mx.io.CSVIter(data_csv=str(path), data_shape=(3,), batch_size=10)
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), rows)
    monkeypatch.setenv('D2LMINI_MAX_LOAD_BYTES', '40')
    with pytest.raises(mx.limits.LoadLimitError,
                       match=r'x.csv.*its text would decode to at least 41 bytes.*'
                             r'more than the load limit of 40 bytes.*'
                             r'D2LMINI_MAX_LOAD_BYTES'):
        mx.io.CSVIter(data_csv=str(path), data_shape=(3,), batch_size=10)


def test_csv_iter_one_endless_line_is_not_read_whole(tmp_path, monkeypatch):
    path = tmp_path / 'x.csv.gz'
    with gzip.open(path, 'wb') as f:
        for _ in range(100):
            f.write(b'0,' * 50_000)              # 10 MB, no newline
    monkeypatch.setenv('D2LMINI_MAX_LOAD_BYTES', '1M')
    with pytest.raises(mx.limits.LoadLimitError, match='at least 1,048,577 bytes'):
        mx.io.CSVIter(data_csv=str(path), data_shape=(3,))


def test_labels_longer_than_the_data_are_cut_with_a_warning():
    # MXNet's test_loss.py::test_sample_weight_loss relies on it: the first
    # len(data) labels go with the data.
    data = np.arange(10, dtype=np.float32).reshape(5, 2)
    label = np.arange(8, dtype=np.float32)
    with pytest.warns(UserWarning, match='only the first 5'):
        it = mx.io.NDArrayIter(data, label, batch_size=5)
    batch = next(iter(it))
    np.testing.assert_array_equal(batch.label[0].asnumpy(), label[:5])
