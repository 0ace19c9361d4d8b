"""The collectives on NDArrays: allreduce, allgather, broadcast.

Each call first makes sure every rank is in the *same* collective
(Horovod's coordinator plays this part): the ranks compare a record of the
call (operation, name, shapes, dtype, root), and a mismatch raises
:class:`HorovodError` on every rank, naming what differs and each rank's
value, before a byte of data moves.  Then the data moves, by the MPI
library's own collective or by :func:`.ring.ring_allreduce`.  Every wait,
for the other ranks to arrive and for the data, lasts at most
``HOROVOD_TIMEOUT`` seconds (:mod:`.wait`).
"""
import contextlib
import hashlib
import itertools
import json
import time

import numpy as np

from .. import backend
from ..ndarray import ndarray as _nd
from . import nccl as _nccl
from . import ring as _ring
from .basics import HorovodError, _State, _check
from .wait import finish, give_up

__all__ = ['allreduce', 'allreduce_', 'grouped_allreduce', 'allgather',
           'broadcast', 'broadcast_', 'broadcast_parameters']

_unnamed = itertools.count()
_FIELDS = ('op', 'name', 'shapes', 'shape', 'dtype', 'root', 'algorithm')


def _ready():
    _check()
    if _State.failed is not None:
        raise HorovodError(f'an earlier collective of this rank failed, so the job '
                           f'cannot go on: {_State.failed}')


def _agree(op, name, **fields):
    """Check that every rank is in this collective with the same arguments.

    The record of the call (``op``, ``name`` and ``fields``) is compared
    whole, however long the name: the ranks exchange its SHA-256 digest, 32
    bytes.  Only when the digests differ do they exchange the records
    themselves, to say what differs.  The time spent waiting for the others
    is the timeline's ``negotiate`` event: a long one points at a straggler.
    """
    comm, t0 = _State.comm, time.time()
    record = json.dumps({'op': op, 'name': name, **fields}, sort_keys=True,
                        separators=(',', ':')).encode()
    digest = hashlib.sha256(record).digest()
    everyone = np.empty(comm.size * len(digest), np.uint8)
    # a rank still computing is a straggler, not a fault: nap soon, and
    # give it the core
    finish(comm.Iallgather(np.frombuffer(digest, np.uint8), everyone),
           f'for the other ranks to reach {op} {name!r}: a rank died, hangs, or '
           f'called different collectives (every rank must make the same calls '
           f'in the same order)', spin=1e-3, nap=2e-4)
    if everyone.tobytes() != digest * comm.size:
        records, _ = _gatherv(np.frombuffer(record, np.uint8),
                              f'for the records of {op} {name!r}')
        raise HorovodError(_disagreement(op, name, records))
    if _State.timeline is not None:
        _State.timeline.record(name, 'negotiate', t0, 0, op)


def _disagreement(op, name, records):
    """The error message: each field the ranks' records differ in, with the
    ranks that have each value."""
    records = [json.loads(bytes(r)) for r in records]
    keys = sorted(set().union(*records), key=lambda k: (
        _FIELDS.index(k) if k in _FIELDS else len(_FIELDS), k))
    if len({rec['op'] for rec in records}) > 1:
        keys = ['op', 'name']                  # the rest cannot be compared
    parts = []
    for key in keys:
        values = [rec.get(key) for rec in records]
        if key == 'shapes':                    # one shape per fused tensor
            key, values = _which_shape(values)
        if any(v != values[0] for v in values):
            parts.append(f'{key}: {_who_has(values)}')
    return f'{op} {name!r}: the ranks disagree on the {"; and the ".join(parts)}'


def _which_shape(shapes):
    """``(field, values)`` naming the first tensor whose shapes differ."""
    if len({len(s) for s in shapes}) > 1:
        return 'number of tensors', [len(s) for s in shapes]
    if len(shapes[0]) == 1:
        return 'shape', [s[0] for s in shapes]
    i = next((i for i in range(len(shapes[0]))
              if any(s[i] != shapes[0][i] for s in shapes)), 0)
    return f'shape of tensor {i} (of {len(shapes[0])})', [s[i] for s in shapes]


def _who_has(values):
    """``"'a' on ranks 0 and 2, 'b' on rank 1"``."""
    def show(v):
        if v is None:
            return '(none)'
        return repr(v) if isinstance(v, str) else json.dumps(v, separators=(',', ':'))
    ranks = {}
    for r, v in enumerate(values):
        ranks.setdefault(show(v), []).append(r)
    return ', '.join(f'{v} on rank{"s" if len(rs) > 1 else ""} {_spans(rs)}'
                     for v, rs in ranks.items())


def _spans(ranks):
    """``[0, 2, 3, 4]`` -> ``'0 and 2-4'``."""
    spans = []
    for r in ranks:
        if spans and spans[-1][1] == r - 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    words = [f'{a}' if a == b else f'{a}-{b}' for a, b in spans]
    return ', '.join(words[:-1]) + ' and ' + words[-1] if len(words) > 1 else words[0]


def _gatherv(mine, what):
    """Every rank's 1-D array ``mine`` (lengths may differ) as a list, in
    rank order, and the arrays joined."""
    comm = _State.comm
    counts = np.empty(comm.size, np.int64)
    finish(comm.Iallgather(np.array([mine.size], np.int64), counts), what)
    out = np.empty(int(counts.sum()), mine.dtype)
    finish(comm.Iallgatherv(mine, (out, counts)), what)
    ends = np.cumsum(counts)
    return [out[e - c:e] for c, e in zip(counts, ends)], out


@contextlib.contextmanager
def _data(op, name, how):
    """The data phase: a wait that times out (:mod:`.wait`) ends the job."""
    try:
        yield
    except HorovodError as e:
        give_up(f'{op} {name!r} ({how}): {e}; every rank had reached this '
                f'{op}, so a rank died, hangs or was stopped in the middle of it')


def _name(name, op):
    return f'{op}.noname.{next(_unnamed)}' if name is None else str(name)


def _algorithm(algorithm):
    a = algorithm or _State.settings['allreduce']
    if a not in ('mpi', 'ring'):
        raise ValueError(f"algorithm must be 'mpi' or 'ring', got {a!r}")
    return a


def _sum_(buf, algorithm):
    """Sum the NumPy array ``buf`` over the ranks, in place."""
    from mpi4py import MPI
    comm, timeout = _State.comm, _State.settings['timeout']
    if algorithm == 'ring':
        _ring.ring_allreduce(comm, buf, timeout=timeout)
        return
    # MPI has no standard half type: float16 is summed as float32
    wide = buf.astype(np.float32) if buf.dtype == np.float16 else buf
    finish(comm.Iallreduce(MPI.IN_PLACE, wide, op=MPI.SUM), 'for the data')
    if wide is not buf:
        buf[...] = wide


def _timed(op, name, nbytes, algorithm=''):
    tl = _State.timeline
    t0 = time.time()
    return lambda: tl is not None and tl.record(name, op, t0, nbytes, algorithm)


def grouped_allreduce(tensors, average=True, name=None, priority=0,
                      prescale_factor=1.0, postscale_factor=1.0, algorithm=None):
    """Allreduce a list of NDArrays; returns new NDArrays.

    Tensors of one dtype are packed into buffers of up to
    ``HOROVOD_FUSION_THRESHOLD`` bytes (tensor fusion): one collective per
    buffer instead of one per tensor.  Each tensor is multiplied by
    ``prescale_factor`` before the sum and the result by
    ``postscale_factor`` (and by ``1/size()`` when ``average``).
    """
    _ready()
    tensors = list(tensors)
    outs = [None] * len(tensors)
    name = _name(name, 'grouped_allreduce')
    algorithm = _algorithm(algorithm)
    limit = _State.settings['fusion_threshold']
    groups, current, size = [], [], 0
    kind = lambda t: (str(t.dtype), str(t.context))          # noqa: E731
    for i in sorted(range(len(tensors)), key=lambda i: kind(tensors[i])):
        t = tensors[i]
        nbytes = t.size * np.dtype(t.dtype).itemsize
        if current and (size + nbytes > limit or kind(tensors[current[0]]) != kind(t)):
            groups.append(current)
            current, size = [], 0
        current.append(i)
        size += nbytes
    if current:
        groups.append(current)
    for g, idx in enumerate(groups):
        values = [tensors[i]._value() for i in idx]       # waits for them
        # GPU tensors stay on their device when NCCL is there (.nccl)
        on_gpu = _nccl.usable(values[0])
        how = 'nccl' if on_gpu else algorithm
        parts = [(v if on_gpu else backend.to_numpy(v)).reshape(-1) for v in values]
        xp = backend.xp_of(parts[0])
        buf = xp.concatenate(parts) if len(parts) > 1 else parts[0].copy()
        fused = f'{name}.fused{g}' if len(groups) > 1 else name
        _agree('allreduce', fused, shapes=[list(tensors[i].shape) for i in idx],
               dtype=str(buf.dtype), algorithm=how)
        done = _timed('allreduce', fused, buf.nbytes, how)
        if prescale_factor != 1.0:
            buf *= buf.dtype.type(prescale_factor)
        with _data('allreduce', fused, how):
            if on_gpu:
                _nccl.allreduce_(_State.comm, buf)
            else:
                _sum_(buf, algorithm)
        post = postscale_factor / (_State.comm.size if average else 1)
        if post != 1.0:
            buf *= buf.dtype.type(post)
        done()
        offset = 0
        for i, part in zip(idx, parts):
            t = tensors[i]
            value = buf[offset:offset + part.size].reshape(t.shape)
            value = value.copy() if len(idx) > 1 else value
            outs[i] = _nd.array(value, ctx=t.context, dtype=value.dtype) if on_gpu \
                else _nd.from_numpy(value).as_in_context(t.context)
            offset += part.size
    return outs


def allreduce(tensor, average=True, name=None, priority=0, prescale_factor=1.0,
              postscale_factor=1.0, algorithm=None):
    """The sum (``average=False``) or the mean over the ranks of ``tensor``,
    as a new NDArray.  (MXNet's KVStore sums; Horovod averages.)
    ``priority`` is Horovod's scheduling hint, accepted and unused here."""
    return grouped_allreduce([tensor], average, name, priority, prescale_factor,
                             postscale_factor, algorithm)[0]


def allreduce_(tensor, average=True, name=None, priority=0, prescale_factor=1.0,
               postscale_factor=1.0, algorithm=None):
    """:func:`allreduce` into ``tensor`` itself; returns it."""
    tensor[:] = allreduce(tensor, average, name, priority, prescale_factor,
                          postscale_factor, algorithm)
    return tensor


def allgather(tensor, name=None, priority=0):
    """The ranks' tensors concatenated along axis 0, in rank order (their
    first dimensions may differ; the others must not)."""
    _ready()
    name = _name(name, 'allgather')
    mine = backend.to_numpy(tensor._value())
    if mine.ndim == 0:
        raise HorovodError(f'allgather {name!r}: a scalar has no axis 0 to '
                           f'concatenate along; reshape it to (1,)')
    _agree('allgather', name, shape=['*', *mine.shape[1:]], dtype=str(mine.dtype))
    done = _timed('allgather', name, mine.nbytes)
    wide = mine.dtype == np.float16               # no half type in MPI
    flat = mine.reshape(-1)
    with _data('allgather', name, 'mpi'):
        _, out = _gatherv(flat.view(np.uint16) if wide else flat, 'for the data')
    done()
    out = out.view(mine.dtype).reshape((-1,) + mine.shape[1:])
    return _nd.from_numpy(out).as_in_context(tensor.context)


def broadcast(tensor, root_rank, name=None, priority=0):
    """``root_rank``'s ``tensor``, on every rank, as a new NDArray."""
    _ready()
    comm, name = _State.comm, _name(name, 'broadcast')
    if not 0 <= int(root_rank) < comm.size:
        raise HorovodError(f'broadcast {name!r}: root_rank {root_rank} is not a '
                           f'rank of this job (0 .. {comm.size - 1})')
    buf = backend.to_numpy(tensor._value()).copy()
    _agree('broadcast', name, shape=list(buf.shape), dtype=str(buf.dtype),
           root=int(root_rank))
    done = _timed('broadcast', name, buf.nbytes)
    with _data('broadcast', name, 'mpi'):
        finish(comm.Ibcast(buf.view(np.uint8), root=int(root_rank)), 'for the data')
    done()
    return _nd.from_numpy(buf).as_in_context(tensor.context)


def broadcast_(tensor, root_rank, name=None, priority=0):
    """:func:`broadcast` into ``tensor`` itself; returns it."""
    tensor[:] = broadcast(tensor, root_rank, name)
    return tensor


def broadcast_parameters(params, root_rank=0, prefix=None):
    """Give every rank ``root_rank``'s parameters (call once, after
    initializing, before training).

    ``params``: a ``ParameterDict`` (``net.collect_params()``), a dict of
    Parameters or NDArrays, or a list of Parameters.  A parameter whose
    initialization is deferred (its shape is known at the first forward) is
    broadcast right after that initialization, as Horovod does.
    """
    _check()
    from ..gluon.parameter import DeferredInitializationError, Parameter
    if hasattr(params, 'items'):
        items = sorted(params.items(), key=lambda kv: str(kv[0]))
    elif isinstance(params, (list, tuple)) and all(isinstance(p, Parameter)
                                                   for p in params):
        items = [(p.name, p) for p in params]
    else:
        raise ValueError(f'broadcast_parameters: params must be a ParameterDict, '
                         f'a dict or a list of Parameters, got {type(params).__name__}')
    for name, p in items:
        name = f'{prefix or ""}{name}'
        if not isinstance(p, Parameter):
            broadcast_(p, root_rank, name=str(name))
            continue
        try:
            data = p.list_data()
        except DeferredInitializationError:
            _broadcast_after_init(p, root_rank, str(name))
            continue
        for d in data:
            broadcast_(d, root_rank, name=str(name))


def _broadcast_after_init(p, root_rank, name):
    init_impl = p._init_impl

    def init_then_broadcast(data, ctx_list):
        init_impl(data, ctx_list)
        for d in p.list_data():
            broadcast_(d, root_rank, name=name)
        p._init_impl = init_impl
    p._init_impl = init_then_broadcast
