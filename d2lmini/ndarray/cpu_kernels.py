"""Elementwise kernels on every core, one cache-sized chunk at a time.

A NumPy ufunc runs on one core, and an expression such as sigmoid's
``1 / (1 + exp(-x))`` makes one full pass over memory per operation, each
writing a temporary as large as ``x``.  Two cheap changes fix both, the way
a C++ framework's elementwise kernels work (MXNet's are OpenMP loops):

* **every core**: a large array is cut into one contiguous range per
  thread; NumPy releases the GIL inside a ufunc, so plain Python threads run
  the ranges at the same time;
* **in cache**: each thread walks its range in chunks of ``CHUNK`` elements
  and applies *all* of a kernel's passes to a chunk before moving on, into
  scratch buffers that stay in the core's L2 cache.

Chunks are not tiny: between two ufunc calls a thread needs the GIL, and
handing the GIL from thread to thread costs microseconds each time.
Measured on the 2-core development machine for sigmoid over LeNet's first
activation (1.2 M float32, the seven-pass two-branch form sigmoid then
had; MXNet's four-pass formula is now 24% cheaper): 9.3 ms as the plain NumPy
expression; 2.9 ms with one thread at any chunk size from 64 K to 256 K
elements; with two threads 3.0 ms at 16 K elements a chunk (GIL hand-offs
eat the gain), 1.7 ms at 64 K, 1.45 ms at 128 K and 256 K.  Inside a
training step the gain is smaller: after a matrix product OpenBLAS's
worker threads spin for a while, waiting for the next one, and the second
elementwise thread shares a core with one of them.  Measured, the same
sigmoid right after a GEMM: 3.0 ms with two threads, 3.0 ms with one.

A kernel is an ordinary function of NumPy arrays, ``kernel(out, *inputs,
*scratch)``, written with ``out=`` ufunc calls; the parameters after the
inputs name the temporary buffers it needs.  :func:`run` calls it on
chunks; on whole arrays it computes the same thing, so reading a kernel is
reading the formula.  Elementwise results do not depend on where the chunks
are cut, so the threaded result is bit-identical to the one-pass NumPy
expression (the tests check this on every kernel; only a NaN's sign bit
may differ, as it does in NumPy itself between an array and a slice).

How many threads: :func:`d2lmini.engine.cpu_threads`, the policy BLAS calls
follow too, all usable cores with one CPU device and ``cores // k`` with
``k`` devices, so that ``cpu(0)`` and ``cpu(1)`` training side by side do
not oversubscribe the machine.  Arrays under ``MIN_SPLIT`` elements per
thread run on the calling thread (handing work to a thread costs ~20 us);
device (CuPy) arrays never come here: :func:`large` is False for them, and
the operators that call :func:`run` directly take their plain expression on
a GPU (:func:`run` refuses them).
"""
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import backend, engine

CHUNK = 1 << 17            # elements: 512 KB of float32 per buffer, L2-sized
MIN_SPLIT = 1 << 16        # elements per thread below which one thread is faster
LARGE = 2 * MIN_SPLIT      # smaller arrays: the plain NumPy call, nothing else


def large(a):
    """Whether ``a`` is a float NumPy array worth this module's kernels;
    any other array gets the plain NumPy expression (the same numbers)."""
    return type(a) is np.ndarray and a.size >= LARGE and a.dtype.kind == 'f'


_POOL = {'pool': None, 'size': 0}
_POOL_LOCK = threading.Lock()


def _pool(n):
    """A thread pool with at least ``n`` workers (made on first use)."""
    with _POOL_LOCK:
        if _POOL['size'] < n:          # the old pool stays usable: another
            n = max(n, engine._cores())  # thread may be submitting to it now
            _POOL['pool'] = ThreadPoolExecutor(n, thread_name_prefix='d2lmini-cpu')
            _POOL['size'] = n
        return _POOL['pool']


def _flat(arrays):
    """1-D views of ``arrays`` (one shape, one memory layout) in memory
    order, or None if some array is not one dense block in that order.

    A transposed array (the convolution's CHWN output viewed as NCHW) is
    dense too: walking it in stride order is walking its memory."""
    a0 = arrays[0]
    order = sorted(range(a0.ndim), key=lambda d: -abs(a0.strides[d]))
    flat = []
    for a in arrays:
        if a.shape != a0.shape:
            return None
        t = a.transpose(order)
        if not t.flags.c_contiguous:
            return None
        flat.append(t.reshape(-1))
    return flat


def _walk(kernel, arrays, lo, hi, n_scratch, dtype, chunk):
    """``kernel`` over elements ``[lo, hi)`` of the flat ``arrays``, a chunk
    at a time, with this thread's own scratch buffers."""
    scratch = [np.empty(min(chunk, hi - lo), dtype) for _ in range(n_scratch)]
    for s in range(lo, hi, chunk):
        e = min(s + chunk, hi)
        kernel(*[a[s:e] for a in arrays], *[b[:e - s] for b in scratch])


def _scratch_of(kernel, n_inputs):
    """The scratch buffers ``kernel`` takes: its named parameters after
    ``out`` and the inputs (``softrelu(out, x, t)``: one)."""
    return max(0, kernel.__code__.co_argcount - 1 - n_inputs)


def run(kernel, out, *inputs, scratch=None, chunk=CHUNK):
    """``kernel(out, *inputs, *scratch_buffers)`` over all of ``out``;
    returns ``out``.

    ``inputs`` have ``out``'s shape; ``scratch`` is how many temporary
    buffers (of ``out``'s dtype) the kernel uses, by default read off its
    parameters.  ``chunk=None``: no chunking within a thread (a one-pass
    kernel gains nothing from it).
    """
    if type(out) is not np.ndarray:
        raise TypeError(f'cpu_kernels.run: out is a {type(out).__module__}.'
                        f'{type(out).__name__}, not a NumPy array; a device '
                        f'array takes the plain expression, not a CPU kernel')
    if scratch is None:
        scratch = _scratch_of(kernel, len(inputs))
    arrays = (out,) + inputs
    n = out.size
    flat = _flat(arrays) if n >= LARGE else None
    if flat is None:       # small, or layouts that differ: one call
        kernel(*arrays, *[np.empty_like(out) for _ in range(scratch)])
        return out
    threads = max(1, min(engine.cpu_threads(), n // MIN_SPLIT))
    chunk = chunk or -(-n // threads)
    if threads == 1:
        _walk(kernel, flat, 0, n, scratch, out.dtype, chunk)
        return out
    step = -(-n // threads // 16) * 16         # whole SIMD blocks per thread
    bounds = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    pool = _pool(len(bounds) - 1)
    # each range runs in a copy of the caller's context: NumPy's error state
    # (np.errstate, np.seterr) is a context variable, so a worker honours the
    # caller's 'ignore' or 'raise' as the one-thread expression would
    jobs, mine = [], [bounds[0]]
    for lo, hi in bounds[1:]:
        try:
            jobs.append(pool.submit(contextvars.copy_context().run, _walk, kernel,
                                    flat, lo, hi, scratch, out.dtype, chunk))
        except RuntimeError:
            # The interpreter is exiting and the pool takes no more work
            # (an op pushed by an exit hook): this thread runs the range.
            mine.append((lo, hi))
    try:
        for lo, hi in mine:
            _walk(kernel, flat, lo, hi, scratch, out.dtype, chunk)
    finally:
        for j in jobs:
            j.result()
    return out


def _threadable(a, others):
    """Whether ``f(a, *others)`` may run threaded into an array like ``a``:
    a large float array, and arrays of its shape and dtype or Python
    numbers as the other arguments (so the result's dtype is ``a``'s)."""
    return (large(a)
            and all(type(b) in (int, float) or (type(b) is np.ndarray
                    and b.shape == a.shape and b.dtype == a.dtype) for b in others)
            and engine.cpu_threads() > 1)


def ufunc(f):
    """``f(a, ...)`` for a NumPy ufunc ``f`` (its other arguments arrays
    like ``a``, or Python numbers), threaded for large float arrays; any
    other call is ``f``'s own."""
    def call(a, *others):
        if not _threadable(a, others):
            return f(a, *others)
        arrays = [b for b in others if type(b) is np.ndarray]
        where = [type(b) is np.ndarray for b in others]

        def kernel(o, x, *xs):
            it = iter(xs)
            f(x, *[next(it) if w else b for w, b in zip(where, others)], out=o)
        return run(kernel, np.empty_like(a), a, *arrays, chunk=None)
    call.__name__ = getattr(f, '__name__', 'ufunc')
    call.__doc__ = f'``np.{call.__name__}``, threaded for large arrays.'
    return call


# --- the kernels -----------------------------------------------------------------
# Each is the formula, written as in-place passes over one chunk.

def sigmoid(out, x):
    """``1 / (1 + exp(-x))``, MXNet's formula (``mshadow_op::sigmoid``):
    four passes.  For ``x`` below about -88 (float32) ``exp(-x)`` overflows
    to inf and the result is ``1 / inf = 0``, the right limit, so the
    overflow is not an error here.  (The two-branch "stable" form that
    takes ``exp(-|x|)`` gives the same values to a few ulps with seven
    passes: 2.81 ms against 2.14 ms on LeNet's first activation.)"""
    np.negative(x, out=out)
    with np.errstate(over='ignore'):
        np.exp(out, out=out)
    np.add(out, 1, out=out)
    np.divide(1, out, out=out)


def sigmoid_backward(out, g, y, t):
    """``g * y * (1 - y)``: the sigmoid's derivative from its output."""
    np.subtract(1, y, out=t)
    np.multiply(g, y, out=out)
    np.multiply(out, t, out=out)


def tanh(out, x):
    np.tanh(x, out=out)


def tanh_backward(out, g, y):
    """``g * (1 - y * y)``: tanh's derivative from its output."""
    np.multiply(y, y, out=out)
    np.subtract(1, out, out=out)
    np.multiply(g, out, out=out)


_ZEROS = {}                # dtype -> shared read-only zeros (see zeros_as)
ZEROS_MAX = 1 << 24        # elements: larger arrays compare with a scalar 0


def zeros_as(x):
    """Zeros of ``x``'s shape and dtype, a view of one shared read-only
    buffer, or the scalar 0 for an array over ``ZEROS_MAX`` elements.

    Why: NumPy 2.x runs ``np.maximum(x, 0)`` (a scalar, broadcast) through
    a generic loop, and ``np.maximum(x, zeros)`` (two arrays) through a
    SIMD one, with the same result bit for bit.  Measured for 150,528
    float32 (a LeNet's first activation at batch 32): 56 us against 15 us.
    The buffer is made by ``np.zeros`` (calloc): pages never written all
    map to the kernel's one zero page, so reading them costs cache, not
    memory.
    """
    n = x.size
    if n > ZEROS_MAX:
        return x.dtype.type(0)
    buf = _ZEROS.get(x.dtype)
    if buf is None or buf.size < n:           # (a race makes one twice)
        buf = np.zeros(max(n, 1 << 16), x.dtype)
        buf.flags.writeable = False
        _ZEROS[x.dtype] = buf
    if x.ndim < 2 or x.flags.c_contiguous:
        return buf[:n].reshape(x.shape)
    # Laid out as x is (a convolution's CHWN output seen as NCHW): with
    # the other order, each ufunc step strides through one of the two,
    # 12x slower on 2 M floats (2.9 ms against 0.24).
    order = sorted(range(x.ndim), key=lambda d: -abs(x.strides[d]))
    return buf[:n].reshape([x.shape[d] for d in order]).transpose(np.argsort(order))


def relu(out, x):
    np.maximum(x, zeros_as(x), out=out)


def maximum0(x, out=None):
    """``max(x, 0)`` (``out=`` as a ufunc's) for a NumPy array, by
    :func:`zeros_as`, or any other backend's array, by its own ``maximum``."""
    if type(x) is np.ndarray:
        return np.maximum(x, zeros_as(x), out=out)
    return backend.xp_of(x).maximum(x, 0, out=out)


def relu_backward(out, g, y):
    """``g * (y > 0)``."""
    np.multiply(g, np.greater(y, 0), out=out)


def softrelu(out, x, t):
    """``max(x, 0) + log1p(exp(-|x|))``: log(1 + e^x) without overflow."""
    np.abs(x, out=t)
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    relu(out, x)
    np.add(out, t, out=out)


def softsign(out, x, t):
    """``x / (1 + |x|)``."""
    np.abs(x, out=t)
    np.add(1, t, out=t)
    np.divide(x, t, out=out)


def apply(kernel, *inputs, scratch=None, chunk=CHUNK):
    """A new array of ``kernel`` over ``inputs`` (laid out like the first)."""
    return run(kernel, np.empty_like(inputs[0]), *inputs,
               scratch=scratch, chunk=chunk)
