"""NDArray: an n-dimensional array on a context, computed asynchronously.

An NDArray is a *promise*: its shape, dtype and context are known at once
(the front end infers them), its values once the engine has run the op that
produces it.  Reading values (``asnumpy``, ``asscalar``, ``print``) waits.

Every operator goes through :func:`invoke`, the one dispatch path: check
contexts, infer the output, push the kernel to the device's stream (or run it
now in naive mode), and record it on the autograd tape if recording.
"""
import functools
import numbers

import numpy as np

from .. import autograd as _ag
from .. import backend, engine
from ..base import as_mxnet_error
from ..context import Context, current_context
from .registry import OPS, broadcast_shapes
from . import layout

__all__ = ['NDArray', 'invoke', 'array', 'empty', 'zeros', 'ones', 'full',
           'arange', 'zeros_like', 'ones_like', 'full_like', 'waitall']

_new = object.__new__
_NAIVE = engine._NAIVE
_NAIVE_MODE = engine._NAIVE_MODE
_TRACE = engine._TRACE
_stream_for = engine.stream_for
_REC = _ag._STATE          # [recording, training]
_EMPTY = {}

DEFAULT_DTYPE = np.dtype(np.float32)


def _dtype(dtype):
    """Normalize ``dtype`` ('float32', np.float32, np.dtype) to a np.dtype."""
    if dtype is None:
        return DEFAULT_DTYPE
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f'unknown dtype {dtype!r}') from None


def _make(shape, dtype, ctx):
    o = _new(NDArray)
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
    """Run ``op`` on NDArrays ``args``: the single dispatch path of d2lmini."""
    # This is the hot path of every operator: it is written out (no list
    # comprehensions, no partials) because each line costs a dispatch.
    a0 = args[0]
    ctx = a0._ctx
    n = len(args)
    if n == 1:
        shapes, dtypes = [a0._shape], [a0._dtype]
    elif n == 2:
        a1 = args[1]
        if a1._ctx is not ctx and a1._ctx != ctx:
            raise _context_error(op.name, args)
        shapes, dtypes = [a0._shape, a1._shape], [a0._dtype, a1._dtype]
    else:
        for a in args:
            if a._ctx is not ctx and a._ctx != ctx:
                raise _context_error(op.name, args)
        shapes = [a._shape for a in args]
        dtypes = [a._dtype for a in args]
    nout = op.nout
    try:                         # free in Python 3.11+ when nothing is raised
        if nout == 1:
            shape, dtype = op.infer(shapes, dtypes, **attrs)
            o = _new(NDArray)
            o._shape = shape
            o._dtype = dtype
            o._ctx = ctx
            o._exc = o._node = o._grad = o._base = o._foreign = None
            outs = [o]
        else:
            outs = [_make(s, d, ctx) for s, d in op.infer(shapes, dtypes, **attrs)]
    except (ValueError, TypeError, IndexError) as e:
        # As in MXNet 1.6+, a shape or argument error is an MXNetError that
        # keeps its built-in type (d2lmini.base): both `except` forms work.
        raise as_mxnet_error(e).with_traceback(e.__traceback__) from None
    fwd = op.forward
    if _NAIVE_MODE[0]:
        if ctx.device_type == 'cpu' and _TRACE[0] is None:
            # Synchronous fast path (naive engine): run the kernel right here.
            if a0._stream is not _NAIVE or n > 1:
                for a in args:           # made before a switch to naive?
                    s = a._stream
                    if s is not _NAIVE and (s.done < a._seq or a._exc is not None):
                        engine.wait_for(a)
            try:
                if n == 1:
                    res = fwd(a0._data, **attrs)
                elif n == 2:
                    res = fwd(a0._data, a1._data, **attrs)
                else:
                    res = fwd(*[a._data for a in args], **attrs)
            except Exception as e:
                raise engine.op_error(op.name, ctx, e, 'naive engine') from e
            if nout == 1:
                o._data = res
                o._stream = _NAIVE
                o._seq = 0
            else:
                for o, r in zip(outs, res):
                    o._data = r
        else:
            if nout != 1 and len(outs) == 1:    # split(x, 1): a list of one array
                fwd = _first_of(fwd)
            engine.run_sync(op.name, fwd, args, outs, ctx, attrs)
    else:
        # The first input's stream is its context's (or _NAIVE: ready).
        s = a0._stream
        if s is _NAIVE:
            s = _stream_for(ctx)
        if nout == 1:
            o._seq = s.push(fwd, args, outs, op.name, attrs)
            o._stream = s
        else:
            if len(outs) == 1:
                fwd = _first_of(fwd)
            seq = s.push(fwd, args, outs, op.name, attrs)
            for o in outs:
                o._stream = s
                o._seq = seq
    if _REC[0] and op.differentiable:
        for a in args:
            if a._node is not None:
                _ag._record(op, args, outs, attrs)
                break
    return outs[0] if nout == 1 else outs


def _first_of(fn):
    return lambda *a, **kw: fn(*a, **kw)[0]


def _run(name, fn, args, outs, ctx, deps=None):
    """Execute ``fn`` over ``args``' data into ``outs``: now, or on the stream."""
    if _NAIVE_MODE[0]:
        engine.run_sync(name, fn, args, outs, ctx, _EMPTY)
        return
    s = _stream_for(ctx)
    seq = s.push(fn, args, outs, name, _EMPTY, deps)
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
        return self._shape

    @property
    def size(self):
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def dtype(self):
        return self._dtype.type

    @property
    def context(self):
        return self._ctx

    ctx = context
    device = context

    @property
    def grad(self):
        return self._grad

    @property
    def T(self):
        return self.transpose()

    @property
    def stype(self):
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
        if self.size != 1:
            raise ValueError(f'asscalar needs an array of size 1, got shape {self._shape}')
        return self.asnumpy().reshape(()).item()

    def item(self):
        return self.asscalar()

    def tolist(self):
        return self.asnumpy().tolist()

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def astype(self, dtype, copy=True):
        dtype = _dtype(dtype)
        if not copy and dtype == self._dtype:
            return self
        return invoke(OPS['cast'], (self,), {'dtype': dtype})

    def copy(self):
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
        if self.size != 1:
            raise ValueError('The truth value of an NDArray with more than one '
                             'element is ambiguous.')
        return bool(self.asscalar())

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    def __index__(self):
        return int(self.asscalar())

    def __hash__(self):
        return id(self)

    def __getstate__(self):
        raise TypeError('NDArrays are not pickled; use nd.save / nd.load')

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
        if type(key) is slice and key == _ALL:
            return self._assign(value, None)  # x[:] = v: whole array (0-d too)
        key = _index_key(key, self)
        if isinstance(key, NDArray):
            key = key.asnumpy().astype(np.int64)
        self._assign(value, key)

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
            try:
                ok = broadcast_shapes('_setitem', value._shape, tshape) == tshape
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f'cannot assign an array of shape {value._shape} to '
                                 f'a slice of shape {tshape}')
        scalar = value if len(args) == 1 else None
        _write_inplace('_setitem', functools.partial(_setitem_kernel, key, scalar),
                       [self], args[1:])

    # -- methods that mirror nd functions --------------------------------------------
    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if 'shape' in kwargs:
            shape = tuple(kwargs.pop('shape'))
        return invoke(OPS['reshape'], (self,), {'shape': shape,
                                                'reverse': kwargs.pop('reverse', False)})

    def reshape_like(self, other):
        return self.reshape(other.shape)

    def transpose(self, *axes, **kw):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        axes = kw.get('axes', axes) or None
        return invoke(OPS['transpose'], (self,), {'axes': axes})

    def flatten(self):
        return invoke(OPS['flatten'], (self,))

    def expand_dims(self, axis):
        return invoke(OPS['expand_dims'], (self,), {'axis': axis})

    def squeeze(self, axis=None):
        return invoke(OPS['squeeze'], (self,), {'axis': axis})

    def broadcast_to(self, shape):
        return invoke(OPS['broadcast_to'], (self,), {'shape': tuple(shape)})

    def broadcast_like(self, other):
        return self.broadcast_to(other.shape)

    def sum(self, axis=None, keepdims=False, exclude=False):
        return invoke(OPS['sum'], (self,), {'axis': axis, 'keepdims': keepdims})

    def mean(self, axis=None, keepdims=False, exclude=False):
        return invoke(OPS['mean'], (self,), {'axis': axis, 'keepdims': keepdims})

    def max(self, axis=None, keepdims=False):
        return invoke(OPS['max'], (self,), {'axis': axis, 'keepdims': keepdims})

    def min(self, axis=None, keepdims=False):
        return invoke(OPS['min'], (self,), {'axis': axis, 'keepdims': keepdims})

    def prod(self, axis=None, keepdims=False):
        return invoke(OPS['prod'], (self,), {'axis': axis, 'keepdims': keepdims})

    def argmax(self, axis=None, keepdims=False):
        return invoke(OPS['argmax'], (self,), {'axis': axis, 'keepdims': keepdims})

    def argmin(self, axis=None, keepdims=False):
        return invoke(OPS['argmin'], (self,), {'axis': axis, 'keepdims': keepdims})

    def norm(self, ord=2, axis=None, keepdims=False):
        return invoke(OPS['norm'], (self,), {'axis': axis, 'keepdims': keepdims})

    def abs(self):
        return invoke(OPS['abs'], (self,))

    def exp(self):
        return invoke(OPS['exp'], (self,))

    def log(self):
        return invoke(OPS['log'], (self,))

    def sqrt(self):
        return invoke(OPS['sqrt'], (self,))

    def square(self):
        return invoke(OPS['square'], (self,))

    def sigmoid(self):
        return invoke(OPS['sigmoid'], (self,))

    def tanh(self):
        return invoke(OPS['tanh'], (self,))

    def relu(self):
        return invoke(OPS['relu'], (self,))

    def softmax(self, axis=-1):
        return invoke(OPS['softmax'], (self,), {'axis': axis})

    def log_softmax(self, axis=-1):
        return invoke(OPS['log_softmax'], (self,), {'axis': axis})

    def clip(self, a_min, a_max):
        return invoke(OPS['clip'], (self,), {'a_min': a_min, 'a_max': a_max})

    def one_hot(self, depth, on_value=1.0, off_value=0.0, dtype='float32'):
        from . import ops
        return ops.one_hot(self, depth, on_value, off_value, dtype)

    def split(self, num_outputs, axis=1, squeeze_axis=False):
        from . import ops
        return ops.split(self, num_outputs, axis, squeeze_axis)

    def slice_axis(self, axis, begin, end):
        from . import ops
        return ops.slice_axis(self, axis, begin, end)

    def zeros_like(self):
        return zeros_like(self)

    def ones_like(self):
        return ones_like(self)

    def tile(self, reps):
        return invoke(OPS['tile'], (self,), {'reps': tuple(reps)})

    def repeat(self, repeats, axis=None):
        return invoke(OPS['repeat'], (self,), {'repeats': repeats, 'axis': axis})

    def flip(self, axis):
        return invoke(OPS['flip'], (self,), {'axis': axis})


_ALL = slice(None)


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
        dst[key] = v
    return dst


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
    out = _make(src._shape, src._dtype, ctx)
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
    if ctx.device_type == 'cpu':
        out._data = host                    # already our own copy: ready at once
    else:
        _run('array', lambda: backend.asarray_on(host, ctx, dtype), (), [out], ctx)
    return out


def _check_kwargs(fn, kwargs, allowed=('stype', 'name')):
    """Reject misspelled keywords (``size=`` for ``shape=``) instead of ignoring them."""
    bad = sorted(k for k in kwargs
                 if k not in allowed and not (k == 'out' and kwargs[k] is None))
    if bad:
        raise TypeError(f'{fn}() got unexpected keyword argument(s) {bad}')


def empty(shape, ctx=None, dtype=None, **kwargs):
    _check_kwargs('empty', kwargs)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.empty(shape, dtype), shape, dtype, ctx, 'empty')


def zeros(shape, ctx=None, dtype=None, **kwargs):
    _check_kwargs('zeros', kwargs)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.zeros(shape, dtype), shape, dtype, ctx, 'zeros')


def ones(shape, ctx=None, dtype=None, **kwargs):
    _check_kwargs('ones', kwargs)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.ones(shape, dtype), shape, dtype, ctx, 'ones')


def full(shape, val, ctx=None, dtype=None, **kwargs):
    _check_kwargs('full', kwargs)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    return _from_host(lambda xp: xp.full(shape, val, dtype), shape, dtype, ctx, 'full')


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None, **kwargs):
    """Evenly spaced values in ``[start, stop)`` (MXNet: float32 by default)."""
    _check_kwargs('arange', kwargs, ('stype', 'name', 'infer_range'))
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
    _check_kwargs('zeros_like', kw)
    return zeros(data.shape, data.context, data._dtype)


def ones_like(data, **kw):
    _check_kwargs('ones_like', kw)
    return ones(data.shape, data.context, data._dtype)


def full_like(data, fill_value, **kw):
    _check_kwargs('full_like', kw)
    return full(data.shape, fill_value, data.context, data._dtype)


def empty_like(data, **kw):
    _check_kwargs('empty_like', kw)
    return empty(data.shape, data.context, data._dtype)


def waitall():
    """Block until all pushed work has finished on every device."""
    engine.waitall()
