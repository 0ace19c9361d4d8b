"""What travels between the nodes: one ZeroMQ multipart message per request.

A message is a list of frames (ZeroMQ delivers all of them or none)::

    frame 0      header: UTF-8 JSON, e.g.
                 {"v": 1, "op": "push", "key": 3, "part": 0, "seq": 17,
                  "arrays": [["float32", [1024]]]}
    frame 1..n   the raw bytes of each array listed in "arrays", C order
    frame n+1    only with a shared secret: HMAC-SHA256 of all frames before
                 it (each prefixed with its length), keyed by the secret

Arrays are never pickled or converted: a sent frame is the array's own
buffer (``copy=False``: ZeroMQ reads it in place), a received array is a
read-only NumPy view of the frame ZeroMQ filled.  Anything that does not
parse (garbage, a truncated message, a wrong or missing signature) raises
:class:`BadMessage`, which the receiving loops log and skip: one bad peer
cannot stop a server.
"""
import hashlib
import hmac
import json
import logging

import numpy as np

__all__ = ['BadMessage', 'pack', 'unpack', 'send', 'recv', 'VERSION']

VERSION = 1
DTYPES = ('float16', 'float32', 'float64', 'uint8', 'int8', 'int32', 'int64')
MAX_HEADER = 1 << 16
log = logging.getLogger('d2lmini.kvstore.dist')


class BadMessage(ValueError):
    """A message that is not ours: unreadable, inconsistent or unsigned."""


def _mac(secret, frames):
    h = hmac.new(secret, digestmod=hashlib.sha256)
    for f in frames:
        mv = memoryview(f)
        h.update(mv.nbytes.to_bytes(8, 'little'))
        h.update(mv)
    return h.digest()


def pack(op, secret=None, arrays=(), **meta):
    """The frames of one message: header, array buffers[, signature]."""
    arrays = [np.asarray(a) for a in arrays]
    header = dict(meta, v=VERSION, op=op,
                  arrays=[[a.dtype.name, list(a.shape)] for a in arrays])
    frames = [json.dumps(header, separators=(',', ':')).encode()]
    # (ascontiguousarray would turn a 0-d array into a 1-d one: reshape first)
    frames += [np.ascontiguousarray(a.reshape(-1)).view(np.uint8) if a.size else b''
               for a in arrays]
    if secret is not None:
        frames.append(_mac(secret, frames))
    return frames


def unpack(frames, secret=None):
    """``(header dict, [arrays])`` from received frames, or raise BadMessage."""
    if not frames:
        raise BadMessage('empty message')
    raw = [f.buffer if hasattr(f, 'buffer') else memoryview(f) for f in frames]
    if raw[0].nbytes > MAX_HEADER:
        raise BadMessage(f'header of {raw[0].nbytes} bytes')
    try:
        header = json.loads(bytes(raw[0]).decode())
    except (UnicodeDecodeError, ValueError):
        raise BadMessage('the header is not JSON') from None
    if not isinstance(header, dict) or header.get('v') != VERSION or \
            not isinstance(header.get('op'), str) or \
            not isinstance(header.get('arrays'), list):
        raise BadMessage(f'not a version-{VERSION} header: {str(header)[:80]}')
    specs = header.pop('arrays')
    n = 1 + len(specs)
    if secret is not None:
        if len(raw) != n + 1:
            raise BadMessage(f'{header["op"]!r} message without a signature '
                             f'(this node has D2LMINI_PS_SECRET set)')
        if not hmac.compare_digest(bytes(raw[n]), _mac(secret, raw[:n])):
            raise BadMessage(f'{header["op"]!r} message with a wrong signature '
                             f'(is D2LMINI_PS_SECRET the same on every node?)')
    elif len(raw) != n:
        raise BadMessage(f'{header["op"]!r} message of {len(raw)} frames, the '
                         f'header lists {len(specs)} arrays (a signed message '
                         f'sent to a node without D2LMINI_PS_SECRET?)')
    arrays = []
    for spec, buf in zip(specs, raw[1:n]):
        try:
            dtype, shape = spec
            if dtype not in DTYPES:
                raise ValueError(dtype)
            shape = tuple(int(s) for s in shape)
            if any(s < 0 for s in shape):
                raise ValueError(shape)
        except (TypeError, ValueError):
            raise BadMessage(f'bad array spec {spec!r}') from None
        dt = np.dtype(dtype)
        if int(np.prod(shape)) * dt.itemsize != buf.nbytes:
            raise BadMessage(f'array {dtype}{list(shape)} in a frame of '
                             f'{buf.nbytes} bytes (truncated?)')
        arrays.append(np.frombuffer(buf, dtype=dt).reshape(shape))
    return header, arrays


def send(sock, frames, to=None, track=False):
    """Send ``frames`` (from :func:`pack`); ``to``: a ROUTER's peer identity.

    With ``track``, returns a ``zmq.MessageTracker`` whose ``done`` says
    when ZeroMQ has finished reading the arrays' memory.
    """
    return sock.send_multipart(frames if to is None else [to] + frames,
                               copy=False, track=track)


def recv(sock, secret=None, routed=False):
    """Receive one message: ``(peer or None, header, arrays)``.

    Raises :class:`BadMessage` (the message is consumed) for anything that
    is not a well-formed, well-signed message.
    """
    frames = sock.recv_multipart(copy=False)
    peer = None
    if routed:
        peer, frames = frames[0].bytes, frames[1:]
    return (peer,) + unpack(frames, secret)
