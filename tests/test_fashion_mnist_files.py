"""Tests for d2lmini/gluon/data/vision/fashion_mnist_files.py.

The module is loaded by file path so these tests need nothing else from the
package.  No test touches the network: downloads come from ``file://`` URLs or
from an HTTP server on 127.0.0.1 started here, and an autouse fixture points
every search place and the download URL at empty temporary folders so that a
real cache or a Debian install on this machine cannot leak in.
"""

import functools
import gzip
import hashlib
import http.server
import importlib.util
import os
import shutil
import socket
import struct
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

_REPO = Path(__file__).resolve().parents[1]
_MODULE_PATH = _REPO / 'd2lmini' / 'gluon' / 'data' / 'vision' / 'fashion_mnist_files.py'


def _load_module():
    name = '_d2lmini_test_fashion_mnist_files'
    spec = importlib.util.spec_from_file_location(name, _MODULE_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


fmf = _load_module()


def _real_dir():
    candidates = [os.environ.get('D2LMINI_TEST_FASHION_MNIST'),
                  _REPO / 'shared' / 'data' / 'fashion-mnist',
                  '/work/shared/data/fashion-mnist']
    for c in candidates:
        if c and all((Path(c) / n).is_file() for n in fmf.SHA256):
            return Path(c)
    return None


REAL = _real_dir()
needs_real = pytest.mark.skipif(REAL is None, reason='real Fashion-MNIST files not available')

TEST_IMAGES, TEST_LABELS = fmf.FILES['test']
TRAIN_IMAGES, TRAIN_LABELS = fmf.FILES['train']
ENV_VARS = ('D2LMINI_DATA', 'D2LMINI_HOME', 'D2LMINI_FASHION_MNIST_URL')


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Empty HOME and Debian folder; downloads fail unless a test says otherwise."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    monkeypatch.setattr(fmf, 'DEBIAN_DIR', tmp_path / 'debian')
    monkeypatch.setenv('D2LMINI_FASHION_MNIST_URL', (tmp_path / 'no-mirror').as_uri())
    return tmp_path


def _cache(tmp_path):
    return tmp_path / 'home' / '.d2lmini' / 'data' / 'fashion-mnist'


def _idx(magic, dims, payload=None):
    if payload is None:
        payload = bytes(int(np.prod(dims)))
    return struct.pack(f'>I{len(dims)}I', magic, *dims) + bytes(payload)


def _tiny_split(folder, n=5, n_labels=None, label_values=None, gz=True, train=False):
    """Write a small valid images/labels pair; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    images_name, labels_name = fmf.FILES['train' if train else 'test']
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    n_labels = n if n_labels is None else n_labels
    labels = np.arange(n_labels) % 10 if label_values is None else label_values
    blobs = {images_name: _idx(2051, (n, 28, 28), pixels.tobytes()),
             labels_name: _idx(2049, (n_labels,), np.asarray(labels, np.uint8).tobytes())}
    paths = []
    for name, blob in blobs.items():
        path = folder / (name if gz else name[:-3])
        path.write_bytes(gzip.compress(blob) if gz else blob)
        paths.append(path)
    return tuple(paths)


def _link_real(folder, names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).symlink_to(REAL / name)


def _leftovers(folder):
    return sorted(p.name for p in folder.glob('.*.part')) if folder.exists() else []


def _closed_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@pytest.fixture
def http_dir(tmp_path):
    """Serve a temporary folder over HTTP on 127.0.0.1; yield (folder, base_url)."""
    root = tmp_path / 'served'
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ('127.0.0.1', 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield root, f'http://127.0.0.1:{server.server_address[1]}/'
    server.shutdown()
    server.server_close()


# --------------------------------------------------------------- constants

def test_constants():
    assert set(fmf.FILES) == {'train', 'test'}
    assert {n for pair in fmf.FILES.values() for n in pair} == set(fmf.SHA256)
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in fmf.SHA256.values())
    assert fmf.URL_BASE == 'http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/'
    assert fmf.TEXT_LABELS == ['t-shirt', 'trouser', 'pullover', 'dress', 'coat',
                               'sandal', 'shirt', 'sneaker', 'bag', 'ankle boot']
    assert issubclass(fmf.CorruptDataError, ValueError)
    assert issubclass(fmf.DatasetNotFoundError, FileNotFoundError)


def test_url_base_override(monkeypatch):
    monkeypatch.delenv('D2LMINI_FASHION_MNIST_URL')
    assert fmf.url_base() == fmf.URL_BASE
    monkeypatch.setenv('D2LMINI_FASHION_MNIST_URL', 'http://mirror.example/fm')
    assert fmf.url_base() == 'http://mirror.example/fm/'


@needs_real
def test_sha256_constants_match_real_files():
    for name, expected in fmf.SHA256.items():
        assert hashlib.sha256((REAL / name).read_bytes()).hexdigest() == expected, name


# --------------------------------------------------------------- real data

@pytest.fixture(scope='module')
def real_train():
    return fmf.load(True, root=REAL, download=False)


@pytest.fixture(scope='module')
def real_test():
    return fmf.load(False, root=REAL, download=False)


@needs_real
def test_real_train(real_train):
    images, labels = real_train
    assert images.shape == (60000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (60000,) and labels.dtype == np.int32
    assert np.bincount(labels, minlength=10).tolist() == [6000] * 10
    assert images.min() == 0 and images.max() == 255
    # First labels of upstream's training set: ankle boot, t-shirt, t-shirt, dress.
    assert labels[:4].tolist() == [9, 0, 0, 3]
    assert fmf.TEXT_LABELS[labels[0]] == 'ankle boot'
    assert images.flags.writeable and images.flags.c_contiguous


@needs_real
def test_real_test(real_test):
    images, labels = real_test
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert np.bincount(labels, minlength=10).tolist() == [1000] * 10
    assert images.min() == 0 and images.max() == 255
    assert labels[:5].tolist() == [9, 2, 1, 1, 6]
    # Independent decoding of the same bytes must agree exactly.
    with gzip.open(REAL / TEST_IMAGES) as f:
        raw = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    np.testing.assert_array_equal(images, raw)


@needs_real
def test_decompressed_files_read_the_same(tmp_path, real_test):
    folder = tmp_path / 'raw'
    folder.mkdir()
    for name in (TEST_IMAGES, TEST_LABELS):
        with gzip.open(REAL / name) as src, open(folder / name[:-3], 'wb') as dst:
            shutil.copyfileobj(src, dst)
    paths = fmf.find_or_download(False, root=folder, download=False)
    assert paths == (folder / TEST_IMAGES[:-3], folder / TEST_LABELS[:-3])
    images, labels = fmf.load(False, root=folder, download=False)
    np.testing.assert_array_equal(images, real_test[0])
    np.testing.assert_array_equal(labels, real_test[1])
    assert images.flags.writeable


@needs_real
def test_gzip_detected_by_content_not_name(tmp_path, real_test):
    # A gzip file under the decompressed name still reads correctly.
    path = tmp_path / TEST_LABELS[:-3]
    path.symlink_to(REAL / TEST_LABELS)
    np.testing.assert_array_equal(fmf.read_idx_labels(path), real_test[1])


@needs_real
def test_load_through_env_symlinks(tmp_path, monkeypatch, real_test):
    _link_real(tmp_path / 'data' / 'fashion-mnist', [TEST_IMAGES, TEST_LABELS])
    monkeypatch.setenv('D2LMINI_DATA', str(tmp_path / 'data'))
    images, labels = fmf.load(False, download=False)
    np.testing.assert_array_equal(labels, real_test[1])


# ----------------------------------------------------------- search order

def test_search_dirs_order(tmp_path, monkeypatch):
    monkeypatch.setenv('D2LMINI_DATA', str(tmp_path / 'data'))
    root = tmp_path / 'root'
    assert fmf.search_dirs(root) == [
        root, root / 'fashion-mnist',
        tmp_path / 'data', tmp_path / 'data' / 'fashion-mnist',
        _cache(tmp_path), tmp_path / 'debian']
    monkeypatch.delenv('D2LMINI_DATA')
    assert fmf.search_dirs() == [_cache(tmp_path), tmp_path / 'debian']
    monkeypatch.setenv('D2LMINI_DATA', '')  # empty counts as unset
    assert fmf.search_dirs() == [_cache(tmp_path), tmp_path / 'debian']


def test_cache_dir_honours_d2lmini_home_and_home(tmp_path, monkeypatch):
    assert fmf.cache_dir() == _cache(tmp_path)
    monkeypatch.setenv('D2LMINI_HOME', str(tmp_path / 'dh'))
    assert fmf.cache_dir() == tmp_path / 'dh' / 'data' / 'fashion-mnist'
    assert fmf.search_dirs()[0] == fmf.cache_dir()


def test_search_dirs_deduplicates(tmp_path, monkeypatch):
    monkeypatch.setenv('D2LMINI_DATA', str(_cache(tmp_path)))
    assert fmf.search_dirs() == [_cache(tmp_path), _cache(tmp_path) / 'fashion-mnist',
                                 tmp_path / 'debian']


def test_find_follows_search_order(tmp_path, monkeypatch):
    places = {
        'root': tmp_path / 'root',
        'data': tmp_path / 'data',
        'data-sub': tmp_path / 'data2' / 'fashion-mnist',
        'cache': _cache(tmp_path),
        'debian': tmp_path / 'debian',
    }
    for folder in places.values():
        _tiny_split(folder)
    monkeypatch.setenv('D2LMINI_DATA', str(places['data']))

    def found():
        images, labels = fmf.find_or_download(False, root=places['root'], download=False)
        assert images.parent == labels.parent
        return images.parent

    assert found() == places['root']
    shutil.rmtree(places['root'])
    assert found() == places['data']
    monkeypatch.setenv('D2LMINI_DATA', str(tmp_path / 'data2'))
    assert found() == places['data-sub']
    monkeypatch.delenv('D2LMINI_DATA')
    assert found() == places['cache']
    shutil.rmtree(places['cache'])
    assert found() == places['debian']
    images, labels = fmf.load(False, download=False)
    assert images.shape == (5, 28, 28) and labels.tolist() == [0, 1, 2, 3, 4]


def test_root_subfolder_and_incomplete_folders(tmp_path):
    root = tmp_path / 'root'
    images, _ = _tiny_split(root / 'fashion-mnist')
    # root itself holds only an images file: it does not qualify.
    root.joinpath(TEST_IMAGES).write_bytes(images.read_bytes())
    assert fmf.find_or_download(False, root=root, download=False) == (
        root / 'fashion-mnist' / TEST_IMAGES, root / 'fashion-mnist' / TEST_LABELS)


def test_mixed_compressed_and_decompressed_in_one_folder(tmp_path):
    folder = tmp_path / 'mixed'
    _tiny_split(folder, gz=True)
    labels_gz = folder / TEST_LABELS
    (folder / TEST_LABELS[:-3]).write_bytes(gzip.decompress(labels_gz.read_bytes()))
    labels_gz.unlink()
    assert fmf.find_or_download(False, root=folder, download=False) == (
        folder / TEST_IMAGES, folder / TEST_LABELS[:-3])
    assert fmf.load(False, root=folder, download=False)[1].tolist() == [0, 1, 2, 3, 4]


def test_train_and_test_are_told_apart(tmp_path):
    _tiny_split(tmp_path / 'd', n=3, train=True)
    assert fmf.find_or_download(True, root=tmp_path / 'd', download=False)[0].name == TRAIN_IMAGES
    with pytest.raises(fmf.DatasetNotFoundError):
        fmf.find_or_download(False, root=tmp_path / 'd', download=False)


# ------------------------------------------------------ corrupt files

def _assert_clear(excinfo, path, *words):
    message = str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)
    assert str(path) in message
    assert 'delete it' in message and 're-download' in message
    for word in words:
        assert word in message, (word, message)


def test_truncated_gzip(tmp_path):
    images, labels = _tiny_split(tmp_path / 'd')
    blob = images.read_bytes()
    images.write_bytes(blob[:len(blob) // 2])
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_images(images)
    _assert_clear(excinfo, images, 'gzip', 'ended before')
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.load(False, root=tmp_path / 'd', download=False)
    _assert_clear(excinfo, images)


@needs_real
def test_truncated_real_gzip(tmp_path):
    path = tmp_path / TEST_LABELS
    path.write_bytes((REAL / TEST_LABELS).read_bytes()[:3000])
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_labels(path)
    _assert_clear(excinfo, path, 'gzip')


def test_gzip_bad_crc(tmp_path):
    path = tmp_path / TEST_LABELS
    blob = bytearray(gzip.compress(_idx(2049, (3,), b'\x01\x02\x03')))
    blob[-8] ^= 0xFF  # first CRC32 byte of the gzip trailer
    path.write_bytes(bytes(blob))
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_labels(path)
    _assert_clear(excinfo, path, 'CRC')


def test_gzip_garbled_stream(tmp_path):
    path = tmp_path / TEST_IMAGES
    blob = bytearray(gzip.compress(_idx(2051, (2, 28, 28), os.urandom(2 * 784))))
    blob[12:40] = b'\xff' * 28
    path.write_bytes(bytes(blob))
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_images(path)
    _assert_clear(excinfo, path, 'gzip')


def test_wrong_magic_swapped_files(tmp_path):
    images, labels = _tiny_split(tmp_path / 'd')
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_images(labels)
    _assert_clear(excinfo, labels, 'magic number is 2049', 'expected 2051', 'labels file')
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_labels(images)
    _assert_clear(excinfo, images, 'magic number is 2051', 'expected 2049', 'images file')


def test_wrong_magic_html_page(tmp_path):
    # What a captive portal or an S3 error page saved under the right name looks like.
    path = tmp_path / TEST_IMAGES
    path.write_bytes(b'<html><body>Access Denied</body></html>\n')
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_images(path)
    _assert_clear(excinfo, path, 'magic number', "b'<htm'")


def test_short_payload(tmp_path):
    path = tmp_path / TEST_IMAGES[:-3]
    path.write_bytes(_idx(2051, (3, 28, 28))[:-100])
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_images(path)
    _assert_clear(excinfo, path, 'truncated', '3 x 28 x 28 = 2,352', '2,252 follow')


def test_trailing_bytes(tmp_path):
    path = tmp_path / TEST_LABELS[:-3]
    path.write_bytes(_idx(2049, (3,), b'\x01\x02\x03') + b'junk')
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_labels(path)
    _assert_clear(excinfo, path, 'trailing bytes')


def test_gzip_bomb_is_refused_before_inflating(tmp_path, monkeypatch):
    """A gzip file whose IDX header declares more than the load limit of
    d2lmini.limits is refused from its header, before the data is inflated
    (this one: 23 KB on disk, 23.5 MB inflated, the limit lowered to 1 MiB)."""
    import tracemalloc
    path = tmp_path / TEST_IMAGES
    path.write_bytes(gzip.compress(_idx(2051, (30000, 28, 28))))
    assert path.stat().st_size < 100_000
    monkeypatch.setenv('D2LMINI_MAX_LOAD_BYTES', '1M')
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as excinfo:
            fmf.read_idx_images(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak
    message = str(excinfo.value)
    assert type(excinfo.value).__name__ == 'LoadLimitError'
    assert str(path) in message and 'IDX header (30000 x 28 x 28)' in message
    assert '23,520,016 bytes' in message and '1,048,576 bytes' in message
    assert 'D2LMINI_MAX_LOAD_BYTES' in message
    monkeypatch.delenv('D2LMINI_MAX_LOAD_BYTES')            # the default: 4 GiB
    assert fmf.read_idx_images(path).shape == (30000, 28, 28)


def test_gzip_trailing_bytes_are_counted_not_kept(tmp_path):
    path = tmp_path / TEST_LABELS
    path.write_bytes(gzip.compress(_idx(2049, (3,), b'\x01\x02\x03') + bytes(10_000)))
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_labels(path)
    _assert_clear(excinfo, path, 'trailing bytes', '3 data bytes but more than')


@pytest.mark.parametrize('blob', [b'', b'\x00\x00', b'\x00\x00\x08\x03\x00\x00'])
def test_empty_or_header_cut(tmp_path, blob):
    path = tmp_path / TEST_IMAGES[:-3]
    path.write_bytes(blob)
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.read_idx_images(path)
    _assert_clear(excinfo, path)


def test_count_mismatch(tmp_path):
    images, labels = _tiny_split(tmp_path / 'd', n=5, n_labels=4)
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.load(False, root=tmp_path / 'd', download=False)
    message = str(excinfo.value)
    assert str(images) in message and str(labels) in message
    assert '5 images' in message and '4 labels' in message and 'do not belong together' in message


@needs_real
def test_count_mismatch_real_files(tmp_path):
    folder = tmp_path / 'd'
    folder.mkdir()
    (folder / TEST_IMAGES).symlink_to(REAL / TEST_IMAGES)
    (folder / TEST_LABELS).symlink_to(REAL / TRAIN_LABELS)  # wrong split's labels
    with pytest.raises(fmf.CorruptDataError, match='10,000 images .* 60,000 labels'):
        fmf.load(False, root=folder, download=False)


def test_labels_out_of_range(tmp_path):
    _, labels = _tiny_split(tmp_path / 'd', n=3, label_values=[1, 10, 2])
    with pytest.raises(fmf.CorruptDataError) as excinfo:
        fmf.load(False, root=tmp_path / 'd', download=False)
    _assert_clear(excinfo, labels, '1..10', 'expected 0..9')


def test_wrong_image_size(tmp_path):
    folder = tmp_path / 'd'
    _tiny_split(folder, n=2)
    (folder / TEST_IMAGES).write_bytes(gzip.compress(_idx(2051, (2, 32, 32))))
    with pytest.raises(fmf.CorruptDataError, match='32 x 32, expected 28 x 28'):
        fmf.load(False, root=folder, download=False)
    assert fmf.read_idx_images(folder / TEST_IMAGES).shape == (2, 32, 32)


# --------------------------------------------------------------- download

@needs_real
def test_find_or_download_from_file_mirror(tmp_path, monkeypatch, real_test):
    monkeypatch.setenv('D2LMINI_FASHION_MNIST_URL', REAL.as_uri())
    cache = _cache(tmp_path)
    paths = fmf.find_or_download(False, progress=False)
    assert paths == (cache / TEST_IMAGES, cache / TEST_LABELS)
    for path in paths:
        assert path.read_bytes() == (REAL / path.name).read_bytes()
    assert _leftovers(cache) == []
    # Second time it is found in the cache, even with downloading off.
    images, labels = fmf.load(False, download=False)
    np.testing.assert_array_equal(labels, real_test[1])


@needs_real
def test_only_missing_file_is_downloaded(tmp_path, monkeypatch):
    cache = _cache(tmp_path)
    cache.mkdir(parents=True)
    shutil.copy(REAL / TEST_LABELS, cache / TEST_LABELS[:-3])  # name only; not read here
    mirror = tmp_path / 'mirror'
    _link_real(mirror, [TEST_IMAGES])  # the mirror has no labels file
    monkeypatch.setenv('D2LMINI_FASHION_MNIST_URL', mirror.as_uri())
    paths = fmf.find_or_download(False, progress=False)
    assert paths == (cache / TEST_IMAGES, cache / TEST_LABELS[:-3])


@needs_real
def test_download_over_http_with_progress(tmp_path, http_dir, capsys):
    pytest.importorskip('tqdm')
    served, base = http_dir
    shutil.copy(REAL / TEST_LABELS, served / TEST_LABELS)
    dest = tmp_path / 'out' / 'nested' / TEST_LABELS
    assert fmf.download(base + TEST_LABELS, dest, fmf.SHA256[TEST_LABELS]) == dest
    assert dest.read_bytes() == (REAL / TEST_LABELS).read_bytes()
    assert _leftovers(dest.parent) == []
    err = capsys.readouterr().err
    assert TEST_LABELS in err and '100%' in err and 'B' in err


def test_download_without_checksum_and_progress(tmp_path, http_dir, capsys):
    served, base = http_dir
    (served / 'x.bin').write_bytes(b'abc' * 100000)
    dest = fmf.download(base + 'x.bin', tmp_path / 'x.bin', None, progress=False)
    assert dest.read_bytes() == b'abc' * 100000
    assert capsys.readouterr().err == ''


def test_download_works_without_tqdm(tmp_path, http_dir, monkeypatch, capsys):
    served, base = http_dir
    (served / 'x.bin').write_bytes(b'payload')
    monkeypatch.setitem(sys.modules, 'tqdm', None)  # makes `import tqdm` fail
    dest = fmf.download(base + 'x.bin', tmp_path / 'x.bin',
                        hashlib.sha256(b'payload').hexdigest(), progress=True)
    assert dest.read_bytes() == b'payload'
    assert capsys.readouterr().err == ''


def test_checksum_mismatch_keeps_old_file(tmp_path, http_dir):
    served, base = http_dir
    (served / TEST_LABELS).write_bytes(b'not the real thing')
    dest = tmp_path / 'out' / TEST_LABELS
    dest.parent.mkdir()
    dest.write_bytes(b'previous contents')
    wrong = hashlib.sha256(b'not the real thing').hexdigest()
    with pytest.raises(fmf.ChecksumMismatchError) as excinfo:
        fmf.download(base + TEST_LABELS, dest, fmf.SHA256[TEST_LABELS], progress=False)
    message = str(excinfo.value)
    assert TEST_LABELS in message and wrong in message and fmf.SHA256[TEST_LABELS] in message
    assert dest.read_bytes() == b'previous contents'  # never half-replaced
    assert _leftovers(dest.parent) == []


def test_connection_cut_mid_download(tmp_path):
    class Liar(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header('Content-Length', '100000')
            self.end_headers()
            self.wfile.write(b'x' * 1000)
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Liar)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    try:
        dest = tmp_path / 'out' / TEST_IMAGES
        with pytest.raises(Exception) as excinfo:
            fmf.download(f'http://127.0.0.1:{server.server_address[1]}/f', dest,
                         fmf.SHA256[TEST_IMAGES], progress=False)
        assert isinstance(excinfo.value, (OSError, fmf.http.client.HTTPException))
        assert not dest.exists() and _leftovers(dest.parent) == []
    finally:
        server.shutdown()
        server.server_close()


def test_wrong_bytes_from_mirror_are_rejected(tmp_path, monkeypatch):
    mirror = tmp_path / 'mirror'
    _tiny_split(mirror)  # valid IDX files, but not upstream's bytes
    monkeypatch.setenv('D2LMINI_FASHION_MNIST_URL', mirror.as_uri())
    with pytest.raises(fmf.DatasetNotFoundError) as excinfo:
        fmf.find_or_download(False, progress=False)
    assert 'ChecksumMismatchError' in str(excinfo.value)
    assert isinstance(excinfo.value.__cause__, fmf.ChecksumMismatchError)
    assert list(_cache(tmp_path).iterdir()) == []


# ------------------------------------------------------------ not found

def test_network_down_lists_everything(tmp_path, monkeypatch):
    port = _closed_port()
    monkeypatch.setenv('D2LMINI_FASHION_MNIST_URL', f'http://127.0.0.1:{port}')
    monkeypatch.setenv('D2LMINI_DATA', str(tmp_path / 'data'))
    (tmp_path / 'data').mkdir()
    (tmp_path / 'data' / TRAIN_IMAGES).write_bytes(b'')  # labels missing here
    root = tmp_path / 'root'
    with pytest.raises(fmf.DatasetNotFoundError) as excinfo:
        fmf.find_or_download(True, root=root, progress=False)
    message = str(excinfo.value)
    assert isinstance(excinfo.value, FileNotFoundError)
    for folder in fmf.search_dirs(root):
        assert f'{folder}  (' in message, folder
    assert f'{tmp_path / "data"}  ($D2LMINI_DATA): missing {TRAIN_LABELS}' in message
    assert 'does not exist' in message
    assert f'http://127.0.0.1:{port}/' in message
    assert 'Connection refused' in message or 'refused' in message.lower()
    assert str(excinfo.value.__cause__) in message
    assert 'D2LMINI_DATA' in message
    assert 'apt-get install dataset-fashion-mnist' in message
    assert 'internet' in message
    assert _leftovers(_cache(tmp_path)) == []
    assert not any(_cache(tmp_path).glob('*ubyte*'))


def test_download_disabled(tmp_path):
    with pytest.raises(fmf.DatasetNotFoundError) as excinfo:
        fmf.load(False, download=False)
    message = str(excinfo.value)
    assert 'download=False' in message and 'failed' not in message
    assert str(_cache(tmp_path)) in message and str(tmp_path / 'debian') in message
    assert 'Fashion-MNIST test set not found' in message
    assert not _cache(tmp_path).exists()
