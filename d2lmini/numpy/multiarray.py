"""``mx.np.ndarray``: an NDArray with NumPy's semantics.

MXNet 1.x has two array types over one engine: the legacy ``nd.NDArray``
and the NumPy-compatible ``mx.np.ndarray`` (``mxnet.numpy``).  Here, as in
MXNet, the second is a subclass of the first with no state of its own: the
same data, the same engine streams, the same autograd tape.  Every operator
goes through :func:`d2lmini.ndarray.ndarray.invoke`, which gives its output
the class of its first input, so an operator applied to ``np`` arrays gives
an ``np`` array.  What differs is only what NumPy users expect: 0-d results
from integer indexing and full reductions, ``array([...])`` printing,
comparisons that give booleans, true division of integers, boolean masks,
NumPy's ``reshape``, and MXNet's dtype rules for mixed operands (an int
array with a float array takes the float's dtype; a Python scalar never
changes the array's dtype).

The operators (``x + y``) are written as flat as ``nd``'s, so the two cost
the same per call.  The function library lives beside this module:
:mod:`.creation`, :mod:`.elemwise`, :mod:`.reductions`, :mod:`.shapes`,
:mod:`.host` (sorting, unique, ...), :mod:`.random`, :mod:`.linalg`.

``x.as_nd_ndarray()`` and ``nd_x.as_np_ndarray()`` convert without copying.
"""
import numbers

import numpy as _np

from .. import autograd as _ag
from ..context import current_context
from ..ndarray import ndarray as _ndm
from ..ndarray.ndarray import NDArray, _share, invoke, _SCALAR_OPS
from ..ndarray.registry import OPS

__all__ = ['ndarray', 'array', 'asarray', 'zeros', 'ones', 'empty', 'full']

_FLOATS = 'fc'


def promote(da, db):
    """MXNet's result dtype for two arrays: NumPy's, except that an integer
    (or bool) with a float gives the float's dtype (int32 + float32 is
    float32, where NumPy says float64)."""
    if da == db:
        return da
    fa, fb = da.kind in _FLOATS, db.kind in _FLOATS
    if fa != fb:
        return da if fa else db
    return _np.result_type(da, db)


def _binary(name, lhs, rhs):
    """``lhs <name> rhs`` on np arrays, either side possibly a scalar (the
    array's dtype is kept, as MXNet does) or a list."""
    t = type(rhs)
    if t is float or t is int:
        return invoke(OPS[_SCALAR_OPS[name][0]], (lhs,), {'scalar': rhs})
    if t is not ndarray:
        if isinstance(rhs, NDArray):
            rhs = _share(rhs, ndarray)
        elif isinstance(rhs, (numbers.Number, _np.generic)) and _np.ndim(rhs) == 0:
            return invoke(OPS[_SCALAR_OPS[name][0]], (lhs,), {'scalar': rhs.item()
                          if isinstance(rhs, _np.generic) else rhs})
        else:
            rhs = array(rhs, ctx=lhs._ctx)
    if lhs._dtype != rhs._dtype:
        dt = promote(lhs._dtype, rhs._dtype)
        lhs, rhs = lhs.astype(dt, copy=False), rhs.astype(dt, copy=False)
    return invoke(OPS[name], (lhs, rhs))


def _rbinary(name, lhs, rhs):
    """``lhs <name> rhs`` where ``rhs`` is the array (reflected operators)."""
    t = type(lhs)
    if t is float or t is int or isinstance(lhs, (numbers.Number, _np.generic)):
        return invoke(OPS[_SCALAR_OPS[name][1]], (rhs,), {'scalar': lhs})
    return _binary(name, array(lhs, ctx=rhs._ctx), rhs)


def _true_divide(lhs, rhs):
    """``/``: integers divide as floats (float32), as in MXNet."""
    if lhs._dtype.kind not in _FLOATS and (
            getattr(rhs, 'dtype', _np.dtype(_np.int64)).kind not in _FLOATS
            or type(rhs) is float):
        lhs = lhs.astype(_np.float32)
    return _binary('divide', lhs, rhs)


def _compare(name, lhs, rhs):
    """A comparison, as a bool array (``_npi_equal`` and friends)."""
    t = type(rhs)
    if t is float or t is int or isinstance(rhs, (numbers.Number, _np.generic)):
        return invoke(OPS[f'_npi_{name}_scalar'], (lhs,), {'scalar': rhs})
    if not isinstance(rhs, NDArray):
        rhs = array(rhs, ctx=lhs._ctx)
    return invoke(OPS[f'_npi_{name}'], (lhs, rhs))


def _norm_shape(shape, size, name='reshape'):
    """NumPy's reshape rule: ints >= 0 and at most one -1 (MXNet's codes
    0, -2, -3, -4 belong to ``npx.reshape``)."""
    shape = tuple(int(s) for s in shape)
    if any(s < -1 for s in shape) or shape.count(-1) > 1:
        raise ValueError(f'{name}: shape {shape} may hold at most one -1 and no '
                         f'other negative size (MXNet\'s codes are npx.reshape\'s)')
    if -1 in shape:
        known = int(_np.prod([s for s in shape if s != -1]))
        if known == 0 or size % known:
            raise ValueError(f'{name}: cannot reshape an array of size {size} '
                             f'into shape {shape}')
        shape = tuple(size // known if s == -1 else s for s in shape)
    if int(_np.prod(shape)) != size:
        raise ValueError(f'{name}: cannot reshape an array of size {size} into '
                         f'shape {shape}')
    return shape


class ndarray(NDArray):
    """An n-dimensional array with NumPy's semantics, on a context."""
    __slots__ = ()

    # -- conversion and place ------------------------------------------------------
    def as_nd_ndarray(self):
        """This array as an ``nd.NDArray``, without copying."""
        return _share(self, NDArray)

    def as_np_ndarray(self):
        """The array itself."""
        return self

    @property
    def dtype(self):
        """The element type, a ``numpy.dtype`` (``dtype('float32')``)."""
        return self._dtype

    @property
    def ctx(self):
        """The context the array lives on (MXNet's ``ctx``)."""
        return self._ctx

    device = ctx

    def as_in_ctx(self, ctx):
        """This array on ``ctx``: itself if already there, else a copy."""
        return self.as_in_context(ctx)

    def attach_grad(self, grad_req='write', stype=None):
        """Allocate ``self.grad`` (an ``np`` array of zeros) and make this
        array a leaf of autograd."""
        _ag.mark_variables([self], [zeros(self._shape, self._dtype, ctx=self._ctx)],
                           grad_req)

    def item(self, *args):
        """The one value (or the one at ``args``) as a Python number."""
        if args:
            return self.asnumpy().item(*args)
        if self.size != 1:
            raise ValueError(f'item(): can only convert an array of size 1 to a '
                             f'Python scalar, got shape {self._shape}')
        return self.asnumpy().item()

    def __repr__(self):
        """NumPy's repr, but as MXNet's: float32 (the default here) is not
        named, every other dtype is (int64 too), a device other than the
        CPU is (``ctx=gpu(0)``)."""
        s = repr(self.asnumpy())
        head, _, last = s.rpartition(',')
        if 'dtype=' in last:                 # NumPy named it, maybe on a new line
            if self._dtype == _np.float32:
                s = head + ')'
        elif self._dtype not in (_np.float32, _np.bool_):
            s = f'{s[:-1]}, dtype={self._dtype})'
        if self._ctx.device_type != 'cpu':
            s = s[:-1] + f', ctx={self._ctx})'
        return s

    def __str__(self):
        s = str(self.asnumpy())
        return s if self._ctx.device_type == 'cpu' else f'{s} @{self._ctx}'

    def __hash__(self):
        return id(self)

    def __format__(self, spec):
        if not self._shape:                  # f'{x:.5f}' of a 0-d array
            return format(self.item(), spec)
        if spec:
            raise TypeError(f'cannot format an mx.np.ndarray of shape {self._shape} '
                            f'with {spec!r}; format x.item() or a 0-d array')
        return str(self)

    # -- operators: flat, as nd's, so the dispatch costs the same -----------------
    def __add__(self, o):
        return _binary('add', self, o)

    def __radd__(self, o):
        return _rbinary('add', o, self)

    def __sub__(self, o):
        return _binary('subtract', self, o)

    def __rsub__(self, o):
        return _rbinary('subtract', o, self)

    def __mul__(self, o):
        return _binary('multiply', self, o)

    def __rmul__(self, o):
        return _rbinary('multiply', o, self)

    def __truediv__(self, o):
        return _true_divide(self, o)

    def __rtruediv__(self, o):
        if self._dtype.kind not in _FLOATS:
            return _rbinary('divide', o, self.astype(_np.float32))
        return _rbinary('divide', o, self)

    def __mod__(self, o):
        return _binary('mod', self, o)

    def __rmod__(self, o):
        return _rbinary('mod', o, self)

    def __pow__(self, o):
        return _binary('power', self, o)

    def __rpow__(self, o):
        return _rbinary('power', o, self)

    def __matmul__(self, o):
        from .shapes import matmul
        return matmul(self, o)

    def __rmatmul__(self, o):
        from .shapes import matmul
        return matmul(array(o, ctx=self._ctx), self)

    def __eq__(self, o):
        if o is None:
            return False
        return _compare('equal', self, o)

    def __ne__(self, o):
        if o is None:
            return True
        return _compare('not_equal', self, o)

    def __gt__(self, o):
        return _compare('greater', self, o)

    def __ge__(self, o):
        return _compare('greater_equal', self, o)

    def __lt__(self, o):
        return _compare('less', self, o)

    def __le__(self, o):
        return _compare('less_equal', self, o)

    def __invert__(self):
        from .elemwise import invert
        return invert(self)

    def __and__(self, o):
        from .elemwise import logical_and
        return logical_and(self, o)

    def __or__(self, o):
        from .elemwise import logical_or
        return logical_or(self, o)

    def __xor__(self, o):
        from .elemwise import logical_xor
        return logical_xor(self, o)

    def __floordiv__(self, o):
        from .elemwise import floor_divide
        return floor_divide(self, o)

    def __ipow__(self, o):
        return self._inplace('power', o)

    def __imod__(self, o):
        return self._inplace('mod', o)

    def __itruediv__(self, o):
        if self._dtype.kind not in _FLOATS:
            raise TypeError(f'x /= y on an integer array ({self._dtype}) cannot hold '
                            f'the float result; use x = x / y')
        return self._inplace('divide', o)

    def __imatmul__(self, o):
        return self @ o

    # -- indexing: NumPy's boolean masks on top of nd's indexing ---------------------
    def __getitem__(self, key):
        if isinstance(key, NDArray) and key._dtype == _np.bool_:
            return _masked(self, key)
        if isinstance(key, _np.ndarray) and key.dtype == _np.bool_:
            return _masked(self, array(key, ctx=self._ctx))
        if isinstance(key, list) and key and all(isinstance(k, bool) for k in key):
            return _masked(self, array(_np.array(key), ctx=self._ctx))
        return NDArray.__getitem__(self, key)

    def __setitem__(self, key, value):
        if isinstance(key, NDArray) and key._dtype == _np.bool_:
            key = key.asnumpy()
        if isinstance(key, _np.ndarray) and key.dtype == _np.bool_:
            key = _np.nonzero(key)           # integer arrays: nd's advanced indexing
        NDArray.__setitem__(self, key, value)

    # -- NumPy's methods --------------------------------------------------------------
    def reshape(self, *shape, order='C', **kwargs):
        """The same data in ``shape`` (ints or one tuple; one -1 is inferred).

        >>> np.arange(6).reshape(2, -1).shape
        (2, 3)
        """
        if 'newshape' in kwargs or 'shape' in kwargs:
            shape = (kwargs.pop('newshape', None) or kwargs.pop('shape'),)
        if kwargs:
            raise TypeError(f'reshape: unexpected keywords {sorted(kwargs)} (MXNet\'s '
                            f'reverse= and codes are npx.reshape\'s)')
        if order != 'C':
            raise NotImplementedError("reshape: only order='C' is supported")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = _norm_shape(shape, self.size)
        # A new array, as MXNet's (NumPy's would be a view of this one).
        return invoke(OPS['_npi_reshape'], (self,), {'shape': shape})

    def flatten(self, order='C'):
        """A 1-D copy of the array (NumPy's ``flatten``)."""
        return self.reshape(-1)

    def ravel(self, order='C'):
        """The array as 1-D."""
        return self.reshape(-1)

    def squeeze(self, axis=None):
        """The array without its axes of size 1 (all, or ``axis``)."""
        return invoke(OPS['squeeze'], (self,), {'axis': axis})

    def astype(self, dtype, order='K', casting='unsafe', subok=True, copy=True):
        """The values cast to ``dtype`` (a new array unless ``copy=False`` and
        the dtype is already right)."""
        return NDArray.astype(self, dtype, copy=copy)



def method(fn, name=None):
    """Make the library function ``fn`` (array first) a method of
    :class:`ndarray` too (``x.sum()``, ``x.std()``, ``x.clip(0, 1)``)."""
    setattr(ndarray, name or fn.__name__, fn)
    return fn


def _masked(a, mask):
    """``a[mask]`` for a boolean ``mask`` over ``a``'s leading axes: a gather
    (``take``) of the selected rows, so gradients flow back to ``a``."""
    m = mask.asnumpy()
    k = m.ndim
    if m.shape != a._shape[:k]:
        raise IndexError(f'boolean index of shape {m.shape} does not match the '
                         f'indexed array of shape {a._shape}')
    flat = a.reshape((-1,) + a._shape[k:]) if k != 1 else a
    idx = array(_np.flatnonzero(m), dtype=_np.int64, ctx=a._ctx)
    return invoke(OPS['take'], (flat, idx), {'axis': 0})


def _np_class(out):
    """Make a freshly created ``nd`` array an ``np`` one, in place (the two
    classes have the same layout, so this is a pointer change)."""
    out.__class__ = ndarray
    return out


def _dtype(dtype, default='float32'):
    return _np.dtype(default if dtype is None else dtype)


def array(object, dtype=None, ctx=None, device=None):
    """An ``np.ndarray`` from a list, NumPy array or array: float32 unless
    ``dtype`` is given or ``object`` is an array with a dtype of its own
    (MXNet's rule)."""
    ctx = ctx or device or current_context()
    if isinstance(object, NDArray):
        if dtype is None:
            dtype = object.dtype
        return _np_class(object.as_in_context(ctx).astype(dtype, copy=True))
    if dtype is None and isinstance(object, _np.ndarray) and object.dtype != _np.float64:
        dtype = object.dtype
    if dtype is None and isinstance(object, (bool, _np.bool_)) or (
            isinstance(object, _np.ndarray) and object.dtype == _np.bool_ and dtype is None):
        dtype = _np.bool_
    return _np_class(_ndm.array(object, ctx=ctx, dtype=_dtype(dtype)))


def asarray(a, dtype=None, ctx=None, device=None):
    """``a`` as an ``np.ndarray``: itself if it is one already (and has
    ``dtype``), else a new array."""
    if type(a) is ndarray and (dtype is None or _np.dtype(dtype) == a._dtype) \
            and (ctx or device) in (None, a._ctx):
        return a
    if isinstance(a, NDArray) and dtype is None and (ctx or device) in (None, a._ctx):
        return _share(a, ndarray)
    return array(a, dtype=dtype, ctx=ctx, device=device)


def zeros(shape, dtype=None, order='C', ctx=None, device=None):
    """An array of zeros (float32 unless ``dtype``)."""
    return _np_class(_ndm.zeros(shape, ctx=ctx or device, dtype=_dtype(dtype)))


def ones(shape, dtype=None, order='C', ctx=None, device=None):
    """An array of ones (float32 unless ``dtype``)."""
    return _np_class(_ndm.ones(shape, ctx=ctx or device, dtype=_dtype(dtype)))


def empty(shape, dtype=None, order='C', ctx=None, device=None):
    """An array whose values are not set (float32 unless ``dtype``)."""
    return _np_class(_ndm.empty(shape, ctx=ctx or device, dtype=_dtype(dtype)))


def full(shape, fill_value, dtype=None, order='C', ctx=None, device=None, out=None):
    """An array filled with ``fill_value`` (float32 unless ``dtype``; an
    array ``fill_value`` broadcasts)."""
    if isinstance(fill_value, NDArray):
        return broadcast_to_np(fill_value.astype(_dtype(dtype, fill_value._dtype)), shape)
    return _np_class(_ndm.full(shape, fill_value, ctx=ctx or device, dtype=_dtype(dtype)))


def broadcast_to_np(a, shape):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return invoke(OPS['broadcast_to'], (asarray(a),), {'shape': shape})
