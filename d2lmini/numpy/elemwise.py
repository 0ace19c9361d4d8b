"""``mx.np``'s elementwise functions: ``np.exp``, ``np.add``, ``np.equal``, ...

Almost all are ``nd``'s operators under NumPy's names (so their gradients
are the op table's): a function here only turns its inputs into arrays and
applies ``mx.np``'s dtype rules (:func:`.multiarray.promote`).  What ``nd``
lacks is registered here under MXNet's internal names: comparisons and
logical operators that give ``bool`` arrays (``_npi_equal``, ...), which have
no gradient.
"""
import numbers

import numpy as _np

from ..ndarray.ndarray import NDArray, invoke
from ..ndarray.registry import OPS, Op, register, broadcast_shapes
from ..ndarray.op_utils import _xp
from ..ndarray import elemwise as _ew
from . import multiarray as _ma
from .multiarray import ndarray, asarray, array, method

_UNARY = {  # np name: the op
    'negative': 'negative', 'abs': 'abs', 'absolute': 'abs', 'fabs': 'abs',
    'sign': 'sign', 'exp': 'exp', 'expm1': 'expm1', 'log': 'log', 'log2': 'log2',
    'log10': 'log10', 'log1p': 'log1p', 'sqrt': 'sqrt', 'cbrt': 'cbrt',
    'square': 'square', 'sin': 'sin', 'cos': 'cos', 'tan': 'tan', 'arcsin': 'arcsin',
    'arccos': 'arccos', 'arctan': 'arctan', 'sinh': 'sinh', 'cosh': 'cosh',
    'tanh': 'tanh', 'arcsinh': 'arcsinh', 'arccosh': 'arccosh', 'arctanh': 'arctanh',
    'floor': 'floor', 'ceil': 'ceil', 'trunc': 'trunc', 'rint': 'rint', 'fix': 'fix',
    'degrees': 'degrees', 'radians': 'radians', 'rad2deg': 'degrees',
    'deg2rad': 'radians', 'reciprocal': 'reciprocal'}
_BINARY = {'add': 'add', 'subtract': 'subtract', 'multiply': 'multiply',
           'power': 'power', 'mod': 'mod', 'remainder': 'mod', 'maximum': 'maximum',
           'minimum': 'minimum'}
_COMPARE = {'equal': _np.equal, 'not_equal': _np.not_equal, 'greater': _np.greater,
            'greater_equal': _np.greater_equal, 'less': _np.less,
            'less_equal': _np.less_equal, 'logical_and': _np.logical_and,
            'logical_or': _np.logical_or, 'logical_xor': _np.logical_xor}
_REFLECTED = {'greater': 'less', 'less': 'greater', 'greater_equal': 'less_equal',
              'less_equal': 'greater_equal'}

__all__ = ['ediff1d'] + (list(_UNARY) + list(_BINARY) + list(_COMPARE) +
           ['divide', 'true_divide', 'floor_divide', 'fmax', 'fmin', 'fmod', 'hypot',
            'arctan2', 'clip', 'logical_not', 'invert', 'bitwise_not', 'isnan', 'isinf',
            'isfinite', 'isposinf', 'isneginf', 'around', 'round', 'round_', 'copysign',
            'ldexp', 'lcm', 'gcd', 'nan_to_num', 'positive', 'where', 'sigmoid_np'])
__all__.remove('sigmoid_np')


# === bool-valued operators (MXNet's _npi_ comparisons) ============================
class NpCompareOp(Op):
    """``lhs <cmp> rhs`` broadcast, as a bool array; no gradient."""
    differentiable = False

    def infer(self, shapes, dtypes):
        return broadcast_shapes(self.name, *shapes), _np.dtype(_np.bool_)


class NpCompareScalarOp(Op):
    """``lhs <cmp> scalar``, as a bool array; no gradient."""
    differentiable = False

    def infer(self, shapes, dtypes, scalar):
        return shapes[0], _np.dtype(_np.bool_)


def _camel(name):
    return ''.join(w.capitalize() for w in name.split('_'))


for _name, _f in _COMPARE.items():
    register(type(f'Npi{_camel(_name)}Op', (NpCompareOp,), {
        'name': f'_npi_{_name}',
        # the ufunc of the array's own module (NumPy's, or CuPy's on a GPU)
        'forward': staticmethod(lambda a, b, n=_f.__name__: getattr(_xp(a), n)(a, b))}))
    register(type(f'Npi{_camel(_name)}ScalarOp', (NpCompareScalarOp,), {
        'name': f'_npi_{_name}_scalar',
        'forward': staticmethod(
            lambda a, scalar, n=_f.__name__: _xp(a).asarray(getattr(_xp(a), n)(a, scalar)))}))


class NpPredicateOp(Op):
    """A bool-valued elementwise test of one array; no gradient."""
    differentiable = False

    def infer(self, shapes, dtypes):
        return shapes[0], _np.dtype(_np.bool_)


@register
class NpiLogicalNotOp(NpPredicateOp):
    """``not x`` elementwise."""
    name = '_npi_logical_not'

    def forward(self, a):
        return _xp(a).logical_not(a)


@register
class NpiIsnanOp(NpPredicateOp):
    """Which elements are NaN, as a bool array (``isinf``, ``isfinite``:
    the same with ``fn``)."""
    name = '_npi_isnan'

    def forward(self, a):
        return _xp(a).isnan(a)


@register
class NpiIsinfOp(NpPredicateOp):
    name = '_npi_isinf'

    def forward(self, a):
        return _xp(a).isinf(a)


@register
class NpiIsfiniteOp(NpPredicateOp):
    name = '_npi_isfinite'

    def forward(self, a):
        return _xp(a).isfinite(a)


# === front ends ===================================================================
def _arr(x, like=None):
    if type(x) is ndarray:
        return x
    ctx = like._ctx if isinstance(like, NDArray) else None
    if isinstance(x, NDArray):
        return asarray(x)
    return array(x, ctx=ctx) if not isinstance(x, _np.ndarray) else array(x, ctx=ctx)


def _unary_fn(npname, opname):
    op = OPS[opname]

    def fn(x, out=None, **kwargs):
        res = invoke(op, (_arr(x),))
        return res if out is None else _into(out, res)
    fn.__name__ = npname
    fn.__doc__ = f'``{npname}(x)`` elementwise (MXNet keeps an integer dtype).'
    return fn


def _scalar(x):
    return isinstance(x, (numbers.Number, _np.generic)) and not isinstance(x, NDArray)


def _binary_fn(npname, opname):
    def fn(x1, x2, out=None, **kwargs):
        if _scalar(x1) and _scalar(x2):
            x1 = array(x1)
        if _scalar(x1):
            res = _ma._rbinary(opname, x1, _arr(x2))
        else:
            res = _ma._binary(opname, _arr(x1, x2), x2)
        return res if out is None else _into(out, res)
    fn.__name__ = npname
    fn.__doc__ = f'``{npname}(x1, x2)`` elementwise, broadcast.'
    return fn


def _compare_fn(name):
    def fn(x1, x2, out=None, **kwargs):
        if _scalar(x1) and not _scalar(x2):
            rname = _REFLECTED.get(name, name)
            res = _ma._compare(rname, _arr(x2), x1) if name in _REFLECTED or \
                name in ('equal', 'not_equal') else \
                invoke(OPS[f'_npi_{name}'], (_arr(x2), _arr(x1, x2)))
        else:
            res = _ma._compare(name, _arr(x1, x2), x2)
        return res if out is None else _into(out, res)
    fn.__name__ = name
    fn.__doc__ = f'``{name}(x1, x2)`` elementwise, broadcast, as a bool array.'
    return fn


def _into(out, res):
    out[...] = res
    return out


for _n, _o in _UNARY.items():
    globals()[_n] = _unary_fn(_n, _o)
for _n, _o in _BINARY.items():
    globals()[_n] = _binary_fn(_n, _o)
for _n in _COMPARE:
    globals()[_n] = _compare_fn(_n)


def positive(x, out=None):
    """``+x``: a copy."""
    return _arr(x).copy()


def true_divide(x1, x2, out=None):
    """``x1 / x2``; integers divide as float32 (MXNet's rule)."""
    if _scalar(x1):
        return _arr(x2).__rtruediv__(x1)
    res = _ma._true_divide(_arr(x1, x2), x2)
    return res if out is None else _into(out, res)


divide = true_divide


def floor_divide(x1, x2, out=None):
    """``x1 // x2``: the floor of the quotient, in the inputs' dtype."""
    x1 = _arr(x1, x2)
    q = floor(true_divide(x1, x2))                  # noqa: F821 - made above
    dt = x1._dtype if _scalar(x2) else _ma.promote(x1._dtype, _arr(x2)._dtype)
    return q.astype(dt, copy=False)


def fmax(x1, x2, out=None):
    """The larger of ``x1`` and ``x2``, ignoring NaN."""
    x1, x2 = _arr(x1, x2), _arr(x2, x1)
    return where(isnan(x2), x1, where(isnan(x1), x2, maximum(x1, x2)))  # noqa: F821


def fmin(x1, x2, out=None):
    """The smaller of ``x1`` and ``x2``, ignoring NaN."""
    x1, x2 = _arr(x1, x2), _arr(x2, x1)
    return where(isnan(x2), x1, where(isnan(x1), x2, minimum(x1, x2)))  # noqa: F821


def fmod(x1, x2, out=None):
    """The remainder with the sign of ``x1`` (C's fmod)."""
    x1 = _arr(x1, x2)
    return x1 - trunc(true_divide(x1, x2)) * x2     # noqa: F821


def hypot(x1, x2, out=None):
    """``sqrt(x1**2 + x2**2)`` elementwise."""
    x1, x2 = _arr(x1, x2), _arr(x2, x1)
    return invoke(OPS['hypot'], (x1, x2.astype(x1._dtype, copy=False)))


def arctan2(x1, x2, out=None):
    """The angle of the point ``(x2, x1)``, in ``(-pi, pi]``, differentiable:
    ``atan(x1/x2)`` corrected by the quadrant."""
    y, x = _arr(x1, x2), _arr(x2, x1)
    base = arctan(y / where(x == 0, 1e-38, x))       # noqa: F821
    pi = _np.pi
    return where(x > 0, base, where(x < 0, where(y >= 0, base + pi, base - pi),
                                    sign(y) * (pi / 2)))  # noqa: F821


def copysign(x1, x2, out=None):
    """``|x1|`` with the sign of ``x2``."""
    x1 = _arr(x1, x2)
    return abs(x1) * where(_arr(x2, x1) < 0, -1.0, 1.0)   # noqa: F821


def ldexp(x1, x2, out=None):
    """``x1 * 2**x2``."""
    return _arr(x1, x2) * power(2.0, x2)              # noqa: F821


def clip(a, a_min=None, a_max=None, out=None):
    """``a`` limited to ``[a_min, a_max]`` (either may be None)."""
    a = _arr(a)
    if a_min is None and a_max is None:
        raise ValueError('clip: a_min and a_max cannot both be None')
    lo = -_np.inf if a_min is None else float(a_min)
    hi = _np.inf if a_max is None else float(a_max)
    res = invoke(OPS['clip'], (a,), {'a_min': lo, 'a_max': hi})
    return res if out is None else _into(out, res)


def around(x, decimals=0, out=None):
    """Round half to even, as NumPy (``decimals`` digits)."""
    x = _arr(x)
    if decimals == 0:
        return invoke(OPS['rint'], (x,))
    f = 10.0 ** decimals
    return invoke(OPS['rint'], (x * f,)) / f


round = round_ = around   # noqa: A001 - NumPy's names


def logical_not(x, out=None):
    """``not x`` elementwise, as a bool array."""
    return invoke(OPS['_npi_logical_not'], (_arr(x),))


def invert(x, out=None):
    """``~x``: logical not for bools, bitwise not for integers."""
    x = _arr(x)
    if x._dtype == _np.bool_:
        return logical_not(x)
    if x._dtype.kind in 'iu':
        return -x - 1
    raise TypeError(f"invert: not supported for dtype {x._dtype}")


bitwise_not = invert


def isnan(x, out=None):
    """Which elements are NaN (bool)."""
    return invoke(OPS['_npi_isnan'], (_arr(x),))


def isinf(x, out=None):
    """Which elements are +-inf (bool)."""
    return invoke(OPS['_npi_isinf'], (_arr(x),))


def isfinite(x, out=None):
    """Which elements are finite (bool)."""
    return invoke(OPS['_npi_isfinite'], (_arr(x),))


def isposinf(x, out=None):
    """Which elements are +inf (bool)."""
    return equal(x, _np.inf)                          # noqa: F821


def isneginf(x, out=None):
    """Which elements are -inf (bool)."""
    return equal(x, -_np.inf)                         # noqa: F821


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN and +-inf replaced by finite numbers (NumPy's defaults)."""
    x = _arr(x)
    fi = _np.finfo(x._dtype) if x._dtype.kind == 'f' else None
    if fi is None:
        return x.copy()
    hi = fi.max if posinf is None else posinf
    lo = fi.min if neginf is None else neginf
    return where(isnan(x), nan, where(isposinf(x), hi, where(isneginf(x), lo, x)))


def gcd(x1, x2):
    """The greatest common divisor, elementwise (integers; no gradient)."""
    a, b = _arr(x1, x2), _arr(x2, x1)
    return array(_np.gcd(a.asnumpy(), b.asnumpy()), ctx=a._ctx)


def lcm(x1, x2):
    """The least common multiple, elementwise (integers; no gradient)."""
    a, b = _arr(x1, x2), _arr(x2, x1)
    return array(_np.lcm(a.asnumpy(), b.asnumpy()), ctx=a._ctx)


def where(condition, x=None, y=None):
    """``x`` where ``condition`` else ``y`` (broadcast; scalars allowed);
    with only ``condition``, the indices of its nonzeros (``nonzero``)."""
    if x is None and y is None:
        from .host import nonzero
        return nonzero(condition)
    like = next((v for v in (x, y, condition) if isinstance(v, NDArray)), None)
    c = _arr(condition, like)
    if _scalar(x) and _scalar(y):
        x = array(x, ctx=c._ctx)
    if _scalar(x):
        y = _arr(y, c)
        x = _ma.full(y._shape, x, dtype=y._dtype, ctx=y._ctx)
    elif _scalar(y):
        x = _arr(x, c)
        y = _ma.full(x._shape, y, dtype=x._dtype, ctx=x._ctx)
    x, y = _arr(x, c), _arr(y, c)
    if x._dtype != y._dtype:
        dt = _ma.promote(x._dtype, y._dtype)
        x, y = x.astype(dt), y.astype(dt)
    shape = broadcast_shapes('where', broadcast_shapes('where', c._shape, x._shape),
                             y._shape)
    c, x, y = (_ma.broadcast_to_np(v, shape) if v._shape != shape else v
               for v in (c, x, y))
    return invoke(OPS['where'], (c.astype(x._dtype, copy=False), x, y))




def _clip_method(self, min=None, max=None, out=None):   # noqa: A002 (NumPy's names)
    """``x.clip(min, max)``: NumPy's method names its bounds min/max."""
    return clip(self, min, max, out)


method(_clip_method, 'clip')
method(around, 'round')


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of consecutive elements of the flattened ``ary``, with
    ``to_begin``/``to_end`` (scalars or arrays, flattened) around them."""
    from .shapes import concatenate
    a = _arr(ary).reshape(-1)

    def flat(extra):
        if extra is None:
            return []
        e = extra if isinstance(extra, NDArray) else array(extra, dtype=a.dtype, ctx=a._ctx)
        return [e.reshape(-1).astype(a.dtype, copy=False)]
    parts = flat(to_begin) + [a[1:] - a[:-1]] + flat(to_end)
    return parts[0] if len(parts) == 1 else concatenate(parts)
