"""NDArray: an n-dimensional array on a context, computed asynchronously.

Why one long file: the NDArray class itself, with the methods MXNet's
NDArray has; the operators live elsewhere (``elemwise``, ``matrix``, ...),
and most of the length is one short method or docstring after another.

An NDArray is a *promise*: its shape, dtype and context are known at once
(the front end infers them), its values once the engine has run the op that
produces it.  Reading values (``asnumpy``, ``asscalar``, ``print``) waits.

Every operator goes through :func:`invoke`, the one dispatch path, in five
steps: check that the inputs share a context, infer the output's shape and
dtype, make the output, push the kernel to the context's stream (or run it
now in naive mode), and record the op on the autograd tape if recording.
"""
import ctypes
import functools
import numbers
import weakref

import numpy as np

from .. import autograd as _ag
from .. import backend, engine
from ..base import _check_kwargs, as_mxnet_error
from ..context import Context, current_context
from .registry import OPS, broadcast_shapes
from . import layout

__all__ = ['NDArray', 'invoke', 'array', 'empty', 'zeros', 'ones', 'full',
           'arange', 'zeros_like', 'ones_like', 'full_like', 'empty_like', 'waitall',
           'from_numpy']
# What mx.sym leaves out: the array itself, and what needs one in hand (a
# graph node makes its output from a shape, as zeros and arange do).
NOT_SYMBOLIC = ('NDArray', 'invoke', 'array', 'empty', 'empty_like', 'waitall',
                'from_numpy')

_new = object.__new__
_NAIVE = engine._NAIVE
_NAIVE_MODE = engine._NAIVE_MODE
_TRACE = engine._TRACE
_MEMORY = engine._MEMORY   # the profiler's memory count, or None (mx.profiler)
_stream_for = engine.stream_for
_REC = _ag._STATE          # [recording, training]
_EMPTY = {}
# The graph being traced (d2lmini.symbol.graph.Capture) or None.  While a
# symbol is lowered to a plan, every operator call on the tracing thread is
# recorded there instead of being run: the arrays are shape-only placeholders.
_CAPTURE = [None]

DEFAULT_DTYPE = np.dtype(np.float32)
py_slice = slice        # MXNet's name for the builtin, which nd.slice shadows


def _dtype(dtype):
    """Normalize ``dtype`` ('float32', np.float32, np.dtype) to a np.dtype."""
    if dtype is None:
        return DEFAULT_DTYPE
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f'unknown dtype {dtype!r}') from None


def _make(shape, dtype, ctx, cls=None):
    o = _new(cls or NDArray)
    o._data = None
    o._shape = shape
    o._dtype = dtype
    o._ctx = ctx
    o._stream = _NAIVE
    o._seq = 0
    o._exc = None
    o._node = None
    o._grad = None
    o._base = None
    o._foreign = None
    return o


def _context_error(op_name, args):
    desc = ', '.join(f'{a._ctx} (shape {a._shape})' for a in args)
    return as_mxnet_error(ValueError(
        f"operator '{op_name}': all inputs must be on the same context, got {desc}. "
        f"Copy explicitly with x.copyto(ctx) or x.as_in_context(ctx)."))


def invoke(op, args, attrs=_EMPTY):
    """Run ``op`` on the NDArrays ``args``: the one dispatch path of d2lmini.

    Every operator call takes the same five steps, numbered below:

    1. check that the inputs are on one context;
    2. infer the output's shape and dtype (``op.infer``): a bad shape
       fails here, at the caller's line, before any kernel runs;
    3. make the output, an array whose values are still to come;
    4. push the kernel (``op.forward``) to the context's stream and return
       (the naive engine runs it now instead: :func:`_run_now_on_cpu`);
    5. record the op on the autograd tape, if recording.

    It runs for every operator, so the usual case (one or two inputs, one
    output, the threaded engine) is written out flat, and the others are
    the functions it names: :func:`_invoke_many` for ops with several
    outputs.  While a symbol is being traced into a graph
    (:mod:`d2lmini.symbol.graph`), the call is recorded there instead.
    """
    if _CAPTURE[0] is not None and _CAPTURE[0].active():
        return _CAPTURE[0].invoke(op, args, attrs)
    # 1. Check contexts (and gather what infer reads).
    a0 = args[0]
    ctx = a0._ctx
    if len(args) == 1:
        shapes, dtypes = [a0._shape], [a0._dtype]
    elif len(args) == 2 and args[1]._ctx is ctx:
        shapes, dtypes = [a0._shape, args[1]._shape], [a0._dtype, args[1]._dtype]
    else:
        shapes, dtypes = _on_one_context(op, args, ctx)
    # 2. Infer the output's shape and dtype.
    try:                         # free in Python 3.11+ when nothing is raised
        res = op.infer(shapes, dtypes, **attrs)
    except (ValueError, TypeError, IndexError) as e:
        # As in MXNet 1.6+, a shape or argument error is an MXNetError that
        # keeps its built-in type (d2lmini.base): both `except` forms work.
        raise as_mxnet_error(e).with_traceback(e.__traceback__) from None
    # 3. Make the output: shape, dtype and context now, values later.
    if op.nout != 1:
        return _invoke_many(op, args, attrs, ctx, res)
    out = _new(a0.__class__)     # an nd.NDArray, or an mx.np.ndarray from one
    out._shape, out._dtype = res
    out._ctx = ctx
    out._exc = out._node = out._grad = out._base = out._foreign = None
    # 4. Push the kernel to the stream of the input's context, which runs
    #    what is pushed to it in order, or run it now (the naive engine).
    if not _NAIVE_MODE[0]:
        s = a0._stream           # the context's stream, or _NAIVE (ready)
        if s is _NAIVE:
            s = _stream_for(ctx)
        out._seq = s.push(op.forward, args, [out], op.name, attrs)
        out._stream = s
    elif ctx.device_type == 'cpu' and _TRACE[0] is None:
        _run_now_on_cpu(op, args, out, attrs)
    else:                        # a GPU, or an engine trace to write
        engine.run_sync(op.name, op.forward, args, [out], ctx, attrs)
    # 5. Record on the autograd tape, if recording and an input is in the graph.
    if _REC[0] and op.differentiable:
        _record_if_in_graph(op, args, [out], attrs)
    return out


def _on_one_context(op, args, ctx):
    """Step 1 of :func:`invoke` for any number of inputs: all must be on
    ``ctx``.  Returns their shapes and dtypes."""
    for a in args:
        if a._ctx is not ctx and a._ctx != ctx:
            raise _context_error(op.name, args)
    return [a._shape for a in args], [a._dtype for a in args]


def _run_now_on_cpu(op, args, out, attrs):
    """Step 4 of :func:`invoke` in the naive engine, on a CPU: run the
    kernel here, on the calling thread (the general case, GPUs and engine
    traces, is :func:`d2lmini.engine.run_sync`)."""
    for a in args:               # made by the threaded engine: still pending?
        s = a._stream
        if s is not _NAIVE and (s.done < a._seq or a._exc is not None):
            engine.wait_for(a)
    try:
        if len(args) == 1:       # written out: this is the naive engine's cost
            out._data = op.forward(args[0]._data, **attrs)
        elif len(args) == 2:
            out._data = op.forward(args[0]._data, args[1]._data, **attrs)
        else:
            out._data = op.forward(*[a._data for a in args], **attrs)
    except Exception as e:
        raise engine.op_error(op.name, out._ctx, e, 'naive engine') from e
    out._stream = _NAIVE
    out._seq = 0


def _invoke_many(op, args, attrs, ctx, res):
    """Steps 3 to 5 of :func:`invoke` for an op with a list of outputs
    (``split``, ``topk``, ...): ``res`` is their ``(shape, dtype)`` list."""
    cls = args[0].__class__
    outs = [_make(s, d, ctx, cls) for s, d in res]
    fwd = op.forward
    if len(outs) == 1:           # split(x, 1): the engine wants y, not [y]
        fwd = _first_of(fwd)
    _run(op.name, fwd, args, outs, ctx, attrs=attrs)
    if _REC[0] and op.differentiable:
        _record_if_in_graph(op, args, outs, attrs)
    return outs


def _record_if_in_graph(op, args, outs, attrs):
    """Step 5 of :func:`invoke`: tape the op if an input is in the graph."""
    for a in args:
        if a._node is not None:
            _ag._record(op, args, outs, attrs)
            return


def _first_of(fn):
    return lambda *a, **kw: fn(*a, **kw)[0]


def _run(name, fn, args, outs, ctx, deps=None, attrs=_EMPTY):
    """Execute ``fn`` over ``args``' data into ``outs``: now, or on the stream."""
    if _CAPTURE[0] is not None and _CAPTURE[0].active():
        _CAPTURE[0].run(name, fn, args, outs)
        return
    if _NAIVE_MODE[0]:
        engine.run_sync(name, fn, args, outs, ctx, attrs)
        return
    s = _stream_for(ctx)
    seq = s.push(fn, args, outs, name, attrs, deps)
    for o in outs:
        o._stream = s
        o._seq = seq


def _write_inplace(name, fn, writes, reads):
    """Push ``fn(*writes, *reads)``, which rewrites ``writes`` in place.

    The engine protocol of every in-place write (``x[:] = y``, optimizer
    updates): wait for pending cross-device reads of what is overwritten,
    mark the write for readers of views, and let a write through a view
    update its base.
    """
    if _CAPTURE[0] is not None and _CAPTURE[0].active():
        _CAPTURE[0].run(name, fn, tuple(writes) + tuple(reads), list(writes))
        return
    deps = None
    for w in writes:
        pending = engine.take_readers(w)
        if pending:
            deps = (deps or []) + pending
    _run(name, fn, tuple(writes) + tuple(reads), list(writes), writes[0]._ctx, deps)
    writes[0]._stream.last_write = writes[0]._seq
    for w in writes:
        if w._base is not None:
            w._base._stream, w._base._seq = w._stream, w._seq


def _as_nd(x, like):
    if isinstance(x, NDArray):
        return x
    return array(x, ctx=like._ctx, dtype=like._dtype)


class NDArray:
    """An n-dimensional array on a context (MXNet 1.x semantics)."""
    __slots__ = ('_data', '_shape', '_dtype', '_ctx', '_stream', '_seq', '_exc',
                 '_node', '_grad', '_base', '_foreign', '__weakref__')
    __array_priority__ = 1000.0          # numpy scalars defer to our operators

    # -- properties -----------------------------------------------------------
    @property
    def shape(self):
        """The size of each axis, a tuple of ints."""
        return self._shape

    @property
    def size(self):
        """The number of elements."""
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def ndim(self):
        """The number of axes."""
        return len(self._shape)

    @property
    def dtype(self):
        """The element type, a NumPy scalar type such as ``numpy.float32``."""
        return self._dtype.type

    @property
    def context(self):
        """The device the array lives on, e.g. ``cpu(0)`` (also ``ctx``)."""
        return self._ctx

    ctx = context
    device = context

    @property
    def grad(self):
        """The gradient that ``backward`` writes; None until :meth:`attach_grad`."""
        return self._grad

    @property
    def T(self):
        """The array with its axes reversed (a copy)."""
        return self.transpose()

    @property
    def stype(self):
        """The storage type: always ``'default'`` (dense) in d2lmini."""
        return 'default'

    # -- synchronization and conversion ----------------------------------------
    def wait_to_read(self):
        """Block until this array's value is computed."""
        engine.wait_for(self)

    def _value(self):
        engine.wait_for(self)
        return self._data

    def asnumpy(self):
        """A NumPy copy of the values (waits for them)."""
        d = self._value()
        return d.get() if backend.is_gpu_array(d) else np.array(d, copy=True, order='C')

    def asscalar(self):
        """The one value as a NumPy scalar of this array's dtype (as MXNet)."""
        if self.size != 1:
            raise ValueError(f'asscalar needs an array of size 1, got shape {self._shape}')
        return self.asnumpy().reshape(())[()]

    def item(self):
        """The one value as a Python number."""
        return self.asscalar().item()

    def tolist(self):
        """The values as nested Python lists."""
        return self.asnumpy().tolist()

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def astype(self, dtype, copy=True):
        """The values cast to ``dtype``; with ``copy=False``, the array itself
        when it has that dtype already.

        >>> nd.array([1.7, -1.7]).astype('int32')
        <BLANKLINE>
        [ 1 -1]
        <NDArray 2 @cpu(0)>
        """
        dtype = _dtype(dtype)
        if not copy and dtype == self._dtype:
            return self
        return invoke(OPS['cast'], (self,), {'dtype': dtype})

    def copy(self):
        """A new array with the same values, on the same context."""
        return invoke(OPS['_copy'], (self,))

    def copyto(self, other):
        """Copy to a context (new array) or into an existing NDArray."""
        if isinstance(other, Context):
            return _copy_across(self, other)
        if isinstance(other, NDArray):
            if other._shape != self._shape:
                raise ValueError(f'copyto: shape mismatch, source {self._shape} vs '
                                 f'target {other._shape}')
            src = self if other._ctx == self._ctx else _copy_across(self, other._ctx)
            other[:] = src
            return other
        raise TypeError(f'copyto expects a Context or an NDArray, got {type(other).__name__}')

    def as_in_context(self, ctx):
        """This array on ``ctx``: itself if already there, else a copy."""
        return self if self._ctx == ctx else _copy_across(self, ctx)

    as_in_ctx = as_in_context

    def to_device(self, ctx):
        """The same as :meth:`as_in_context` (MXNet 2's name)."""
        return self.as_in_context(ctx)

    def detach(self):
        """Same values, cut from the autograd graph."""
        out = invoke(OPS['_identity'], (self,))
        out._node = None
        return out

    def attach_grad(self, grad_req='write', stype=None):
        """Allocate ``self.grad`` and make this array a leaf of autograd."""
        _ag.mark_variables([self], [zeros(self._shape, self._ctx, self._dtype)],
                           grad_req)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Gradients of this recorded array into the ``grad`` of the arrays
        that :meth:`attach_grad` marked (see :func:`d2lmini.autograd.backward`).

        >>> x = nd.array([1, 2]); x.attach_grad()
        >>> with autograd.record():
        ...     y = (x * x).sum()
        >>> y.backward(); x.grad
        <BLANKLINE>
        [2. 4.]
        <NDArray 2 @cpu(0)>
        """
        _ag.backward([self], None if out_grad is None else [out_grad],
                     retain_graph=retain_graph, train_mode=train_mode)

    @property
    def _fresh_grad(self):
        """MXNet's flag: a backward wrote ``grad`` since it was last cleared."""
        return _ag.fresh_grad(self)

    @_fresh_grad.setter
    def _fresh_grad(self, value):
        _ag.set_fresh_grad(self, value)

    # -- printing ---------------------------------------------------------------
    def __repr__(self):
        shape = 'x'.join(str(s) for s in self._shape) or '1'
        vals = str(self.asnumpy())
        return f'\n{vals}\n<NDArray {shape} @{self._ctx}>'

    def __str__(self):
        return self.__repr__()

    def __len__(self):
        if not self._shape:
            raise TypeError('len() of a 0-d NDArray')
        return self._shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        n = self.size
        if n == 0:
            return False                     # MXNet: an empty array is False
        if n != 1:
            raise ValueError('The truth value of an NDArray with multiple elements '
                             'is ambiguous.')
        return bool(self.asscalar())

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    def __index__(self):
        return int(self.asscalar())

    def __hash__(self):
        return id(self)

    # -- pickle and copy.deepcopy (as MXNet: the state is the array's record
    # in the NDArray file format, so values, dtype and context come back) ------
    def __getstate__(self):
        from . import utils
        return {'handle': bytearray(utils.array_to_bytes(self))}

    def __setstate__(self, state):
        from . import utils
        a, ctx = utils.array_from_bytes(state['handle'])
        backend.check_context(ctx)
        new = _make(tuple(a.shape), a.dtype, ctx)
        for slot in _STATE_SLOTS:
            setattr(self, slot, getattr(new, slot))
        _fill_from_host(self, np.array(a, dtype=a.dtype), ctx, a.dtype)

    def __reduce__(self):
        return _unpickled, (), self.__getstate__()

    # -- arithmetic ---------------------------------------------------------------
    def __add__(self, o):
        return _binary('add', self, o)

    def __radd__(self, o):
        return _binary('add', o, self)

    def __sub__(self, o):
        return _binary('subtract', self, o)

    def __rsub__(self, o):
        return _binary('subtract', o, self)

    def __mul__(self, o):
        return _binary('multiply', self, o)

    def __rmul__(self, o):
        return _binary('multiply', o, self)

    def __truediv__(self, o):
        return _binary('divide', self, o)

    def __rtruediv__(self, o):
        return _binary('divide', o, self)

    def __mod__(self, o):
        return _binary('mod', self, o)

    def __rmod__(self, o):
        return _binary('mod', o, self)

    def __pow__(self, o):
        return _binary('power', self, o)

    def __rpow__(self, o):
        return _binary('power', o, self)

    def __matmul__(self, o):
        return invoke(OPS['dot'], (self, o))

    def __neg__(self):
        return invoke(OPS['negative'], (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return invoke(OPS['abs'], (self,))

    def __eq__(self, o):
        return _binary('equal', self, o)

    def __ne__(self, o):
        return _binary('not_equal', self, o)

    def __gt__(self, o):
        return _binary('greater', self, o)

    def __ge__(self, o):
        return _binary('greater_equal', self, o)

    def __lt__(self, o):
        return _binary('lesser', self, o)

    def __le__(self, o):
        return _binary('lesser_equal', self, o)

    def _inplace(self, name, o):
        """``x += o`` and friends.  A deliberate difference from MXNet, which
        refuses them while recording when ``x`` or ``o`` is in the graph:
        here they then compute a new array that the name ``x`` is rebound
        to, so the tape stays right (chapter 2)."""
        if _REC[0] and (self._node is not None or getattr(o, '_node', None) is not None):
            return _binary(name, self, o)    # keep the graph: rebind, don't mutate
        res = _binary(name, self, o)
        if res._shape != self._shape:
            raise ValueError(f"in-place '{name}': result shape {res._shape} does not "
                             f"fit the array's shape {self._shape}")
        self._assign(res, None)
        return self

    def __iadd__(self, o):
        return self._inplace('add', o)

    def __isub__(self, o):
        return self._inplace('subtract', o)

    def __imul__(self, o):
        return self._inplace('multiply', o)

    def __itruediv__(self, o):
        return self._inplace('divide', o)

    # -- indexing -------------------------------------------------------------------
    def __getitem__(self, key):
        key = _index_key(key, self)
        if isinstance(key, NDArray):
            return invoke(OPS['take'], (self, key.astype('int64', copy=False)),
                          {'axis': 0})
        out = invoke(OPS['_getitem'], (self,), {'key': key})
        if _is_basic(key):                   # basic slicing: a view, as in MXNet
            out._base = self._base if self._base is not None else self
        return out

    def __setitem__(self, key, value):
        """``x[key] = value``: ``value`` (a scalar, list, NumPy array or
        NDArray) broadcasts to ``x[key]``'s shape as in NumPy.

        Inside ``autograd.record()`` an in-place write that involves the
        graph (``x`` or ``value`` is in it) raises MXNet's error, as MXNet
        does; the one exception, also MXNet's, is a whole-array write
        (``x[:] = y``, ``y.copyto(x)``, ``out=``) into an array outside the
        graph, which is recorded as a copy so gradients flow to ``y``.
        """
        if type(key) is slice and key == _ALL or key is Ellipsis:
            return self._assign(value, None)  # x[:] = v: whole array (0-d too)
        if key is None:
            key = (None,)                    # x[None] = v: NumPy's new axis
        key = _index_key(key, self)
        if isinstance(key, NDArray):
            key = key.asnumpy().astype(np.int64)
        self._assign(value, key)

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether ``x[slc_key]`` of a C-contiguous ``x`` of ``shape`` is
        contiguous (MXNet's helper): NumPy's own flag on a data-less stand-in."""
        shape = tuple(int(n) for n in shape)
        strides = tuple(8 * int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        probe = np.lib.stride_tricks.as_strided(np.zeros(1), shape, strides)
        return bool(probe[tuple(slc_key)].flags.c_contiguous)

    def _assign(self, value, key):
        """Write ``value`` into ``self[key]`` (whole array if key is None), in place."""
        if isinstance(value, NDArray):
            if value._ctx != self._ctx:
                value = value.as_in_context(self._ctx)
            args = (self, value)
        elif isinstance(value, numbers.Number):
            args = (self,)
        else:
            value = array(value, ctx=self._ctx, dtype=self._dtype)
            args = (self, value)
        # Shape check on the front end, so a bad assignment fails here.
        tshape = self._shape if key is None else _slice_shape(self._shape, key)
        if isinstance(value, NDArray) and value._shape != tshape:
            _check_broadcast(value._shape, tshape, key)
            if not tshape:                   # one element: NumPy wants a 0-d value
                value = value.reshape(())
                args = (self, value)
        record = False
        if _REC[0] and (self._node is not None or
                        (len(args) == 2 and value._node is not None)):
            # A write into part of an array the tape holds would be silently
            # wrong (the overwritten part keeps its gradient): refuse, as MXNet.
            if key is not None or self._node is not None or self._base is not None:
                raise engine.MXNetError(
                    'Inplace operations (+=, -=, x[:]=, etc) are not supported when '
                    f'recording with autograd. (x{_key_str(key)} = value, x of shape '
                    f'{self._shape}, value of shape {getattr(value, "shape", ())}: '
                    f'compute a new array instead, e.g. with nd.where or nd.concat)')
            if value._shape != tshape:       # record the broadcast too
                v = value._shape
                while len(v) > len(tshape) and v[0] == 1:
                    v = v[1:]
                value = (value.reshape(v) if v != value._shape else value
                         ).broadcast_to(tshape)
                args = (self, value)
            record = True
        scalar = value if len(args) == 1 else None
        _write_inplace('_setitem', functools.partial(_setitem_kernel, key, scalar),
                       [self], args[1:])
        if record:                           # self now holds a copy of value
            _ag._record(OPS['_copy'], (value,), [self], _EMPTY)

    # -- methods that mirror nd functions (the rest: fluent.py) ------------------
    def reshape(self, *shape, **kwargs):
        """The same data in a new shape, given as ints or one tuple, with
        MXNet's codes (0 keeps an axis, -1 infers one, -2, -3, -4: see
        ``nd.reshape``); ``reverse=True`` reads
        them from the right.

        >>> nd.arange(6).reshape(2, -1).shape
        (2, 3)
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if 'shape' in kwargs:
            shape = tuple(kwargs.pop('shape'))
        return invoke(OPS['reshape'], (self,), {'shape': shape,
                                                'reverse': kwargs.pop('reverse', False)})

    def _reshape_to(self, shape):
        """The same data in exactly ``shape`` (no codes: a 0 is a zero-length
        axis), for gradients that go back to an input's shape."""
        return invoke(OPS['_np_reshape'], (self,), {'shape': tuple(shape)})

    def transpose(self, *axes, **kw):
        """The axes permuted: reversed, or in the order ``axes`` (ints, one
        tuple, or ``axes=``).

        >>> nd.zeros((2, 3, 4)).transpose(1, 0, 2).shape
        (3, 2, 4)
        """
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        axes = kw.get('axes', axes) or None
        return invoke(OPS['transpose'], (self,), {'axes': axes})

    def _own(self, out):
        # MXNet's flatten/expand_dims/squeeze give a new array; the ops here
        # return NumPy views of the input, so without inplace= copy them.
        return invoke(OPS['_copy'], (out,))

    def _view(self, shape):
        """A reshaped array sharing this one's data (MXNet's ``inplace=True``):
        writing into it writes into this array."""
        out = self.reshape(shape)
        out._base = self._base if self._base is not None else self
        return out

    def flatten(self, inplace=False):
        """``(d1, d2*...*dk)``; ``inplace=True``: a view sharing the data."""
        if not inplace:
            return self._own(invoke(OPS['flatten'], (self,)))
        return self._view((self._shape[0] if self._shape else 1, -1))

    def expand_dims(self, axis, inplace=False):
        """A new axis of size 1 at ``axis``; ``inplace=True``: a view."""
        if not inplace:
            return self._own(invoke(OPS['expand_dims'], (self,), {'axis': axis}))
        nd = len(self._shape)
        if not -nd - 1 <= axis <= nd:
            raise ValueError(f'expand_dims: axis {axis} out of range for a '
                             f'{nd}-d array')
        axis = axis + nd + 1 if axis < 0 else axis
        return self._view(self._shape[:axis] + (1,) + self._shape[axis:])

    def squeeze(self, axis=None, inplace=False):
        """Drop axes of size 1 (all, or ``axis``); ``inplace=True``: a view."""
        if not inplace:
            return self._own(invoke(OPS['squeeze'], (self,), {'axis': axis}))
        nd = len(self._shape)
        axes = [axis] if isinstance(axis, int) else list(axis or [])
        if len(set(axes)) != len(axes):
            raise ValueError(f'squeeze: duplicate axes in {axis}')
        for a in axes:
            if not -nd <= a < nd:
                raise ValueError(f'squeeze: axis {a} out of range for a {nd}-d array')
            if self._shape[a] != 1:
                raise ValueError(f'squeeze: axis {a} has size {self._shape[a]}, not 1')
        keep = {a % nd for a in axes} if axes else {i for i, s in enumerate(self._shape)
                                                    if s == 1}
        return self._view(tuple(s for i, s in enumerate(self._shape) if i not in keep))

    def as_nd_ndarray(self):
        """The array itself (an ``mx.np.ndarray`` gives its ``nd`` view)."""
        return self

    def as_np_ndarray(self):
        """This array as an ``mx.np.ndarray``, without copying: the two share
        their data, so a write through either shows in both."""
        from ..numpy.multiarray import ndarray
        return _share(self, ndarray)

    def tostype(self, stype):
        """A copy in storage ``stype``; only ``'default'`` (dense) exists here."""
        if stype != 'default':
            raise NotImplementedError(f"tostype({stype!r}): d2lmini has only dense "
                                      f"('default') storage")
        return self.copy()

    def slice_assign(self, rhs, begin, end, step):
        """``self[begin:end:step] = rhs`` per axis, in place; returns self."""
        self[_slice_key(begin, end, step)] = rhs
        return self

    def slice_assign_scalar(self, value, begin, end, step):
        """``self[begin:end:step] = value`` per axis, in place; returns self."""
        self[_slice_key(begin, end, step)] = float(value)
        return self


def _share(a, cls):
    """``a`` as a ``cls`` object (``as_np_ndarray``/``as_nd_ndarray``): the
    same buffer, not a copy (the identity op, so pending values and the
    autograd tape carry over), and writes through it reach ``a``, as
    through a view.  ``grad`` is ``a``'s."""
    out = invoke(OPS['_identity'], (a,))
    out.__class__ = cls
    out._base = a._base if a._base is not None else a
    out._grad = a._grad
    return out


def _slice_key(begin, end, step):
    step = step or [None] * len(begin)
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


_ALL = slice(None)
_STATE_SLOTS = [s for s in NDArray.__slots__ if s != '__weakref__']


def _unpickled():
    """An empty NDArray for pickle to fill with ``__setstate__``."""
    return _make((0,), DEFAULT_DTYPE, current_context())


def _setitem_kernel(key, scalar, dst, src=None):
    v = scalar if src is None else src
    if not hasattr(dst, '__setitem__'):      # a NumPy scalar from a 0-d result
        dst = np.array(dst)
    elif not getattr(dst.flags, 'writeable', True):
        dst = dst.copy()                     # a broadcast view: own the buffer now
    if key is None:
        if isinstance(v, np.ndarray):
            layout.copyto(dst, v)          # fast across NCHW/CHWN storage
        else:
            dst[...] = v
    else:
        if dst.__class__ is not np.ndarray:
            key = device_key(key, backend.xp_of(dst))
        dst[key] = v
    return dst


def device_key(key, xp):
    """``key`` with its index arrays (host NumPy arrays, from the front end)
    copied to ``xp``'s current device: a GPU array is indexed with device
    arrays only.  Called for non-NumPy arrays only."""
    if isinstance(key, tuple):
        return tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
    return xp.asarray(key) if isinstance(key, np.ndarray) else key


def _check_broadcast(vshape, tshape, key):
    """NumPy's rule for ``x[key] = v``: ``v`` broadcasts to the target shape,
    after dropping leading size-1 axes beyond the target's rank."""
    v = tuple(vshape)
    while len(v) > len(tshape) and v[0] == 1:
        v = v[1:]
    try:
        ok = broadcast_shapes('_setitem', v, tshape) == tshape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f'x{_key_str(key)} = v: cannot broadcast v of shape '
                         f'{tuple(vshape)} to the target shape {tshape}')


def _key_str(key):
    if key is None:
        return '[:]'
    items = key if isinstance(key, tuple) else (key,)
    parts = []
    for k in items:
        if isinstance(k, slice):
            b, e = ('' if v is None else str(v) for v in (k.start, k.stop))
            parts.append(f'{b}:{e}' + ('' if k.step is None else f':{k.step}'))
        elif isinstance(k, np.ndarray):
            parts.append(f'<index array {k.shape}>')
        else:
            parts.append(repr(k))
    return '[' + ', '.join(parts) + ']'


def _is_basic(key):
    items = key if isinstance(key, tuple) else (key,)
    return all(isinstance(k, (int, slice)) or k is None or k is Ellipsis for k in items)


def _index_key(key, arr):
    """Validate and normalize an index so errors surface on the front end."""
    if isinstance(key, NDArray):
        return key
    if isinstance(key, (list, np.ndarray)):
        key = np.asarray(key)
        if key.dtype == bool:
            return key
        return key.astype(np.int64)
    if isinstance(key, tuple):
        return tuple(k.asnumpy().astype(np.int64) if isinstance(k, NDArray) else k
                     for k in key)
    return key


def _probe_shape(shape, key):
    """Index a zero-stride stand-in of ``shape``: the result's shape, no data."""
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape,
                                            (0,) * len(shape))
    try:
        return probe[key].shape
    except IndexError as e:
        raise IndexError(f'index {key!r} invalid for shape {shape}: {e}') from None


_probe_shape_cached = functools.lru_cache(maxsize=1024)(_probe_shape)


def _slice_shape(shape, key):
    """Shape of ``x[key]`` for ``x`` of ``shape``, computed without data."""
    try:
        hash(key)
    except TypeError:                        # arrays in the key: not hashable
        return _probe_shape(shape, key)
    return _probe_shape_cached(shape, key)


_SCALAR_OPS = {'add': ('_plus_scalar', '_plus_scalar'),
               'subtract': ('_minus_scalar', '_rminus_scalar'),
               'multiply': ('_mul_scalar', '_mul_scalar'),
               'divide': ('_div_scalar', '_rdiv_scalar'),
               'power': ('_power_scalar', '_rpower_scalar'),
               'mod': ('_mod_scalar', '_rmod_scalar'),
               'maximum': ('_maximum_scalar', '_maximum_scalar'),
               'minimum': ('_minimum_scalar', '_minimum_scalar'),
               'equal': ('_equal_scalar', '_equal_scalar'),
               'not_equal': ('_not_equal_scalar', '_not_equal_scalar'),
               'greater': ('_greater_scalar', '_lesser_scalar'),
               'greater_equal': ('_greater_equal_scalar', '_lesser_equal_scalar'),
               'lesser': ('_lesser_scalar', '_greater_scalar'),
               'lesser_equal': ('_lesser_equal_scalar', '_greater_equal_scalar')}


def _binary(name, lhs, rhs):
    """``lhs <name> rhs`` where either side may be a Python/NumPy scalar."""
    t = type(rhs)
    if (t is float or t is int) and type(lhs) is NDArray:
        return invoke(OPS[_SCALAR_OPS[name][0]], (lhs,), {'scalar': rhs})
    if isinstance(lhs, NDArray):
        if isinstance(rhs, NDArray):
            return invoke(OPS[name], (lhs, rhs))
        if isinstance(rhs, numbers.Number):
            return invoke(OPS[_SCALAR_OPS[name][0]], (lhs,), {'scalar': rhs})
        return invoke(OPS[name], (lhs, _as_nd(rhs, lhs)))
    if isinstance(lhs, numbers.Number):
        return invoke(OPS[_SCALAR_OPS[name][1]], (rhs,), {'scalar': lhs})
    return invoke(OPS[name], (_as_nd(lhs, rhs), rhs))


# --- copies across devices ------------------------------------------------------------
def _copy_across(src, ctx):
    """Copy ``src`` to ``ctx`` on the destination's stream, carrying the dependency."""
    ctx = Context(ctx)
    backend.check_context(ctx)              # clear "no GPU" error in naive mode too
    out = _make(src._shape, src._dtype, ctx, src.__class__)
    dep = engine.read_dep(src)              # wait for src's producer ...
    fn = functools.partial(backend.to_context, ctx=ctx)
    _run('copyto', fn, (src,), [out], ctx, None if dep is None else [dep])
    if out._stream is not _NAIVE:          # ... and a later write to src for us
        engine.add_reader(src, out._stream, out._seq)
    if _REC[0] and src._node is not None:
        _ag._record(OPS['_copyto'], (src,), [out], {'ctx': ctx})
    return out


# --- creation ----------------------------------------------------------------------------
def _ctx(ctx):
    if ctx is None:
        return current_context()
    if not isinstance(ctx, Context):
        raise TypeError(f'ctx must be a Context such as mx.cpu(0), got {ctx!r}')
    return ctx


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        ints = tuple(int(s) for s in shape)
        if any(i != s for i, s in zip(ints, shape)):     # 2.5 is not a dimension
            raise ValueError
        shape = ints
    except (TypeError, ValueError):
        raise TypeError(f'shape must be an int or a tuple of ints, got {shape!r}') from None
    if any(s < 0 for s in shape):
        raise ValueError(f'negative dimension in shape {shape}')
    return shape


def _from_host(fn, shape, dtype, ctx, name):
    """An array whose values ``fn(xp)`` computes on ``ctx``'s stream."""
    backend.check_context(ctx)
    out = _make(shape, dtype, ctx)
    xp = backend.xp(ctx)
    _run(name, lambda: fn(xp), (), [out], ctx)
    return out


def array(source_array, ctx=None, dtype=None):
    """An NDArray from a list, NumPy array or NDArray (float32 unless ``dtype``).

    >>> nd.array([[1, 2], [3, 4]])
    <BLANKLINE>
    [[1. 2.]
     [3. 4.]]
    <NDArray 2x2 @cpu(0)>
    """
    ctx = _ctx(ctx)
    if isinstance(source_array, NDArray):
        if dtype is None:
            dtype = source_array._dtype
        return source_array.as_in_context(ctx).astype(dtype)
    dtype = _dtype(dtype)
    if backend.is_gpu_array(source_array):
        host = source_array
    else:
        src = source_array if isinstance(source_array, np.ndarray) else \
            np.asarray(source_array)
        if src.dtype.kind in 'OUSV':         # None, strings, objects: no silent NaNs
            raise TypeError(f'nd.array: cannot make a numeric NDArray from '
                            f'{type(source_array).__name__} of dtype {src.dtype} '
                            f'(got {source_array!r:.60})')
        host = np.array(src, dtype=dtype)    # copy now: caller may mutate it
        if host.dtype == object:
            raise TypeError(f'cannot make an NDArray from {type(source_array).__name__}')
    shape = tuple(host.shape)
    backend.check_context(ctx)
    out = _make(shape, np.dtype(dtype), ctx)
    _fill_from_host(out, host, ctx, dtype)
    return out


def _fill_from_host(out, host, ctx, dtype):
    """Give the new array ``out`` the values of ``host`` (our own copy)."""
    if ctx.device_type == 'cpu':
        out._data = host                    # already our own copy: ready at once
        if _MEMORY[0] is not None:          # made here, not by the engine
            _MEMORY[0](ctx, (), [out])
    else:
        _run('array', lambda: backend.asarray_on(host, ctx, dtype), (), [out], ctx)


# MXNet keywords the creation (and sampling) functions accept and ignore;
# any other keyword is refused (``size=`` for ``shape=``), see _check_kwargs.
_IGNORED = ('stype', 'name', '__layout__')    # __layout__: a state's, from state_info()


def empty(shape, ctx=None, dtype=None, **kwargs):
    """An array of ``shape`` whose values are whatever the memory held: for
    an array you will overwrite.  ``ctx``: the current context unless given;
    ``dtype``: float32 unless given.

    >>> nd.empty((2, 3)).shape
    (2, 3)
    """
    _check_kwargs(empty, kwargs, _IGNORED)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.empty(shape, dtype), shape, dtype, ctx, 'empty')


def _fill_out(name, out, shape, val):
    """MXNet's ``out=`` of a creation function: fill ``out`` in place."""
    if not isinstance(out, NDArray):
        raise TypeError(f'{name}: out must be an NDArray, got {type(out).__name__}')
    if out._shape != shape:
        raise ValueError(f'{name}: out has shape {out._shape}, but shape {shape} '
                         f'was asked for')
    out[:] = val
    return out


def zeros(shape, ctx=None, dtype=None, out=None, **kwargs):
    """An array of zeros of ``shape`` (an int or a tuple), on ``ctx`` (the
    current context unless given), float32 unless ``dtype``; ``out=``: fill
    that array instead.

    >>> nd.zeros((2, 3))
    <BLANKLINE>
    [[0. 0. 0.]
     [0. 0. 0.]]
    <NDArray 2x3 @cpu(0)>
    """
    _check_kwargs(zeros, kwargs, _IGNORED)
    if out is not None:
        return _fill_out('zeros', out, _shape(shape), 0)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.zeros(shape, dtype), shape, dtype, ctx, 'zeros')


def ones(shape, ctx=None, dtype=None, out=None, **kwargs):
    """An array of ones; the arguments are those of :func:`zeros`.

    >>> nd.ones(3, dtype='int32')
    <BLANKLINE>
    [1 1 1]
    <NDArray 3 @cpu(0)>
    """
    _check_kwargs(ones, kwargs, _IGNORED)
    if out is not None:
        return _fill_out('ones', out, _shape(shape), 1)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.ones(shape, dtype), shape, dtype, ctx, 'ones')


def full(shape, val, ctx=None, dtype=None, out=None, **kwargs):
    """An array filled with ``val``; the other arguments are those of
    :func:`zeros`.

    >>> nd.full((2, 2), 7)
    <BLANKLINE>
    [[7. 7.]
     [7. 7.]]
    <NDArray 2x2 @cpu(0)>
    """
    _check_kwargs(full, kwargs, _IGNORED)
    if out is not None:
        return _fill_out('full', out, _shape(shape), val)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.full(shape, val, dtype), shape, dtype, ctx, 'full')


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None, **kwargs):
    """Evenly spaced values in ``[start, stop)`` (MXNet: float32 by default)."""
    _check_kwargs(arange, kwargs, _IGNORED + ('infer_range',))
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError('arange: step must not be zero')
    ctx, dtype = _ctx(ctx), _dtype(dtype)
    n = max(0, int(np.ceil((stop - start) / step)))
    shape = (n * repeat,)

    def fn(xp):
        a = xp.arange(start, stop, step, dtype=np.float64)[:n].astype(dtype)
        return xp.repeat(a, repeat) if repeat > 1 else a
    return _from_host(fn, shape, dtype, ctx, 'arange')


def zeros_like(data, **kw):
    """Zeros of ``data``'s shape, dtype and context.

    >>> nd.zeros_like(nd.array([[1, 2]], dtype='int32'))
    <BLANKLINE>
    [[0 0]]
    <NDArray 1x2 @cpu(0)>
    """
    _check_kwargs(zeros_like, kw, _IGNORED)
    return zeros(data.shape, data.context, data._dtype)


def ones_like(data, **kw):
    """Ones of ``data``'s shape, dtype and context (as :func:`zeros_like`)."""
    _check_kwargs(ones_like, kw, _IGNORED)
    return ones(data.shape, data.context, data._dtype)


def full_like(data, fill_value, **kw):
    """``fill_value`` in ``data``'s shape, dtype and context (as
    :func:`zeros_like`)."""
    _check_kwargs(full_like, kw, _IGNORED)
    return full(data.shape, fill_value, data.context, data._dtype)


def empty_like(data, **kw):
    """An uninitialized array of ``data``'s shape, dtype and context (see
    :func:`empty`)."""
    _check_kwargs(empty_like, kw, _IGNORED)
    return empty(data.shape, data.context, data._dtype)


def from_numpy(ndarray, zero_copy=True, array_cls=None):
    """An NDArray on ``cpu(0)`` made from a NumPy array.

    ``zero_copy=True`` (MXNet's default) shares the memory: the NumPy array
    becomes read-only (MXNet's rule: leave it to the NDArray) and writes to
    the NDArray show in it.  It must be C-contiguous.  ``zero_copy=False``
    copies, as :func:`array` does, keeping the dtype.  Memory that was
    read-only already (not made so by ``from_numpy``) is copied, never written.
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f'from_numpy expects a numpy.ndarray, got {type(ndarray).__name__}')
    if not zero_copy:
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags['C_CONTIGUOUS']:
        raise ValueError('from_numpy: only C-contiguous arrays can be shared '
                         '(zero_copy=True); use zero_copy=False or np.ascontiguousarray')
    if ndarray.dtype.kind not in 'biuf':
        raise ValueError(f'from_numpy: dtype {ndarray.dtype} is not supported')
    if ndarray.flags['WRITEABLE']:
        data = ndarray.view()                # stays writable for the NDArray
        ndarray.flags['WRITEABLE'] = False
        _FROZEN[id(ndarray)] = weakref.ref(ndarray, lambda _, k=id(ndarray):
                                           _FROZEN.pop(k, None))
    elif ndarray.size and (_FROZEN.get(id(ndarray)) or (lambda: None))() is ndarray:
        data = _writable_alias(ndarray)      # shared before: share it again
    else:
        data = ndarray.copy()                # read-only memory we must not write
    out = _make(tuple(ndarray.shape), ndarray.dtype, Context('cpu', 0))
    out._data = data
    return out


_FROZEN = {}        # id -> weakref of the NumPy arrays from_numpy made read-only


def _writable_alias(a):
    """A writable array over ``a``'s memory (which from_numpy froze), keeping
    ``a`` alive."""
    buf = (ctypes.c_char * a.nbytes).from_address(a.ctypes.data)
    buf.keep = a
    return np.frombuffer(buf, a.dtype).reshape(a.shape)


def waitall():
    """Block until all pushed work has finished on every device."""
    engine.waitall()

