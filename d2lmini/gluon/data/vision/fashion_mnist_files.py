"""Locate, download and parse the Fashion-MNIST IDX files.

Why one long file: it is self-contained on purpose (see below), so its
three jobs (finding the files, downloading them with checksums and a
progress bar, parsing and checking the IDX format) live side by side.

This module is deliberately self-contained (standard library and NumPy only;
``tqdm`` is imported lazily for the download progress bar, and
:mod:`d2lmini.limits` when a gzip file is inflated) so that it can be used
and tested without the rest of ``d2lmini``.  It knows nothing about
``NDArray`` or ``Dataset``; it hands plain NumPy arrays to whoever wraps it.
Its downloader (:func:`download`, sha256 or sha1) and IDX reader
(:func:`read_split`) also serve MNIST and CIFAR (:mod:`.mnist_cifar_files`)
and ``mx.io.MNISTIter``.

Where the files are looked for, in this order (see :func:`search_dirs`):

1. the ``root`` argument, if given (the folder itself, then its
   ``fashion-mnist/`` subfolder);
2. ``$D2LMINI_DATA`` (the folder itself, then its ``fashion-mnist/``
   subfolder);
3. the user cache, ``$D2LMINI_HOME/data/fashion-mnist`` where
   ``$D2LMINI_HOME`` defaults to ``~/.d2lmini`` (see :func:`cache_dir`);
4. ``/usr/share/datasets/fashion-mnist``, where Debian's
   ``dataset-fashion-mnist`` package installs the files.

A folder counts only if it holds both files of the requested split, each
either gzip-compressed (``train-images-idx3-ubyte.gz``) or already
decompressed (``train-images-idx3-ubyte``).  If no folder does, the files are
downloaded into the user cache from :data:`URL_BASE` (or from
``$D2LMINI_FASHION_MNIST_URL``, e.g. a mirror or a ``file://`` folder).

Environment variables (read only by this module, at call time):

``D2LMINI_DATA``
    A folder holding the four files (or a ``fashion-mnist/`` subfolder).
``D2LMINI_HOME``
    Base of the user cache; default ``~/.d2lmini``.
``D2LMINI_FASHION_MNIST_URL``
    Base URL to download from instead of :data:`URL_BASE`.

A gzip-compressed file is inflated only as far as its IDX header declares,
and a header that declares more than the load limit of
:mod:`d2lmini.limits` (4 GiB, or ``$D2LMINI_MAX_LOAD_BYTES``) is refused
before anything is inflated: a small file cannot make the reader allocate
gigabytes.

Only downloads are checked against :data:`SHA256`.  Files found on disk are
validated structurally by the IDX parser instead, because equally valid
copies differ byte-wise: Debian's package rewrote the gzip headers, so all
four of its ``.gz`` files hash differently from upstream's while holding the
same data, and decompressed copies have no published hash at all.

Examples
--------
>>> images, labels = load(train=False)                      # doctest: +SKIP
>>> images.shape, images.dtype, labels[:3]                  # doctest: +SKIP
((10000, 28, 28), dtype('uint8'), array([9, 2, 1], dtype=int32))
>>> [TEXT_LABELS[i] for i in labels[:3]]                    # doctest: +SKIP
['ankle boot', 'pullover', 'trouser']
"""

import gzip
import hashlib
import http.client
import os
import secrets
import struct
import sys
import urllib.request
import zlib
from pathlib import Path

import numpy as np

__all__ = [
    'FILES', 'SHA256', 'URL_BASE', 'TEXT_LABELS', 'DEBIAN_DIR',
    'CorruptDataError', 'ChecksumMismatchError', 'DatasetNotFoundError',
    'url_base', 'cache_dir', 'search_dirs', 'find_file', 'find_or_download',
    'download', 'read_idx_images', 'read_idx_labels', 'read_split', 'load',
]

#: split -> (images file name, labels file name), as published upstream.
FILES = {
    'train': ('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz'),
    'test': ('t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'),
}

#: file name -> sha256 of the upstream ``.gz`` file (zalandoresearch/fashion-mnist).
SHA256 = {
    'train-images-idx3-ubyte.gz':
        '3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84',
    'train-labels-idx1-ubyte.gz':
        'a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845',
    't10k-images-idx3-ubyte.gz':
        '346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073',
    't10k-labels-idx1-ubyte.gz':
        '67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5',
}

#: Upstream's canonical download location.  It is plain HTTP (the S3 website
#: endpoint offers no HTTPS); integrity comes from :data:`SHA256`.
URL_BASE = 'http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/'

#: Class names indexed by label, spelled as in the d2l book.
TEXT_LABELS = ['t-shirt', 'trouser', 'pullover', 'dress', 'coat',
               'sandal', 'shirt', 'sneaker', 'bag', 'ankle boot']

#: Where Debian's ``dataset-fashion-mnist`` package installs the files.
DEBIAN_DIR = Path('/usr/share/datasets/fashion-mnist')

IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension
NUM_CLASSES = len(TEXT_LABELS)

_GZIP_MAGIC = b'\x1f\x8b'
_CHUNK = 1 << 16


class CorruptDataError(ValueError):
    """A data file exists but its contents are not what they should be."""


class ChecksumMismatchError(CorruptDataError):
    """A downloaded file's sha256 differs from the published one."""


class DatasetNotFoundError(FileNotFoundError):
    """The files are nowhere on disk and could not be downloaded."""


def url_base():
    """Return the base URL downloads come from.

    Returns
    -------
    str
        ``$D2LMINI_FASHION_MNIST_URL`` if set and non-empty, else
        :data:`URL_BASE`; always ending in ``/``.

    Examples
    --------
    >>> url_base()                                          # doctest: +SKIP
    'http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/'
    """
    base = os.environ.get('D2LMINI_FASHION_MNIST_URL') or URL_BASE
    return base.rstrip('/') + '/'


def cache_dir():
    """Return the user cache folder that downloads go to.

    Returns
    -------
    pathlib.Path
        ``$D2LMINI_HOME/data/fashion-mnist``, with ``$D2LMINI_HOME``
        defaulting to ``~/.d2lmini``.  It may not exist yet.

    Examples
    --------
    >>> cache_dir()                                         # doctest: +SKIP
    PosixPath('/home/me/.d2lmini/data/fashion-mnist')
    """
    home = os.environ.get('D2LMINI_HOME')
    base = Path(home).expanduser() if home else Path.home() / '.d2lmini'
    return base / 'data' / 'fashion-mnist'


def _search_places(root=None):
    """Return ``[(folder, why it is searched), ...]`` in search order."""
    places = []
    if root is not None:
        root = Path(root).expanduser()
        places += [(root, 'root argument'),
                   (root / 'fashion-mnist', 'root argument')]
    env = os.environ.get('D2LMINI_DATA')
    if env:
        env = Path(env).expanduser()
        places += [(env, '$D2LMINI_DATA'),
                   (env / 'fashion-mnist', '$D2LMINI_DATA')]
    places.append((cache_dir(), 'user cache'))
    places.append((Path(DEBIAN_DIR), 'Debian package dataset-fashion-mnist'))
    # The same folder can be reached twice (say $D2LMINI_DATA is the cache);
    # searching it again would only lengthen the error message.
    seen, unique = set(), []
    for folder, why in places:
        key = os.path.normpath(os.path.abspath(folder))
        if key not in seen:
            seen.add(key)
            unique.append((folder, why))
    return unique


def search_dirs(root=None):
    """Return the folders searched for the files, in search order.

    Parameters
    ----------
    root : str or os.PathLike, optional
        A folder to search before all others (it and its ``fashion-mnist/``
        subfolder).

    Returns
    -------
    list of pathlib.Path
        ``root``, ``root/fashion-mnist``, ``$D2LMINI_DATA``,
        ``$D2LMINI_DATA/fashion-mnist``, :func:`cache_dir`, then
        :data:`DEBIAN_DIR`; unset entries and duplicates left out.  The
        folders need not exist.

    Examples
    --------
    >>> search_dirs('/data')                                # doctest: +SKIP
    [PosixPath('/data'), PosixPath('/data/fashion-mnist'),
     PosixPath('/home/me/.d2lmini/data/fashion-mnist'),
     PosixPath('/usr/share/datasets/fashion-mnist')]
    """
    return [folder for folder, _ in _search_places(root)]


def _split_files(train):
    return FILES['train' if train else 'test']


def find_file(folder, gz_name):
    """Return the compressed or decompressed copy of ``gz_name`` in ``folder``
    (a ``pathlib.Path``), or None."""
    for name in (gz_name, gz_name[:-len('.gz')]):
        path = folder / name
        if path.is_file():
            return path
    return None


def _describe(folder, names):
    """Say why ``folder`` did not qualify, for the not-found message."""
    if not folder.is_dir():
        return 'does not exist'
    missing = [n for n in names if find_file(folder, n) is None]
    return 'missing ' + ' and '.join(missing)


def find_or_download(train, root=None, download=True, *, progress=True):
    """Return the paths of one split's images and labels files.

    The folders of :func:`search_dirs` are tried in order and the first that
    holds both files wins.  Failing that, and if ``download`` is true, the
    missing files are downloaded into :func:`cache_dir`.

    Parameters
    ----------
    train : bool
        True for the 60,000 training examples, False for the 10,000 test ones.
    root : str or os.PathLike, optional
        A folder to search first (downloads still go to the user cache).
    download : bool, default True
        Whether to download when the files are not found on disk.
    progress : bool, default True
        Whether to show a progress bar while downloading.

    Returns
    -------
    images_path, labels_path : pathlib.Path
        Either may be gzip-compressed or not; the readers handle both.

    Raises
    ------
    DatasetNotFoundError
        A ``FileNotFoundError`` raised when the files are not found and
        downloading is disabled or fails.  Its message lists every folder
        searched, the download error if any, and the ways to fix it.

    Examples
    --------
    >>> find_or_download(train=True)                        # doctest: +SKIP
    (PosixPath('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz'),
     PosixPath('/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz'))
    """
    names = _split_files(train)
    places = _search_places(root)
    for folder, _ in places:
        found = [find_file(folder, name) for name in names]
        if None not in found:
            return tuple(found)

    failure = None
    if download:
        try:
            return _download_split(names, progress)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            failure = exc

    raise DatasetNotFoundError(
        _not_found_message(train, names, places, download, failure)) from failure


def _download_split(names, progress):
    """Download whichever of ``names`` the user cache lacks; return both paths."""
    target, base = cache_dir(), url_base()
    for name in names:
        # A file already in the cache is complete (downloads only ever appear
        # there by atomic rename), so only the missing one is fetched.
        if find_file(target, name) is None:
            download(base + name, target / name, SHA256[name], progress=progress)
    return tuple(find_file(target, name) for name in names)


def _not_found_message(train, names, places, download, failure):
    split = 'training' if train else 'test'
    lines = [f'Fashion-MNIST {split} set not found: need {names[0]} and '
             f'{names[1]} (gzip-compressed or not) in one folder.',
             'Looked in, in this order:']
    for i, (folder, why) in enumerate(places, 1):
        lines.append(f'  {i}. {folder}  ({why}): {_describe(folder, names)}')
    if not download:
        lines.append('Downloading was not attempted (download=False).')
    else:
        lines.append(f'Downloading from {url_base()} into {cache_dir()} '
                     f'failed: {type(failure).__name__}: {failure}')
    lines += [
        'To fix this, do one of:',
        '  - put the files in a folder and set D2LMINI_DATA to it '
        '(or pass root=...);',
        '  - on Debian or Ubuntu: sudo apt-get install dataset-fashion-mnist;',
        '  - connect to the internet and run again (downloads go to '
        f'{cache_dir()}; set D2LMINI_FASHION_MNIST_URL to use a mirror).',
    ]
    return '\n'.join(lines)


def download(url, dest_path, sha256, progress=True, timeout=30.0, *,
             sha1=None):
    """Download ``url`` to ``dest_path``, verifying its sha256 (or sha1).

    The data is streamed into a hidden temporary file next to ``dest_path``
    and hashed on the way; only a complete file with the right hash is
    renamed into place, atomically, so ``dest_path`` is never half-written
    and the temporary file is removed on any failure (interrupts included).

    Parameters
    ----------
    url : str
        Any URL ``urllib`` can open (``http://``, ``https://``, ``file://``).
    dest_path : str or os.PathLike
        Where the file should end up; parent folders are created.
    sha256 : str or None
        Expected hex digest; None skips the check.
    progress : bool, default True
        Show a ``tqdm`` progress bar on stderr (silently none if ``tqdm`` is
        not installed).
    timeout : float, default 30.0
        Seconds to wait for the connection and for each read.
    sha1 : str, optional
        Expected sha1 hex digest, checked as well (MXNet publishes sha1
        sums for its copies of MNIST and CIFAR).

    Returns
    -------
    pathlib.Path
        ``dest_path``.

    Raises
    ------
    ChecksumMismatchError
        The downloaded bytes hash differently; names the file and both
        digests.
    OSError, http.client.HTTPException
        Network or disk trouble (``urllib.error.URLError`` is an ``OSError``).

    Examples
    --------
    >>> download(url_base() + 't10k-labels-idx1-ubyte.gz',
    ...          cache_dir() / 't10k-labels-idx1-ubyte.gz',
    ...          SHA256['t10k-labels-idx1-ubyte.gz'])      # doctest: +SKIP
    PosixPath('/home/me/.d2lmini/data/fashion-mnist/t10k-labels-idx1-ubyte.gz')
    """
    dest = Path(dest_path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Same folder as the destination so that os.replace is an atomic rename;
    # a random name so that concurrent downloads cannot clobber each other.
    tmp = dest.with_name(f'.{dest.name}.{secrets.token_hex(4)}.part')
    bar = None
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, \
                open(tmp, 'xb') as out:
            length = response.headers.get('Content-Length')
            total = int(length) if length and length.isdigit() else None
            if progress:
                bar = _progress_bar(total, dest.name)
            digests = {name: (hashlib.new(name), want.lower())
                       for name, want in (('sha256', sha256), ('sha1', sha1))
                       if want is not None}
            received = 0
            while True:
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                for digest, _ in digests.values():
                    digest.update(chunk)
                out.write(chunk)
                received += len(chunk)
                if bar is not None:
                    bar.update(len(chunk))
            if total is not None and received != total:
                raise OSError(f'download of {url} ended after {received} of '
                              f'{total} bytes')
            out.flush()
            # Without this a crash right after the rename could leave a
            # correctly named file with missing contents.
            os.fsync(out.fileno())
        for name, (digest, want) in digests.items():
            if digest.hexdigest() != want:
                raise ChecksumMismatchError(
                    f'{dest.name} downloaded from {url} has {name} '
                    f'{digest.hexdigest()}, expected {want}; the download was '
                    'discarded. The server or a proxy on the way sent '
                    'different data; try again or use another mirror.')
        os.replace(tmp, dest)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    finally:
        if bar is not None:
            bar.close()
    return dest


def _progress_bar(total, name):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit='B', unit_scale=True, unit_divisor=1024,
                desc=name, file=sys.stderr)


def _corrupt(path, problem):
    return CorruptDataError(
        f'{path}: {problem}. The file is damaged or not the expected data '
        'file (an interrupted copy or download?); delete it and run again to '
        're-download it, or replace it with a good copy.')


def _read_maybe_gzip(path):
    """``(data, extra, more, gzipped)``: the file's bytes, gunzipped if it
    starts with the gzip magic; for a gzip file, ``data`` stops where its
    IDX header says the data ends, ``extra`` counts the bytes after that
    (not kept), and ``more`` says there are more than were counted."""
    path = Path(path)
    with open(path, 'rb') as f:
        if f.read(2) == _GZIP_MAGIC:
            f.seek(0)
            try:
                with gzip.GzipFile(fileobj=f) as g:
                    return _gunzip_idx(path, g) + (True,)
            except (EOFError, OSError, zlib.error) as exc:
                size = os.fstat(f.fileno()).st_size
                raise _corrupt(path, f'gzip data is damaged near byte offset '
                                     f'{f.tell():,} of {size:,} ({exc})') from exc
        # A bytearray lets the arrays built on it be writable without a copy.
        f.seek(0)
        buf = bytearray(os.fstat(f.fileno()).st_size)
        del buf[f.readinto(buf):]
        return buf, 0, False, False


def _gunzip_idx(path, g):
    # Inflate the header, then as many bytes as it declares (if the load
    # limit allows them), then count what follows without keeping it, up
    # to as much again: reading to the end is what checks the CRC.
    data = bytearray(g.read(4))
    if len(data) < 4 or struct.unpack('>I', data)[0] not in (IMAGES_MAGIC,
                                                            LABELS_MAGIC):
        return data, 0, False            # _parse_idx says what is wrong
    ndim = data[3]                       # 3 for images, 1 for labels
    data += g.read(4 * ndim)
    if len(data) < 4 + 4 * ndim:
        return data, 0, False            # header cut short
    dims = struct.unpack(f'>{ndim}I', data[4:])
    declared = len(data) + _prod(dims)
    from d2lmini.limits import check_load_size   # the package's one limit
    check_load_size(path, declared, f'its IDX header ({" x ".join(map(str, dims))})',
                    stored=os.fstat(g.fileobj.fileno()).st_size)
    step = 1 << 20
    while len(data) < declared:
        chunk = g.read(min(step, declared - len(data)))
        if not chunk:
            return data, 0, False        # truncated: _parse_idx says so
        data += chunk
    extra = 0
    while extra <= declared:
        chunk = g.read(step)
        if not chunk:
            return data, extra, False
        extra += len(chunk)
    return data, extra, True


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _parse_idx(path, expected_magic, what):
    """Check an IDX file's header against its size; return (buffer, dims, offset)."""
    data, extra, more, gzipped = _read_maybe_gzip(path)
    where = ' of the gunzipped data' if gzipped else ''
    if len(data) < 4:
        raise _corrupt(path, f'only {len(data)} bytes{where}, too short for '
                             f'the IDX magic number at byte offset 0')
    (magic,) = struct.unpack('>I', data[:4])
    if magic != expected_magic:
        hint = ''
        if magic in (IMAGES_MAGIC, LABELS_MAGIC):
            other = 'an images' if magic == IMAGES_MAGIC else 'a labels'
            hint = f' (that is {other} file; were the files mixed up?)'
        raise _corrupt(path, f'magic number is {magic} (0x{magic:08x}, bytes '
                             f'{bytes(data[:4])!r} at byte offset 0{where}), '
                             f'expected {expected_magic} for {what}{hint}')
    ndim = magic & 0xFF
    offset = 4 + 4 * ndim
    if len(data) < offset:
        raise _corrupt(path, f'header cut short: it ends at byte offset '
                             f'{len(data)}{where}, and its {ndim} sizes need '
                             f'bytes 4 to {offset}')
    dims = struct.unpack(f'>{ndim}I', data[4:offset])
    expected = _prod(dims)
    actual = len(data) - offset + extra
    if actual != expected:
        shape = ' x '.join(map(str, dims))
        problem = 'truncated' if actual < expected else 'has trailing bytes'
        raise _corrupt(path, f'{problem}: header declares {shape} = {expected:,} '
                             f'data bytes but {"more than " if more else ""}'
                             f'{actual:,} follow (the data starts at byte '
                             f'offset {offset}{where} and should end at '
                             f'offset {offset + expected:,}, not '
                             f'{offset + actual:,})')
    return data, dims, offset


def read_idx_images(path):
    """Read an IDX image file (magic 2051), gzip-compressed or not.

    Compression is detected from the gzip magic bytes, not the file name.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    numpy.ndarray
        Writable ``uint8`` array of shape ``(N, rows, cols)`` with values
        0..255; ``(N, 28, 28)`` for Fashion-MNIST.

    Raises
    ------
    CorruptDataError
        A ``ValueError`` naming the file and the problem: damaged gzip data,
        wrong magic number, or a payload that disagrees with the header.

    Examples
    --------
    >>> read_idx_images(cache_dir() / 't10k-images-idx3-ubyte.gz').shape
    ...                                                     # doctest: +SKIP
    (10000, 28, 28)
    """
    data, (n, rows, cols), offset = _parse_idx(path, IMAGES_MAGIC, 'images')
    images = np.frombuffer(data, np.uint8, n * rows * cols, offset)
    images = images.reshape(n, rows, cols)
    # gunzipped data arrives as immutable bytes; callers may normalise in place.
    return images if images.flags.writeable else images.copy()


def read_idx_labels(path):
    """Read an IDX label file (magic 2049), gzip-compressed or not.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    numpy.ndarray
        ``int32`` array of shape ``(N,)`` (as MXNet's Gluon datasets return
        labels); values are not range-checked here, :func:`load` does that.

    Raises
    ------
    CorruptDataError
        As for :func:`read_idx_images`.

    Examples
    --------
    >>> read_idx_labels(cache_dir() / 't10k-labels-idx1-ubyte.gz')[:3]
    ...                                                     # doctest: +SKIP
    array([9, 2, 1], dtype=int32)
    """
    data, (n,), offset = _parse_idx(path, LABELS_MAGIC, 'labels')
    return np.frombuffer(data, np.uint8, n, offset).astype(np.int32)


def load(train, root=None, download=True, *, progress=True):
    """Find (or download) and read one split of Fashion-MNIST.

    Parameters
    ----------
    train : bool
        True for the 60,000 training examples, False for the 10,000 test ones.
    root : str or os.PathLike, optional
        A folder to search first; see :func:`find_or_download`.
    download : bool, default True
        Whether to download when the files are not found on disk.
    progress : bool, default True
        Whether to show a progress bar while downloading.

    Returns
    -------
    images : numpy.ndarray
        ``uint8``, shape ``(N, 28, 28)``, values 0..255 (no channel axis).
    labels : numpy.ndarray
        ``int32``, shape ``(N,)``, values 0..9; see :data:`TEXT_LABELS`.

    Raises
    ------
    DatasetNotFoundError
        See :func:`find_or_download`.
    CorruptDataError
        A file is damaged, the images are not 28 x 28, the labels are out of
        range, or the two files hold different numbers of examples.

    Examples
    --------
    >>> images, labels = load(train=True)                   # doctest: +SKIP
    >>> images.shape, labels.shape, TEXT_LABELS[labels[0]]  # doctest: +SKIP
    ((60000, 28, 28), (60000,), 'ankle boot')
    """
    images_path, labels_path = find_or_download(train, root, download,
                                                progress=progress)
    return read_split(images_path, labels_path)


def read_split(images_path, labels_path, image_shape=(28, 28),
               num_classes=NUM_CLASSES):
    """Read an images file and its labels file, and check that they agree.

    Parameters
    ----------
    images_path, labels_path : str or os.PathLike
        IDX files, gzip-compressed or not.
    image_shape : tuple or None, default (28, 28)
        The ``(rows, cols)`` every image must have; None accepts any.
    num_classes : int or None, default 10
        Labels must be in ``0 .. num_classes - 1``; None accepts any.

    Returns
    -------
    images, labels : numpy.ndarray
        As :func:`read_idx_images` and :func:`read_idx_labels` return them.

    Raises
    ------
    CorruptDataError
        A file is damaged, the images have another shape, a label is out of
        range (its byte offset is named), or the counts differ.
    """
    images = read_idx_images(images_path)
    labels = read_idx_labels(labels_path)
    if image_shape is not None and images.shape[1:] != tuple(image_shape):
        raise _corrupt(images_path, f'images are {images.shape[1]} x '
                                    f'{images.shape[2]}, expected '
                                    f'{image_shape[0]} x {image_shape[1]}')
    if len(images) != len(labels):
        raise CorruptDataError(
            f'{images_path} holds {len(images):,} images but {labels_path} '
            f'holds {len(labels):,} labels; the two files do not belong '
            'together. Delete the wrong one and run again to re-download it.')
    if num_classes is not None and len(labels) and labels.max() >= num_classes:
        first = int(np.argmax(labels >= num_classes))
        raise _corrupt(labels_path, f'labels range over {labels.min()}..'
                                    f'{labels.max()}, expected 0..'
                                    f'{num_classes - 1}; the first out of range '
                                    f'is {labels[first]}, at byte offset '
                                    f'{8 + first:,} (of the gunzipped data, '
                                    f'if the file is compressed)')
    return images, labels
