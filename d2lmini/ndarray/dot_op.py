"""Matrix products: ``dot`` and ``batch_dot`` (MXNet's ``src/operator/tensor/dot``)."""
import math

from .. import backend
from ..base import _check_kwargs
from .ndarray import invoke
from .registry import OPS, Case, Op, register, result_dtype
from .op_utils import _common_dtype, into

# The front ends this family gives nd (and mx.sym, less NOT_SYMBOLIC)
__all__ = ['dot', 'batch_dot']


# === linear algebra ===========================================================================
@register
class DotOp(Op):
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
            return a @ b if a.ndim == 2 or b.ndim == 2 else backend.xp_of(a).dot(a, b)
        return backend.xp_of(a).tensordot(a, b, axes=1)

    def backward(self, g, inputs, out, transpose_a=False, transpose_b=False):
        a, b = inputs
        A = a.T if transpose_a else a
        B = b.T if transpose_b else b
        # flatten to 2-D: (m, k) @ (k, n)
        k = B.shape[0]          # exact sizes, no -1 and no 0-codes: k, m or n may be 0
        m, n = int(math.prod(A.shape[:-1])), int(math.prod(B.shape[1:]))
        A2, B2, g2 = A._reshape_to((m, k)), B._reshape_to((k, n)), g._reshape_to((m, n))
        gA = dot(g2, B2, transpose_b=True)._reshape_to(A.shape)
        gB = dot(A2, g2, transpose_a=True)._reshape_to(B.shape)
        return [gA.T if transpose_a else gA, gB.T if transpose_b else gB]


@register
class BatchDotOp(Op):
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
        return backend.xp_of(a).matmul(a, b)

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


# === functional front ends ==========================================================
def dot(lhs, rhs, transpose_a=False, transpose_b=False, out=None, name=None, **kwargs):
    """Matrix product; N-D arrays contract ``lhs``'s last axis with ``rhs``'s first."""
    _check_kwargs(dot, kwargs, ('forward_stype',))
    return into(out, invoke(OPS['dot'], (lhs, rhs), {'transpose_a': transpose_a,
                                                     'transpose_b': transpose_b}), 'dot')


def batch_dot(lhs, rhs, transpose_a=False, transpose_b=False, out=None, name=None,
              **kwargs):
    """Batched matrix product of (B, n, k) and (B, k, m) arrays."""
    _check_kwargs(batch_dot, kwargs, ('forward_stype',))
    return into(out, invoke(OPS['batch_dot'], (lhs, rhs),
                            {'transpose_a': transpose_a, 'transpose_b': transpose_b}),
                'batch_dot')
