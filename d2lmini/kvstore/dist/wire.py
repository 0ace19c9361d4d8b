"""What travels between the nodes: one ZeroMQ multipart message per request.

A message is a list of frames (ZeroMQ delivers all of them or none)::

    frame 0      header: UTF-8 JSON, e.g.
                 {"v": 1, "op": "push", "key": 3, "part": 0, "seq": 17,
                  "arrays": [["float32", [1024]]]}
    frame 1..n   the raw bytes of each array listed in "arrays", C order,
                 cut into frames of at most FRAME bytes (64 MiB)
    frame n+1    only with a shared secret: HMAC-SHA256 of all frames before
                 it (each prefixed with its length), keyed by the secret

Arrays are never pickled or converted: a sent frame is the array's own
buffer (``copy=False``: ZeroMQ reads it in place), a received array is a
read-only NumPy view of the frame ZeroMQ filled (an array of several
frames is joined, one copy).  A push with gradient compression carries
its 1024 values as ``[["uint32", [64]]]``, 2 bits each, and says how to
read them: ``"compression": "2bit", "threshold": 0.5``
(:mod:`d2lmini.kvstore.compression`).

What a receiver checks, in this order, before it believes anything:

1. **size**: every socket that receives is opened with :func:`limit`, so
   ZeroMQ drops a peer that announces a frame larger than FRAME (to or from
   the scheduler: SCHEDULER_FRAME) before it allocates it; a header longer
   than MAX_HEADER is refused unread (and never sent: :func:`pack` raises).
2. **signature** (with a secret): the HMAC over the raw frames, before the
   header is parsed at all; a peer without the secret gets no further.
3. **form**: the header is a JSON object of depth at most 8, and every
   field a handler may read has its type (:data:`FIELDS`): a heartbeat
   with ``"for_s": "abc"`` is refused here, not deep in the scheduler.
4. **freshness** (with a secret, :class:`Channel`): the header names its
   sender's socket (``sid``), that socket's message number (``n``, which
   only grows) and its receiver (``to``); a copy of a message, sent again
   to its receiver or to another node, fails this check.

Anything that fails raises :class:`BadMessage` (a wrong or missing
signature: :class:`BadSignature`), which the receiving loops log and skip:
one bad peer cannot stop a node.  What a peer can still do is send many
frames of FRAME bytes in one message: ZeroMQ holds a message's frames until
the last one arrives, so that costs the receiver memory until it rejects
the message (without a secret nothing can tell a peer from a worker).
"""
import hashlib
import hmac
import json
import logging
import math
import os
import threading

import numpy as np
import zmq

__all__ = ['BadMessage', 'BadSignature', 'Channel', 'pack', 'unpack', 'send',
           'recv', 'limit', 'notice', 'VERSION', 'FRAME', 'MAX_HEADER']

VERSION = 1
DTYPES = ('float16', 'float32', 'float64', 'uint8', 'int8', 'int32', 'int64',
          'uint32')                       # (uint32: 2-bit compressed words)
MAX_HEADER = 1 << 20          # bytes of JSON (a model's layout of states)
MAX_TEXT = 4000               # characters of an error message sent
SCHEDULER_FRAME = 1 << 16     # the largest frame to or from the scheduler
MAX_DEPTH = 8                 # nesting of the header's lists and objects
MAX_NDIM = 32                 # as NumPy
FRAME = 64 << 20              # the largest frame anybody sends
log = logging.getLogger('d2lmini.kvstore.dist')

_UINT = ('seq', 'part', 'rank', 'pid', 'port', 'wish', 'num_update', 'n',
         'num_worker', 'num_server', 'id')
_STR = ('op', 'node', 'role', 'host', 'waiting', 'message', 'sid', 'to',
        'key_type', 'model', 'device', 'input', 'dtype',   # (those 4: d2lmini.serve)
        'compression')
#: The type of every header field that any node reads (None is allowed for
#: all of them: a handler that needs a field says so).
FIELDS = dict({k: int for k in _UINT}, **{k: str for k in _STR},
              key=(int, str), for_s=float, threshold=float, sync=bool, spec=dict,
              layout=dict, counts=dict, servers=list, names=list, shape=list)


class BadMessage(ValueError):
    """A message that is not ours: unreadable, inconsistent or unsigned."""


class BadSignature(BadMessage):
    """A message whose signature is wrong or missing (or that is signed,
    and this node has no secret): a peer with another D2LMINI_PS_SECRET."""


def limit(sock, nbytes=FRAME + 64):
    """Make ZeroMQ drop any peer of ``sock`` that sends a frame of more
    than ``nbytes`` (it reads the frame's length first: nothing is
    allocated).  Returns ``sock``."""
    sock.setsockopt(zmq.MAXMSGSIZE, nbytes)
    return sock


def _mac(secret, frames):
    h = hmac.new(secret, digestmod=hashlib.sha256)
    for f in frames:
        mv = memoryview(f)
        h.update(mv.nbytes.to_bytes(8, 'little'))
        h.update(mv)
    return h.digest()


def _chunks(buf):
    """A flat uint8 array as frames of at most FRAME bytes (views)."""
    if buf.nbytes <= FRAME:
        return [buf if buf.nbytes else b'']
    return [buf[i:i + FRAME] for i in range(0, buf.nbytes, FRAME)]


def pack(op, secret=None, arrays=(), **meta):
    """The frames of one message: header, array buffers[, signature]."""
    arrays = [np.asarray(a) for a in arrays]
    text = meta.get('message')
    if isinstance(text, str) and len(text) > MAX_TEXT:    # (a huge exception)
        meta['message'] = text[:MAX_TEXT - 16] + ' [... cut short]'
    header = dict(meta, v=VERSION, op=op,
                  arrays=[[a.dtype.name, list(a.shape)] for a in arrays])
    frames = [json.dumps(header, separators=(',', ':')).encode()]
    if len(frames[0]) > MAX_HEADER:       # the receiver would refuse it
        raise ValueError(f'a {op!r} message header of {len(frames[0]):,} bytes: '
                         f'at most {MAX_HEADER:,} can be sent')
    for a in arrays:
        # (ascontiguousarray would turn a 0-d array into a 1-d one: reshape first)
        frames += _chunks(np.ascontiguousarray(a.reshape(-1)).view(np.uint8))
    if secret is not None:
        frames.append(_mac(secret, frames))
    return frames


def _depth(x, limit):
    """Whether ``x`` (parsed JSON) nests no deeper than ``limit``."""
    if isinstance(x, (list, dict)):
        if limit == 0:
            return False
        items = x.values() if isinstance(x, dict) else x
        return all(_depth(v, limit - 1) for v in items)
    return True


def _parse(raw):
    if raw.nbytes > MAX_HEADER:
        raise BadMessage(f'header of {raw.nbytes} bytes (at most {MAX_HEADER})')
    try:    # (60,000 nested '[' make the parser recurse too deep: caught)
        header = json.loads(bytes(raw).decode())
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadMessage('the header is not JSON') from None
    if not isinstance(header, dict) or header.get('v') != VERSION or \
            not isinstance(header.get('op'), str) or \
            not isinstance(header.get('arrays'), list):
        raise BadMessage(f'not a version-{VERSION} header: {str(header)[:80]}')
    if not _depth(header, MAX_DEPTH):
        raise BadMessage(f'{header["op"]!r} header nests deeper than {MAX_DEPTH}')
    for name, kind in FIELDS.items():
        v = header.get(name)
        if v is None:
            continue
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and \
            math.isfinite(v) and v >= 0 if kind is float else \
            isinstance(v, kind) and not (isinstance(v, bool) and kind is not bool)
        if ok and kind is int:
            ok = v >= 0
        if not ok:
            raise BadMessage(f'{header["op"]!r} message with a bad field '
                             f'{name}={str(v)[:40]!r}')
    return header


def _spec(spec):
    """``(dtype, shape, nbytes)`` of one entry of ``"arrays"``."""
    try:
        dtype, shape = spec
        if dtype not in DTYPES or not isinstance(shape, list) or \
                len(shape) > MAX_NDIM or \
                not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                        for s in shape):
            raise ValueError
    except (TypeError, ValueError):
        raise BadMessage(f'bad array spec {str(spec)[:80]}') from None
    dt = np.dtype(dtype)
    return dt, tuple(shape), math.prod(shape) * dt.itemsize   # exact: no overflow


def unpack(frames, secret=None):
    """``(header dict, [arrays])`` from received frames, or raise BadMessage."""
    if not frames:
        raise BadMessage('empty message')
    raw = [f.buffer if hasattr(f, 'buffer') else memoryview(f) for f in frames]
    if secret is not None:                 # authenticate before reading anything
        if len(raw) < 2 or raw[-1].nbytes != 32:
            raise BadSignature('a message without a signature (this node has '
                               'D2LMINI_PS_SECRET set)')
        if not hmac.compare_digest(bytes(raw[-1]), _mac(secret, raw[:-1])):
            raise BadSignature('a message with a wrong signature (is '
                               'D2LMINI_PS_SECRET the same on every node?)')
        raw = raw[:-1]
    header = _parse(raw[0])
    specs = [_spec(s) for s in header.pop('arrays')]
    want = 1 + sum(max(1, -(-nbytes // FRAME)) for _, _, nbytes in specs)
    if len(raw) != want:
        if secret is None and len(raw) == want + 1:
            raise BadSignature(
                f'{header["op"]!r} message of {len(raw)} frames, the header '
                f'lists {len(specs)} arrays (a signed message sent to a node '
                f'without D2LMINI_PS_SECRET?)')
        raise BadMessage(f'{header["op"]!r} message of {len(raw)} frames, the '
                         f'header lists {len(specs)} arrays (truncated?)')
    arrays, i = [], 1
    for dt, shape, nbytes in specs:
        n = max(1, -(-nbytes // FRAME))
        got = sum(b.nbytes for b in raw[i:i + n])
        if got != nbytes or any(b.nbytes != FRAME for b in raw[i:i + n - 1]):
            raise BadMessage(f'array {dt.name}{list(shape)} in frames of '
                             f'{got} bytes (truncated?)')
        buf = raw[i] if n == 1 else \
            np.concatenate([np.frombuffer(b, np.uint8) for b in raw[i:i + n]])
        arrays.append(np.frombuffer(buf, dtype=dt).reshape(shape))
        i += n
    return header, arrays


def notice(frames):
    """The text of an unsigned ``rejected`` notice (what the scheduler tells
    a node whose signature it refused), or None.  It cannot be signed (the
    two sides do not share a key), so a node only uses it to stop waiting
    with an explanation, never to believe anything else."""
    try:
        raw = [f.buffer if hasattr(f, 'buffer') else memoryview(f) for f in frames]
        if len(raw) != 1 or raw[0].nbytes > 4096:
            return None
        h = _parse(raw[0])
    except BadMessage:
        return None
    return h.get('message') if h['op'] == 'rejected' and not h['arrays'] else None


class Channel:
    """One socket's side of the conversation: signs what it sends, checks
    what it receives.

    Without a secret it only packs and unpacks.  With one, every message it
    sends carries ``sid`` (this socket's random name), ``n`` (its message
    number: 0, 1, 2...) and ``to`` (the receiver: a node's address or the
    ``sid`` of the socket it answers), all under the signature; and a
    received message must be addressed to one of ``names`` and carry a
    larger ``n`` than the last one from its ``sid``.  A replay fails both
    ways: sent again to the same node its number is old, sent to another
    node it is not addressed there.
    """

    def __init__(self, secret=None, name=None):
        self.secret = secret
        self.sid = os.urandom(8).hex()
        self.names = {self.sid} | ({name} if name else set())
        self._n = 0
        self._last = {}                       # sid -> the last n accepted

    def pack(self, op, arrays=(), dest=None, **meta):
        if self.secret is not None:
            meta.update(sid=self.sid, n=self._n, to=dest)
            self._n += 1
        return pack(op, self.secret, arrays, **meta)

    def unpack(self, frames):
        header, arrays = unpack(frames, self.secret)
        if self.secret is not None:
            sid, n = header.get('sid'), header.get('n')
            if header.get('to') not in self.names:
                raise BadMessage(f'{header["op"]!r} message addressed to '
                                 f'{str(header.get("to"))[:40]!r}, not to this '
                                 f'node (a copy sent to another node?)')
            if sid is None or n is None:
                raise BadMessage(f'{header["op"]!r} message without sid and n')
            if n <= self._last.get(sid, -1):
                raise BadMessage(f'{header["op"]!r} message number {n} from '
                                 f'{sid}, which sent {self._last[sid]} already '
                                 f'(a replayed copy?)')
            self._last[sid] = n
        return header, arrays


def send(sock, frames, to=None, track=False):
    """Send ``frames`` (from :func:`pack`); ``to``: a ROUTER's peer identity.

    With ``track``, returns a ``zmq.MessageTracker`` whose ``done`` says
    when ZeroMQ has finished reading the arrays' memory.
    """
    return sock.send_multipart(frames if to is None else [to] + frames,
                               copy=False, track=track)


def flush(ctx, linger_ms=2000, timeout=5.0):
    """Terminate ``ctx`` once its sockets have sent what they queued, at most
    ``timeout`` seconds (a closed socket waits up to its own ``LINGER``, one
    still open, as after a failed start, up to ``linger_ms``).

    A process that exits without this loses its last messages: Python does
    not terminate ZeroMQ's context at exit, and the messages queued in its
    I/O thread die with the process (a scheduler's ``stop`` to a server).
    """
    t = threading.Thread(target=ctx.destroy, args=(linger_ms,), daemon=True,
                         name='zmq-flush')
    t.start()
    t.join(timeout)


def recv(sock, channel, routed=False):
    """Receive one message: ``(peer or None, header, arrays)``, checked by
    ``channel`` (the :class:`Channel` of ``sock``).

    Raises :class:`BadMessage` (the message is consumed) for anything that
    is not a well-formed, well-signed, fresh message; its ``peer`` and
    ``frames`` attributes say who sent what.
    """
    frames = sock.recv_multipart(copy=False)
    peer = None
    if routed:
        peer, frames = frames[0].bytes, frames[1:]
    try:
        return (peer,) + channel.unpack(frames)
    except BadMessage as e:
        e.peer, e.frames = peer, frames
        raise
