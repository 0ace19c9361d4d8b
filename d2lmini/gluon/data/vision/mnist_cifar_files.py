"""Find, download and read MNIST and CIFAR as MXNet's Gluon datasets do.

MXNet keeps its own copies of these data sets in its repository,
``{repo}gluon/dataset/{namespace}/{file}``, where ``{repo}`` is
``$MXNET_GLUON_REPO`` or Apache's bucket, and checks each download against
the SHA-1 sum in its table (:data:`MNIST_FILES`, :data:`CIFAR10_FILES`,
:data:`CIFAR100_FILES`, copied from MXNet 1.9.1's ``gluon/data/vision/
datasets.py``).  The files live in ``root``, by default
``$MXNET_HOME/datasets/{namespace}`` (``~/.mxnet/datasets/mnist``...).

- MNIST: the four IDX files, ``train-images-idx3-ubyte.gz`` and so on,
  read by :mod:`.fashion_mnist_files` (a decompressed copy next to the
  ``.gz`` name is used as well).
- CIFAR-10 and CIFAR-100: one archive, ``cifar-10-binary.tar.gz``, whose
  binary batches (``data_batch_1.bin`` .. ``data_batch_5.bin`` and
  ``test_batch.bin``; ``train.bin`` and ``test.bin`` for CIFAR-100) are
  extracted into ``root``.  A record is one label byte (two for CIFAR-100:
  coarse, then fine) and 3,072 pixel bytes: the red 32 x 32 plane, then
  green, then blue, each row by row.

Downloads reuse Fashion-MNIST's downloader (a temporary file renamed into
place only when complete and with the right SHA-1, a progress bar).  As for
Fashion-MNIST, a file already on disk is checked by its structure (header,
size, label range) rather than by its hash, so that a good copy from
elsewhere works; MXNet instead re-downloads a file whose hash differs.
Without internet, the error says which file to put where.

>>> mnist_paths(root=None, train=False)                     # doctest: +SKIP
[PosixPath('/home/me/.mxnet/datasets/mnist/t10k-images-idx3-ubyte.gz'),
 PosixPath('/home/me/.mxnet/datasets/mnist/t10k-labels-idx1-ubyte.gz')]
"""
import gzip
import http.client
import os
import secrets
import shutil
import tarfile
import zlib
from pathlib import Path

import numpy as np

from ...utils import _get_repo_file_url
from . import fashion_mnist_files as _idx
from .fashion_mnist_files import CorruptDataError, DatasetNotFoundError

# The errors are Fashion-MNIST's, named here too for whoever catches them.
__all__ = ['MNIST_FILES', 'CIFAR10_FILES', 'CIFAR100_FILES', 'data_dir',
           'default_root', 'repo_file_url', 'fetch', 'mnist_paths',
           'cifar_paths', 'read_cifar_batch', 'CorruptDataError',
           'DatasetNotFoundError']

#: split -> ((file, sha1) of the images, (file, sha1) of the labels).
MNIST_FILES = {
    'train': (('train-images-idx3-ubyte.gz',
               '6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d'),
              ('train-labels-idx1-ubyte.gz',
               '2a80914081dc54586dbdf242f9805a6b8d2a15fc')),
    'test': (('t10k-images-idx3-ubyte.gz',
              'c3a25af1f52dad7f726cce8cacb138654b760d48'),
             ('t10k-labels-idx1-ubyte.gz',
              '763e7fa3757d93b0cdec073cef058b2004252c17')),
}

#: The archive, each split's batch files (with MXNet's sha1 sums), and the
#: label bytes of a record: (name, number of classes), in file order.
CIFAR10_FILES = {
    'namespace': 'cifar10', 'title': 'CIFAR-10',
    'archive': ('cifar-10-binary.tar.gz',
                'fab780a1e191a7eda0f345501ccd62d20f7ed891'),
    'train': [('data_batch_1.bin', 'aadd24acce27caa71bf4b10992e9e7b2d74c2540'),
              ('data_batch_2.bin', 'c0ba65cce70568cd57b4e03e9ac8d2a5367c1795'),
              ('data_batch_3.bin', '1dd00a74ab1d17a6e7d73e185b69dbf31242f295'),
              ('data_batch_4.bin', 'aab85764eb3584312d3c7f65fd2fd016e36a258e'),
              ('data_batch_5.bin', '26e2849e66a845b7f1e4614ae70f4889ae604628')],
    'test': [('test_batch.bin', '67eb016db431130d61cd03c7ad570b013799c88c')],
    'labels': (('label', 10),),
}
#: The same for CIFAR-100, whose records open with two label bytes.
CIFAR100_FILES = {
    'namespace': 'cifar100', 'title': 'CIFAR-100',
    'archive': ('cifar-100-binary.tar.gz',
                'a0bb982c76b83111308126cc779a992fa506b90b'),
    'train': [('train.bin', 'e207cd2e05b73b1393c74c7f5e7bea451d63e08e')],
    'test': [('test.bin', '8fb6623e830365ff53cf14adec797474f5478006')],
    'labels': (('coarse label', 20), ('fine label', 100)),
}

_PIXELS = 3 * 32 * 32


def data_dir():
    """MXNet's data folder: ``$MXNET_HOME``, else ``~/.mxnet``."""
    return os.path.expanduser(os.environ.get('MXNET_HOME') or
                              os.path.join('~', '.mxnet'))


def default_root(namespace):
    """``data_dir()/datasets/{namespace}``, MXNet's default ``root``."""
    return os.path.join(data_dir(), 'datasets', namespace)


def repo_file_url(namespace, name):
    """The URL of a data file in MXNet's repository (or its mirror,
    ``$MXNET_GLUON_REPO``; ``file:///some/folder/`` works too)."""
    return _get_repo_file_url(namespace, name)


def _exact(folder, name):
    return folder / name if (folder / name).is_file() else None


def fetch(root, namespace, name, sha1, what, progress=True, found=None):
    """The path of the file ``name`` in ``root``, downloaded from MXNet's
    repository (and checked against ``sha1``) if it is not there.

    ``found(folder, name)`` looks for it (default: the exact name); ``what``
    says what it is for the error (``'MNIST test set'``).

    Raises
    ------
    DatasetNotFoundError
        Not on disk, and the download failed (offline, or a wrong sha1); the
        message names the file, the folder, the URL and the fixes.
    """
    root = Path(root).expanduser()
    path = (found or _exact)(root, name)
    if path is not None:
        return path
    url = repo_file_url(namespace, name)
    try:
        return _idx.download(url, root / name, None, progress=progress, sha1=sha1)
    except (OSError, http.client.HTTPException, ValueError) as e:
        raise DatasetNotFoundError('\n'.join([
            f'{what}: {name} is not in {root}, and downloading it from {url} '
            f'failed ({type(e).__name__}: {e}).',
            'To fix this, do one of:',
            f'  - put {name} (sha1 {sha1}) in {root}, or pass root= naming '
            f'the folder that holds it;',
            f"  - set MXNET_GLUON_REPO to a mirror of MXNet's repository (a "
            f'folder works as file:///path/: it needs '
            f'gluon/dataset/{namespace}/{name});',
            '  - connect to the internet and run again.'])) from e


# === MNIST =====================================================================
def mnist_paths(root=None, train=True, progress=True):
    """The paths of one split's images and labels files in ``root``
    (default ``$MXNET_HOME/datasets/mnist``), downloading the missing ones.

    :func:`.fashion_mnist_files.read_split` reads them.
    """
    root = default_root('mnist') if root is None else root
    what = f'MNIST {"training" if train else "test"} set'
    return [fetch(root, 'mnist', name, sha1, what, progress, _idx.find_file)
            for name, sha1 in MNIST_FILES['train' if train else 'test']]


# === CIFAR =====================================================================
def read_cifar_batch(path, labels=CIFAR10_FILES['labels']):
    """Read one CIFAR binary batch file.

    Parameters
    ----------
    path : str or os.PathLike
    labels : tuple of (name, number of classes)
        The label bytes that open each record (CIFAR-10: one; CIFAR-100:
        coarse then fine).

    Returns
    -------
    images : numpy.ndarray
        ``uint8``, ``(N, 32, 32, 3)`` (height, width, channel), contiguous.
    label_columns : list of numpy.ndarray
        One ``int32`` array ``(N,)`` per label byte.

    Raises
    ------
    CorruptDataError
        The size is not a whole number of records, or a label is out of
        range; the message names the file and the byte offset.
    """
    path = Path(path)
    record = len(labels) + _PIXELS
    size = path.stat().st_size
    if size == 0 or size % record:
        raise _idx._corrupt(path, f'{size:,} bytes are not a whole number of '
                                  f'{record:,}-byte records: the record at byte '
                                  f'offset {size - size % record:,} is cut '
                                  f'short after {size % record:,} bytes')
    data = np.fromfile(path, np.uint8).reshape(-1, record)
    columns = []
    for col, (name, classes) in enumerate(labels):
        column = data[:, col].astype(np.int32)
        bad = np.flatnonzero(column >= classes)
        if bad.size:
            i = int(bad[0])
            raise _idx._corrupt(path, f'the {name} of record {i:,} is '
                                      f'{column[i]}, expected 0..{classes - 1} '
                                      f'(byte offset {i * record + col:,})')
        columns.append(column)
    planes = data[:, len(labels):].reshape(-1, 3, 32, 32)
    return np.ascontiguousarray(planes.transpose(0, 2, 3, 1)), columns


def _extract(archive, names, root):
    """Extract the members called ``names`` (wherever they sit in the
    archive) into ``root``, in one pass over it, each through a temporary
    file renamed into place; nothing else is written."""
    from d2lmini.limits import check_load_size
    done, where = set(), ''
    try:
        with tarfile.open(archive) as tar:
            for member in tar:
                where = (f' at or after {member.name} (its data starts at '
                         f'byte offset {member.offset_data:,} of the tar)')
                name = os.path.basename(member.name)
                if not member.isfile() or name not in names:
                    continue
                check_load_size(archive, member.size, f'its member {name}')
                part = root / f'.{name}.{secrets.token_hex(4)}.part'
                try:
                    with tar.extractfile(member) as src, open(part, 'xb') as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                    os.replace(part, root / name)
                finally:
                    if part.exists():
                        part.unlink()
                done.add(name)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise _idx._corrupt(archive, f'the archive is damaged{where} '
                                     f'({type(e).__name__}: {e})') from e
    missing = [name for name in names if name not in done]
    if missing:
        raise _idx._corrupt(archive, f'the archive has no {missing}')


def cifar_paths(spec=CIFAR10_FILES, root=None, train=True, progress=True):
    """The paths of one split's batch files of CIFAR-10 (``spec=
    CIFAR10_FILES``) or CIFAR-100 in ``root`` (default
    ``$MXNET_HOME/datasets/cifar10``).

    If one of them is missing, the archive is fetched (downloaded unless
    it is in ``root`` already) and the split's files are extracted from it.
    """
    root = Path(default_root(spec['namespace']) if root is None else root)
    paths = [root.expanduser() / name
             for name, _ in spec['train' if train else 'test']]
    if not all(path.is_file() for path in paths):
        what = f'{spec["title"]} {"training" if train else "test"} set'
        archive = fetch(root, spec['namespace'], *spec['archive'], what,
                        progress)
        _extract(archive, [path.name for path in paths], paths[0].parent)
    return paths
