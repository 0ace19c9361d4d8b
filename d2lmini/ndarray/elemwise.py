"""Elementwise operators: unary math, binary with broadcasting, array-with-scalar.

MXNet keeps these in ``src/operator/tensor/elemwise_*``.  Each operator is
one small class: ``infer`` (shape, dtype), ``forward`` on raw arrays,
``backward`` in NDArray operators, and ``cases`` for its gradient check.
"""
import inspect
import math
import operator
import sys
import warnings

import numpy as np

from .ndarray import NDArray, invoke, _binary, zeros_like
from .registry import OPS, Case, Op, register, broadcast_shapes, result_dtype
from .op_utils import _sum_to, into
from .. import backend
from ..base import _check_kwargs
from . import cpu_kernels
from ..context import cpu

# The front ends this family gives nd (and mx.sym, less NOT_SYMBOLIC)
__all__ = ['Cast', 'negative', 'exp', 'log', 'sqrt', 'square', 'abs', 'sign',
           'sigmoid', 'tanh', 'relu', 'softrelu', 'sin', 'cos', 'reciprocal',
           'rsqrt', 'log1p', 'expm1', 'floor', 'ceil', 'round', 'tan', 'arcsin',
           'arccos', 'arctan', 'sinh', 'cosh', 'arcsinh', 'arccosh', 'arctanh',
           'log2', 'log10', 'cbrt', 'rcbrt', 'degrees', 'radians', 'erf', 'erfinv',
           'trunc', 'rint', 'fix', 'logical_not', 'add', 'subtract', 'multiply',
           'divide', 'power', 'maximum', 'minimum', 'mod', 'equal', 'not_equal',
           'greater', 'greater_equal', 'lesser', 'lesser_equal', 'broadcast_add',
           'broadcast_plus', 'broadcast_sub', 'broadcast_minus', 'broadcast_mul',
           'broadcast_div', 'broadcast_power', 'broadcast_maximum',
           'broadcast_minimum', 'broadcast_mod', 'broadcast_equal',
           'broadcast_not_equal', 'broadcast_greater', 'broadcast_greater_equal',
           'broadcast_lesser', 'broadcast_lesser_equal', 'elemwise_add',
           'elemwise_sub', 'elemwise_mul', 'elemwise_div', 'hypot',
           'broadcast_hypot', 'clip', 'cast', 'add_n', 'ElementWiseSum',
           'reset_arrays']
# reset_arrays zeroes its inputs in place: no output to put in a graph
NOT_SYMBOLIC = ('reset_arrays',)


# === elementwise unary ===========================================================
class UnaryOp(Op):
    def infer(self, shapes, dtypes, **attrs):
        return shapes[0], dtypes[0]


def _large_to(f):
    """``(size, g)``: arrays of at least ``size`` elements go to ``g``, the
    threaded ``f`` of cpu_kernels (if ``f`` is a NumPy ufunc; never if not).
    A small array pays one comparison and nothing else."""
    if isinstance(f, np.ufunc):
        return cpu_kernels.LARGE, cpu_kernels.ufunc(f)
    return sys.maxsize, f


def _keep_dtype(f):
    """MXNet keeps the input dtype (exp of int32 is int32); NumPy would promote,
    and the data would disagree with the dtype ``infer`` announced.
    A GPU array takes ``f``'s CuPy namesake (:func:`backend.same_function`)."""
    large, big = _large_to(f)

    def fwd(a):
        if a.__class__ is not _HOST:
            r = backend.same_function(f, a)(a)
        else:
            r = big(a) if a.size >= large else f(a)
        return r if r.dtype == a.dtype else r.astype(a.dtype)
    return fwd


_HOST = np.ndarray


def _class_name(name):
    """The class name of the op registered as ``name``, by the rule every op
    class follows (CamelCase, ending in ``Op``): ``'exp'`` -> ``ExpOp``,
    ``'_plus_scalar'`` -> ``PlusScalarOp``, ``'ones_like_op'`` -> ``OnesLikeOp``."""
    words = name.removesuffix('_op').split('_')
    return ''.join(w[:1].upper() + w[1:] for w in words) + 'Op'


def _unary(name, forward, backward, low=-1.0, high=1.0, differentiable=True,
           float_out=False, *, doc):
    cls = type(_class_name(name), (UnaryOp,), {
        'name': name, '__doc__': doc,
        'forward': staticmethod(_keep_dtype(forward)),
        'backward': lambda self, g, inputs, out: [backward(g, inputs[0], out)],
        'differentiable': differentiable,
        'cases': (Case((3, 4), low=low, high=high),) if differentiable else (),
    })
    if float_out:
        cls.infer = lambda self, shapes, dtypes: (shapes[0], dtypes[0])
    register(cls)


def _sigmoid(a):
    # MXNet's 1 / (1 + exp(-a)); exp(-a) = inf far below 0 gives 1 / inf = 0.
    # Float arrays take the same passes as a threaded, in-cache kernel.
    if cpu_kernels.large(a):
        return cpu_kernels.apply(cpu_kernels.sigmoid, a)
    xp = backend.xp_of(a)
    with np.errstate(over='ignore'):
        e = xp.exp(-a)
    return (1 / (1 + e)).astype(a.dtype, copy=False)


def _softrelu(a):
    if cpu_kernels.large(a):
        return cpu_kernels.apply(cpu_kernels.softrelu, a)
    xp = backend.xp_of(a)
    return (cpu_kernels.maximum0(a) + xp.log1p(xp.exp(-xp.abs(a)))).astype(a.dtype, copy=False)


def _erf(a):
    # NumPy has no erf (and SciPy is not a dependency): math.erf per element.
    xp = np if isinstance(a, np.ndarray) else backend.xp_of(a)
    host = a if xp is np else xp.asnumpy(a)
    r = np.vectorize(math.erf, otypes=[host.dtype])(host)
    return r if xp is np else xp.asarray(r)


def _erfinv(a):
    """Giles' single-precision approximation, refined by two Newton steps
    on erf in float64 (erf(erfinv(x)) = x to about 1e-15)."""
    xp = np if isinstance(a, np.ndarray) else backend.xp_of(a)
    x = (a if xp is np else xp.asnumpy(a)).astype(np.float64)
    with np.errstate(divide='ignore', invalid='ignore'):
        w = -np.log((1 - x) * (1 + x))
        lo = w - 2.5
        p_lo = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p_lo = c + p_lo * lo
        hi = np.sqrt(w) - 3
        p_hi = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p_hi = c + p_hi * hi
        y = np.where(w < 5, p_lo, p_hi) * x
        erf = np.vectorize(math.erf, otypes=[np.float64])
        for _ in range(2):
            step = (erf(y) - x) / (2 / np.sqrt(np.pi) * np.exp(-y * y))
            y = np.where(np.isfinite(step), y - step, y)
        y = np.where(np.abs(x) == 1, np.copysign(np.inf, x), y)
        y = np.where(np.abs(x) > 1, np.nan, y)
    y = y.astype(a.dtype)
    return y if xp is np else xp.asarray(y)


# Each op's ``doc`` is what ``nd.<name>`` and ``NDArray.<name>`` say it computes.
#       name        forward          backward: g, x, y=f(x) -> dL/dx     input range
_unary('negative',  np.negative,     lambda g, x, y: -g,
       doc='``-x``, elementwise.')
_unary('exp',       np.exp,          lambda g, x, y: g * y,
       doc='The exponential ``e ** x``, elementwise.')
_unary('log',       np.log,          lambda g, x, y: g / x,                 0.2, 2.0,
       doc='The natural logarithm, elementwise.')
_unary('sqrt',      np.sqrt,         lambda g, x, y: g / (2 * y),           0.2, 2.0,
       doc='The square root, elementwise.')
_unary('square',    np.square,       lambda g, x, y: g * 2 * x,
       doc='``x * x``, elementwise.')
_unary('abs',       np.abs,          lambda g, x, y: g * sign(x),           0.1, 1.0,
       doc='The absolute value, elementwise.')
_unary('sign',      np.sign,         None, differentiable=False,
       doc='-1, 0 or 1 by the sign of each element.')
_unary('sigmoid',   _sigmoid,        lambda g, x, y: invoke(OPS['_sigmoid_backward'], (g, y)),
       doc='The logistic function ``1 / (1 + exp(-x))``, elementwise.')
_unary('tanh',      np.tanh,         lambda g, x, y: invoke(OPS['_tanh_backward'], (g, y)),
       doc='The hyperbolic tangent, elementwise.')
_unary('relu',      lambda a: backend.xp_of(a).maximum(a, 0),   # backward: MXNet's relu_grad, NaN -> NaN
                    lambda g, x, y: invoke(OPS['_relu_backward'], (g, y)),  0.1, 1.0,
       doc='The rectified linear unit ``max(x, 0)``, elementwise.')
_unary('softrelu',  _softrelu,       lambda g, x, y: g * sigmoid(x),
       doc='The softplus ``log(1 + exp(x))``, elementwise, without overflow.')
_unary('sin',       np.sin,          lambda g, x, y: g * cos(x),
       doc='The sine of angles in radians, elementwise.')
_unary('cos',       np.cos,          lambda g, x, y: -g * sin(x),
       doc='The cosine of angles in radians, elementwise.')
_unary('reciprocal', np.reciprocal,  lambda g, x, y: -g * y * y,            0.5, 2.0,
       doc='``1 / x``, elementwise.')
_unary('rsqrt',     lambda a: 1 / backend.xp_of(a).sqrt(a),
                                     lambda g, x, y: -0.5 * g * y / x,      0.5, 2.0,
       doc='``1 / sqrt(x)``, elementwise.')
_unary('log1p',     np.log1p,        lambda g, x, y: g / (1 + x),           0.0, 1.0,
       doc='``log(1 + x)``, elementwise, accurate for ``x`` near 0.')
_unary('expm1',     np.expm1,        lambda g, x, y: g * (y + 1),
       doc='``exp(x) - 1``, elementwise, accurate for ``x`` near 0.')
_unary('tan',       np.tan,          lambda g, x, y: g * (1 + y * y),
       doc='The tangent of angles in radians, elementwise.')
_unary('arcsin',    np.arcsin,       lambda g, x, y: g * rsqrt(1 - x * x),  -0.9, 0.9,
       doc='The inverse sine, in radians, elementwise (NaN outside [-1, 1]).')
_unary('arccos',    np.arccos,       lambda g, x, y: -g * rsqrt(1 - x * x), -0.9, 0.9,
       doc='The inverse cosine, in radians, elementwise (NaN outside [-1, 1]).')
_unary('arctan',    np.arctan,       lambda g, x, y: g / (1 + x * x),
       doc='The inverse tangent, in radians, elementwise.')
_unary('sinh',      np.sinh,         lambda g, x, y: g * cosh(x),
       doc='The hyperbolic sine, elementwise.')
_unary('cosh',      np.cosh,         lambda g, x, y: g * sinh(x),
       doc='The hyperbolic cosine, elementwise.')
_unary('arcsinh',   np.arcsinh,      lambda g, x, y: g * rsqrt(x * x + 1),
       doc='The inverse hyperbolic sine, elementwise.')
_unary('arccosh',   np.arccosh,      lambda g, x, y: g * rsqrt(x * x - 1),  1.2, 3.0,
       doc='The inverse hyperbolic cosine, elementwise (NaN below 1).')
_unary('arctanh',   np.arctanh,      lambda g, x, y: g / (1 - x * x),       -0.9, 0.9,
       doc='The inverse hyperbolic tangent, elementwise.')
_unary('log2',      np.log2,         lambda g, x, y: g / (x * float(np.log(2))), 0.2, 2.0,
       doc='The base-2 logarithm, elementwise.')
_unary('log10',     np.log10,        lambda g, x, y: g / (x * float(np.log(10))),
       0.2, 2.0, doc='The base-10 logarithm, elementwise.')
_unary('cbrt',      np.cbrt,         lambda g, x, y: g / (3 * y * y),       0.2, 2.0,
       doc='The cube root, elementwise.')
_unary('rcbrt',     lambda a: 1 / backend.xp_of(a).cbrt(a),
                                     lambda g, x, y: -g * y / (3 * x),      0.5, 2.0,
       doc='``1 / cbrt(x)``, elementwise.')
_unary('degrees',   np.degrees,      lambda g, x, y: g * float(180 / np.pi),
       doc='Radians converted to degrees, elementwise.')
_unary('radians',   np.radians,      lambda g, x, y: g * float(np.pi / 180),
       doc='Degrees converted to radians, elementwise.')
_unary('erf',       _erf,            lambda g, x, y:
       g * float(2 / np.sqrt(np.pi)) * exp(-x * x),
       doc='The Gauss error function, elementwise.')
_unary('erfinv',    _erfinv,         lambda g, x, y:
       g * float(np.sqrt(np.pi) / 2) * exp(y * y),                          -0.9, 0.9,
       doc='The inverse of ``erf``, elementwise (NaN outside [-1, 1]).')
# No gradient: rounding's is zero almost everywhere, and MXNet records none.
for _name, _f, _doc in [
        ('floor', np.floor, 'The largest integer not above each element.'),
        ('trunc', np.trunc,
         'Each element with its fractional part dropped (rounded towards 0).'),
        ('rint', np.rint, 'The nearest integer to each element; halves go to the '
                          'even one.'),
        ('fix', np.fix, 'Each element rounded towards 0 (as ``trunc``).'),
        ('logical_not', lambda a: (a == 0).astype(a.dtype),
         "1 where an element is 0, else 0, in the input's dtype."),
        ('ceil', np.ceil, 'The smallest integer not below each element.'),
        ('round', np.round, 'The nearest integer to each element; halves go to the '
                            'even one.'),
        ('zeros_like_op', np.zeros_like, "Zeros of the input's shape and dtype."),
        ('ones_like_op', np.ones_like,                    # keeps the layout
         "Ones of the input's shape and dtype.")]:
    _unary(_name, _f, None, differentiable=False, doc=_doc)


@register
class IdentityOp(UnaryOp):
    """The identity (used by ``detach``): shares the buffer, no copy."""
    name = '_identity'
    cases = (Case((3, 2)),)

    def forward(self, a):
        return a

    def backward(self, g, inputs, out):
        return [g]


@register
class CopyOp(UnaryOp):
    name = '_copy'
    cases = (Case((3, 2)),)

    def forward(self, a):
        return a.copy()

    def backward(self, g, inputs, out):
        return [g]


@register
class CopyToOp(UnaryOp):
    """Gradient of a cross-device copy: copy the gradient back."""
    name = '_copyto'
    # invoke keeps one context, so this checks the rule; tests/test_autograd.py
    # checks a real copy from cpu(0) to cpu(1).
    cases = (Case((3, 2), ctx=cpu(0)),)

    def forward(self, a, ctx):
        # Real copies run through _copy_across, which writes on ``ctx``.
        # ``invoke`` (the gradient check of this rule) keeps the input's
        # context for the output, so the data must stay there too.
        return a.copy()

    def backward(self, g, inputs, out, ctx):
        return [g.as_in_context(inputs[0].context)]


@register
class CastOp(UnaryOp):
    name = 'cast'
    cases = (Case((3, 2), dtype=np.dtype('float64')),)

    def infer(self, shapes, dtypes, dtype):
        return shapes[0], np.dtype(dtype)

    def forward(self, a, dtype):
        return a.astype(dtype)

    def backward(self, g, inputs, out, dtype):
        return [g.astype(inputs[0].dtype)]


@register
class ClipOp(UnaryOp):
    name = 'clip'
    cases = (Case((4, 5), a_min=-0.5, a_max=0.5),)

    def forward(self, a, a_min, a_max):
        r = backend.xp_of(a).clip(a, a_min, a_max)
        return r if r.dtype == a.dtype else r.astype(a.dtype)

    def backward(self, g, inputs, out, a_min, a_max):
        x = inputs[0]
        return [g * ((x >= a_min) * (x <= a_max))]


# === elementwise binary (broadcasting) ================================================
class BinaryOp(Op):
    def infer(self, shapes, dtypes):
        a, b = shapes
        da, db = dtypes
        return (a if a == b else broadcast_shapes(self.name, a, b),
                da if da == db else result_dtype(da, db))


def _binary_op(name, forward, backward, low=-1.0, high=1.0, differentiable=True,
               cases=None, *, doc):
    def bwd(self, g, inputs, out):
        a, b = inputs
        ga, gb = backward(g, a, b, out)
        return [None if ga is None else _sum_to(ga, a.shape),
                None if gb is None else _sum_to(gb, b.shape)]
    if cases is None:
        cases = (Case((3, 4), (3, 4), low=low, high=high),
                 Case((2, 3, 4), (3, 1), low=low, high=high),
                 Case((1, 4), (3, 1), low=low, high=high))
    large, big = _large_to(forward)

    def fwd(a, b):
        if a.__class__ is not _HOST:
            r = backend.same_function(forward, a)(a, b)
        else:
            r = big(a, b) if a.size >= large else forward(a, b)
        dt = result_dtype(a.dtype, b.dtype)      # int32 / int32 stays int32
        return r if r.dtype == dt else r.astype(dt)
    register(type(_class_name(name), (BinaryOp,), {
        'name': name, '__doc__': doc, 'forward': staticmethod(fwd), 'backward': bwd,
        'differentiable': differentiable,
        'cases': cases if differentiable else ()}))


def _cmp(f):
    def fwd(a, b):
        return backend.same_function(f, a)(a, b).astype(
            np.result_type(a.dtype, b.dtype), copy=False)
    return fwd


#           name            forward           backward: g, a, b, out -> (da, db)
_binary_op('add',           np.add,           lambda g, a, b, y: (g, g),
           doc='``lhs + rhs``')
_binary_op('subtract',      np.subtract,      lambda g, a, b, y: (g, -g),
           doc='``lhs - rhs``')
_binary_op('multiply',      np.multiply,      lambda g, a, b, y: (g * b, g * a),
           doc='``lhs * rhs``')
_binary_op('divide',        np.true_divide,   lambda g, a, b, y: (g / b, -g * y / b),
           0.5, 2.0, doc='``lhs / rhs``')
_binary_op('power',         np.power,         lambda g, a, b, y: (g * b * a ** (b - 1),
                                                                 g * y * log(a)), 0.5, 2.0,
           doc='``lhs ** rhs``')
_binary_op('maximum',       np.maximum,       lambda g, a, b, y: (g * (a >= b), g * (a < b)),
           doc='The larger of ``lhs`` and ``rhs``')
_binary_op('minimum',       np.minimum,       lambda g, a, b, y: (g * (a <= b), g * (a > b)),
           doc='The smaller of ``lhs`` and ``rhs``')
_binary_op('mod',           np.mod,           None, differentiable=False,
           doc='The remainder ``lhs % rhs``, with the sign of ``rhs``')
_binary_op('hypot',         np.hypot,         lambda g, a, b, y: (g * a / y, g * b / y),
           0.5, 2.0, doc='``sqrt(lhs ** 2 + rhs ** 2)``, without overflow')
for _name, _f, _sym in [('equal', np.equal, '=='), ('not_equal', np.not_equal, '!='),
                        ('greater', np.greater, '>'),
                        ('greater_equal', np.greater_equal, '>='),
                        ('lesser', np.less, '<'), ('lesser_equal', np.less_equal, '<=')]:
    _binary_op(_name, _cmp(_f), None, differentiable=False,
               doc=f'1 where ``lhs {_sym} rhs``, else 0')


# === array-with-scalar (the scalar is an attribute, so it never needs a gradient) ======
class ScalarOp(Op):
    def infer(self, shapes, dtypes, scalar):
        return shapes[0], dtypes[0]     # MXNet keeps the array's dtype


def _scalar_op(name, forward, backward, low=-1.0, high=1.0, scalar=0.7,
               differentiable=True):
    large, big = _large_to(forward)

    def fwd(a, scalar):
        if a.__class__ is not _HOST:
            r = backend.same_function(forward, a)(a, scalar)
        else:
            r = big(a, scalar) if a.size >= large else forward(a, scalar)
        # NumPy may promote (int array / float scalar); MXNet keeps a's dtype.
        return r if r.dtype == a.dtype else r.astype(a.dtype)
    register(type(_class_name(name), (ScalarOp,), {
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
for _n, _f in [('_mod_scalar', np.mod), ('_rmod_scalar', lambda a, s: s % a),
               ('_equal_scalar', np.equal), ('_not_equal_scalar', np.not_equal),
               ('_greater_scalar', np.greater), ('_greater_equal_scalar', np.greater_equal),
               ('_lesser_scalar', np.less), ('_lesser_equal_scalar', np.less_equal)]:
    _scalar_op(_n, _f, None, differentiable=False)


# === functional front ends (nd.exp(x), nd.add(a, b), ...) =========================
def _unary_fn(name):
    op = OPS[name]

    def fn(data, out=None, name=None, **kwargs):
        if kwargs:
            _check_kwargs(fn, kwargs)
        res = invoke(op, (data,))
        return res if out is None else into(out, res, op.name)
    fn.__name__, fn.__doc__ = name, type(op).__doc__
    sig = inspect.signature(fn)              # shown without **kwargs, which only
    fn.__signature__ = sig.replace(          # refuses other keywords
        parameters=list(sig.parameters.values())[:-1])
    return fn


for _name in ['negative', 'exp', 'log', 'sqrt', 'square', 'abs', 'sign', 'sigmoid',
              'tanh', 'relu', 'softrelu', 'sin', 'cos', 'reciprocal', 'rsqrt', 'log1p',
              'expm1', 'floor', 'ceil', 'round', 'tan', 'arcsin', 'arccos', 'arctan',
              'sinh', 'cosh', 'arcsinh', 'arccosh', 'arctanh', 'log2', 'log10',
              'cbrt', 'rcbrt', 'degrees', 'radians', 'erf', 'erfinv', 'trunc', 'rint', 'fix',
              'logical_not']:
    globals()[_name] = _unary_fn(_name)


# Two plain numbers give a plain number, as in MXNet (``nd.power(0.9, t)``).
_ON_NUMBERS = {
    'add': operator.add, 'subtract': operator.sub, 'multiply': operator.mul,
    'divide': operator.truediv, 'power': operator.pow, 'mod': operator.mod,
    'maximum': max, 'minimum': min,
    'equal': lambda x, y: int(x == y), 'not_equal': lambda x, y: int(x != y),
    'greater': lambda x, y: int(x > y), 'greater_equal': lambda x, y: int(x >= y),
    'lesser': lambda x, y: int(x < y), 'lesser_equal': lambda x, y: int(x <= y)}


def _binary_fn(opname, fname, same_shape=False):
    def fn(lhs, rhs, out=None, name=None, **ignored):
        if ignored:
            if not fname.startswith('broadcast_'):
                _check_kwargs(fn, ignored)
            # MXNet's broadcast ops have no parameters and pass any keyword
            # by (its own test_loss gives broadcast_maximum an axis=).
            warnings.warn(f'{fname} ignores {sorted(ignored)}, as MXNet does',
                          stacklevel=2)
        if not isinstance(lhs, NDArray) and not isinstance(rhs, NDArray):
            return _ON_NUMBERS[opname](lhs, rhs)
        # MXNet's elemwise_* do not broadcast: their two inputs match exactly.
        if same_shape and isinstance(lhs, NDArray) and isinstance(rhs, NDArray) \
                and lhs.shape != rhs.shape:
            raise ValueError(f"operator '{fname}': shapes {lhs.shape} and "
                             f"{rhs.shape} differ; elemwise ops do not broadcast "
                             f"(use broadcast_{fname[9:]} or the operators)")
        res = _binary(opname, lhs, rhs)
        return res if out is None else into(out, res, fname)
    fn.__name__ = fname
    fn.__doc__ = (type(OPS[opname]).__doc__ + ', elementwise' +
                  ('; the shapes must match.' if same_shape else
                   ', with broadcasting; either side may be a scalar.'))
    return fn


for _name in ['add', 'subtract', 'multiply', 'divide', 'power', 'maximum', 'minimum',
              'mod', 'equal', 'not_equal', 'greater', 'greater_equal', 'lesser',
              'lesser_equal']:
    globals()[_name] = _binary_fn(_name, _name)
# MXNet's names for the same operators (broadcast_plus is an old alias)
for _alias, _name in [('add', 'add'), ('plus', 'add'), ('sub', 'subtract'),
                      ('minus', 'subtract'), ('mul', 'multiply'), ('div', 'divide'),
                      ('power', 'power'), ('maximum', 'maximum'),
                      ('minimum', 'minimum'), ('mod', 'mod'), ('equal', 'equal'),
                      ('not_equal', 'not_equal'), ('greater', 'greater'),
                      ('greater_equal', 'greater_equal'), ('lesser', 'lesser'),
                      ('lesser_equal', 'lesser_equal')]:
    globals()['broadcast_' + _alias] = _binary_fn(_name, 'broadcast_' + _alias)
for _alias, _name in [('add', 'add'), ('sub', 'subtract'), ('mul', 'multiply'),
                      ('div', 'divide')]:
    globals()['elemwise_' + _alias] = _binary_fn(_name, 'elemwise_' + _alias, True)


def hypot(a, b, out=None, name=None):
    """``sqrt(a ** 2 + b ** 2)`` of two arrays, elementwise, with broadcasting.

    >>> nd.hypot(nd.array([3, 5]), nd.array([4, 12]))
    <BLANKLINE>
    [ 5. 13.]
    <NDArray 2 @cpu(0)>
    """
    return into(out, invoke(OPS['hypot'], (a, b)), 'hypot')


broadcast_hypot = hypot


def clip(data, a_min, a_max, out=None, name=None):
    """Values of ``data`` limited to ``[a_min, a_max]``."""
    return into(out, invoke(OPS['clip'], (data,), {'a_min': a_min, 'a_max': a_max}),
                'clip')


def cast(data, dtype, out=None, name=None):
    """``data``'s values as ``dtype`` (also ``nd.Cast``; see ``NDArray.astype``).

    >>> nd.cast(nd.array([1.5, 2.5]), dtype='int32')
    <BLANKLINE>
    [1 2]
    <NDArray 2 @cpu(0)>
    """
    return into(out, data.astype(dtype), 'cast')


Cast = cast


def add_n(*args, out=None, name=None, **kwargs):
    """The sum of all ``args`` (MXNet's ``ElementWiseSum``)."""
    _check_kwargs(add_n, kwargs, ('num_args',))
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    res = args[0]
    for a in args[1:]:
        res = res + a
    if len(args) == 1:
        res = res.copy()
    return into(out, res, 'add_n')


ElementWiseSum = add_n


def reset_arrays(*data, num_arrays=None, name=None):
    """Set every array in ``data`` to zero, in place (MXNet's op behind
    ``Trainer``'s gradient reset)."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if num_arrays is not None and num_arrays != len(data):
        raise ValueError(f"operator 'reset_arrays': num_arrays={num_arrays} but "
                         f"{len(data)} arrays given")
    for a in data:
        a[:] = 0
