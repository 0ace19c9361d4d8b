"""The core operator library: elementwise math, reductions, shapes, linear algebra.

Each operator is one small class: ``infer`` (shape, dtype), ``forward`` on raw
arrays, ``backward`` in NDArray operators, and ``cases`` for its gradient
check.  Neural-network operators live in :mod:`d2lmini.ndarray.nn_ops`.
"""
import builtins

import numpy as np

from .ndarray import invoke, _binary, zeros_like
from .registry import OPS, Case, Op, register, broadcast_shapes, result_dtype, norm_axis
from .. import backend
from ..context import cpu


def _xp(a):
    return np if isinstance(a, np.ndarray) else backend.xp_of(a)


def _sum_to(g, shape):
    """Sum a broadcast gradient ``g`` back down to ``shape``."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and g.shape[i + lead] != 1)
    return invoke(OPS['sum'], (g,), {'axis': axes, 'keepdims': False}).reshape(shape)


def _axis(name, axis, shape):
    """``axis`` as a non-negative int, or a clear error naming op and shape."""
    n = len(shape)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"operator '{name}': axis must be an int, got {axis!r}")
    if not -n <= axis < n:
        raise ValueError(f"operator '{name}': axis {axis} out of range for shape "
                         f"{tuple(shape)}")
    return int(axis) % n


def _common_dtype(dtypes):
    """The dtype NumPy gives when it combines arrays of ``dtypes``."""
    d = dtypes[0]
    for e in dtypes[1:]:
        if e != d:
            d = result_dtype(d, e)
    return d


# === elementwise unary ===========================================================
class Unary(Op):
    def infer(self, shapes, dtypes, **attrs):
        return shapes[0], dtypes[0]


def _keep_dtype(f):
    """MXNet keeps the input dtype (exp of int32 is int32); NumPy would promote,
    and the data would disagree with the dtype ``infer`` announced."""
    def fwd(a):
        r = f(a)
        return r if r.dtype == a.dtype else r.astype(a.dtype)
    return fwd


def _unary(name, forward, backward, low=-1.0, high=1.0, differentiable=True,
           float_out=False):
    cls = type(name, (Unary,), {
        'name': name,
        'forward': staticmethod(_keep_dtype(forward)),
        'backward': lambda self, g, inputs, out: [backward(g, inputs[0], out)],
        'differentiable': differentiable,
        'cases': (Case((3, 4), low=low, high=high),) if differentiable else (),
    })
    if float_out:
        cls.infer = lambda self, shapes, dtypes: (shapes[0], dtypes[0])
    register(cls)


def _sigmoid(a):
    # exp(-|a|) never overflows; the two branches meet at 0.
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


def _softrelu(a):
    return (np.maximum(a, 0) + np.log1p(np.exp(-np.abs(a)))).astype(a.dtype, copy=False)


#       name        forward          backward: g, x, y=f(x) -> dL/dx     input range
_unary('negative',  np.negative,     lambda g, x, y: -g)
_unary('exp',       np.exp,          lambda g, x, y: g * y)
_unary('log',       np.log,          lambda g, x, y: g / x,                 0.2, 2.0)
_unary('sqrt',      np.sqrt,         lambda g, x, y: g / (2 * y),           0.2, 2.0)
_unary('square',    np.square,       lambda g, x, y: g * 2 * x)
_unary('abs',       np.abs,          lambda g, x, y: g * sign(x),           0.1, 1.0)
_unary('sign',      np.sign,         None, differentiable=False)
_unary('sigmoid',   _sigmoid,        lambda g, x, y: g * y * (1 - y))
_unary('tanh',      np.tanh,         lambda g, x, y: g * (1 - y * y))
_unary('relu',      lambda a: np.maximum(a, 0),  # backward: MXNet's relu_grad, NaN -> NaN
                    lambda g, x, y: invoke(OPS['_relu_backward'], (g, y)),  0.1, 1.0)
_unary('softrelu',  _softrelu,       lambda g, x, y: g * sigmoid(x))
_unary('sin',       np.sin,          lambda g, x, y: g * cos(x))
_unary('cos',       np.cos,          lambda g, x, y: -g * sin(x))
_unary('reciprocal', np.reciprocal,  lambda g, x, y: -g * y * y,            0.5, 2.0)
_unary('rsqrt',     lambda a: 1 / np.sqrt(a),
                                     lambda g, x, y: -0.5 * g * y / x,      0.5, 2.0)
_unary('log1p',     np.log1p,        lambda g, x, y: g / (1 + x),           0.0, 1.0)
_unary('expm1',     np.expm1,        lambda g, x, y: g * (y + 1))
_unary('floor',     np.floor,        None, differentiable=False)
_unary('ceil',      np.ceil,         None, differentiable=False)
_unary('round',     np.round,        None, differentiable=False)
_unary('zeros_like_op', np.zeros_like, None, differentiable=False)
_unary('ones_like_op', np.ones_like, None, differentiable=False)  # keeps the layout


@register
class Identity(Unary):
    """The identity (used by ``detach``): shares the buffer, no copy."""
    name = '_identity'
    cases = (Case((3, 2)),)

    def forward(self, a):
        return a

    def backward(self, g, inputs, out):
        return [g]


@register
class Copy(Unary):
    name = '_copy'
    cases = (Case((3, 2)),)

    def forward(self, a):
        return a.copy()

    def backward(self, g, inputs, out):
        return [g]


@register
class CopyTo(Unary):
    """Gradient of a cross-device copy: copy the gradient back."""
    name = '_copyto'
    # invoke keeps one context, so this checks the rule; tests/test_autograd.py
    # checks a real copy from cpu(0) to cpu(1).
    cases = (Case((3, 2), ctx=cpu(0)),)

    def forward(self, a, ctx):     # pragma: no cover - copies use _copy_across
        return backend.to_context(a, ctx)

    def backward(self, g, inputs, out, ctx):
        return [g.as_in_context(inputs[0].context)]


@register
class Cast(Unary):
    name = 'cast'
    cases = (Case((3, 2), dtype=np.dtype('float64')),)

    def infer(self, shapes, dtypes, dtype):
        return shapes[0], np.dtype(dtype)

    def forward(self, a, dtype):
        return a.astype(dtype)

    def backward(self, g, inputs, out, dtype):
        return [g.astype(inputs[0].dtype)]


@register
class Clip(Unary):
    name = 'clip'
    cases = (Case((4, 5), a_min=-0.5, a_max=0.5),)

    def forward(self, a, a_min, a_max):
        r = np.clip(a, a_min, a_max)
        return r if r.dtype == a.dtype else r.astype(a.dtype)

    def backward(self, g, inputs, out, a_min, a_max):
        x = inputs[0]
        return [g * ((x >= a_min) * (x <= a_max))]


# === elementwise binary (broadcasting) ================================================
class Binary(Op):
    def infer(self, shapes, dtypes):
        a, b = shapes
        da, db = dtypes
        return (a if a == b else broadcast_shapes(self.name, a, b),
                da if da == db else result_dtype(da, db))


def _binary_op(name, forward, backward, low=-1.0, high=1.0, differentiable=True,
               cases=None):
    def bwd(self, g, inputs, out):
        a, b = inputs
        ga, gb = backward(g, a, b, out)
        return [None if ga is None else _sum_to(ga, a.shape),
                None if gb is None else _sum_to(gb, b.shape)]
    if cases is None:
        cases = (Case((3, 4), (3, 4), low=low, high=high),
                 Case((2, 3, 4), (3, 1), low=low, high=high),
                 Case((1, 4), (3, 1), low=low, high=high))
    def fwd(a, b):
        r = forward(a, b)
        dt = result_dtype(a.dtype, b.dtype)      # int32 / int32 stays int32
        return r if r.dtype == dt else r.astype(dt)
    register(type(name, (Binary,), {
        'name': name, 'forward': staticmethod(fwd), 'backward': bwd,
        'differentiable': differentiable,
        'cases': cases if differentiable else ()}))


def _cmp(f):
    def fwd(a, b):
        return f(a, b).astype(np.result_type(a, b), copy=False)
    return fwd


#           name            forward           backward: g, a, b, out -> (da, db)
_binary_op('add',           np.add,           lambda g, a, b, y: (g, g))
_binary_op('subtract',      np.subtract,      lambda g, a, b, y: (g, -g))
_binary_op('multiply',      np.multiply,      lambda g, a, b, y: (g * b, g * a))
_binary_op('divide',        np.true_divide,   lambda g, a, b, y: (g / b, -g * y / b),
           0.5, 2.0)
_binary_op('power',         np.power,         lambda g, a, b, y: (g * b * a ** (b - 1),
                                                                 g * y * log(a)), 0.5, 2.0)
_binary_op('maximum',       np.maximum,       lambda g, a, b, y: (g * (a >= b), g * (a < b)))
_binary_op('minimum',       np.minimum,       lambda g, a, b, y: (g * (a <= b), g * (a > b)))
_binary_op('mod',           np.mod,           None, differentiable=False)
_binary_op('equal',         _cmp(np.equal),   None, differentiable=False)
_binary_op('not_equal',     _cmp(np.not_equal), None, differentiable=False)
_binary_op('greater',       _cmp(np.greater), None, differentiable=False)
_binary_op('greater_equal', _cmp(np.greater_equal), None, differentiable=False)
_binary_op('lesser',        _cmp(np.less),    None, differentiable=False)
_binary_op('lesser_equal',  _cmp(np.less_equal), None, differentiable=False)
_binary_op('hypot',         np.hypot,         lambda g, a, b, y: (g * a / y, g * b / y),
           0.5, 2.0)


# === array-with-scalar (the scalar is an attribute, so it never needs a gradient) ======
class Scalar(Op):
    def infer(self, shapes, dtypes, scalar):
        return shapes[0], dtypes[0]     # MXNet keeps the array's dtype


def _scalar_op(name, forward, backward, low=-1.0, high=1.0, scalar=0.7,
               differentiable=True):
    def fwd(a, scalar):
        r = forward(a, scalar)
        # NumPy may promote (int array / float scalar); MXNet keeps a's dtype.
        return r if r.dtype == a.dtype else r.astype(a.dtype)
    register(type(name, (Scalar,), {
        'name': name, 'forward': staticmethod(fwd),
        'backward': lambda self, g, inputs, out, scalar:
            [backward(g, inputs[0], scalar, out)],
        'differentiable': differentiable,
        'cases': (Case((3, 4), low=low, high=high, scalar=scalar),)
        if differentiable else ()}))


#           name                forward                  backward: g, x, s, y -> dx
_scalar_op('_plus_scalar',      np.add,                  lambda g, x, s, y: g)
_scalar_op('_minus_scalar',     np.subtract,             lambda g, x, s, y: g)
_scalar_op('_rminus_scalar',    lambda a, s: s - a,      lambda g, x, s, y: -g)
_scalar_op('_mul_scalar',       np.multiply,             lambda g, x, s, y: g * s)
_scalar_op('_div_scalar',       np.true_divide,          lambda g, x, s, y: g / s)
_scalar_op('_rdiv_scalar',      lambda a, s: s / a,      lambda g, x, s, y: -g * y / x,
           0.5, 2.0)
_scalar_op('_power_scalar',     np.power,                lambda g, x, s, y:
           g * s * x ** (s - 1), 0.5, 2.0, scalar=2.5)
_scalar_op('_rpower_scalar',    lambda a, s: s ** a,     lambda g, x, s, y:
           g * y * float(np.log(s)), scalar=1.7)
_scalar_op('_maximum_scalar',   np.maximum,              lambda g, x, s, y: g * (x >= s),
           scalar=0.05)
_scalar_op('_minimum_scalar',   np.minimum,              lambda g, x, s, y: g * (x <= s),
           scalar=0.05)
for _n, _f in [('_mod_scalar', np.mod), ('_rmod_scalar', lambda a, s: np.mod(s, a)),
               ('_equal_scalar', np.equal), ('_not_equal_scalar', np.not_equal),
               ('_greater_scalar', np.greater), ('_greater_equal_scalar', np.greater_equal),
               ('_lesser_scalar', np.less), ('_lesser_equal_scalar', np.less_equal)]:
    _scalar_op(_n, _f, None, differentiable=False)


# === reductions =================================================================
class Reduce(Op):
    """A reduction over ``axis``.  Reducing *every* axis without ``keepdims``
    gives shape ``(1,)``, not ``()``: MXNet 1.x has no 0-d arrays, and code
    such as ``x.sum()[0]`` relies on that."""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        fwd = cls.__dict__.get('forward')
        if fwd is not None:
            def forward(self, *arrays, **attrs):
                r = fwd(self, *arrays, **attrs)
                return r.reshape(1) if r.ndim == 0 else r
            forward.__doc__ = fwd.__doc__
            cls.forward = forward

    def infer(self, shapes, dtypes, axis=None, keepdims=False):
        shape = shapes[0]
        axes = norm_axis(self.name, axis, len(shape))
        if isinstance(axis, (tuple, list)) and len(axes) != len(axis):
            raise ValueError(f"operator '{self.name}': repeated axis in {axis}")
        if keepdims:
            out = tuple(1 if i in axes else s for i, s in enumerate(shape))
        else:
            out = tuple(s for i, s in enumerate(shape) if i not in axes) or (1,)
        return out, self.out_dtype(dtypes[0])

    def out_dtype(self, dtype):
        return dtype

    def _expand(self, g, x, axis, keepdims):
        """Reshape the output gradient so it broadcasts against ``x``."""
        axes = norm_axis(self.name, axis, x.ndim)
        kshape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        return g.reshape(kshape)


def _reduce_cases():
    return (Case((3, 4), axis=None), Case((3, 4, 2), axis=1),
            Case((3, 4, 2), axis=(0, 2), keepdims=True))


@register
class Sum(Reduce):
    name = 'sum'
    cases = _reduce_cases()

    def forward(self, a, axis=None, keepdims=False):
        return a.sum(axis=axis, keepdims=keepdims, dtype=a.dtype)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        return [self._expand(g, x, axis, keepdims).broadcast_to(x.shape)]


@register
class Mean(Reduce):
    name = 'mean'
    cases = _reduce_cases()

    def forward(self, a, axis=None, keepdims=False):
        return np.asarray(a.mean(axis=axis, keepdims=keepdims), dtype=a.dtype) \
            if isinstance(a, np.ndarray) else a.mean(axis=axis, keepdims=keepdims)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        n = x.size // builtins.max(1, out.size)
        return [(self._expand(g, x, axis, keepdims) / n).broadcast_to(x.shape)]


class _MaxMin(Reduce):
    cases = _reduce_cases()

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        y = self._expand(out, x, axis, keepdims)
        mask = x == y
        # ties share the gradient equally, like the subgradient MXNet picks
        count = invoke(OPS['sum'], (mask,), {'axis': axis, 'keepdims': True})
        return [self._expand(g, x, axis, keepdims) * mask / count]


@register
class Max(_MaxMin):
    name = 'max'

    def forward(self, a, axis=None, keepdims=False):
        return a.max(axis=axis, keepdims=keepdims)


@register
class Min(_MaxMin):
    name = 'min'

    def forward(self, a, axis=None, keepdims=False):
        return a.min(axis=axis, keepdims=keepdims)


@register
class Prod(Reduce):
    name = 'prod'
    cases = tuple(Case(*c.shapes, low=0.5, high=1.5, **c.attrs) for c in _reduce_cases())

    def forward(self, a, axis=None, keepdims=False):
        return a.prod(axis=axis, keepdims=keepdims, dtype=a.dtype)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        return [self._expand(g * out, x, axis, keepdims) / x]


@register
class Norm(Reduce):
    """The L2 norm over ``axis`` (all elements by default)."""
    name = 'norm'
    cases = (Case((3, 4)), Case((3, 4), axis=1))

    def forward(self, a, axis=None, keepdims=False):
        r = np.sqrt((a * a).sum(axis=axis, keepdims=keepdims))
        return r if r.dtype == a.dtype else r.astype(a.dtype)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        return [x * self._expand(g / out, x, axis, keepdims)]


class _Arg(Reduce):
    differentiable = False

    def infer(self, shapes, dtypes, axis=None, keepdims=False):
        if axis is None:
            return ((1,) * len(shapes[0]) if keepdims else (1,)), np.dtype(np.float32)
        _axis(self.name, axis, shapes[0])         # one axis only, as NumPy's
        return super().infer(shapes, dtypes, axis, keepdims)

    def out_dtype(self, dtype):
        return np.dtype(np.float32)      # MXNet returns indices as float32


@register
class Argmax(_Arg):
    name = 'argmax'

    def forward(self, a, axis=None, keepdims=False):
        return a.argmax(axis=axis, keepdims=keepdims).astype(np.float32)


@register
class Argmin(_Arg):
    name = 'argmin'

    def forward(self, a, axis=None, keepdims=False):
        return a.argmin(axis=axis, keepdims=keepdims).astype(np.float32)


# === shape manipulation =====================================================================
def infer_reshape(shape, target, reverse=False):
    """MXNet's reshape codes: 0 copies a dim, -1 infers one, -2 copies the rest,
    -3 merges two dims, -4 splits one into the next two values."""
    src = list(shape)
    if reverse:
        src, target = src[::-1], list(target)[::-1]
    out, i, j = [], 0, 0
    target = list(target)
    while j < len(target):
        t = target[j]
        if t == 0:
            out.append(src[i]); i += 1
        elif t == -1:
            out.append(-1); i += 1
        elif t == -2:
            out.extend(src[i:]); i = len(src)
        elif t == -3:
            out.append(src[i] * src[i + 1]); i += 2
        elif t == -4:
            a, b = target[j + 1], target[j + 2]
            if a == -1 and b == -1:
                raise ValueError(f"operator 'reshape': -4 split dims of {tuple(target)}"
                                 f" cannot both be -1")
            if a == -1:
                a = src[i] // b
            if b == -1:
                b = src[i] // a
            out.extend([a, b]); i += 1; j += 2
        else:
            out.append(t); i += 1
        j += 1
    if reverse:
        out = out[::-1]
    size = int(np.prod(shape, dtype=np.int64))
    if out.count(-1) > 1:
        raise ValueError(f'reshape {tuple(target)}: more than one -1')
    if -1 in out:
        rest = int(np.prod([s for s in out if s != -1], dtype=np.int64))
        if rest == 0 or size % rest:
            raise ValueError(f"operator 'reshape': cannot reshape array of shape "
                             f"{tuple(shape)} into {tuple(target)}")
        out[out.index(-1)] = size // rest
    out = tuple(int(s) for s in out)
    if int(np.prod(out, dtype=np.int64)) != size:
        raise ValueError(f"operator 'reshape': cannot reshape array of shape "
                         f"{tuple(shape)} (size {size}) into shape {out}")
    return out


@register
class Reshape(Op):
    name = 'reshape'
    cases = (Case((3, 4), shape=(2, -1)), Case((2, 3, 4), shape=(0, -1)))

    def infer(self, shapes, dtypes, shape, reverse=False):
        try:
            return infer_reshape(shapes[0], shape, reverse), dtypes[0]
        except IndexError:      # a 0/-2/-3/-4 code reading past the input's dims
            raise ValueError(f"operator 'reshape': shape {tuple(shape)} does not fit "
                             f"the input shape {tuple(shapes[0])}") from None

    def forward(self, a, shape, reverse=False):
        return a.reshape(infer_reshape(a.shape, shape, reverse))

    def backward(self, g, inputs, out, shape, reverse=False):
        return [g.reshape(inputs[0].shape)]


@register
class Flatten(Op):
    """Collapse all axes but the first: (N, a, b, ...) -> (N, a*b*...)."""
    name = 'flatten'
    cases = (Case((2, 3, 4)),)

    def infer(self, shapes, dtypes):
        s = shapes[0]
        return ((s[0], int(np.prod(s[1:], dtype=np.int64))) if s else (1, 1)), dtypes[0]

    def forward(self, a):
        return a.reshape(a.shape[0], -1) if a.ndim else a.reshape(1, 1)

    def backward(self, g, inputs, out):
        return [g.reshape(inputs[0].shape)]


@register
class Transpose(Op):
    name = 'transpose'
    cases = (Case((2, 3)), Case((2, 3, 4), axes=(1, 2, 0)))

    def infer(self, shapes, dtypes, axes=None):
        s = shapes[0]
        if axes is None:
            return s[::-1], dtypes[0]
        if sorted(a % len(s) for a in axes) != list(range(len(s))):
            raise ValueError(f"operator 'transpose': axes {axes} is not a permutation "
                             f"of the {len(s)} axes of shape {s}")
        return tuple(s[a] for a in axes), dtypes[0]

    def forward(self, a, axes=None):
        return a.transpose(axes)

    def backward(self, g, inputs, out, axes=None):
        inv = None if axes is None else tuple(np.argsort([a % g.ndim for a in axes]))
        return [g.transpose(inv) if inv is not None else g.transpose()]


@register
class SwapAxes(Op):
    name = 'swapaxes'
    cases = (Case((2, 3, 4), dim1=0, dim2=2),)

    def infer(self, shapes, dtypes, dim1=0, dim2=0):
        s = list(shapes[0])
        dim1, dim2 = _axis(self.name, dim1, s), _axis(self.name, dim2, s)
        s[dim1], s[dim2] = s[dim2], s[dim1]
        return tuple(s), dtypes[0]

    def forward(self, a, dim1=0, dim2=0):
        return np.swapaxes(a, dim1, dim2)

    def backward(self, g, inputs, out, dim1=0, dim2=0):
        return [invoke(self, (g,), {'dim1': dim1, 'dim2': dim2})]


@register
class ExpandDims(Op):
    name = 'expand_dims'
    cases = (Case((2, 3), axis=1),)

    def infer(self, shapes, dtypes, axis):
        s = list(shapes[0])
        ax = axis if axis >= 0 else axis + len(s) + 1
        if not 0 <= ax <= len(s):
            raise ValueError(f"operator 'expand_dims': axis {axis} out of range "
                             f"for shape {shapes[0]}")
        s.insert(ax, 1)
        return tuple(s), dtypes[0]

    def forward(self, a, axis):
        return np.expand_dims(a, axis)

    def backward(self, g, inputs, out, axis):
        return [g.reshape(inputs[0].shape)]


@register
class Squeeze(Op):
    name = 'squeeze'
    cases = (Case((2, 1, 3)), Case((2, 1, 1), axis=1))

    def infer(self, shapes, dtypes, axis=None):
        s = shapes[0]
        axes = norm_axis(self.name, axis, len(s)) if axis is not None else \
            tuple(i for i, d in enumerate(s) if d == 1)
        for i in axes:
            if s[i] != 1:
                raise ValueError(f"operator 'squeeze': axis {i} of shape {s} is not 1")
        return tuple(d for i, d in enumerate(s) if i not in axes), dtypes[0]

    def forward(self, a, axis=None):
        return np.squeeze(a, axis=axis)

    def backward(self, g, inputs, out, axis=None):
        return [g.reshape(inputs[0].shape)]


@register
class BroadcastTo(Op):
    name = 'broadcast_to'
    cases = (Case((3, 1), shape=(2, 3, 4)),)

    def infer(self, shapes, dtypes, shape):
        shape = tuple(s if s != 0 else shapes[0][i] for i, s in enumerate(shape)) \
            if len(shape) == len(shapes[0]) else tuple(shape)
        b = broadcast_shapes(self.name, shapes[0], shape)
        if b != shape:
            raise ValueError(f"operator 'broadcast_to': cannot broadcast {shapes[0]} "
                             f"to {shape}")
        return shape, dtypes[0]

    def forward(self, a, shape):
        return np.broadcast_to(a, self.infer([a.shape], [a.dtype], shape)[0])

    def backward(self, g, inputs, out, shape):
        return [_sum_to(g, inputs[0].shape)]


@register
class Tile(Op):
    name = 'tile'
    cases = (Case((2, 3), reps=(2, 1)), Case((3,), reps=(2, 2)))

    def infer(self, shapes, dtypes, reps):
        s = shapes[0]
        if any(r < 0 for r in reps):
            raise ValueError(f"operator 'tile': negative reps {tuple(reps)}")
        n = builtins.max(len(s), len(reps))
        s = (1,) * (n - len(s)) + tuple(s)
        r = (1,) * (n - len(reps)) + tuple(reps)
        return tuple(a * b for a, b in zip(s, r)), dtypes[0]

    def forward(self, a, reps):
        return np.tile(a, reps)

    def backward(self, g, inputs, out, reps):
        s = inputs[0].shape
        n = g.ndim
        s_full = (1,) * (n - len(s)) + tuple(s)
        r = (1,) * (n - len(reps)) + tuple(reps)
        inter = []
        for ri, si in zip(r, s_full):
            inter += [ri, si]
        gs = g.reshape(tuple(inter)).sum(axis=tuple(range(0, 2 * n, 2)))
        return [gs.reshape(s)]


@register
class Repeat(Op):
    name = 'repeat'
    cases = (Case((2, 3), repeats=2, axis=1), Case((2, 3), repeats=3))

    def infer(self, shapes, dtypes, repeats, axis=None):
        s = shapes[0]
        if axis is None:
            return (int(np.prod(s)) * repeats,), dtypes[0]
        s = list(s)
        s[_axis(self.name, axis, s)] *= repeats
        return tuple(s), dtypes[0]

    def forward(self, a, repeats, axis=None):
        return np.repeat(a, repeats, axis=axis)

    def backward(self, g, inputs, out, repeats, axis=None):
        x = inputs[0]
        if axis is None:
            return [g.reshape((-1, repeats)).sum(axis=1).reshape(x.shape)]
        ax = axis % x.ndim
        shape = x.shape[:ax] + (x.shape[ax], repeats) + x.shape[ax + 1:]
        return [g.reshape(shape).sum(axis=ax + 1)]


@register
class Flip(Op):
    name = 'flip'
    cases = (Case((3, 4), axis=1),)

    def infer(self, shapes, dtypes, axis):
        for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)):
            _axis(self.name, ax, shapes[0])
        return shapes[0], dtypes[0]

    def forward(self, a, axis):
        return np.flip(a, axis)

    def backward(self, g, inputs, out, axis):
        return [invoke(self, (g,), {'axis': axis})]


@register
class Concat(Op):
    name = 'concat'
    cases = (Case((2, 3), (2, 4), dim=1), Case((2, 3), (1, 3), (3, 3), dim=0))

    def infer(self, shapes, dtypes, dim=1):
        s0 = shapes[0]
        if not -len(s0) <= dim < len(s0):
            raise ValueError(f"operator 'concat': dim {dim} out of range for shapes "
                             f"{list(shapes)}")
        ax = dim % len(s0)
        for s in shapes:
            if len(s) != len(s0) or any(a != b for i, (a, b) in enumerate(zip(s, s0))
                                        if i != ax):
                raise ValueError(f"operator 'concat': shapes {list(shapes)} differ "
                                 f"outside dim {dim}")
        out = list(s0)
        out[ax] = builtins.sum(s[ax] for s in shapes)
        return tuple(out), _common_dtype(dtypes)

    def forward(self, *arrays, dim=1):
        return np.concatenate(arrays, axis=dim)

    def backward(self, g, inputs, out, dim=1):
        ax = dim % g.ndim
        grads, start = [], 0
        for x in inputs:
            end = start + x.shape[ax]
            grads.append(invoke(OPS['slice_axis'], (g,),
                                {'axis': ax, 'begin': start, 'end': end}))
            start = end
        return grads


@register
class Stack(Op):
    name = 'stack'
    cases = (Case((2, 3), (2, 3), axis=1),)

    def infer(self, shapes, dtypes, axis=0):
        if any(s != shapes[0] for s in shapes):
            raise ValueError(f"operator 'stack': all shapes must match, got {list(shapes)}")
        s = list(shapes[0])
        if not -len(s) - 1 <= axis <= len(s):
            raise ValueError(f"operator 'stack': axis {axis} out of range for "
                             f"shape {shapes[0]}")
        s.insert(axis % (len(s) + 1), len(shapes))
        return tuple(s), _common_dtype(dtypes)

    def forward(self, *arrays, axis=0):
        return np.stack(arrays, axis=axis)

    def backward(self, g, inputs, out, axis=0):
        return split(g, len(inputs), axis=axis, squeeze_axis=True) \
            if len(inputs) > 1 else [g.squeeze(axis=axis)]


@register
class Split(Op):
    name = 'split'
    nout = None            # always a list of outputs (even for num_outputs=1)
    cases = (Case((4, 6), num_outputs=2, axis=1), Case((4, 3), num_outputs=4, axis=0,
                                                        squeeze_axis=True))

    def infer(self, shapes, dtypes, num_outputs, axis=1, squeeze_axis=False):
        s = list(shapes[0])
        ax = _axis(self.name, axis, s)
        if not isinstance(num_outputs, (int, np.integer)) or num_outputs < 1:
            raise ValueError(f"operator 'split': num_outputs must be a positive int, "
                             f"got {num_outputs!r}")
        if s[ax] % num_outputs:
            raise ValueError(f"operator 'split': axis {axis} of shape {tuple(s)} "
                             f"is not divisible into {num_outputs} parts")
        s[ax] //= num_outputs
        if squeeze_axis:
            if s[ax] != 1:
                raise ValueError("operator 'split': squeeze_axis needs parts of size 1")
            del s[ax]
        return [(tuple(s), dtypes[0])] * num_outputs

    def forward(self, a, num_outputs, axis=1, squeeze_axis=False):
        parts = np.split(a, num_outputs, axis=axis)
        if squeeze_axis:
            parts = [p.squeeze(axis) for p in parts]
        return parts

    def backward(self, grads, inputs, outputs, num_outputs, axis=1, squeeze_axis=False):
        if squeeze_axis:
            return [invoke(OPS['stack'], tuple(grads), {'axis': axis})]
        return [invoke(OPS['concat'], tuple(grads), {'dim': axis})]


@register
class SliceAxis(Op):
    name = 'slice_axis'
    cases = (Case((4, 5), axis=1, begin=1, end=4),)

    def infer(self, shapes, dtypes, axis, begin, end):
        s = list(shapes[0])
        axis = _axis(self.name, axis, s)
        n = s[axis]
        b, e, _ = builtins.slice(begin, end).indices(n)
        s[axis] = builtins.max(0, e - b)
        return tuple(s), dtypes[0]

    def forward(self, a, axis, begin, end):
        idx = [builtins.slice(None)] * a.ndim
        idx[axis] = builtins.slice(begin, end)
        return a[tuple(idx)]

    def backward(self, g, inputs, out, axis, begin, end):
        x = inputs[0]
        return [invoke(OPS['_slice_backward'], (g,),
                       {'shape': x.shape, 'key': _axis_key(x.ndim, axis, begin, end)})]


def _axis_key(ndim, axis, begin, end):
    idx = [builtins.slice(None)] * ndim
    idx[axis] = builtins.slice(begin, end)
    return tuple(idx)


@register
class GetItem(Op):
    """``x[key]`` for basic and advanced indexing."""
    name = '_getitem'
    cases = (Case((4, 5), key=(slice(1, 3),)), Case((4, 5), key=(1,)),
             Case((4, 5), key=(slice(None), np.array([0, 2, 2]))))

    def infer(self, shapes, dtypes, key):
        from .ndarray import _slice_shape
        return _slice_shape(shapes[0], key), dtypes[0]

    def forward(self, a, key):
        if isinstance(key, np.ndarray) and not isinstance(a, np.ndarray):
            key = backend.asarray_on(key, _ctx_of(a))
        return a[key]

    def backward(self, g, inputs, out, key):
        return [invoke(OPS['_slice_backward'], (g,), {'shape': inputs[0].shape,
                                                      'key': key})]


def _ctx_of(a):
    from ..context import gpu
    return gpu(a.device.id)


@register
class SliceBackward(Op):
    """Scatter-add ``g`` into zeros of ``shape`` at ``key`` (gradient of indexing)."""
    name = '_slice_backward'
    cases = (Case((2, 5), shape=(4, 5), key=(slice(1, 3),)),
             Case((4, 3), shape=(4, 5), key=(slice(None), np.array([0, 2, 2]))))

    def infer(self, shapes, dtypes, shape, key):
        return tuple(shape), dtypes[0]

    def forward(self, g, shape, key):
        xp = np if isinstance(g, np.ndarray) else backend.xp_of(g)
        out = xp.zeros(shape, g.dtype)
        if _is_advanced(key):
            xp.add.at(out, key, g)       # repeated indices accumulate
        else:
            out[key] = g
        return out

    def backward(self, g, inputs, out, shape, key):
        return [invoke(OPS['_getitem'], (g,), {'key': key})]


def _is_advanced(key):
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, np.ndarray) or isinstance(k, list) for k in items)


# === indexing with arrays ==================================================================
@register
class Take(Op):
    """``take(a, indices, axis)``: rows (or slices along ``axis``) of ``a``."""
    name = 'take'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (5, 3)), [0, 3, 3, 1]], grad=[0]),)

    def infer(self, shapes, dtypes, axis=0, mode='clip'):
        a, i = shapes
        ax = _axis(self.name, axis, a)
        return a[:ax] + i + a[ax + 1:], dtypes[0]

    def forward(self, a, idx, axis=0, mode='clip'):
        xp = np if isinstance(a, np.ndarray) else backend.xp_of(a)
        idx = idx.astype(np.int64)
        n = a.shape[axis]
        idx = xp.clip(idx, 0, n - 1) if mode == 'clip' else xp.mod(idx, n)
        return xp.take(a, idx, axis=axis)

    def backward(self, g, inputs, out, axis=0, mode='clip'):
        a, idx = inputs
        return [invoke(OPS['_take_backward'], (g, idx),
                       {'shape': a.shape, 'axis': axis, 'mode': mode}), None]


@register
class TakeBackward(Op):
    name = '_take_backward'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (4, 3)), [0, 3, 3, 1]], grad=[0],
                  shape=(5, 3)),)

    def infer(self, shapes, dtypes, shape, axis=0, mode='clip'):
        return tuple(shape), dtypes[0]

    def forward(self, g, idx, shape, axis=0, mode='clip'):
        xp = np if isinstance(g, np.ndarray) else backend.xp_of(g)
        n = shape[axis]
        idx = idx.astype(np.int64)
        idx = xp.clip(idx, 0, n - 1) if mode == 'clip' else xp.mod(idx, n)
        out = xp.zeros((n,) + tuple(s for i, s in enumerate(shape) if i != axis), g.dtype)
        gm = xp.moveaxis(g, list(range(axis, axis + idx.ndim)),
                         list(range(idx.ndim))) if axis else g
        xp.add.at(out, idx.reshape(-1), gm.reshape((-1,) + out.shape[1:]))
        return xp.moveaxis(out, 0, axis) if axis else out

    def backward(self, g, inputs, out, shape, axis=0, mode='clip'):
        return [invoke(OPS['take'], (g, inputs[1]), {'axis': axis, 'mode': mode}), None]


@register
class Pick(Op):
    """``pick(data, index, axis)``: one element per row, e.g. the true class's score."""
    name = 'pick'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (4, 3)), [0, 2, 2, 1]], grad=[0]),
             Case(inputs=[lambda r: r.uniform(-1, 1, (4, 3)), [0, 2, 1]], grad=[0],
                  axis=0, keepdims=True))

    def infer(self, shapes, dtypes, axis=-1, keepdims=False, mode='clip'):
        s = list(shapes[0])
        ax = _axis(self.name, axis, s)
        expect = tuple(d for i, d in enumerate(s) if i != ax)
        ishape = tuple(shapes[1])
        if ishape != expect and ishape != tuple(1 if i == ax else d for i, d in enumerate(s)):
            raise ValueError(f"operator 'pick': index shape {ishape} does not match data "
                             f"shape {tuple(s)} without axis {axis} ({expect})")
        if keepdims:
            s[ax] = 1
        else:
            del s[ax]
        return tuple(s), dtypes[0]

    def forward(self, a, idx, axis=-1, keepdims=False, mode='clip'):
        xp = np if isinstance(a, np.ndarray) else backend.xp_of(a)
        ax = axis % a.ndim
        n = a.shape[ax]
        idx = idx.astype(np.int64)
        idx = xp.clip(idx, 0, n - 1) if mode == 'clip' else xp.mod(idx, n)
        if idx.ndim < a.ndim:
            idx = xp.expand_dims(idx, ax)
        r = xp.take_along_axis(a, idx, axis=ax)
        return r if keepdims else r.squeeze(ax)

    def backward(self, g, inputs, out, axis=-1, keepdims=False, mode='clip'):
        a, idx = inputs
        ax = axis % a.ndim
        mask = one_hot(idx.reshape(tuple(d for i, d in enumerate(a.shape) if i != ax)),
                       a.shape[ax], dtype=a.dtype)
        if ax != a.ndim - 1:
            perm = list(range(a.ndim - 1))
            perm.insert(ax, a.ndim - 1)
            mask = mask.transpose(tuple(perm))
        gk = g if keepdims else g.expand_dims(ax)
        return [mask * gk, None]


@register
class OneHot(Op):
    name = 'one_hot'
    differentiable = False

    def infer(self, shapes, dtypes, depth, on_value=1.0, off_value=0.0, dtype='float32'):
        if int(depth) < 0:
            raise ValueError(f"operator 'one_hot': depth must be >= 0, got {depth}")
        return tuple(shapes[0]) + (int(depth),), np.dtype(dtype)

    def forward(self, idx, depth, on_value=1.0, off_value=0.0, dtype='float32'):
        xp = np if isinstance(idx, np.ndarray) else backend.xp_of(idx)
        i = idx.astype(np.int64)
        hot = i[..., None] == xp.arange(depth)
        return xp.where(hot, on_value, off_value).astype(dtype)


@register
class Where(Op):
    name = 'where'
    cases = (Case(inputs=[lambda r: (r.uniform(size=(3, 4)) > 0.5).astype(float),
                          lambda r: r.uniform(-1, 1, (3, 4)),
                          lambda r: r.uniform(-1, 1, (3, 4))], grad=[1, 2]),)

    def infer(self, shapes, dtypes):
        c, x, y = shapes
        if x != y or (c != x and (len(c) != 1 or c[0] != x[0])):
            raise ValueError(f"operator 'where': condition {c}, x {x} and y {y} must "
                             f"have equal shapes (or condition be 1-D over axis 0)")
        return x, _common_dtype(dtypes[1:])

    def forward(self, c, x, y):
        if c.ndim == 1 and x.ndim > 1:
            c = c.reshape((-1,) + (1,) * (x.ndim - 1))
        return np.where(c != 0, x, y)

    def backward(self, g, inputs, out):
        c, x, y = inputs
        if c.ndim == 1 and x.ndim > 1:
            c = c.reshape((-1,) + (1,) * (x.ndim - 1))
        mask = (c != 0)
        return [None, g * mask, g * (1 - mask)]


# === linear algebra ===========================================================================
@register
class Dot(Op):
    """MXNet's ``dot``: contracts the last axis of ``a`` with the first of ``b``."""
    name = 'dot'
    cases = (Case((3, 4), (4, 5)), Case((4, 3), (4, 5), transpose_a=True),
             Case((3, 4), (5, 4), transpose_b=True), Case((2, 3, 4), (4, 2)),
             Case((4,), (4,)))

    def infer(self, shapes, dtypes, transpose_a=False, transpose_b=False):
        a, b = shapes
        if transpose_a:
            a = a[::-1]
        if transpose_b:
            b = b[::-1]
        if not a or not b or a[-1] != b[0]:
            raise ValueError(f"operator 'dot': shapes {shapes[0]} and {shapes[1]} "
                             f"(transpose_a={transpose_a}, transpose_b={transpose_b}) "
                             f"do not align: {a[-1] if a else None} != {b[0] if b else None}")
        da, db = dtypes
        return a[:-1] + b[1:], (da if da == db else result_dtype(da, db))

    def forward(self, a, b, transpose_a=False, transpose_b=False):
        if transpose_a:
            a = a.T
        if transpose_b:
            b = b.T
        if a.ndim <= 2 and b.ndim <= 2:
            return a @ b if a.ndim == 2 or b.ndim == 2 else np.dot(a, b)
        return np.tensordot(a, b, axes=1)

    def backward(self, g, inputs, out, transpose_a=False, transpose_b=False):
        a, b = inputs
        A = a.T if transpose_a else a
        B = b.T if transpose_b else b
        # flatten to 2-D: (m, k) @ (k, n)
        k = B.shape[0]
        A2 = A.reshape((-1, k))
        B2 = B.reshape((k, -1))
        g2 = g.reshape((A2.shape[0], B2.shape[1]))
        gA = dot(g2, B2, transpose_b=True).reshape(A.shape)
        gB = dot(A2, g2, transpose_a=True).reshape(B.shape)
        return [gA.T if transpose_a else gA, gB.T if transpose_b else gB]


@register
class BatchDot(Op):
    name = 'batch_dot'
    cases = (Case((2, 3, 4), (2, 4, 5)), Case((2, 4, 3), (2, 5, 4), transpose_a=True,
                                               transpose_b=True))

    def infer(self, shapes, dtypes, transpose_a=False, transpose_b=False):
        a, b = shapes
        if len(a) != 3 or len(b) != 3 or a[0] != b[0]:
            raise ValueError(f"operator 'batch_dot': needs (B, n, k) and (B, k, m) inputs, "
                             f"got {a} and {b}")
        m, k = (a[2], a[1]) if transpose_a else (a[1], a[2])
        k2, n = (b[2], b[1]) if transpose_b else (b[1], b[2])
        if k != k2:
            raise ValueError(f"operator 'batch_dot': shapes {a} and {b} do not align")
        return (a[0], m, n), _common_dtype(dtypes)

    def forward(self, a, b, transpose_a=False, transpose_b=False):
        if transpose_a:
            a = a.transpose(0, 2, 1)
        if transpose_b:
            b = b.transpose(0, 2, 1)
        return np.matmul(a, b)

    def backward(self, g, inputs, out, transpose_a=False, transpose_b=False):
        a, b = inputs
        bd = OPS['batch_dot']
        if transpose_a:
            ga = invoke(bd, (b, g), {'transpose_a': transpose_b, 'transpose_b': True})
        else:
            ga = invoke(bd, (g, b), {'transpose_b': not transpose_b})
        if transpose_b:
            gb = invoke(bd, (g, a), {'transpose_a': True, 'transpose_b': transpose_a})
        else:
            gb = invoke(bd, (a, g), {'transpose_a': not transpose_a})
        return [ga, gb]


# === functional front ends (nd.exp(x), nd.dot(a, b), ...) ====================================
def _unary_fn(name):
    op = OPS[name]

    def fn(data, out=None, **kwargs):
        if kwargs:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
        res = invoke(op, (data,))
        if out is not None:              # MXNet's out=: write into an existing array
            out[:] = res
            return out
        return res
    fn.__name__ = name
    fn.__doc__ = f'Elementwise ``{name}``; see the op table for its gradient.'
    return fn


for _name in ['negative', 'exp', 'log', 'sqrt', 'square', 'abs', 'sign', 'sigmoid',
              'tanh', 'relu', 'softrelu', 'sin', 'cos', 'reciprocal', 'rsqrt', 'log1p',
              'expm1', 'floor', 'ceil', 'round']:
    globals()[_name] = _unary_fn(_name)


def _binary_fn(name):
    def fn(lhs, rhs):
        return _binary(name, lhs, rhs)
    fn.__name__ = name
    fn.__doc__ = f'Elementwise ``{name}`` with broadcasting; either side may be a scalar.'
    return fn


for _name in ['add', 'subtract', 'multiply', 'divide', 'power', 'maximum', 'minimum',
              'mod', 'equal', 'not_equal', 'greater', 'greater_equal', 'lesser',
              'lesser_equal']:
    globals()[_name] = _binary_fn(_name)
broadcast_add, broadcast_sub, broadcast_mul, broadcast_div = add, subtract, multiply, divide
broadcast_power, broadcast_maximum, broadcast_minimum = power, maximum, minimum
broadcast_equal, broadcast_greater, broadcast_lesser = equal, greater, lesser
elemwise_add, elemwise_sub, elemwise_mul, elemwise_div = add, subtract, multiply, divide
subtract_ = subtract


def hypot(a, b):
    return invoke(OPS['hypot'], (a, b))


def _check_kwargs(name, kwargs, allowed):
    bad = set(kwargs) - set(allowed)
    if bad:
        raise TypeError(f"{name}() got unexpected keyword argument(s) {sorted(bad)}; "
                        f"allowed: {sorted(allowed)}")


def _reduce_fn(name):
    def fn(data, axis=None, keepdims=False, exclude=False, **kwargs):
        _check_kwargs(name, kwargs, ())
        if exclude:
            ax = norm_axis(name, axis, data.ndim)
            axis = tuple(i for i in range(data.ndim) if i not in ax)
        return invoke(OPS[name], (data,), {'axis': axis, 'keepdims': keepdims})
    fn.__name__ = name
    fn.__doc__ = f'``{name}`` over ``axis`` (all axes by default).'
    return fn


for _name in ['sum', 'mean', 'max', 'min', 'prod', 'argmax', 'argmin']:
    globals()[_name] = _reduce_fn(_name)
sum_axis, max_axis, min_axis = sum, max, min    # noqa: A001 - MXNet names


def norm(data, ord=2, axis=None, keepdims=False):
    if ord != 2:
        raise ValueError('only the L2 norm (ord=2) is supported')
    return invoke(OPS['norm'], (data,), {'axis': axis, 'keepdims': keepdims})


def dot(lhs, rhs, transpose_a=False, transpose_b=False, **kwargs):
    """Matrix product; N-D arrays contract ``lhs``'s last axis with ``rhs``'s first."""
    _check_kwargs('dot', kwargs, ('forward_stype',))
    return invoke(OPS['dot'], (lhs, rhs), {'transpose_a': transpose_a,
                                           'transpose_b': transpose_b})


def batch_dot(lhs, rhs, transpose_a=False, transpose_b=False, **kwargs):
    """Batched matrix product of (B, n, k) and (B, k, m) arrays."""
    _check_kwargs('batch_dot', kwargs, ('forward_stype',))
    return invoke(OPS['batch_dot'], (lhs, rhs), {'transpose_a': transpose_a,
                                                 'transpose_b': transpose_b})


def reshape(data, shape, reverse=False):
    return invoke(OPS['reshape'], (data,), {'shape': tuple(shape), 'reverse': reverse})


def transpose(data, axes=None):
    return invoke(OPS['transpose'], (data,), {'axes': None if axes is None else tuple(axes)})


def swapaxes(data, dim1=0, dim2=0):
    return invoke(OPS['swapaxes'], (data,), {'dim1': dim1, 'dim2': dim2})


def flatten(data):
    return invoke(OPS['flatten'], (data,))


Flatten = flatten


def expand_dims(data, axis):
    return invoke(OPS['expand_dims'], (data,), {'axis': axis})


def squeeze(data, axis=None):
    return invoke(OPS['squeeze'], (data,), {'axis': axis})


def broadcast_to(data, shape):
    return invoke(OPS['broadcast_to'], (data,), {'shape': tuple(shape)})


def broadcast_like(lhs, rhs):
    return broadcast_to(lhs, rhs.shape)


def tile(data, reps):
    return invoke(OPS['tile'], (data,), {'reps': tuple(reps)})


def repeat(data, repeats, axis=None):
    return invoke(OPS['repeat'], (data,), {'repeats': repeats, 'axis': axis})


def flip(data, axis):
    return invoke(OPS['flip'], (data,), {'axis': axis})


reverse = flip


def concat(*data, dim=1, **kwargs):
    """Join arrays along ``dim`` (MXNet's default ``dim=1``)."""
    _check_kwargs('concat', kwargs, ('num_args',))
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if not data:
        raise ValueError('concat needs at least one array')
    return invoke(OPS['concat'], tuple(data), {'dim': dim})


concatenate = concat


def stack(*data, axis=0, **kwargs):
    _check_kwargs('stack', kwargs, ('num_args',))
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if not data:
        raise ValueError('stack needs at least one array')
    return invoke(OPS['stack'], tuple(data), {'axis': axis})


def split(data, num_outputs, axis=1, squeeze_axis=False):
    """Split into ``num_outputs`` equal parts (a list; a single array if 1)."""
    outs = invoke(OPS['split'], (data,),
                  {'num_outputs': num_outputs, 'axis': axis, 'squeeze_axis': squeeze_axis})
    return outs[0] if num_outputs == 1 else outs


def slice_axis(data, axis, begin, end):
    if end is None:
        end = data.shape[axis]
    return invoke(OPS['slice_axis'], (data,), {'axis': axis, 'begin': begin, 'end': end})


def slice(data, begin, end, step=None):       # noqa: A001 - MXNet's name
    """``data[begin[0]:end[0], begin[1]:end[1], ...]`` (None means the full range)."""
    step = step or (None,) * len(begin)
    return data[tuple(builtins.slice(b, e, s) for b, e, s in zip(begin, end, step))]


def take(a, indices, axis=0, mode='clip'):
    return invoke(OPS['take'], (a, indices), {'axis': axis, 'mode': mode})


def pick(data, index, axis=-1, keepdims=False, mode='clip'):
    return invoke(OPS['pick'], (data, index), {'axis': axis, 'keepdims': keepdims,
                                               'mode': mode})


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype='float32'):
    return invoke(OPS['one_hot'], (indices,), {'depth': int(depth), 'on_value': on_value,
                                               'off_value': off_value,
                                               'dtype': np.dtype(dtype)})


def where(condition, x, y):
    return invoke(OPS['where'], (condition, x, y))


def clip(data, a_min, a_max):
    return invoke(OPS['clip'], (data,), {'a_min': a_min, 'a_max': a_max})


def cast(data, dtype):
    return data.astype(dtype)


def zeros_like_(data):
    return zeros_like(data)


def add_n(*args):
    out = args[0]
    for a in args[1:]:
        out = out + a
    return out


ElementWiseSum = add_n
