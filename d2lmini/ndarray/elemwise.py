"""Elementwise operators: unary math, binary with broadcasting, array-with-scalar.

MXNet keeps these in ``src/operator/tensor/elemwise_*``.  Each operator is
one small class: ``infer`` (shape, dtype), ``forward`` on raw arrays,
``backward`` in NDArray operators, and ``cases`` for its gradient check.
"""
import numpy as np

from .ndarray import invoke, _binary, zeros_like
from .registry import OPS, Case, Op, register, broadcast_shapes, result_dtype
from .op_utils import _sum_to
from .. import backend
from ..context import cpu


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
_unary('relu',      lambda a: np.maximum(a, 0),
                                     lambda g, x, y: g * (x > 0),           0.1, 1.0)
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


# === functional front ends (nd.exp(x), nd.add(a, b), ...) =========================
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
