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
import tempfile
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
    d = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(fname), dir=d)
    try:
        with os.fdopen(fd, 'wb') as f, zipfile.ZipFile(f, 'w') as z:
            z.writestr(_META, json.dumps(meta))
            for i, v in enumerate(values):
                buf = io.BytesIO()
                np.save(buf, v.asnumpy(), allow_pickle=False)
                z.writestr(f'arr_{i}.npy', buf.getvalue())
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(fname, ctx=None):
    """Load what :func:`save` wrote: a list or a dict of NDArrays."""
    try:
        z = zipfile.ZipFile(fname)
    except zipfile.BadZipFile:
        raise ValueError(f'{fname}: not a d2lmini NDArray file (not a zip archive)') from None
    with z:
        try:
            meta = json.loads(z.read(_META))
        except KeyError:
            raise ValueError(f'{fname}: not a d2lmini NDArray file (no {_META})') from None
        if meta.get('format') != 'd2lmini-ndarray' or meta.get('version') != 1:
            raise ValueError(f'{fname}: unsupported format {meta.get("format")!r} '
                             f'version {meta.get("version")!r}')
        values = []
        for i in range(meta['count']):
            with z.open(f'arr_{i}.npy') as f:
                a = np.load(io.BytesIO(f.read()), allow_pickle=False)
            values.append(array(a, ctx=ctx, dtype=a.dtype))
    if meta['kind'] == 'dict':
        return dict(zip(meta['keys'], values))
    return values
