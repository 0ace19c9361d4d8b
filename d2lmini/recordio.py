"""RecordIO: MXNet's file of binary records (``mx.recordio``).

A ``.rec`` file is a sequence of records, each framed by two little-endian
32-bit words and padded with zeros to a multiple of 4 bytes::

    0xced7230a | cflag << 29 | length | length bytes | 0-3 zero bytes

The magic word lets a reader that starts anywhere (a worker reading its
share of a file) find the next record.  So that a payload cannot fake one,
the writer cuts a record wherever the magic word sits at a 4-aligned offset
of it, drops the word, and marks the pieces with ``cflag``: 0 a whole
record, 1 its first piece, 2 a middle one, 3 the last; the reader puts the
word back between the pieces.  This module writes exactly the bytes MXNet
1.9.1's (dmlc-core's) writer does, so files go both ways.

An index file (``.idx``, text) maps a key to the byte offset of its record,
one ``key<TAB>offset`` line per record; :class:`MXIndexedRecordIO` reads
and writes it, for random access.  A record usually holds an image:
:func:`pack` puts an :data:`IRHeader` (flag, label, id, id2; a label array
follows when ``flag > 0``) in front of the encoded bytes, :func:`pack_img`
encodes a BGR array first (with Pillow: MXNet uses OpenCV, so the JPEG
bytes differ, the format does not), :func:`unpack` / :func:`unpack_img`
undo them.

>>> rec = mx.recordio.MXIndexedRecordIO('a.idx', 'a.rec', 'w')
>>> rec.write_idx(0, mx.recordio.pack(mx.recordio.IRHeader(0, 3.0, 0, 0), b'x'))
>>> rec.close()
>>> mx.recordio.unpack(mx.recordio.MXIndexedRecordIO('a.idx', 'a.rec', 'r').read_idx(0))
(HEADER(flag=0, label=3.0, id=0, id2=0), b'x')

Differences from MXNet: a damaged file raises :class:`RecordIOError`
naming the file and the byte offset (MXNet: "Invalid RecordIO File");
pickling an open reader leaves it open (MXNet closes it) and pickling an
open writer is refused (MXNet's copy would reopen and truncate the file).
"""
import io
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .base import MXNetError

__all__ = ['MXRecordIO', 'MXIndexedRecordIO', 'IRHeader', 'pack', 'unpack',
           'pack_img', 'unpack_img', 'RecordIOError']

_MAGIC = 0xced7230a
_MAGIC_BYTES = struct.pack('<I', _MAGIC)
_LENGTH_BITS = 29                      # the top 3 bits of the length word: cflag
_MAX_LENGTH = (1 << _LENGTH_BITS) - 1


class RecordIOError(MXNetError, ValueError):
    """A ``.rec`` or ``.idx`` file that is damaged or not one at all."""


# === framing ====================================================================

def _aligned4(n):
    return (n + 3) & ~3


def _frame(buf):
    """The bytes MXNet's writer puts in the file for the record ``buf``."""
    n = len(buf)
    if n > _MAX_LENGTH:
        raise ValueError(f'RecordIO: a record holds at most {_MAX_LENGTH} bytes, '
                         f'got {n}')
    out, start, pos = [], 0, buf.find(_MAGIC_BYTES)
    while 0 <= pos <= n - 4 - n % 4:   # the magic at a 4-aligned offset: cut
        if pos % 4:
            pos = buf.find(_MAGIC_BYTES, pos + 1)
            continue
        out += [_MAGIC_BYTES, struct.pack('<I', (2 if start else 1) << 29 | pos - start),
                buf[start:pos]]
        start = pos + 4
        pos = buf.find(_MAGIC_BYTES, start)
    out += [_MAGIC_BYTES, struct.pack('<I', (3 if start else 0) << 29 | n - start),
            buf[start:], bytes(_aligned4(n) - n)]
    return b''.join(out)


def _header(f, path, pos, first):
    """``(cflag, length)`` of the piece header at byte ``pos`` (``f`` is
    there); None at the end of the file before a record."""
    head = f.read(8)
    if not head and first:
        return None
    if len(head) < 8:
        raise RecordIOError(f'{path}: truncated at byte {pos}: a record header '
                            f'needs 8 bytes, the file has {len(head)} left')
    magic, word = struct.unpack('<II', head)
    if magic != _MAGIC:
        raise RecordIOError(f'{path}: no record at byte {pos}: expected the '
                            f'RecordIO magic 0xced7230a, found 0x{magic:08x} '
                            '(not a .rec file, or an offset inside a record)')
    cflag, length = word >> _LENGTH_BITS, word & _MAX_LENGTH
    if cflag > 3 or (cflag in (0, 1)) != first:
        wanted = '0 or 1 (a record starts)' if first else '2 or 3 (a record goes on)'
        raise RecordIOError(f'{path}: byte {pos}: continuation flag {cflag} '
                            f'where {wanted} belongs; the file is damaged')
    return cflag, length


def _read_record(f, path):
    """The record at ``f``'s position (bytes), None at the end of the file."""
    pos, pieces, first = f.tell(), [], True
    while True:
        head = _header(f, path, pos, first)
        if head is None:
            return None
        cflag, length = head
        body = f.read(_aligned4(length))
        if len(body) < _aligned4(length):
            raise RecordIOError(f'{path}: truncated at byte {pos}: the record '
                                f'declares {length} bytes, {len(body)} follow')
        pieces.append(body[:length])
        if cflag in (0, 3):
            return _MAGIC_BYTES.join(pieces)
        pos, first = pos + 8 + _aligned4(length), False


def _offsets(path):
    """The byte offsets of every record of the ``.rec`` file ``path`` (read
    headers only, seeking past the payloads)."""
    size, offsets, pos = os.path.getsize(path), [], 0
    with open(path, 'rb') as f:
        first = True
        while True:
            head = _header(f, path, pos, first)
            if head is None:
                return offsets
            if first:
                offsets.append(pos)
            cflag, length = head
            end = pos + 8 + _aligned4(length)
            if end > size:
                raise RecordIOError(f'{path}: truncated at byte {pos}: the record '
                                    f'declares {length} bytes, {size - pos - 8} follow')
            f.seek(end)
            pos, first = end, cflag in (0, 3)


def _read_index(path, key_type=int):
    """``(keys, {key: offset})`` of the ``.idx`` file ``path``."""
    with open(path, 'rb') as f:
        lines = f.read().splitlines(keepends=True)
    keys, index, pos = [], {}, 0
    for number, line in enumerate(lines, 1):
        fields = line.decode('utf-8', 'replace').strip().split('\t')
        if fields != ['']:             # blank lines are skipped
            try:
                key, offset = key_type(fields[0]), int(fields[1])
                if offset < 0:
                    raise ValueError
            except (ValueError, IndexError):
                raise RecordIOError(f'{path}: line {number} (byte {pos}): expected '
                                    f"'key<TAB>offset', got {line[:60]!r}") from None
            index[key] = offset
            keys.append(key)
        pos += len(line)
    return keys, index


# === files ======================================================================

class MXRecordIO:
    """Read (``flag='r'``) or write (``'w'``) a ``.rec`` file record by record.

    >>> rec = mx.recordio.MXRecordIO('tmp.rec', 'w')
    >>> for i in range(3):
    ...     rec.write(b'record_%d' % i)
    >>> rec.close()
    >>> rec = mx.recordio.MXRecordIO('tmp.rec', 'r')
    >>> rec.read(), rec.read()
    (b'record_0', b'record_1')
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self._file = None
        self.open()

    def open(self):
        """Open the file: ``'w'`` truncates it, ``'r'`` reads from the start."""
        if self.flag not in ('r', 'w'):
            raise ValueError(f"Invalid flag {self.flag!r}: use 'r' to read or "
                             "'w' to write")
        self.writable = self.flag == 'w'
        self._file = open(self.uri, self.flag + 'b')
        self.pid = os.getpid()
        self.is_open = True

    def close(self):
        """Close the file (a second close does nothing)."""
        if self.is_open:
            self._file.close()
            self.is_open = False
            self.pid = None

    def __del__(self):
        if getattr(self, 'is_open', False):
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        if self.is_open and self.writable:
            raise TypeError(f'{type(self).__name__}: an open writer cannot be '
                            f'pickled (its copy would truncate {self.uri}); '
                            'close it first')
        state = dict(self.__dict__)
        state['_file'] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.is_open:             # a reader's copy reopens from the start
            self.is_open = False
            self.open()

    def _check(self, writing, allow_reset=False):
        if not self.is_open:
            raise ValueError(f'{type(self).__name__}: {self.uri} is closed; '
                             'call open() or reset()')
        if writing != self.writable:
            raise ValueError(f'{type(self).__name__}: {self.uri} was opened '
                             f'with flag {self.flag!r}, cannot '
                             f'{"write" if writing else "read"}')
        if self.pid != os.getpid():  # a forked process shares the position
            if not allow_reset:
                raise RuntimeError('Forbidden operation in multiple processes: '
                                   f'{self.uri} was opened by process {self.pid}; '
                                   'call reset() in this one first')
            self.reset()

    def reset(self):
        """Back to the first record (a writer truncates the file)."""
        self.close()
        self.open()

    def write(self, buf):
        """Append the record ``buf`` (bytes)."""
        self._check(writing=True)
        if not isinstance(buf, (bytes, bytearray, memoryview)):
            raise TypeError(f'write: a record is bytes, got {type(buf).__name__}'
                            + (' (encode the str first)' if isinstance(buf, str) else ''))
        self._file.write(_frame(bytes(buf)))

    def read(self):
        """The next record (bytes), None after the last."""
        self._check(writing=False)
        return _read_record(self._file, self.uri)

    def tell(self):
        """The byte offset where the next record is read or written."""
        if not self.is_open:
            raise ValueError(f'{type(self).__name__}: {self.uri} is closed')
        return self._file.tell()


class MXIndexedRecordIO(MXRecordIO):
    """A ``.rec`` file with its ``.idx`` index: records by key.

    ``keys`` lists the keys in file order, ``idx`` maps each to its byte
    offset; ``key_type`` converts the keys read from the index.

    >>> rec = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'w')
    >>> for i in range(5):
    ...     rec.write_idx(i, b'record_%d' % i)
    >>> rec.close()
    >>> mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'r').read_idx(3)
    b'record_3'
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx, self.keys = {}, []
        try:
            if self.writable:
                self.fidx = open(self.idx_path, 'w')
            else:
                self.keys, self.idx = _read_index(self.idx_path, self.key_type)
        except BaseException:
            super().close()
            raise

    def close(self):
        if self.is_open and self.fidx is not None:
            self.fidx.close()
            self.fidx = None
        super().close()

    def __getstate__(self):
        state = super().__getstate__()
        state['fidx'] = None
        return state

    def seek(self, idx):
        """Move the reader to the record of key ``idx``."""
        self._check(writing=False, allow_reset=True)
        try:
            pos = self.idx[idx]
        except KeyError:
            raise KeyError(f'{idx!r} is not a key of {self.idx_path} '
                           f'({len(self.keys)} keys)') from None
        self._file.seek(pos)

    def read_idx(self, idx):
        """The record of key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Append the record ``buf`` under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f'{key}\t{pos}\n')
        self.idx[key] = pos
        self.keys.append(key)


# === image records ==============================================================

IRHeader = namedtuple('HEADER', ['flag', 'label', 'id', 'id2'])
IRHeader.__doc__ = """The header of an image record: ``flag`` (the number of
labels stored after the header, 0 when ``label`` holds the one label),
``label`` (a float, or 0 when there is an array), ``id`` and ``id2`` (the
image's id, high bits; usually 0)."""

_IR_FORMAT = '<IfQQ'
_IR_SIZE = struct.calcsize(_IR_FORMAT)        # 24 bytes


def pack(header, s):
    """``header`` (an :data:`IRHeader`) and the bytes ``s`` as one record.

    A number label goes in the header (``flag`` becomes 0); an array label
    is stored as float32 after it (``flag`` becomes its size).

    >>> mx.recordio.pack(mx.recordio.IRHeader(0, [1, 2], 7, 0), b'img')[:4]
    b'\\x02\\x00\\x00\\x00'
    """
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """``(IRHeader, payload)`` of a record made by :func:`pack`; a stored
    label array comes back as ``header.label`` (float32)."""
    if len(s) < _IR_SIZE:
        raise RecordIOError(f'unpack: a record of {len(s)} bytes is shorter than '
                            f'the {_IR_SIZE}-byte IRHeader (not an image record?)')
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise RecordIOError(f'unpack: the header announces {header.flag} labels, '
                                f'the record holds {len(s)} bytes after it')
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[4 * header.flag:]
    return header, s


def _host_uint8(img, who):
    img = np.asarray(img.asnumpy() if hasattr(img, 'asnumpy') else img)
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.dtype != np.uint8 or img.ndim not in (2, 3) or \
            img.ndim == 3 and img.shape[2] not in (3, 4):
        raise ValueError(f'{who}: expected a uint8 image (H, W) or (H, W, C) with '
                         f'C 1, 3 or 4, got {img.dtype} {img.shape}')
    return img


def pack_img(header, img, quality=95, img_fmt='.jpg'):
    """Encode the image ``img`` (uint8, BGR channel order as OpenCV's) and
    :func:`pack` it.  ``quality``: JPEG quality 1-100, or PNG compression
    0-9 (larger values mean 9, as OpenCV)."""
    from PIL import Image
    img = _host_uint8(img, 'pack_img')
    fmt = {'.jpg': 'JPEG', '.jpeg': 'JPEG'}.get(img_fmt.lower()) or \
        Image.registered_extensions().get(img_fmt.lower())
    if fmt is None:
        raise ValueError(f'pack_img: unknown img_fmt {img_fmt!r}; use .jpg or .png')
    if img.ndim == 3:                  # BGR(A) to RGB(A); JPEG has no alpha
        img = img[:, :, [2, 1, 0, 3][:3 if fmt == 'JPEG' else img.shape[2]]]
    options = {'quality': int(quality)} if fmt == 'JPEG' else \
        {'compress_level': min(max(int(quality), 0), 9)} if fmt == 'PNG' else {}
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(img)).save(buf, format=fmt, **options)
    return pack(header, buf.getvalue())


def _imdecode(buf, iscolor, what):
    """OpenCV's ``imdecode(buf, iscolor)`` (see :func:`unpack_img`)."""
    from PIL import Image, UnidentifiedImageError
    from .image.image import _decode
    if iscolor < 0:
        try:
            with Image.open(io.BytesIO(buf)) as im:
                if 'A' in im.mode or 'transparency' in im.info:
                    return np.asarray(im.convert('RGBA'))[:, :, [2, 1, 0, 3]]
                iscolor = 0 if im.mode in ('1', 'L', 'I', 'I;16', 'F') else 1
        except (UnidentifiedImageError, OSError):
            iscolor = 1                # _decode below says what is wrong
    img = _decode(buf, 1 if iscolor else 0, 0, what)
    return img if iscolor else img[:, :, 0]


def unpack_img(s, iscolor=-1):
    """``(IRHeader, image)``: the record ``s`` unpacked and its image decoded
    as OpenCV's ``imdecode`` does: a uint8 NumPy array, channels BGR;
    ``iscolor`` 1 colour ``(H, W, 3)``, 0 gray ``(H, W)``, -1 as stored
    (gray ``(H, W)``, colour, or BGRA when the image has transparency)."""
    header, s = unpack(s)
    return header, _imdecode(s, iscolor, 'unpack_img')
