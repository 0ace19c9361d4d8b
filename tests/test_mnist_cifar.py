"""mx.io.MNISTIter and gluon.data.vision.MNIST / CIFAR10 / CIFAR100 on small
files written here in the real formats (IDX; CIFAR's binary batches).

Oracles: what MXNet 1.9.1's MNISTIter returned on the files of
tests/fixtures/mnist (see make_fixture.py there), and NumPy models of the
formats: an IDX file is a big-endian header and the bytes row by row; a
CIFAR record is its label byte(s), then the red, green and blue 32 x 32
planes.  No test uses the network: downloads come from ``file://`` mirrors
(``MXNET_GLUON_REPO``), and ``MXNET_HOME`` points at a temporary folder.
"""
import gzip
import hashlib
import io
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import gluon
from d2lmini.gluon.data.vision import mnist_cifar_files as mcf
from d2lmini.gluon.data.vision.fashion_mnist_files import (
    ChecksumMismatchError, CorruptDataError, DatasetNotFoundError)

FIXTURES = Path(__file__).parent / 'fixtures' / 'mnist'
vision = gluon.data.vision


@pytest.fixture(autouse=True)
def no_network(tmp_path, monkeypatch):
    monkeypatch.setenv('MXNET_HOME', str(tmp_path / 'mxnet_home'))
    monkeypatch.setenv('MXNET_GLUON_REPO', (tmp_path / 'no-mirror').as_uri())


def _idx(magic, dims, payload):
    return struct.pack(f'>I{len(dims)}I', magic, *dims) + bytes(payload)


# === MNISTIter =================================================================
def _iter(**kwargs):
    return mx.io.MNISTIter(image=str(FIXTURES / 'images-idx3-ubyte'),
                           label=str(FIXTURES / 'labels-idx1-ubyte'),
                           silent=True, **kwargs)


@pytest.mark.parametrize('case,kwargs', [
    ('plain', dict(batch_size=5, shuffle=False)),
    ('flat', dict(batch_size=4, shuffle=False, flat=True)),
    ('part_2_of_3', dict(batch_size=2, shuffle=False, num_parts=3, part_index=2)),
    ('part_1_of_4', dict(batch_size=3, shuffle=False, num_parts=4, part_index=1)),
])
def test_mnist_iter_is_mxnets(case, kwargs):
    want = np.load(FIXTURES / 'mxnet_batches.npz')
    it = _iter(**kwargs)
    for _ in range(2):                           # and again after reset()
        batches = list(it)
        data = np.stack([b.data[0].asnumpy() for b in batches])
        label = np.stack([b.label[0].asnumpy() for b in batches])
        # value / 256 is exact in float32: bit for bit
        np.testing.assert_array_equal(data, want[case + '_data'])
        np.testing.assert_array_equal(label, want[case + '_label'])
        assert [b.pad for b in batches] == want[case + '_pad'].tolist()
        assert data.dtype == label.dtype == np.float32
        it.reset()
    bs = kwargs['batch_size']
    assert it.provide_data[0].name == 'data'
    assert it.provide_data[0].shape == want[case + '_data'].shape[1:]
    assert it.provide_label[0][:] == ('softmax_label', (bs,))
    it.reset()
    assert it.iter_next() and it.getdata().shape == (bs,) + want[case + '_data'].shape[2:]


def test_mnist_iter_divides_by_256():
    batch = next(_iter(batch_size=1, shuffle=False))
    assert batch.data[0].asnumpy()[0, 0, 0, :3].tolist() == [255 / 256, 0, 0.5]


def test_mnist_iter_shuffles_once_from_its_seed():
    plain = np.concatenate([b.label[0].asnumpy() for b in _iter(batch_size=12,
                                                                 shuffle=False)])
    it = _iter(batch_size=4, seed=3)
    epochs = []
    for _ in range(2):
        epochs.append([(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in it])
        it.reset()
    labels = np.concatenate([y for _, y in epochs[0]])
    assert sorted(labels) == sorted(plain) and labels.tolist() != plain.tolist()
    for (x0, y0), (x1, y1) in zip(*epochs):      # the same order every epoch
        np.testing.assert_array_equal(x0, x1)
        np.testing.assert_array_equal(y0, y1)
    # Images and labels move together.
    images = np.fromfile(FIXTURES / 'images-idx3-ubyte', np.uint8, offset=16)
    images = images.reshape(12, 3, 4)
    x = np.concatenate([x for x, _ in epochs[0]])[:, 0] * 256
    rows = [int(np.flatnonzero((images == xi).all(axis=(1, 2)))[0]) for xi in x]
    assert plain[rows].tolist() == labels.tolist()
    again = np.concatenate([b.label[0].asnumpy() for b in _iter(batch_size=4,
                                                                 seed=3)])
    other = np.concatenate([b.label[0].asnumpy() for b in _iter(batch_size=4,
                                                                 seed=4)])
    assert again.tolist() == labels.tolist() and other.tolist() != labels.tolist()


def test_mnist_iter_reads_gzip_and_mxnet_keywords(tmp_path):
    for name in ('images-idx3-ubyte', 'labels-idx1-ubyte'):
        (tmp_path / (name + '.gz')).write_bytes(
            gzip.compress((FIXTURES / name).read_bytes()))
    it = mx.io.MNISTIter(image=str(tmp_path / 'images-idx3-ubyte.gz'),
                         label=str(tmp_path / 'labels-idx1-ubyte.gz'),
                         batch_size=5, shuffle=False, silent=True,
                         input_shape=(1, 3, 4), dtype='float16',
                         prefetch_buffer=2, ctx='cpu')
    want = np.load(FIXTURES / 'mxnet_batches.npz')['plain_data']
    got = np.stack([b.data[0].asnumpy() for b in it])
    assert got.dtype == np.float16 and it.provide_data[0].dtype == np.float16
    np.testing.assert_array_equal(got, want.astype(np.float16))


def test_mnist_iter_logs_unless_silent(caplog):
    with caplog.at_level('INFO', logger='d2lmini.io'):
        mx.io.MNISTIter(image=str(FIXTURES / 'images-idx3-ubyte'),
                        label=str(FIXTURES / 'labels-idx1-ubyte'), batch_size=5)
    assert 'MNISTIter: load 12 images, shuffle=1, shape=(5, 1, 3, 4)' in caplog.text


def test_mnist_iter_errors(tmp_path):
    images = (FIXTURES / 'images-idx3-ubyte').read_bytes()
    bad = tmp_path / 'cut-idx3-ubyte'
    bad.write_bytes(images[:-5])
    with pytest.raises(CorruptDataError) as e:
        mx.io.MNISTIter(image=str(bad), label=str(FIXTURES / 'labels-idx1-ubyte'))
    msg = str(e.value)
    assert str(bad) in msg and 'truncated' in msg
    assert 'byte offset 16' in msg and 'should end at offset 160, not 155' in msg
    short = tmp_path / 'short-labels'
    short.write_bytes(_idx(2049, (11,), range(11)))
    with pytest.raises(CorruptDataError, match='12 images .* 11 labels'):
        mx.io.MNISTIter(image=str(FIXTURES / 'images-idx3-ubyte'), label=str(short))
    swapped = dict(image=str(FIXTURES / 'labels-idx1-ubyte'),
                   label=str(FIXTURES / 'images-idx3-ubyte'))
    with pytest.raises(CorruptDataError, match='magic number is 2049.*byte offset 0'):
        mx.io.MNISTIter(**swapped)
    with pytest.raises(ValueError, match=r'input_shape \(1, 28, 28\)'):
        _iter(input_shape=(1, 28, 28))
    with pytest.raises(ValueError, match='holds 3 images, fewer than batch_size=4'):
        _iter(batch_size=4, num_parts=4, part_index=0)
    with pytest.raises(ValueError, match=r'part_index must be in \[0, 2\)'):
        _iter(num_parts=2, part_index=2)
    with pytest.raises(ValueError, match='batch_size must be a positive'):
        _iter(batch_size=0)


# === gluon.data.vision.MNIST ===================================================
MNIST_NAMES = [name for pair in mcf.MNIST_FILES.values() for name, _ in pair]


def _mnist_folder(folder, n_train=5, n_test=3, compress=True):
    """The four MNIST files, with random images and labels; returns them."""
    rng = np.random.RandomState(1)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, n in (('train', n_train), ('test', n_test)):
        images = rng.randint(0, 256, (n, 28, 28)).astype(np.uint8)
        labels = rng.randint(0, 10, n).astype(np.uint8)
        (img_name, _), (lab_name, _) = mcf.MNIST_FILES[split]
        for name, blob in ((img_name, _idx(2051, (n, 28, 28), images.tobytes())),
                           (lab_name, _idx(2049, (n,), labels.tobytes()))):
            if compress:
                (folder / name).write_bytes(gzip.compress(blob))
            else:
                (folder / name[:-3]).write_bytes(blob)
        out[split] = images, labels
    return out


@pytest.mark.parametrize('compress', [True, False])
def test_mnist_dataset(tmp_path, compress):
    want = _mnist_folder(tmp_path / 'mnist', compress=compress)
    for train, split in ((True, 'train'), (False, 'test')):
        ds = vision.MNIST(root=str(tmp_path / 'mnist'), train=train)
        images, labels = want[split]
        assert len(ds) == len(labels)
        x, y = ds[1]
        assert isinstance(x, mx.nd.NDArray) and x.shape == (28, 28, 1)
        assert x.dtype == np.uint8 and type(y) is np.int32
        np.testing.assert_array_equal(x.asnumpy()[:, :, 0], images[1])
        assert y == labels[1]
    loader = gluon.data.DataLoader(
        vision.MNIST(root=tmp_path / 'mnist').transform_first(
            vision.transforms.ToTensor()), batch_size=2)
    xb, yb = next(iter(loader))
    assert xb.shape == (2, 1, 28, 28)
    np.testing.assert_allclose(xb.asnumpy()[:, 0], want['train'][0][:2] / 255,
                               rtol=1e-6)
    np.testing.assert_array_equal(yb.asnumpy(), want['train'][1][:2])
    tripled = vision.MNIST(root=tmp_path / 'mnist',
                           transform=lambda x, y: (x, y * 3))
    assert tripled[0][1] == 3 * want['train'][1][0]
    assert repr(vision.MNIST(root=tmp_path / 'mnist')) == 'MNIST(train, 5 examples)'


def test_mnist_default_root_is_mxnet_home(tmp_path):
    want = _mnist_folder(tmp_path / 'mxnet_home' / 'datasets' / 'mnist')
    np.testing.assert_array_equal(vision.MNIST(train=False)[:3][1],
                                  want['test'][1])


def _mirror(tmp_path, namespace, files):
    """A file:// mirror of MXNet's repository holding ``files``."""
    folder = tmp_path / 'mirror' / 'gluon' / 'dataset' / namespace
    folder.mkdir(parents=True)
    for name, blob in files.items():
        (folder / name).write_bytes(blob)
    return (tmp_path / 'mirror').as_uri()


def _sha1(blob):
    return hashlib.sha1(blob).hexdigest()


def test_mnist_downloads_from_the_repository(tmp_path, monkeypatch):
    _mnist_folder(tmp_path / 'made')
    blobs = {n: (tmp_path / 'made' / n).read_bytes() for n in MNIST_NAMES}
    monkeypatch.setenv('MXNET_GLUON_REPO', _mirror(tmp_path, 'mnist', blobs))
    monkeypatch.setattr(mcf, 'MNIST_FILES', {
        split: tuple((n, _sha1(blobs[n])) for n, _ in pair)
        for split, pair in mcf.MNIST_FILES.items()})
    root = tmp_path / 'root'
    ds = vision.MNIST(root=str(root), train=False)
    assert len(ds) == 3
    assert sorted(p.name for p in root.iterdir()) == \
        ['t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz']
    assert (root / 't10k-images-idx3-ubyte.gz').read_bytes() == \
        blobs['t10k-images-idx3-ubyte.gz']


def test_mnist_checksum_failure(tmp_path, monkeypatch):
    _mnist_folder(tmp_path / 'made')
    blobs = {n: (tmp_path / 'made' / n).read_bytes() for n in MNIST_NAMES}
    monkeypatch.setenv('MXNET_GLUON_REPO', _mirror(tmp_path, 'mnist', blobs))
    root = tmp_path / 'root'
    with pytest.raises(DatasetNotFoundError) as e:
        vision.MNIST(root=str(root))            # MXNet's real sha1 sums
    msg = str(e.value)
    assert isinstance(e.value.__cause__, ChecksumMismatchError)
    name, sha1 = mcf.MNIST_FILES['train'][0]
    assert _sha1(blobs[name]) in msg and sha1 in msg and name in msg
    assert list(root.iterdir()) == []           # nothing half-written


def test_mnist_offline_error(tmp_path):
    root = tmp_path / 'empty'
    with pytest.raises(DatasetNotFoundError) as e:
        vision.MNIST(root=str(root), train=False)
    msg = str(e.value)
    assert isinstance(e.value, FileNotFoundError)
    url = (tmp_path / 'no-mirror').as_uri() + \
        '/gluon/dataset/mnist/t10k-images-idx3-ubyte.gz'
    assert 'MNIST test set: t10k-images-idx3-ubyte.gz is not in' in msg
    assert str(root) in msg and url in msg
    assert mcf.MNIST_FILES['test'][0][1] in msg
    assert 'MXNET_GLUON_REPO' in msg and 'internet' in msg
    assert not any(root.iterdir())


def test_mnist_corrupt_files(tmp_path):
    _mnist_folder(tmp_path / 'm', compress=False)
    labels = tmp_path / 'm' / 't10k-labels-idx1-ubyte'
    labels.write_bytes(_idx(2049, (3,), [1, 12, 2]))
    with pytest.raises(CorruptDataError) as e:
        vision.MNIST(root=tmp_path / 'm', train=False)
    msg = str(e.value)
    assert str(labels) in msg and 'expected 0..9' in msg
    assert 'is 12, at byte offset 9' in msg and 'delete it' in msg
    images = tmp_path / 'm' / 'train-images-idx3-ubyte'
    images.write_bytes(images.read_bytes()[:100])
    with pytest.raises(CorruptDataError, match=r'truncated.*byte offset 16'):
        vision.MNIST(root=tmp_path / 'm')


# === CIFAR-10 and CIFAR-100 =====================================================
def _cifar_records(rng, n, label_ranges):
    """n records and the NumPy model: images (n, 32, 32, 3), label columns."""
    images = rng.randint(0, 256, (n, 32, 32, 3)).astype(np.uint8)
    labels = [rng.randint(0, hi, n).astype(np.uint8) for hi in label_ranges]
    planes = images.transpose(0, 3, 1, 2).reshape(n, -1)    # R, G, B planes
    blob = np.concatenate([np.stack(labels, 1), planes], axis=1).tobytes()
    return blob, images, labels


def _cifar10_folder(folder, n=2):
    """The six CIFAR-10 batch files: {name: (bytes, images, labels)}."""
    rng = np.random.RandomState(2)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, _ in mcf.CIFAR10_FILES['train'] + mcf.CIFAR10_FILES['test']:
        blob, images, (labels,) = _cifar_records(rng, n, [10])
        (folder / name).write_bytes(blob)
        out[name] = blob, images, labels
    return out


def _split(made, names):
    return (np.concatenate([made[n][1] for n in names]),
            np.concatenate([made[n][2] for n in names]))


def test_cifar10_reads_the_binary_batches(tmp_path):
    made = _cifar10_folder(tmp_path / 'c')
    train = vision.CIFAR10(root=str(tmp_path / 'c'))
    images, labels = _split(made, [f'data_batch_{i}.bin' for i in range(1, 6)])
    assert len(train) == 10
    x, y = train[7]
    assert x.shape == (32, 32, 3) and x.dtype == np.uint8 and type(y) is np.int32
    np.testing.assert_array_equal(x.asnumpy(), images[7])
    np.testing.assert_array_equal(train[:10][1], labels)
    test = vision.CIFAR10(root=tmp_path / 'c', train=False)
    np.testing.assert_array_equal(test[:2][0].asnumpy(), made['test_batch.bin'][1])
    loader = gluon.data.DataLoader(test.transform_first(
        vision.transforms.ToTensor()), batch_size=2)
    xb, yb = next(iter(loader))
    assert xb.shape == (2, 3, 32, 32)
    np.testing.assert_allclose(xb.asnumpy(), made['test_batch.bin'][1]
                               .transpose(0, 3, 1, 2) / 255, rtol=1e-6)


def _tar_gz(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        for name, blob in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return buf.getvalue()


def test_cifar10_extracts_its_archive(tmp_path, monkeypatch):
    made = _cifar10_folder(tmp_path / 'made')
    # As the Toronto archive: the batches in a folder, with a text file.
    archive = _tar_gz({f'cifar-10-batches-bin/{n}': b for n, (b, _, _) in
                       made.items()} | {'cifar-10-batches-bin/readme.html': b'hi'})
    name = mcf.CIFAR10_FILES['archive'][0]
    monkeypatch.setenv('MXNET_GLUON_REPO',
                       _mirror(tmp_path, 'cifar10', {name: archive}))
    root = tmp_path / 'root'
    with pytest.raises(DatasetNotFoundError) as e:   # MXNet's sha1: refused
        vision.CIFAR10(root=root, train=False)
    assert isinstance(e.value.__cause__, ChecksumMismatchError)
    assert not root.exists() or list(root.iterdir()) == []
    monkeypatch.setitem(mcf.CIFAR10_FILES, 'archive', (name, _sha1(archive)))
    test = vision.CIFAR10(root=root, train=False)
    np.testing.assert_array_equal(test[:2][1], made['test_batch.bin'][2])
    assert sorted(p.name for p in root.iterdir()) == [name, 'test_batch.bin']
    # The archive now on disk serves the training set without the network.
    monkeypatch.setenv('MXNET_GLUON_REPO', (tmp_path / 'gone').as_uri())
    assert len(vision.CIFAR10(root=root)) == 10
    assert len(list(root.iterdir())) == 7


def test_cifar10_offline_and_broken_archive(tmp_path):
    with pytest.raises(DatasetNotFoundError) as e:
        vision.CIFAR10(root=tmp_path / 'none')
    msg = str(e.value)
    assert 'CIFAR-10 training set: cifar-10-binary.tar.gz is not in' in msg
    assert mcf.CIFAR10_FILES['archive'][1] in msg and 'MXNET_GLUON_REPO' in msg
    root = tmp_path / 'r'
    root.mkdir()
    (root / 'cifar-10-binary.tar.gz').write_bytes(_tar_gz({'x/test_batch.bin': b''})[:40])
    with pytest.raises(CorruptDataError, match='archive is damaged'):
        vision.CIFAR10(root=root, train=False)
    (root / 'cifar-10-binary.tar.gz').write_bytes(_tar_gz({'x/other.bin': b'1'}))
    with pytest.raises(CorruptDataError, match=r"no \['test_batch.bin'\]"):
        vision.CIFAR10(root=root, train=False)
    made = _cifar10_folder(tmp_path / 'made')
    whole = _tar_gz({f'x/{n}': b for n, (b, _, _) in made.items()})
    (root / 'cifar-10-binary.tar.gz').write_bytes(whole[:len(whole) * 9 // 10])
    # A tar member: a 512-byte header, then its data padded to 512 bytes.
    offset = 5 * (512 + -(-2 * 3073 // 512) * 512) + 512
    with pytest.raises(CorruptDataError, match=rf'damaged at or after '
                       rf'x/test_batch.bin \(its data starts at byte offset '
                       rf'{offset:,} of the tar\)'):
        vision.CIFAR10(root=root, train=False)     # cut inside test_batch.bin
    assert sorted(p.name for p in root.iterdir()) == ['cifar-10-binary.tar.gz']


def test_cifar_corrupt_batches(tmp_path):
    made = _cifar10_folder(tmp_path / 'c', n=3)
    path = tmp_path / 'c' / 'test_batch.bin'
    path.write_bytes(made['test_batch.bin'][0][:-10])
    with pytest.raises(CorruptDataError) as e:
        vision.CIFAR10(root=tmp_path / 'c', train=False)
    msg = str(e.value)
    assert str(path) in msg and '9,209 bytes are not a whole number of 3,073-byte' in msg
    assert 'record at byte offset 6,146 is cut short after 3,063 bytes' in msg
    blob = bytearray(made['test_batch.bin'][0])
    blob[3073] = 10                              # record 1's label
    path.write_bytes(bytes(blob))
    with pytest.raises(CorruptDataError, match=r'label of record 1 is 10, '
                                               r'expected 0\.\.9 \(byte offset 3,073\)'):
        vision.CIFAR10(root=tmp_path / 'c', train=False)


def test_cifar100_coarse_and_fine(tmp_path):
    rng = np.random.RandomState(3)
    root = tmp_path / 'c100'
    root.mkdir()
    made = {}
    for name in ('train.bin', 'test.bin'):
        made[name] = _cifar_records(rng, 3, [20, 100])
        (root / name).write_bytes(made[name][0])
    _, images, (coarse, fine) = made['test.bin']
    test = vision.CIFAR100(root=root, train=False)
    np.testing.assert_array_equal(test[:3][0].asnumpy(), images)
    np.testing.assert_array_equal(test[:3][1], coarse)
    np.testing.assert_array_equal(
        vision.CIFAR100(root=root, train=False, fine_label=True)[:3][1], fine)
    blob = bytearray(made['train.bin'][0])
    blob[3074 + 1] = 100                         # record 1's fine label
    (root / 'train.bin').write_bytes(bytes(blob))
    with pytest.raises(CorruptDataError, match=r'fine label of record 1 is 100, '
                                               r'expected 0\.\.99 \(byte offset 3,075\)'):
        vision.CIFAR100(root=root)
