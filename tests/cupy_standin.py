"""A strict stand-in for CuPy, on NumPy, so CI exercises every GPU code path.

d2lmini backs ``gpu(i)`` contexts with CuPy.  No machine in CI has a GPU, so
``D2LMINI_CUPY=cupy_standin`` (with ``tests/`` on ``sys.path``) makes
:mod:`d2lmini.backend` import this module instead.  It is a test tool, never
a backend: it computes on the host, one operation at a time.

What it copies from CuPy is the *boundary*, where code written for NumPy
breaks on a GPU:

* its ``ndarray`` is not a NumPy array.  ``numpy.asarray(x)`` (``__array__``)
  raises ``TypeError`` as CuPy's does; so do NumPy functions and ufuncs given
  one (``numpy.exp(x)``, ``numpy.where(x, ...)``), and an operation that mixes
  it with a NumPy array (``x + numpy_array``, ``cupy.add(x, numpy_array)``).
  Host data crosses only through ``asarray``/``array`` (in) and
  ``get``/``asnumpy``/``item``/``tolist`` (out).
* a reduction without an axis and an integer index return a 0-d array, not a
  Python or NumPy scalar.
* every array lives on the device that was current when it was made
  (``cuda.Device(i)`` as a context manager, per thread), and an operation on
  an array of another device raises ``ValueError``.
* ``cuda.Stream``/``cuda.Event`` have CuPy's methods; work runs at once, so a
  stream is trivially in order and an event is done when recorded.

It is **stricter than CuPy** in one place: ``float(x)``, ``int(x)``,
``bool(x)`` and ``operator.index(x)`` raise ``TypeError``.  CuPy allows them
on one-element arrays by silently copying to the host and waiting for the
GPU; inside a framework that is a hidden synchronisation, so here the
package must say ``.item()`` (or go through ``asnumpy``) where it means one.
Also stricter: CuPy answers ``numpy.exp(x)`` through NumPy's dispatch
protocols; the stand-in refuses, so the package names its array module
(``backend.xp_of(a).exp(a)``) instead of relying on dispatch.

``D2LMINI_STANDIN_GPUS`` (default 2) is the number of devices it reports.
"""
import numbers
import os
import threading
import weakref

import numpy as _np

_N_DEVICES = int(os.environ.get('D2LMINI_STANDIN_GPUS', '2'))
_local = threading.local()


def _current_device():
    return getattr(_local, 'device', 0)


def _host_error(what):
    return TypeError(
        f'{what}: a cupy_standin.ndarray lives on a (stand-in) GPU. Implicit '
        'conversion to a NumPy array is not allowed; use .get() or '
        'cupy.asnumpy() at the host boundary, and the array module '
        '(cupy, via backend.xp_of) for computation.')


# --- arrays --------------------------------------------------------------------
class ndarray:
    """A device array: NumPy data plus the id of the device it lives on."""
    __slots__ = ('_a', '_dev', '__weakref__')
    __array_ufunc__ = None          # numpy.exp(x), numpy_array + x: TypeError

    def __init__(self, shape, dtype=float, *, _data=None, _device=None):
        self._a = _np.empty(shape, dtype) if _data is None else _data
        self._dev = _current_device() if _device is None else _device
        if self._a.base is None:
            _live[id(self._a)] = self._a

    # host boundary ------------------------------------------------------------
    def __array__(self, *args, **kwargs):
        raise _host_error('numpy.asarray() / numpy.array() on a device array')

    def __array_function__(self, func, types, args, kwargs):
        raise _host_error(f'numpy.{func.__name__}() on a device array')

    def __float__(self):
        raise _host_error('float() (an implicit GPU sync; use .item())')

    def __int__(self):
        raise _host_error('int() (an implicit GPU sync; use .item())')

    def __bool__(self):
        raise _host_error('bool() / `if array:` (an implicit GPU sync; use .item())')

    def __index__(self):
        raise _host_error('use as an index (an implicit GPU sync; use .item())')

    def __complex__(self):
        raise _host_error('complex() (an implicit GPU sync; use .item())')

    def get(self, stream=None, order='C', out=None):
        """Copy to the host: a new NumPy array."""
        if out is not None:
            _np.copyto(out, self._a)
            return out
        return _np.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        """Copy host array ``arr`` into this array."""
        if not isinstance(arr, _np.ndarray):
            raise TypeError(f'set() takes a numpy.ndarray, not {type(arr).__name__}')
        if arr.shape != self._a.shape:
            raise ValueError(f'shape mismatch: {arr.shape} vs {self._a.shape}')
        self._a[...] = arr

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    # attributes ---------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: _wrap(self._a.T, self._dev))
    device = property(lambda self: cuda.Device(self._dev))

    @property
    def base(self):
        return None if self._a.base is None else _wrap(self._a.base, self._dev)

    @property
    def real(self):
        return _wrap(self._a.real, self._dev)

    @property
    def imag(self):
        return _wrap(self._a.imag, self._dev)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        for i in range(len(self._a)):
            yield self[i]

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __getstate__(self):
        raise _host_error('pickling a device array (use .get())')

    # everything else: NumPy's method, on device data ---------------------------
    def __getattr__(self, name):
        if name.startswith('_') or name in _NOT_IN_CUPY:
            raise AttributeError(f"'cupy_standin.ndarray' has no attribute '{name}'")
        method = getattr(self._a, name)
        return _device_function(method, f'ndarray.{name}', owner=self)

    def __getitem__(self, key):
        _check_device(self)
        return _wrap(self._a[_unwrap(key, self._dev)], self._dev)

    def __setitem__(self, key, value):
        _check_device(self)
        self._a[_unwrap(key, self._dev)] = _unwrap(value, self._dev)


def _arg_reduction(name):
    """CuPy's argmax/argmin: a 0-d array takes no axis (NumPy takes 0 and
    -1 there; CuPy raises AxisError)."""
    def method(self, axis=None, out=None, *, keepdims=False):
        _check_device(self)
        if self._a.ndim == 0 and axis is not None:
            raise _np.exceptions.AxisError(
                f'axis {axis} is out of bounds for array of dimension 0')
        return _wrap(getattr(self._a, name)(axis=axis, keepdims=keepdims), self._dev)
    method.__name__ = name
    return method


ndarray.argmax = _arg_reduction('argmax')
ndarray.argmin = _arg_reduction('argmin')


_NOT_IN_CUPY = {'tofile', 'tobytes', 'tostring', 'dumps', 'dump', 'byteswap',
                'newbyteorder', 'getfield', 'setfield', 'itemset', 'ctypes'}


def _binary(name):
    def op(self, other):
        _check_device(self)
        if isinstance(other, _np.ndarray):
            raise TypeError(f'Unsupported type {type(other)} (cupy_standin.ndarray '
                            f'{name} numpy.ndarray): copy it to the device first')
        if not isinstance(other, (ndarray, numbers.Number, _np.generic)):
            return NotImplemented
        r = _wrap(getattr(self._a, name)(_unwrap(other, self._dev)), self._dev)
        return r if name.startswith('__i') else _c_order(r)
    op.__name__ = name
    return op


def _c_order(r):
    """A ufunc's new result as CuPy makes it: C-contiguous, whatever the
    inputs' memory order (NumPy keeps the inputs' order)."""
    if isinstance(r, tuple):
        return tuple(_c_order(v) for v in r)
    if isinstance(r, ndarray) and not r._a.flags.c_contiguous:
        r._a = _np.ascontiguousarray(r._a)
        _live[id(r._a)] = r._a
    return r


for _name in ('add', 'sub', 'mul', 'truediv', 'floordiv', 'mod', 'pow', 'matmul',
              'and', 'or', 'xor', 'lshift', 'rshift', 'divmod'):
    for _f in (f'__{_name}__', f'__r{_name}__', f'__i{_name}__'):
        if hasattr(_np.ndarray, _f):
            setattr(ndarray, _f, _binary(_f))
for _f in ('__lt__', '__le__', '__gt__', '__ge__', '__eq__', '__ne__'):
    setattr(ndarray, _f, _binary(_f))
for _f in ('__neg__', '__pos__', '__abs__', '__invert__'):
    setattr(ndarray, _f, (lambda f: lambda self: _c_order(
        _wrap(getattr(self._a, f)(), self._dev)))(_f))
ndarray.__hash__ = None


# --- wrapping NumPy's functions ---------------------------------------------------
def _check_device(x):
    if x._dev != _current_device():
        raise ValueError(f'Array device must be same as the current device: '
                         f'array device = {x._dev} while current = {_current_device()}')


def _unwrap(x, dev=None):
    """Device arrays to their NumPy data (checked against the current device);
    NumPy arrays refused; lists, tuples, dicts and slices walked."""
    if isinstance(x, ndarray):
        _check_device(x)
        return x._a
    if isinstance(x, _np.ndarray):
        raise TypeError(f'Unsupported type {type(x)}: a NumPy array given to a '
                        'device operation (copy it with cupy.asarray first)')
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v, dev) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v, dev) for k, v in x.items()}
    if isinstance(x, slice):
        return slice(_unwrap(x.start), _unwrap(x.stop), _unwrap(x.step))
    return x


def _wrap(r, dev=None, known=()):
    """NumPy results to device arrays (0-d for NumPy scalars, as CuPy does)."""
    dev = _current_device() if dev is None else dev
    if isinstance(r, _np.ndarray):
        for w in known:                        # out=: return the same object
            if w._a is r:
                return w
        return ndarray(None, _data=r, _device=dev)
    if isinstance(r, _np.generic):
        return ndarray(None, _data=_np.asarray(r), _device=dev)
    if isinstance(r, tuple) and not hasattr(r, '_fields'):
        return tuple(_wrap(v, dev, known) for v in r)
    if isinstance(r, list):
        return [_wrap(v, dev, known) for v in r]
    return r


def _device_arrays(x, acc):
    if isinstance(x, ndarray):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _device_arrays(v, acc)
    elif isinstance(x, dict):
        for v in x.values():
            _device_arrays(v, acc)
    return acc


def _device_function(f, name, owner=None, host_ok=False):
    """``f`` (a NumPy function or bound method) as a device function."""
    def call(*args, **kwargs):
        if owner is not None:
            _check_device(owner)
        if host_ok:
            args = [a._a if isinstance(a, ndarray) and a._dev == _current_device()
                    else a.get() if isinstance(a, ndarray) else a for a in args]
            return _wrap(f(*args, **kwargs))
        known = _device_arrays(kwargs.get('out'), [])
        return _wrap(f(*_unwrap(args), **_unwrap(kwargs)), known=known)
    call.__name__ = name
    call.__qualname__ = name
    return call


class ufunc:
    """A NumPy ufunc on device arrays, with ``at``/``reduce``/``outer``/... ."""

    def __init__(self, u):
        self._u = u
        self.__name__ = u.__name__
        for m in ('reduce', 'accumulate', 'outer', 'at', 'reduceat'):
            setattr(self, m, _device_function(getattr(u, m), f'{u.__name__}.{m}'))
        self._call = _device_function(u, u.__name__)
        self.nin, self.nout, self.nargs = u.nin, u.nout, u.nargs

    def __call__(self, *args, **kwargs):
        r = self._call(*args, **kwargs)
        if kwargs.get('out') is None:         # CuPy allocates results C-ordered
            r = _c_order(r)
        return r

    def __repr__(self):
        return f'<ufunc {self.__name__!r} (cupy_standin)>'


# Creation from host data: the only functions that accept NumPy arrays.
def array(obj, dtype=None, copy=True, order='K', subok=False, ndmin=0):
    if isinstance(obj, ndarray):              # from any device to this one
        obj = obj._a
    elif isinstance(obj, (list, tuple)) and _device_arrays(obj, []):
        obj = _unwrap(obj)
    return _wrap(_np.array(obj, dtype=dtype, copy=copy, order=order, ndmin=ndmin))


def asarray(obj, dtype=None, order=None):
    if isinstance(obj, ndarray) and obj._dev == _current_device():
        if (dtype is None or _np.dtype(dtype) == obj.dtype) and order in (None, 'K', 'A'):
            return obj
        return _wrap(_np.asarray(obj._a, dtype=dtype, order=order))
    # Host data is always copied into new device memory, as in CuPy (and a
    # tuple or a dtype change could not be taken without a copy anyway).
    return array(obj, dtype=dtype, copy=True, order=order or 'K')


asanyarray = asarray


def asnumpy(a, stream=None, order='C', out=None):
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return _np.asarray(a, order=order)


def get_array_module(*args):
    import sys
    for a in args:
        if isinstance(a, ndarray):
            return sys.modules[__name__]
    return _np


def fuse(*args, **kwargs):
    def deco(f):
        return f
    return deco(args[0]) if args and callable(args[0]) else deco


_MODULES = {}


class _Namespace:
    """``cupy.linalg``, ``cupy.random``, ...: NumPy's submodule on device arrays."""

    def __init__(self, mod, name):
        self._mod, self._name = mod, name

    def __getattr__(self, name):
        return _lookup(getattr(self._mod, name), f'{self._name}.{name}')


def _lookup(obj, name):
    if isinstance(obj, _np.ufunc):
        return ufunc(obj)
    if isinstance(obj, type) or not callable(obj):
        return obj                              # dtypes, constants, classes
    return _device_function(obj, name)


class _StrideTricks:
    @staticmethod
    def as_strided(x, shape=None, strides=None):
        _check_device(x)
        return _wrap(_np.lib.stride_tricks.as_strided(x._a, shape, strides), x._dev)

    @staticmethod
    def sliding_window_view(x, window_shape, axis=None, *, subok=False,
                            writeable=False):
        _check_device(x)
        return _wrap(_np.lib.stride_tricks.sliding_window_view(
            x._a, window_shape, axis, writeable=writeable), x._dev)


class _Lib:
    stride_tricks = _StrideTricks()


lib = _Lib()


# --- random: CuPy's Generator API, method by method --------------------------------
def _stream_key():
    """The current stream of this thread on the current device ('null': the
    legacy default stream)."""
    st = getattr(_local, 'stream', None)
    return ('null', _current_device()) if st is None else st._key


def _implicitly_ordered(a, b):
    """The legacy default stream orders itself with every blocking stream."""
    for x, y in ((a, b), (b, a)):
        if isinstance(x, tuple) and (isinstance(y, tuple) or not y.non_blocking):
            return True
    return False


class _BitGenerator:
    """``cupy.random.XORWOW``: its state lives in device memory, set up by
    kernels on the stream that was current when it was made.

    Like CuPy's, ``state()`` is a *method* (the state's device address) and
    the draws read the state through it.  Drawing on another stream before
    the setup is ordered before it (a synchronize, or an event waited for)
    is a race on a GPU: the draws can read an unset state and come out all
    equal.  Here it raises.
    """
    _states = {}                     # "address" -> the NumPy generator

    def __init__(self, seed=None):
        if isinstance(seed, ndarray):
            seed = seed.get()
        seq = seed if isinstance(seed, _np.random.SeedSequence) \
            else _np.random.SeedSequence(seed)
        self._seed_seq = seq
        self._current_device_id = _current_device()
        self._host = _np.random.Generator(_np.random.PCG64(
            seq.generate_state(1, _np.uint32)[0]))
        self._ptr = id(self._host)
        _BitGenerator._states[self._ptr] = self._host
        weakref.finalize(self, _BitGenerator._states.pop, self._ptr, None)
        self._set_up_on = _stream_key()
        _unordered.add(self)

    def state(self):
        if _current_device() != self._current_device_id:
            raise RuntimeError('This Generator state is allocated in a different '
                               'device')
        return self._ptr

    def _state_size(self):
        return 256 * 1000


XORWOW = _BitGenerator
_unordered = weakref.WeakSet()        # bit generators whose setup may still run


def _order_setups(stream_key=None):
    """The setups on ``stream_key`` (all, if None) are finished."""
    for bg in list(_unordered):
        if stream_key is None or bg._set_up_on == stream_key:
            _unordered.discard(bg)


def _read_state(bg):
    ptr = bg.state()
    host = _BitGenerator._states.get(ptr)
    if host is None:
        raise RuntimeError('cupy_standin: the Generator state was freed (a '
                           'dangling state address)')
    here = _stream_key()
    if bg in _unordered and here != bg._set_up_on and \
            not _implicitly_ordered(here, bg._set_up_on):
        raise RuntimeError(
            'cupy_standin: a Generator whose state was set up on one stream is '
            'drawn from on another, with nothing ordering the two (on a GPU the '
            'draws may read an unset state: constant values). Make the '
            'generator on the stream that draws, or synchronize first.')
    return host


def _scalar_param(name, v, error=TypeError):
    """CuPy's rule for most distribution parameters: a device array, or a
    Python float or int (not a NumPy scalar, not a host array)."""
    if isinstance(v, ndarray):
        _check_device(v)
        return v._a.astype(_np.float64)
    if type(v) in (float, int):
        return float(v)
    raise error(f'{name} is required to be a cupy.ndarray or a scalar')


def _size(size, params=()):
    if size is None:
        return _np.broadcast_shapes(*[_np.shape(p) for p in params]) if params else ()
    return (size,) if isinstance(size, numbers.Integral) else tuple(size)


def _float_dtype(dtype):
    return _np.float64 if _np.dtype(dtype).char == 'd' else _np.float32


def _out(y, out):
    if out is None:
        return _wrap(y)
    _check_device(out)
    out._a[...] = y
    return out


class Generator:
    """``cupy.random.Generator``: only the methods CuPy 14 has, with its
    signatures (no ``normal``, ``lognormal``, ``negative_binomial``,
    ``laplace``, ``choice``, ``permutation``, ...)."""

    def __init__(self, bit_generator):
        self.bit_generator = bit_generator
        self._binomial_state = None

    def _g(self):
        return _read_state(self.bit_generator)

    def random(self, size=None, dtype=_np.float64, out=None):
        y = self._g().random(_size(size), dtype=_float_dtype(dtype))
        return _out(y.astype(dtype, copy=False), out)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=_np.float64):
        low, high = asarray(low)._a, asarray(high)._a
        y = self._g().random(_size(size, (low, high)))
        return _wrap((low + (high - low) * y).astype(dtype, copy=False))

    def integers(self, low, high=None, size=None, dtype=_np.int64, endpoint=False):
        if high is None:
            low, high = 0, low
        lo, hi = int(low), int(high) + bool(endpoint)
        if lo >= hi:
            raise ValueError('low >= high')
        return _wrap(self._g().integers(lo, hi, _size(size), dtype=dtype))

    def beta(self, a, b, size=None, dtype=_np.float64):
        a, b = _scalar_param('a', a), _scalar_param('b', b)
        return _wrap(self._g().beta(a, b, _size(size, (a, b))).astype(dtype))

    def chisquare(self, df, size=None):
        df = _scalar_param('df', df)
        return _wrap(self._g().chisquare(df, _size(size, (df,))))

    def dirichlet(self, alpha, size=None):
        alpha = alpha.get() if isinstance(alpha, ndarray) else alpha
        return _wrap(self._g().dirichlet(alpha, size))

    def exponential(self, scale=1.0, size=None):
        return self.standard_exponential(size) * scale

    def f(self, dfnum, dfden, size=None):
        a, b = _scalar_param('dfnum', dfnum), _scalar_param('dfden', dfden)
        return _wrap(self._g().f(a, b, _size(size, (a, b))))

    def geometric(self, p, size=None):
        p = _scalar_param('p', p)
        return _wrap(self._g().geometric(p, _size(size, (p,))))

    def hypergeometric(self, ngood, nbad, nsample, size=None):
        ps = [_scalar_param(n, v) for n, v in
              (('ngood', ngood), ('nbad', nbad), ('nsample', nsample))]
        ps = [_np.asarray(p).astype(_np.int64) for p in ps]
        return _wrap(self._g().hypergeometric(*ps, _size(size, ps)))

    def logseries(self, p, size=None):
        p = _scalar_param('p', p)
        return _wrap(self._g().logseries(p, _size(size, (p,))))

    def standard_exponential(self, size=None, dtype=_np.float64, method='inv',
                             out=None):
        if method == 'zig':
            raise NotImplementedError('Ziggurat method is not supported')
        y = self._g().standard_exponential(_size(size))
        return _out(y.astype(dtype, copy=False), out)

    def poisson(self, lam=1.0, size=None):
        lam = _scalar_param('lam', lam)
        return _wrap(self._g().poisson(lam, _size(size, (lam,))).astype(_np.int64))

    def power(self, a, size=None):
        a = _scalar_param('a', a)
        return _wrap(self._g().power(a, _size(size, (a,))))

    def standard_normal(self, size=None, dtype=_np.float64, out=None):
        y = self._g().standard_normal(_size(size))
        return _out(y.astype(dtype, copy=False), out)

    def gamma(self, shape, scale=1.0, size=None):
        if size is None:
            size = _np.broadcast_shapes(_np.shape(_unwrap(shape)),
                                        _np.shape(_unwrap(scale)))
        y = self.standard_gamma(shape, size)
        y *= scale
        return y

    def standard_gamma(self, shape, size=None, dtype=_np.float64, out=None):
        if shape is None:
            raise TypeError('shape must be real number, not NoneType')
        shape = _scalar_param('shape', shape, ValueError)
        y = self._g().standard_gamma(shape, _size(size, (shape,)))
        return _out(y.astype(dtype, copy=False), out)

    def binomial(self, n, p, size=None):
        n, p = _scalar_param('n', n), _scalar_param('p', p)
        return _wrap(self._g().binomial(_np.asarray(n).astype(_np.int64), p,
                                        _size(size, (n, p))))


class _RandomNamespace(_Namespace):
    """``cupy.random``: CuPy's Generator API, and NumPy's legacy functions."""
    Generator = Generator
    XORWOW = XORWOW
    BitGenerator = _BitGenerator

    @staticmethod
    def default_rng(seed=None):
        if isinstance(seed, (_BitGenerator,)):
            return Generator(seed)
        return Generator(XORWOW(seed))


# NumPy keywords CuPy's function of the same name does not take (CuPy 14):
# a call with one is a TypeError on a GPU, so it is one here too.
_NOT_IN_CUPY_KW = {
    'indices': {'sparse'},
}


def _cupy_signature(f, name):
    banned = _NOT_IN_CUPY_KW[name]

    def call(*args, **kwargs):
        bad = banned.intersection(kwargs)
        if bad:
            raise TypeError(f'{name}() got an unexpected keyword argument '
                            f'{sorted(bad)[0]!r} (CuPy has no such keyword)')
        return f(*args, **kwargs)
    call.__name__ = name
    return call


def __getattr__(name):
    if name == 'random':
        return _MODULES.setdefault(name, _RandomNamespace(_np.random, name))
    if name in ('linalg', 'fft'):
        return _MODULES.setdefault(name, _Namespace(getattr(_np, name), name))
    if name.startswith('_') or name in ('ctypeslib', 'ma', 'testing', 'char',
                                        'rec', 'polynomial', 'emath'):
        raise AttributeError(f"module 'cupy_standin' has no attribute '{name}'")
    obj = getattr(_np, name)
    if name in ('argmax', 'argmin'):
        return lambda a, axis=None, dtype=None, out=None, keepdims=False: \
            getattr(a, name)(axis=axis, keepdims=keepdims)
    value = _lookup(obj, name)
    if name in _NOT_IN_CUPY_KW:
        value = _cupy_signature(value, name)
    globals()[name] = value                      # look up once
    return value


# --- memory pool ----------------------------------------------------------------------
class MemoryPool:
    def used_bytes(self):
        return sum(a.nbytes for a in list(_live.values()))

    def total_bytes(self):
        return self.used_bytes()

    def free_all_blocks(self, stream=None):
        pass

    def n_free_blocks(self):
        return 0


_live = weakref.WeakValueDictionary()     # id -> NumPy buffer (not views)
_pool = MemoryPool()


def get_default_memory_pool():
    return _pool


def get_default_pinned_memory_pool():
    return _pool


# --- devices, streams, events --------------------------------------------------------
class _Runtime:
    @staticmethod
    def getDeviceCount():
        return _N_DEVICES


class Device:
    """``with Device(i):`` makes device i current for this thread."""

    def __init__(self, device=None):
        self.id = _current_device() if device is None else int(device)
        if not 0 <= self.id < _N_DEVICES:
            raise RuntimeError(f'cudaErrorInvalidDevice: invalid device ordinal {self.id}')
        self._prev = []

    def __enter__(self):
        self._prev.append(_current_device())
        _local.device = self.id
        return self

    def __exit__(self, *exc):
        _local.device = self._prev.pop()
        return False

    def use(self):
        _local.device = self.id

    def synchronize(self):
        _order_setups(None)

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f'<CUDA Device {self.id}>'


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.recorded = False
        self._after = ()               # generator setups this event follows

    def record(self, stream=None):
        self.recorded = True
        key = _stream_key() if stream is None else stream._key
        self._after = [bg for bg in list(_unordered) if bg._set_up_on == key]

    def synchronize(self):
        _unordered.difference_update(self._after)

    @property
    def done(self):
        return True


class Stream:
    """Work is done when it is issued, so every stream is in order and done."""

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.device_id = _current_device()
        self._prev = []
        self.non_blocking = non_blocking
        self._key = ('null', self.device_id) if null else self

    def __enter__(self):
        self._prev.append(getattr(_local, 'stream', None))
        _local.stream = self
        return self

    def __exit__(self, *exc):
        _local.stream = self._prev.pop()
        return False

    def use(self):
        _local.stream = self
        return self

    def synchronize(self):
        _order_setups(self._key)

    def wait_event(self, event):
        if not isinstance(event, Event):
            raise TypeError(f'wait_event takes an Event, not {type(event).__name__}')
        _unordered.difference_update(event._after)

    def record(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    @property
    def done(self):
        return True


class _Cuda:
    Device = Device
    Stream = Stream
    Event = Event
    runtime = _Runtime

    @staticmethod
    def get_current_stream():
        return getattr(_local, 'stream', None) or Stream(null=True)


cuda = _Cuda()
