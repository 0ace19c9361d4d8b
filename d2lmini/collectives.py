"""Collective operations over arrays on several devices.

Why one long file: four collectives, each with a naive and a ring
algorithm that share the chunking and the per-step engine operations
defined here; each public function reads on its own, top to bottom.

``allreduce``, ``reduce``, ``broadcast`` and ``allgather`` take one NDArray
per device and return results on the same devices, each with two
algorithms:

* ``'naive'``, the multi-GPU chapter's: copy everything to one device
  (the *root*), compute there, copy the result back to every device.  The
  root does all the arithmetic while the other devices wait.
* ``'ring'``: the devices form a ring, the array is cut into ``n`` chunks,
  and every device works on a different chunk at each step.  An allreduce
  is a *reduce-scatter* (``n - 1`` steps; at each one device ``r`` adds
  the partial sum of chunk ``c`` that its left neighbour holds into its
  own, so after the last step device ``r`` holds the full sum of chunk
  ``r + 1``) followed by an *all-gather* (``n - 1`` steps passing the
  finished chunks round the ring).  Each device moves ``2 (n - 1) / n``
  of the array whatever ``n`` is, and all devices move data at once.

Every step is an engine operation pushed to the stream of the device that
receives: ``allreduce(...)`` returns at once, and a step waits only for
the steps that produce the chunk it reads (not for the whole array), so
steps on different chunks run on different devices at the same time.  The
chunks are tracked by :class:`_Plan`, which gives each step the
``(stream, seq)`` dependencies of what it reads and overwrites, and hands
the arrays back to the engine's bookkeeping (``read_dep``, ``add_reader``,
``take_readers``) so that a later write to an input waits for the steps
that read it.

A ring step *receives and adds* in one kernel, as NCCL does: on CPU
devices, whose memory is shared (like GPUs with peer access), the adding
device reads its neighbour's chunk directly; between GPUs or between a
GPU and the host the chunk is copied first.  The naive algorithm copies
whole arrays, as the chapter's code does.

Semantics (decisions, with their reasons):

* Results are new arrays unless ``out`` says where to write; ``out=arrays``
  works in place.  So with one device ``allreduce([x])``, ``reduce([x])``
  and ``allgather([x])`` return a *copy* of ``x`` (writing into the result
  must not change ``x``), while ``allreduce([x], out=[x])`` pushes
  nothing.
* Several arrays may live on the same device (MXNet's KVStore sums such
  values too); they then take turns on that device's stream.  The same
  array twice in ``out`` is refused: which write wins would be arbitrary.
* The sum is the dtype's own (``int8`` wraps, ``bool`` is ``or``), and
  every device gets bitwise the same result: each chunk is summed once,
  on one device, and copied to the others.
* Not recorded by autograd (MXNet's KVStore and collectives are not): the
  results are constants for the tape.  Writing into an array the tape
  holds (``out=`` while recording) is refused, as any in-place write is.
* Bad input (no arrays, mixed shapes or dtypes, ``out`` of the wrong shape
  or context, a root out of range) raises at the call, before anything is
  pushed.

``algorithm='auto'`` picks the ring for allreduce and reduce from 1 MB
over two devices and from 2 MB over three or more, and the naive algorithm
otherwise (the measurements are at :data:`RING_MIN_BYTES`).  Broadcast and
allgather use the naive one: they only copy, every device copies its whole
result either way, and copies do not get faster with more threads on the
development machine; measured (medians, 1-64 MB), the ring was within 5% of
naive over 2 devices and 5-75% slower over 4 (more, smaller steps).

>>> xs = [nd.ones((3,), ctx=mx.cpu(i)) * (i + 1) for i in range(3)]
>>> ys = allreduce(xs, algorithm='ring')
>>> ys[2].asnumpy(), ys[2].context
(array([6., 6., 6.], dtype=float32), cpu(2))
"""
import functools
import math
import numbers


from . import autograd as _ag
from . import backend, engine
from .base import MXNetError, as_mxnet_error
from .context import Context
from .ndarray.ndarray import NDArray, _make

__all__ = ['allreduce', 'reduce', 'broadcast', 'allgather', 'ALGORITHMS']

ALGORITHMS = ('naive', 'ring', 'auto')
# 'auto' chooses the ring for allreduce/reduce from this many bytes on: 1 MB
# over two devices, 2 MB over three or more.  Measured with
# benchmarks/bench_allreduce.py on the 2-core development machine (in place,
# float32, naive time / ring time): 2 devices 0.9-1.1x at 256-512 KB,
# 1.1x at 1 MB, 1.2x at 2 MB, 1.3-1.6x at 4 MB; 3 and 4 devices 0.6-0.8x
# at 256 KB-1 MB, 1.0-1.1x at 2 MB, 1.6-2.0x at 4 MB.  Below that a ring's
# 2 (n - 1) dependent steps cost more engine hand-offs than its parallel
# work saves.
RING_MIN_BYTES = 1 << 20
RING_MIN_BYTES_3 = 2 << 20          # with three or more devices
# Ring chunks larger than this are cut into pieces, and the ring becomes a
# pipeline: a device passes on the first piece of a chunk while it still
# adds the next (NCCL's slices).  On the 2-core development machine it did
# not pay: in place, 16 and 64 MB over 2-4 devices, whole chunks were as
# fast as 16 MB pieces and 2-10% faster than 4 MB or 1 MB pieces (more
# steps, no transfer to hide on shared memory), so only chunks over 64 MB
# are cut.
PIECE_BYTES = 64 << 20


# --- errors --------------------------------------------------------------------------
def _error(kind, msg):
    return as_mxnet_error(kind(msg))


def _check_arrays(fname, arrays, same_shape=True):
    if isinstance(arrays, NDArray):
        raise _error(TypeError, f'{fname}: expects a list of NDArrays (one per '
                                f'device), got a single NDArray; wrap it: [x]')
    try:
        arrays = list(arrays)
    except TypeError:
        raise _error(TypeError, f'{fname}: expects a list of NDArrays, got '
                                f'{type(arrays).__name__}') from None
    if not arrays:
        raise _error(ValueError, f'{fname}: got an empty list; pass one NDArray '
                                 f'per device')
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            raise _error(TypeError, f'{fname}: item {i} is a {type(a).__name__}, '
                                    f'not an NDArray')
    a0 = arrays[0]
    for i, a in enumerate(arrays):
        if a._dtype != a0._dtype:
            raise _error(TypeError, f'{fname}: arrays[{i}] has dtype {a._dtype} '
                                    f'but arrays[0] has {a0._dtype}; cast them '
                                    f'to one dtype first (x.astype(...))')
        if same_shape and a._shape != a0._shape:
            raise _error(ValueError, f'{fname}: arrays[{i}] on {a._ctx} has shape '
                                     f'{a._shape} but arrays[0] on {a0._ctx} has '
                                     f'{a0._shape}; all must have the same shape')
    return arrays


def _check_algorithm(fname, algorithm):
    if algorithm not in ALGORITHMS:
        raise _error(ValueError, f'{fname}: algorithm={algorithm!r}; use one of '
                                 f'{", ".join(map(repr, ALGORITHMS))}')


def _check_out(fname, out, ctxs, shape, dtype, inputs=()):
    """``out`` as a list (one per context), checked; None stays None."""
    if out is None:
        return None
    if isinstance(out, NDArray):
        out = [out]
    out = list(out)
    if len(out) != len(ctxs):
        raise _error(ValueError, f'{fname}: out has {len(out)} arrays for '
                                 f'{len(ctxs)} devices')
    owners = set()
    for i, (o, c) in enumerate(zip(out, ctxs)):
        if not isinstance(o, NDArray):
            raise _error(TypeError, f'{fname}: out[{i}] is a {type(o).__name__}, '
                                    f'not an NDArray')
        if o._ctx != c:
            raise _error(ValueError, f'{fname}: out[{i}] is on {o._ctx} but its '
                                     f'result belongs on {c}')
        if o._shape != shape or o._dtype != dtype:
            raise _error(ValueError, f'{fname}: out[{i}] has shape {o._shape} and '
                                     f'dtype {o._dtype}; the result has shape '
                                     f'{shape} and dtype {dtype}')
        if _ag.is_recording() and o._node is not None:
            raise MXNetError(f'{fname}: out[{i}] is recorded by autograd; in-place '
                             f'writes into it are not supported while recording '
                             f'(collectives are not recorded): call it outside '
                             f'autograd.record() or without out=')
        owner = id(o._base if o._base is not None else o)
        if owner in owners:
            raise _error(ValueError, f'{fname}: out[{i}] shares memory with an '
                                     f'earlier entry of out; give each result '
                                     f'its own array')
        owners.add(owner)
        for j, a in enumerate(inputs):
            if a is o and j != i and inputs[i] is not o:
                raise _error(ValueError, f'{fname}: out[{i}] is arrays[{j}]; in '
                                         f'place means out[i] is arrays[i]')
    return out


# --- kernels (run on a device's worker) --------------------------------------------
def _target(dst, shape, dtype, ctx):
    """``dst``, or a new uninitialized array when the plan made it (no data yet)."""
    if dst is not None:
        return dst
    return backend.xp(ctx).empty(shape, dtype)


def _view(a, sel):
    """Piece ``sel`` of backend array ``a``: ``(lo, hi)`` of the flattened
    array, an index tuple (an allgather slot), or None (all of it)."""
    if sel is None:
        return a
    if isinstance(sel, tuple) and len(sel) == 2 and isinstance(sel[0], int):
        lo, hi = sel
        if a.ndim == 1:
            return a[lo:hi]
        return a.reshape(-1)[lo:hi]       # a copy if `a` is not contiguous
    return a[sel]


def _local(a, sel, remote, ctx):
    """Piece ``sel`` of ``a`` (another device's array) on ``ctx``.  CPU
    devices share memory: read the neighbour's piece where it is.  A GPU's
    piece is cut on its own device (that worker's current device is
    ``ctx``'s, and the reshape of a non-contiguous array is a kernel),
    then copied."""
    if not remote:
        return _view(a, sel)
    if backend.is_gpu_array(a):
        with a.device:
            a = _view(a, sel)
    else:
        a = _view(a, sel)
    return backend.to_context(a, ctx)


def _store(dst, sel, value):
    """``dst[sel] = value`` for a flattened range, an index tuple or None."""
    if sel is None:
        dst[...] = value
    elif isinstance(sel, tuple) and len(sel) == 2 and isinstance(sel[0], int):
        lo, hi = sel
        if dst.flags.c_contiguous:
            dst.reshape(-1)[lo:hi] = value
        else:                             # e.g. a transposed layout: by index
            xp = backend.xp_of(dst)
            dst[xp.unravel_index(xp.arange(lo, hi), dst.shape)] = value
    else:
        dst[sel] = value


def _k_copy(dst, src, *, sel, src_sel, remote, shape, dtype, ctx):
    dst = _target(dst, shape, dtype, ctx)
    _store(dst, sel, _local(src, src_sel, remote, ctx))
    return dst


def _k_add(dst, mine, theirs, *, sel, remote, shape, dtype, ctx):
    """``dst[sel] = mine[sel] + theirs[sel]``: receive and reduce in one pass."""
    dst = _target(dst, shape, dtype, ctx)
    b = _local(theirs, sel, remote, ctx)
    a = _view(mine, sel)
    xp = backend.xp_of(dst)
    if dst.flags.c_contiguous:
        xp.add(a, b, out=_view(dst, sel))
    else:
        _store(dst, sel, xp.add(a, b))
    return dst


def _k_sum(dst, *srcs, shape, dtype, ctx):
    """``dst = srcs[0] + srcs[1] + ...`` (all on ``ctx``); if ``dst`` is one
    of ``srcs`` it must be ``srcs[0]``, which is read before it is written."""
    dst = _target(dst, shape, dtype, ctx)
    xp = backend.xp_of(dst)
    if len(srcs) == 1:
        xp.copyto(dst, srcs[0])
        return dst
    xp.add(srcs[0], srcs[1], out=dst)
    for s in srcs[2:]:
        xp.add(dst, s, out=dst)
    return dst


# --- the plan: push steps, tracking which piece each one reads and writes ----------
class _Plan:
    """Push the steps of one collective call, each with exact dependencies.

    A *buffer* is an NDArray a step reads or writes: a caller's input or
    output, or a temporary.  For each buffer the plan keeps, per piece, the
    step that last wrote it and the steps that have read it since (see
    :class:`_Buf`).  A step depends on the last writer of each piece it
    reads and, for the piece it writes, on that piece's last writer and
    pending readers.  Steps on one stream need no dependency on each other:
    the stream runs them in the order they were pushed, and every step is
    pushed after the steps it depends on, so nothing can wait in a cycle.
    """

    def __init__(self):
        self.bufs = {}          # id(buf) -> _Buf
        self.naive = engine.is_naive()

    def _buf(self, arr):
        b = self.bufs.get(id(arr))
        if b is None:
            b = self.bufs[id(arr)] = _Buf(arr)
        return b

    def step(self, name, fn, dst, rng, reads, **kw):
        """Push ``fn(dst, *read buffers, **kw)`` to ``dst``'s stream.

        It writes piece ``rng`` of ``dst`` (None: all of it) and reads
        ``reads``, a list of ``(buffer, rng)``.
        """
        ctx = dst._ctx
        args = (dst,) + tuple(a for a, _ in reads)
        fn = functools.partial(fn, shape=dst._shape, dtype=dst._dtype, ctx=ctx, **kw)
        if self.naive:
            engine.run_sync(name, fn, args, [dst], ctx, {})
            return
        stream = engine.stream_for(ctx)
        deps = {}
        out = self._buf(dst)
        for a, r in reads:
            for st, q in self._buf(a).deps(r, False):
                if q > deps.get(st, 0):
                    deps[st] = q
        for st, q in out.deps(rng, True):
            if q > deps.get(st, 0):
                deps[st] = q
        deps.pop(stream, None)
        seq = stream.push(fn, args, [dst], name, {}, list(deps.items()) or None)
        dst._stream, dst._seq = stream, seq
        for a, r in reads:
            self._buf(a).read(r, stream, seq)
        out.write(rng, stream, seq)

    def finish(self, written=()):
        """Hand the buffers back to the engine's bookkeeping: later writes to
        them wait for our reads, and readers of views see our writes."""
        if self.naive:
            return
        for b in self.bufs.values():
            for stream, seq in b.reads_by.items():
                if stream.ctx != b.arr._ctx:
                    engine.add_reader(b.arr, stream, seq)
        for arr in written:             # the caller's arrays, written in place
            if arr._stream is engine._NAIVE:
                continue
            arr._stream.last_write = max(arr._stream.last_write, arr._seq)
            if arr._base is not None:
                arr._base._stream, arr._base._seq = arr._stream, arr._seq


class _Buf:
    """What the plan knows about one buffer: for the whole of it and for each
    piece, ``[writers, readers]`` as ``(stream, seq)`` lists.

    The pieces of one buffer in one call are disjoint (the chunks of a
    ring, the slots of an allgather), so a piece is found by its exact
    ``(lo, hi)``; ``None`` is the whole buffer.  A piece not yet touched
    has the whole buffer's state.
    """
    __slots__ = ('arr', 'whole', 'parts', 'pending', 'reads_by')

    def __init__(self, arr):
        self.arr = arr
        first = engine.read_dep(arr)        # its producer, if still pending
        self.whole = [[first] if first else [], []]
        self.parts = {}
        self.pending = None     # other devices' pending reads of `arr`
        self.reads_by = {}      # stream -> latest seq of ours that read it

    def deps(self, rng, writing):
        """What a step reading (or writing) piece ``rng`` must wait for."""
        if writing and self.pending is None:
            # Copies of `arr` made before this call may still be reading it.
            self.pending = engine.take_readers(self.arr) or []
        out = list(self.pending) if writing else []
        if rng is None:
            states = [self.whole] + list(self.parts.values())
        else:
            states = [self.parts.get(rng, self.whole)]
        for w, r in states:
            out += w
            if writing:
                out += r
        return out

    def read(self, rng, stream, seq):
        self.reads_by[stream] = seq
        if rng is None:
            for st in [self.whole] + list(self.parts.values()):
                st[1].append((stream, seq))
        else:
            st = self.parts.get(rng)
            if st is None:
                st = self.parts[rng] = [list(self.whole[0]), list(self.whole[1])]
            st[1].append((stream, seq))

    def write(self, rng, stream, seq):
        if rng is None:
            self.whole, self.parts = [[(stream, seq)], []], {}
        else:
            self.parts[rng] = [[(stream, seq)], []]


# --- helpers shared by the algorithms ------------------------------------------------
def _remote(a, b):
    """Must data go through a copy to get from ``a``'s device to ``b``'s?"""
    return a._ctx != b._ctx and 'gpu' in (a._ctx.device_type, b._ctx.device_type)


def _pieces(size, n, itemsize):
    """The flattened array cut into ``n`` chunks, each a list of pieces
    ``(lo, hi)`` of at most :data:`PIECE_BYTES` (empty pieces dropped)."""
    bounds = [size * i // n for i in range(n + 1)]
    per = max(1, PIECE_BYTES // itemsize)
    chunks = []
    for lo, hi in zip(bounds, bounds[1:]):
        k = max(1, -(-(hi - lo) // per))
        cuts = [lo + (hi - lo) * j // k for j in range(k + 1)]
        chunks.append([(a, b) for a, b in zip(cuts, cuts[1:]) if b > a])
    return chunks


def _copy(plan, dst, src, rng, name='copy'):
    """``dst[rng] = src[rng]`` (a flattened range; None: all), on ``dst``'s stream."""
    plan.step(name, _k_copy, dst, rng, [(src, rng)], sel=rng, src_sel=rng,
              remote=_remote(src, dst))


def _allocate(plan, arrays):
    # A new result no step wrote (size 0) still needs its buffer.
    for a in arrays:
        if id(a) not in plan.bufs and a._stream is engine._NAIVE \
                and getattr(a, '_data', None) is None:
            plan.step('alloc', _k_alloc, a, None, [])


def _k_alloc(dst, *, shape, dtype, ctx):
    return _target(dst, shape, dtype, ctx)


def _choose(algorithm, n, nbytes, ring_helps=True):
    if algorithm != 'auto':
        return algorithm
    least = RING_MIN_BYTES if n == 2 else RING_MIN_BYTES_3
    return 'ring' if ring_helps and n > 1 and nbytes >= least else 'naive'


def _results(out, ctxs, shape, dtype):
    """The arrays the results go into: ``out``, or new ones."""
    if out is not None:
        return out
    return [_make(shape, dtype, c) for c in ctxs]


# --- reduce-scatter and all-gather: the two halves of a ring allreduce ------------
def _reduce_scatter(plan, inputs, bufs, chunks):
    """Leave the sum of chunk ``(r + 1) % n`` in ``bufs[r]``, for every ``r``.

    At step ``s`` device ``r + 1`` receives chunk ``(r - s) % n`` from
    device ``r`` and adds its own input's part: the partial sum grows by one
    device per step, and all ``n`` devices work at once on ``n`` different
    chunks.  At step 0 the neighbour's input is read directly.
    """
    n = len(inputs)
    for s in range(n - 1):
        for j in range(max(len(c) for c in chunks)):
            for r in range(n):
                c = chunks[(r - s) % n]
                if j >= len(c):
                    continue
                dst = (r + 1) % n
                src = inputs[r] if s == 0 else bufs[r]
                plan.step('ring_add', _k_add, bufs[dst], c[j],
                          [(inputs[dst], c[j]), (src, c[j])],
                          sel=c[j], remote=_remote(src, bufs[dst]))


def _all_gather_chunks(plan, bufs, chunks):
    """Pass every finished chunk round the ring: device ``r`` starts with
    chunk ``(r + 1) % n`` and, after ``n - 1`` steps, has them all."""
    n = len(bufs)
    for s in range(n - 1):
        for j in range(max(len(c) for c in chunks)):
            for r in range(n):
                c = chunks[(r + 1 - s) % n]
                if j < len(c):
                    _copy(plan, bufs[(r + 1) % n], bufs[r], c[j], 'ring_copy')


# --- the collectives ---------------------------------------------------------------
def allreduce(arrays, algorithm='auto', out=None):
    """The elementwise sum of ``arrays``, on each array's device.

    Parameters
    ----------
    arrays : list of NDArray
        One array per device (same shape and dtype); several may share a
        device.
    algorithm : {'auto', 'naive', 'ring'}
    out : list of NDArray, optional
        Where to write result ``i`` (on ``arrays[i].context``);
        ``out=arrays`` sums in place.

    Returns
    -------
    list of NDArray: result ``i`` on ``arrays[i].context`` (``out`` if given).

    >>> xs = [nd.array([1, 2], ctx=mx.cpu(i)) for i in range(2)]
    >>> allreduce(xs, out=xs)[1]
    [2. 4.]
    <NDArray 2 @cpu(1)>
    """
    arrays = _check_arrays('allreduce', arrays)
    _check_algorithm('allreduce', algorithm)
    a0 = arrays[0]
    ctxs = [a._ctx for a in arrays]
    out = _check_out('allreduce', out, ctxs, a0._shape, a0._dtype, arrays)
    outs = _results(out, ctxs, a0._shape, a0._dtype)
    n, size = len(arrays), math.prod(a0._shape)
    algorithm = _choose(algorithm, n, size * a0._dtype.itemsize)
    plan = _Plan()
    if size and n == 1:
        if outs[0] is not arrays[0]:
            _copy(plan, outs[0], arrays[0], None)
    elif size and algorithm == 'naive':
        _naive_reduce(plan, arrays, outs[0])
        for i in range(1, n):
            _copy(plan, outs[i], outs[0], None, 'copyto')
    elif size:
        chunks = _pieces(size, n, a0._dtype.itemsize)
        _reduce_scatter(plan, arrays, outs, chunks)
        _all_gather_chunks(plan, outs, chunks)
    _allocate(plan, outs)
    plan.finish(out or ())
    return outs


def _naive_reduce(plan, arrays, total):
    """The chapter's reduction: copy every array to ``total``'s device, then
    add them up there into ``total``."""
    ctx = total._ctx
    here = []
    for a in arrays:
        if a._ctx != ctx:
            t = _make(a._shape, a._dtype, ctx)
            _copy(plan, t, a, None, 'copyto')
            a = t
        here.append(a)
    here.sort(key=lambda a: a is not total)   # in place: read total first
    plan.step('naive_sum', _k_sum, total, None, [(a, None) for a in here])


def _root(fname, arrays, root):
    """``(index, context)`` of the root: index None for a Context that
    holds none of the arrays."""
    n = len(arrays)
    if isinstance(root, Context):
        backend.check_context(root)
        for i, a in enumerate(arrays):
            if a._ctx == root:
                return i, root
        return None, root
    if isinstance(root, bool) or not isinstance(root, numbers.Integral):
        raise _error(TypeError, f'{fname}: root must be an index into arrays or a '
                                f'Context, got {root!r}')
    if not -n <= root < n:
        raise _error(IndexError, f'{fname}: root={root} is out of range for '
                                 f'{n} arrays')
    root = int(root) % n
    return root, arrays[root]._ctx


def reduce(arrays, root=0, algorithm='auto', out=None):
    """The elementwise sum of ``arrays`` on one device, the *root*.

    ``root`` is an index into ``arrays``, or a Context: the first array on
    it, or a device that holds none of them (as a KVStore that sums GPU
    values on the CPU).  ``out`` (on the root) receives the sum;
    ``out=arrays[root]`` sums in place.  The other arrays are not changed.

    >>> xs = [nd.ones((2,), ctx=mx.cpu(i)) for i in range(3)]
    >>> reduce(xs, root=mx.cpu(2))
    [3. 3.]
    <NDArray 2 @cpu(2)>
    """
    arrays = _check_arrays('reduce', arrays)
    _check_algorithm('reduce', algorithm)
    root, ctx = _root('reduce', arrays, root)
    a0 = arrays[0]
    if out is not None and not isinstance(out, NDArray):
        raise _error(TypeError, f'reduce: out must be one NDArray on {ctx}, got '
                                f'{type(out).__name__}')
    if out is not None and any(a is out for i, a in enumerate(arrays) if i != root):
        raise _error(ValueError, 'reduce: out is one of the arrays but not '
                                 'arrays[root]; in place means out=arrays[root]')
    out = _check_out('reduce', out, [ctx], a0._shape, a0._dtype)
    total = _results(out, [ctx], a0._shape, a0._dtype)[0]
    n, size = len(arrays), math.prod(a0._shape)
    algorithm = _choose(algorithm, n, size * a0._dtype.itemsize)
    plan = _Plan()
    if size and n == 1:
        if total is not arrays[0]:
            _copy(plan, total, arrays[0], None)
    elif size and algorithm == 'naive':
        _naive_reduce(plan, arrays, total)
    elif size:
        # A reduce-scatter into scratch buffers (the root's is the result),
        # then the root fetches the chunks the others finished.
        chunks = _pieces(size, n, a0._dtype.itemsize)
        bufs = [total if r == root else _make(a0._shape, a0._dtype, a._ctx)
                for r, a in enumerate(arrays)]
        _reduce_scatter(plan, arrays, bufs, chunks)
        for r in range(n):
            if r != root:
                for rng in chunks[(r + 1) % n]:
                    _copy(plan, total, bufs[r], rng, 'ring_copy')
    _allocate(plan, [total])
    plan.finish(out or ())
    return total


def broadcast(array, ctxs=None, algorithm='auto', out=None):
    """A copy of ``array`` on each device of ``ctxs`` (or into each of ``out``).

    The naive algorithm has every device copy from the source at once; the
    ring passes pieces along the devices in turn (a pipeline, for links
    that cannot all read one source at full speed; on CPU devices, whose
    memory is shared, the naive one is as fast, so 'auto' picks it).  An
    ``out`` entry that *is* ``array`` is left alone.

    >>> [y.context for y in broadcast(nd.ones((2,)), [mx.cpu(0), mx.cpu(1)])]
    [cpu(0), cpu(1)]
    """
    if not isinstance(array, NDArray):
        raise _error(TypeError, f'broadcast: expects an NDArray to copy, got '
                                f'{type(array).__name__}')
    _check_algorithm('broadcast', algorithm)
    if ctxs is None and out is None:
        raise _error(ValueError, 'broadcast: say where to: ctxs=[...] or out=[...]')
    if ctxs is None:
        ctxs = [o.context if isinstance(o, NDArray) else None
                for o in ([out] if isinstance(out, NDArray) else out)]
    if isinstance(ctxs, Context):
        ctxs = [ctxs]
    ctxs = list(ctxs)
    if not ctxs:
        raise _error(ValueError, 'broadcast: got an empty list of contexts')
    for i, c in enumerate(ctxs):
        if not isinstance(c, Context):
            raise _error(TypeError, f'broadcast: ctxs[{i}] is {c!r}, not a Context '
                                    f'such as mx.cpu(1)')
        backend.check_context(c)
    out = _check_out('broadcast', out, ctxs, array._shape, array._dtype)
    outs = _results(out, ctxs, array._shape, array._dtype)
    size = array.size
    algorithm = _choose(algorithm, len(ctxs), size * array._dtype.itemsize, False)
    targets = [o for o in outs if o is not array]
    plan = _Plan()
    if size and algorithm == 'naive':
        for o in targets:
            _copy(plan, o, array, None, 'copyto')
    elif size:
        # Chain: target k copies each piece from target k - 1 once it has it.
        pieces = [p for c in _pieces(size, len(ctxs), array._dtype.itemsize)
                  for p in c]
        for rng in pieces:
            prev = array
            for o in targets:
                _copy(plan, o, prev, rng, 'ring_copy')
                prev = o
    _allocate(plan, outs)
    plan.finish(out or ())
    return outs


def allgather(arrays, axis=0, algorithm='auto'):
    """The concatenation of ``arrays`` along ``axis``, on each array's device.

    The arrays may differ in size along ``axis`` (as ``nd.concat``); their
    other dimensions and dtypes must agree.

    >>> xs = [nd.full((1, 2), i, ctx=mx.cpu(i)) for i in range(2)]
    >>> allgather(xs)[1]
    [[0. 0.]
     [1. 1.]]
    <NDArray 2x2 @cpu(1)>
    """
    arrays = _check_arrays('allgather', arrays, same_shape=False)
    _check_algorithm('allgather', algorithm)
    a0 = arrays[0]
    if not a0._shape:
        raise _error(ValueError, 'allgather: the arrays are 0-d; there is no axis '
                                 'to concatenate along (reshape them to (1,))')
    nd_ = len(a0._shape)
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) \
            or not -nd_ <= axis < nd_:
        raise _error(ValueError, f'allgather: axis={axis!r} is not an axis of '
                                 f'{nd_}-d arrays')
    axis = int(axis) % nd_
    for i, a in enumerate(arrays):
        if len(a._shape) != nd_ or any(
                d != e for k, (d, e) in enumerate(zip(a._shape, a0._shape)) if k != axis):
            raise _error(ValueError, f'allgather: arrays[{i}] has shape {a._shape}, '
                                     f'arrays[0] has {a0._shape}; they may differ '
                                     f'only along axis {axis}')
    offsets = [0]
    for a in arrays:
        offsets.append(offsets[-1] + a._shape[axis])
    shape = a0._shape[:axis] + (offsets[-1],) + a0._shape[axis + 1:]
    ctxs = [a._ctx for a in arrays]
    outs = _results(None, ctxs, shape, a0._dtype)
    n = len(arrays)
    algorithm = _choose(algorithm, n, 0, False)
    slots = [(offsets[j], offsets[j + 1]) for j in range(n)]
    sels = [(slice(None),) * axis + (slice(lo, hi),) for lo, hi in slots]
    plan = _Plan()

    def put(dst, j, src, whole):
        # Slot j of `dst` from `src`: the input itself, or a gathered array.
        if not arrays[j].size:
            return
        plan.step('ring_copy' if algorithm == 'ring' else 'copyto', _k_copy,
                  dst, slots[j], [(src, None if whole else slots[j])],
                  sel=sels[j], src_sel=None if whole else sels[j],
                  remote=_remote(src, dst))

    if outs[0].size and (algorithm == 'naive' or n == 1):
        for j in range(n):                  # everything to device 0 ...
            put(outs[0], j, arrays[j], True)
        for i in range(1, n):               # ... and from there to the others
            _copy(plan, outs[i], outs[0], None, 'copyto')
    elif outs[0].size:
        for r in range(n):                  # each device's own slot
            put(outs[r], r, arrays[r], True)
        for s in range(n - 1):              # then pass the slots round
            for r in range(n):
                j = (r - s) % n
                put(outs[(r + 1) % n], j, arrays[r] if s == 0 else outs[r], s == 0)
    _allocate(plan, outs)
    plan.finish()
    return outs
