"""``nd.save`` / ``nd.load``: MXNet 1.x's binary NDArray file format (the
module is ``ndarray/utils.py``, where MXNet 1.x keeps them).

Files move both ways between MXNet and d2lmini (``net.params`` included).
The format, read from MXNet's ``NDArray::Save`` (``src/ndarray/ndarray.cc``)
and dmlc's serializer; every integer little-endian::

    file    := u64 0x112 | u64 0 (reserved)
               | u64 n | array * n
               | u64 k | (u64 len | utf-8 bytes) * k     # k = 0: a list
    array   := u32 magic 0xF993FAC9 (V2) | i32 storage type (0: dense)
               | i32 ndim | i64 dim * ndim
               | i32 dev_type (1 cpu, 2 gpu) | i32 dev_id
               | i32 dtype flag | raw C-order data

    dtype flags: 0 float32, 1 float64, 2 float16, 3 uint8, 4 int32,
                 5 int8, 6 int64, 7 bool, 8 int16, 9 uint16, 10 uint32,
                 11 uint64

Legacy MXNet arrays are read too: V1 (magic 0xF993FAC8, same shape
encoding) and V0 (no magic: u32 ndim, then u32 dims).  In MXNet 1.x a
shape of ndim 0 means "no array", so a file holding a 0-d array is written
with the V3 magic 0xF993FACA on every record (MXNet's NumPy-shape
semantics, where ndim 0 is a scalar: MXNet loads it inside
``mx.util.np_shape(True)``).  d2lmini's earlier ``.npz`` files still load.

Writes go to a temporary name that is renamed into place, so a crash never
leaves a half-written file.  Nothing here unpickles: a file cannot run code.

Reading allocates nothing a file does not justify.  An array whose shape
and dtype ask for more bytes than are left in the file is refused (the
MXNet format is stored uncompressed, so a load allocates about the file's
size).  The legacy ``.npz`` files are compressed, so their declared sizes
(the zip members' headers, each ``.npy`` header's shape and dtype) are
checked against the load limit of :mod:`d2lmini.limits` (4 GiB, or
``$D2LMINI_MAX_LOAD_BYTES``) before anything is inflated.
"""
import io
import json
import math
import os
import struct
import uuid
import zipfile

import numpy as np

from .. import backend, engine
from ..context import Context, cpu
from ..limits import LoadLimitError, check_load_size
from .ndarray import NDArray, array

__all__ = ['save', 'load', 'load_frombuffer']
NOT_SYMBOLIC = tuple(__all__)     # files, not graph nodes (mx.sym.load is a Symbol's)

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA

DTYPES = ['float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64',
          'bool', 'int16', 'uint16', 'uint32', 'uint64']
_FLAG_OF = {np.dtype(d): i for i, d in enumerate(DTYPES)}
_DEV_TYPE = {'cpu': 1, 'gpu': 2}


class NDArrayFileError(engine.MXNetError, ValueError):
    """A file or buffer that is not a valid NDArray file (corrupt, truncated)."""


# --- writing ---------------------------------------------------------------------------
def _pack_array(arr, out, magic):
    """Append ``arr``'s record (``magic``: V2, or V3 for NumPy shapes) to ``out``."""
    flag = _FLAG_OF.get(arr._dtype)
    if flag is None:
        raise TypeError(f'nd.save: dtype {arr._dtype} has no MXNet type flag '
                        f'(supported: {", ".join(DTYPES)})')
    shape = arr.shape
    ctx = arr.context
    out.append(struct.pack('<Iii', magic, 0, len(shape)))
    out.append(struct.pack(f'<{len(shape)}q', *shape))
    out.append(struct.pack('<iii', _DEV_TYPE[ctx.device_type], ctx.device_id, flag))
    # asnumpy is a C-order copy; the file is little-endian whatever the host
    out.append(arr.asnumpy().astype(arr._dtype.newbyteorder('<'), copy=False).tobytes())


def _check(data):
    """``data`` as (values, names or None), with MXNet's type checks."""
    if isinstance(data, NDArray):
        return [data], None
    if isinstance(data, dict):
        for k, v in data.items():
            if not isinstance(k, str):
                raise TypeError(f'nd.save: dict keys must be str, got {k!r}')
            if not isinstance(v, NDArray):
                raise TypeError(f'nd.save: value of {k!r} must be an NDArray, got '
                                f'{type(v).__name__}')
        return list(data.values()), list(data.keys())
    if isinstance(data, (list, tuple)):
        for v in data:
            if not isinstance(v, NDArray):
                raise TypeError(f'nd.save: every value must be an NDArray, got '
                                f'{type(v).__name__}')
        return list(data), None
    raise TypeError(f'nd.save expects an NDArray, a list of NDArrays or a dict '
                    f'str -> NDArray, got {type(data).__name__}')


def _magic(values):
    # MXNet refuses a file that mixes V2 and V3 records, so one 0-d array
    # puts the whole file in V3 (``with mx.util.np_shape(True)`` loads it).
    return V3_MAGIC if any(not v.shape for v in values) else V2_MAGIC


def dumps(data, magic=None):
    """The bytes :func:`save` writes for ``data`` (what ``load_frombuffer``
    reads); ``magic=V3_MAGIC`` writes NumPy-shape records (``npx.save``)."""
    values, names = _check(data)
    out = [struct.pack('<QQQ', LIST_MAGIC, 0, len(values))]
    magic = magic or _magic(values)
    for v in values:
        _pack_array(v, out, magic)
    names = names or []
    out.append(struct.pack('<Q', len(names)))
    for k in names:
        b = k.encode('utf-8')
        out.append(struct.pack('<Q', len(b)))
        out.append(b)
    return b''.join(out)


def save(fname, data):
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray.

    The file is in MXNet 1.x's format: ``mxnet.nd.load`` reads it, and
    :func:`load` reads MXNet's files.  A single NDArray is saved as a list
    of one, and an empty dict as an empty list (as in MXNet).

    >>> nd.save('x.params', {'w': nd.ones((2, 3))})
    >>> nd.load('x.params')['w'].shape
    (2, 3)
    """
    write_file(fname, dumps(data))         # every check before the file is touched


def write_file(fname, blob):
    """Write ``blob`` to ``fname`` through a temporary name renamed into place."""
    fname = os.fspath(fname)
    d, base = os.path.split(os.path.abspath(fname))
    tmp = os.path.join(d, f'.{base}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp')
    # os.open with 0o666 (not mkstemp's 0o600): the file honours the umask
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())           # the bytes are on disk before the rename
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --- reading ---------------------------------------------------------------------------
class _Reader:
    """Sequential little-endian reads from ``buf`` that fail clearly at its end."""

    def __init__(self, buf):
        self.buf, self.pos = memoryview(buf), 0

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError(f'truncated at byte {self.pos} reading {what} '
                             f'({n} bytes wanted, {len(self.buf) - self.pos} left)')
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))


def _read_shape(r, magic):
    if magic in (V1_MAGIC, V2_MAGIC, V3_MAGIC):
        (ndim,) = r.unpack('<i', 'ndim')
        if ndim < 0 or ndim > 32:
            raise ValueError(f'bad ndim {ndim}')
        return r.unpack(f'<{ndim}q', 'shape')
    if magic > 32:                         # V0: the magic is the ndim
        raise ValueError(f'unknown array magic 0x{magic:08X}')
    return r.unpack(f'<{magic}I', 'shape')


def _read_array(r, i):
    """One array record: (NumPy array or None for "no array", device type, id)."""
    (magic,) = r.unpack('<I', f'array {i} magic')
    if magic in (V2_MAGIC, V3_MAGIC):
        (stype,) = r.unpack('<i', 'storage type')
        if stype != 0:
            raise ValueError(f'array {i} has sparse storage type {stype}, which '
                             f'd2lmini does not support')
    shape = _read_shape(r, magic)
    if any(s < 0 for s in shape):
        raise ValueError(f'array {i}: negative dimension in shape {shape}')
    if not shape and magic != V3_MAGIC:
        return np.zeros((0,), np.float32), 1, 0    # MXNet's "none" array
    dev_type, dev_id, flag = r.unpack('<iii', f'array {i} context and dtype')
    if not 0 <= flag < len(DTYPES):
        raise ValueError(f'array {i}: unknown dtype flag {flag}')
    dtype = np.dtype(DTYPES[flag]).newbyteorder('<')
    n = math.prod(shape)                   # exact: no int64 overflow
    left = len(r.buf) - r.pos
    if n * dtype.itemsize > left:
        raise ValueError(f'array {i} declares shape {tuple(shape)} of {dtype.name}, '
                         f'{n * dtype.itemsize:,} bytes, but only {left:,} bytes are '
                         f'left in the file (truncated, or not an NDArray file)')
    data = r.take(n * dtype.itemsize, f'array {i} data ({n} x {dtype.name})')
    a = np.frombuffer(data, dtype).astype(DTYPES[flag]).reshape(shape)
    return a, dev_type, dev_id


def _parse(buf):
    """(list of (array, dev_type, dev_id), names or None) from MXNet bytes."""
    r = _Reader(buf)
    header, _reserved = r.unpack('<QQ', 'header')
    if header != LIST_MAGIC:
        raise ValueError(f'bad header 0x{header:X} (an NDArray file starts with 0x112)')
    (n,) = r.unpack('<Q', 'array count')
    if n > len(buf):
        raise ValueError(f'bad array count {n}')
    arrays = [_read_array(r, i) for i in range(n)]
    (k,) = r.unpack('<Q', 'name count')
    if k not in (0, n):
        raise ValueError(f'{k} names for {n} arrays')
    names = []
    for j in range(k):
        (length,) = r.unpack('<Q', f'name {j} length')
        names.append(bytes(r.take(length, f'name {j}')).decode('utf-8'))
    if r.pos != len(r.buf):
        raise ValueError(f'{len(r.buf) - r.pos} unexpected bytes after the end')
    return arrays, (names if k else None)


def _parse_npz(buf, source):
    """The same from d2lmini's earlier format: an npz with a JSON header entry.

    Compressed, so the sizes its headers declare are checked against the
    load limit before a byte is inflated (see :mod:`d2lmini.limits`).
    """
    with zipfile.ZipFile(io.BytesIO(buf)) as z:
        head = z.getinfo('__d2lmini__.json')
        check_load_size(source, head.file_size, 'its header entry')
        meta = json.loads(z.read(head))
        if not isinstance(meta, dict) or meta.get('format') != 'd2lmini-ndarray' \
                or meta.get('version') != 1 or meta.get('kind') not in ('list', 'dict'):
            raise ValueError('unknown npz header')
        count = meta.get('count')
        if not isinstance(count, int) or not 0 <= count < len(z.infolist()):
            raise ValueError(f'bad array count {count!r}')
        infos = [z.getinfo(f'arr_{i}.npy') for i in range(count)]
        check_load_size(source, sum(info.file_size for info in infos),
                        f'its {count} array{"" if count == 1 else "s"}',
                        stored=sum(info.compress_size for info in infos))
        arrays = [(_read_npy(z, info), 1, 0) for info in infos]
    names = meta['keys'] if meta['kind'] == 'dict' else None
    if names is not None and len(names) != len(arrays):
        raise ValueError('inconsistent npz header')
    return arrays, names


def _read_npy(z, info):
    """One ``.npy`` member: its header must agree with the zip's size."""
    fmt = np.lib.format
    with z.open(info) as f:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(f)
        else:
            raise ValueError(f'{info.filename}: .npy version {version} not supported')
        if dtype.hasobject:
            raise ValueError(f'{info.filename}: object arrays are not loaded')
        nbytes = math.prod(shape) * dtype.itemsize
        if f.tell() + nbytes != info.file_size:
            raise ValueError(f'{info.filename}: its header declares shape {shape} '
                             f'of {dtype}, {nbytes:,} bytes, but the member holds '
                             f'{info.file_size - f.tell():,}')
        data = f.read(nbytes)
    if len(data) != nbytes:
        raise ValueError(f'{info.filename}: truncated')
    return np.frombuffer(data, dtype).reshape(shape, order='F' if fortran else 'C')


def _place(a, dev_type, dev_id, ctx):
    if ctx is None:
        # MXNet: back on the saved GPU when there is one, else on the CPU.
        ctx = Context('gpu', dev_id) if dev_type == 2 and dev_id < backend.num_gpus() \
            else cpu(0)
    return array(a, ctx=ctx, dtype=a.dtype)


def loads(buf, ctx=None, source='buffer'):
    """Load MXNet NDArray bytes (or d2lmini's older npz bytes) from ``buf``."""
    try:
        if bytes(buf[:2]) == b'PK':
            arrays, names = _parse_npz(buf, source)
        else:
            arrays, names = _parse(buf)
    except LoadLimitError:
        raise                              # says what it is, and what to do
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, EOFError,
            struct.error, zipfile.BadZipFile) as e:
        raise NDArrayFileError(f'{source}: not a valid NDArray file: {e}') from None
    values = [_place(a, t, i, ctx) for a, t, i in arrays]
    return values if names is None else dict(zip(names, values))


def load(fname, ctx=None):
    """Load what :func:`save` (or MXNet's ``nd.save``) wrote: a list or a dict.

    Arrays go to ``ctx`` if given, else where MXNet would put them (the
    saved GPU if present, else ``cpu(0)``).  A corrupt or truncated file
    raises :class:`NDArrayFileError` (an ``MXNetError`` and a ``ValueError``)
    naming the file; so does an array that declares more data than the
    file holds.  A legacy ``.npz`` file that would inflate past the load
    limit (4 GiB; ``$D2LMINI_MAX_LOAD_BYTES``, see :mod:`d2lmini.limits`)
    raises :class:`d2lmini.limits.LoadLimitError` before inflating it.
    """
    with open(fname, 'rb') as f:           # OSError (missing file) passes through
        buf = f.read()
    return loads(buf, ctx, source=os.fspath(fname))


def load_frombuffer(buf):
    """Load a list or dict of NDArrays from the bytes of an NDArray file."""
    if not isinstance(buf, (bytes, bytearray, memoryview, str)):
        raise TypeError(f'load_frombuffer: buf must be bytes, got {type(buf).__name__}')
    if isinstance(buf, str):
        buf = buf.encode('latin-1')
    return loads(buf)


# --- one array: the pickle state of an NDArray -------------------------------------------
def array_to_bytes(arr):
    """One array's record (MXNet's ``MXNDArraySaveRawBytes``)."""
    out = []
    _pack_array(arr, out, _magic([arr]))
    return b''.join(out)


def array_from_bytes(buf):
    """(NumPy array, Context) from :func:`array_to_bytes`'s bytes."""
    try:
        r = _Reader(buf)
        a, dev_type, dev_id = _read_array(r, 0)
        if r.pos != len(r.buf):
            raise ValueError('unexpected bytes after the array')
    except (ValueError, struct.error) as e:
        raise NDArrayFileError(f'not a valid NDArray record: {e}') from None
    if dev_type == 2 and dev_id < backend.num_gpus():
        return a, Context('gpu', dev_id)
    return a, cpu(dev_id if dev_type == 1 else 0)
