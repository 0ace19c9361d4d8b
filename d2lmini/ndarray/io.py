"""``nd.save`` / ``nd.load``: a small, documented, pickle-free file format.

The file is a NumPy ``.npz`` archive (a zip of ``.npy`` files, readable by
any NumPy) holding one entry per array plus ``__d2lmini__.json``::

    {"format": "d2lmini-ndarray", "version": 1, "kind": "list" | "dict",
     "keys": [...]}          # entry i is stored as "arr_<i>.npy"

Arrays are saved in order; dict keys keep their order.  Files are written
to a temporary name and renamed, so a crash never leaves a half-written file.
Loading uses ``allow_pickle=False``: a file cannot run code.
"""
import io
import json
import os
import uuid
import zipfile

import numpy as np

from .ndarray import NDArray, array

__all__ = ['save', 'load']

_META = '__d2lmini__.json'


def save(fname, data):
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray."""
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        kind, keys, values = 'dict', list(data.keys()), list(data.values())
        for k in keys:
            if not isinstance(k, str):
                raise TypeError(f'nd.save: dict keys must be str, got {k!r}')
    elif isinstance(data, (list, tuple)):
        kind, keys, values = 'list', None, list(data)
    else:
        raise TypeError(f'nd.save expects an NDArray, list or dict, got {type(data).__name__}')
    for v in values:
        if not isinstance(v, NDArray):
            raise TypeError(f'nd.save: every value must be an NDArray, got {type(v).__name__}')
    meta = {'format': 'd2lmini-ndarray', 'version': 1, 'kind': kind, 'keys': keys,
            'count': len(values)}
    d, base = os.path.split(os.path.abspath(fname))
    tmp = os.path.join(d, f'.{base}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp')
    # os.open with 0o666 (not mkstemp's 0o600): the file honours the umask
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, 'wb') as f:
            with zipfile.ZipFile(f, 'w') as z:
                z.writestr(_META, json.dumps(meta))
                for i, v in enumerate(values):
                    buf = io.BytesIO()
                    np.save(buf, v.asnumpy(), allow_pickle=False)
                    z.writestr(f'arr_{i}.npy', buf.getvalue())
            f.flush()
            os.fsync(f.fileno())          # the bytes are on disk before the rename
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(fname, ctx=None):
    """Load what :func:`save` wrote: a list or a dict of NDArrays."""
    try:
        meta, arrays = _read(fname)
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, EOFError) as e:
        # OSError (missing file, permissions) passes through unchanged.
        raise ValueError(f'{fname}: not a valid d2lmini NDArray file (written by '
                         f'nd.save): {type(e).__name__}: {e}') from None
    values = [array(a, ctx=ctx, dtype=a.dtype) for a in arrays]
    if meta['kind'] == 'dict':
        return dict(zip(meta['keys'], values))
    return values


def _read(fname):
    with zipfile.ZipFile(fname) as z:
        try:
            meta = json.loads(z.read(_META))
        except KeyError:
            raise ValueError(f'no {_META} entry') from None
        if not isinstance(meta, dict) or meta.get('format') != 'd2lmini-ndarray' \
                or meta.get('version') != 1:
            raise ValueError(f'unsupported format {meta.get("format")!r} version '
                             f'{meta.get("version")!r}' if isinstance(meta, dict)
                             else 'bad header')
        if meta['kind'] not in ('list', 'dict') or (
                meta['kind'] == 'dict' and len(meta['keys']) != meta['count']):
            raise ValueError('inconsistent header')
        arrays = []
        for i in range(meta['count']):
            with z.open(f'arr_{i}.npy') as f:
                arrays.append(np.load(io.BytesIO(f.read()), allow_pickle=False))
    return meta, arrays
