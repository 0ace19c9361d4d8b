"""``mx.np.linalg``: norms, determinants, inverses, solves and factorizations.

``inv``, ``det``, ``slogdet``, ``solve`` and ``cholesky`` are ops of the op
table (``_npi_inv``, ...) with their gradients (products in the backward
are einsums, so batches of matrices work); ``norm`` is built from
differentiable ops.  The other factorizations (``svd``, ``qr``, ``eig``,
``eigh``, ...) run NumPy on the values and carry no gradient.
"""
import numpy as _np

from ..ndarray.ndarray import NDArray, invoke
from ..ndarray.registry import OPS, Case, Op, register
from ..ndarray.op_utils import _xp
from .multiarray import asarray, array

__all__ = ['norm', 'det', 'slogdet', 'inv', 'pinv', 'solve', 'svd', 'cholesky', 'qr',
           'eig', 'eigh', 'eigvals', 'eigvalsh', 'lstsq', 'matrix_rank', 'tensorinv',
           'tensorsolve', 'multi_dot', 'matrix_power']


def _mm(sub, *xs):
    return invoke(OPS['_npi_einsum'], xs, {'subscripts': sub})


def _t(x):
    return invoke(OPS['swapaxes'], (x,), {'dim1': x.ndim - 2, 'dim2': x.ndim - 1})


def _square(name, shape):
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"operator '{name}': needs (..., n, n) matrices, got shape "
                         f"{shape}")


def _f(a):
    """float16 has no LAPACK kernels: compute in float32."""
    return a.astype('float32') if a.dtype == 'float16' else a


def _spd(r, n=3):
    a = r.uniform(-1, 1, (n, n))
    return a @ a.T + n * _np.eye(n)


class _MatrixOp(Op):
    def infer(self, shapes, dtypes):
        _square(self.name, shapes[0])
        return shapes[0], dtypes[0]


@register
class NpiInvOp(_MatrixOp):
    """The inverse ``A^-1``; gradient ``-A^-T g A^-T``."""
    name = '_npi_inv'
    cases = (Case(inputs=[lambda r: _spd(r)]),)

    def forward(self, a):
        return _xp(a).linalg.inv(_f(a)).astype(a.dtype, copy=False)

    def backward(self, g, inputs, out):
        it = _t(out)
        return [-_mm('...ij,...jk,...kl->...il', it, g, it)]


@register
class NpiDetOp(Op):
    """The determinant; gradient ``g * det(A) * A^-T``."""
    name = '_npi_det'
    cases = (Case(inputs=[lambda r: _spd(r)]), Case((2, 3, 3)))

    def infer(self, shapes, dtypes):
        _square(self.name, shapes[0])
        return shapes[0][:-2], dtypes[0]

    def forward(self, a):
        return _xp(a).asarray(_xp(a).linalg.det(_f(a)), dtype=a.dtype)

    def backward(self, g, inputs, out):
        a = inputs[0]
        s = (g * out).reshape(out.shape + (1, 1))
        return [s * _t(invoke(OPS['_npi_inv'], (a,)))]


@register
class NpiSlogdetOp(Op):
    """``(sign, log|det|)``; the gradient of ``log|det|`` is ``A^-T``."""
    name = '_npi_slogdet'
    nout = 2
    cases = (Case(inputs=[lambda r: _spd(r)], ),)

    def infer(self, shapes, dtypes):
        _square(self.name, shapes[0])
        return [(shapes[0][:-2], dtypes[0])] * 2

    def forward(self, a):
        s, l = _xp(a).linalg.slogdet(_f(a))
        return _xp(a).asarray(s, dtype=a.dtype), _xp(a).asarray(l, dtype=a.dtype)

    def backward(self, ograds, inputs, outs):
        g = ograds[1].reshape(outs[1].shape + (1, 1))
        return [g * _t(invoke(OPS['_npi_inv'], (inputs[0],)))]


@register
class NpiSolveOp(Op):
    """``x`` with ``A x = b``; gradients ``gb = A^-T g``, ``gA = -gb x^T``."""
    name = '_npi_solve'
    cases = (Case(inputs=[lambda r: _spd(r), lambda r: r.uniform(-1, 1, (3, 2))]),)

    def infer(self, shapes, dtypes):
        a, b = shapes
        _square(self.name, a)
        if len(b) < 1 or b[-2 if len(b) == len(a) else -1] != a[-1]:
            raise ValueError(f"operator 'solve': a of shape {a} and b of shape {b} "
                             f"do not fit (b needs {a[-1]} rows)")
        return b, dtypes[0]

    def forward(self, a, b):
        return _xp(a).linalg.solve(_f(a), _f(b)).astype(a.dtype, copy=False)

    def backward(self, g, inputs, out):
        a, b = inputs
        vec = b.ndim == a.ndim - 1
        gb = invoke(OPS['_npi_solve'], (_t(a), g))
        if vec:
            ga = -_mm('...i,...j->...ij', gb, out)
        else:
            ga = -_mm('...ik,...jk->...ij', gb, out)
        return [ga, gb]


@register
class NpiCholeskyOp(_MatrixOp):
    """The lower Cholesky factor ``L`` (``A = L L^T``); gradient as in
    Murray (2016): ``S = L^-T Phi(L^T g) L^-1``, symmetrized, on the lower
    triangle."""
    name = '_npi_cholesky'
    cases = (Case(inputs=[lambda r: _spd(r)]),)

    def forward(self, a):
        return _xp(a).linalg.cholesky(_f(a)).astype(a.dtype, copy=False)

    def backward(self, g, inputs, out):
        n = out.shape[-1]
        xp_ = _np
        lower = xp_.tril(xp_.ones((n, n))) - 0.5 * xp_.eye(n)
        from ..ndarray.ndarray import array as _nda
        phi = _nda(lower, ctx=out.context, dtype=out.dtype)
        li = invoke(OPS['_npi_inv'], (out,))
        p = _mm('...ji,...jk->...ik', out, g) * phi
        s = _mm('...ji,...jk,...kl->...il', li, p, li)
        # the kernel reads only A's lower triangle, so that is where the
        # gradient of the symmetric 0.5 (S + S^T) lands (doubled off the diagonal)
        return [(s + _t(s)) * phi]


def inv(a):
    """The inverse of each square matrix in ``a``."""
    return invoke(OPS['_npi_inv'], (asarray(a),))


def det(a):
    """The determinant of each square matrix in ``a``."""
    return invoke(OPS['_npi_det'], (asarray(a),))


def slogdet(a):
    """``(sign, log|det|)`` of each square matrix in ``a``."""
    return tuple(invoke(OPS['_npi_slogdet'], (asarray(a),)))


def solve(a, b):
    """``x`` with ``a @ x = b``."""
    a = asarray(a)
    return invoke(OPS['_npi_solve'], (a, asarray(b).astype(a._dtype, copy=False)))


def cholesky(a):
    """The lower triangular ``L`` with ``a = L @ L.T`` (``a`` positive definite)."""
    return invoke(OPS['_npi_cholesky'], (asarray(a),))


def norm(x, ord=None, axis=None, keepdims=False):
    """The vector or matrix norm: Frobenius/2-norm by default, ``ord`` in
    1, 2, inf, -inf, 'fro', 'nuc' (matrix 2/nuc norms through ``svd``,
    without gradient)."""
    from . import reductions as r
    from . import elemwise as e
    x = asarray(x)
    if isinstance(axis, list):
        axis = tuple(axis)
    matrix = (isinstance(axis, tuple) and len(axis) == 2) or (axis is None and
                                                              ord is not None and x.ndim == 2)
    if ord is None or ord == 'fro' or (ord == 2 and not matrix):
        return e.sqrt(r.sum(x * x, axis, keepdims=keepdims))
    if not matrix:
        if ord == _np.inf:
            return r.max(abs(x), axis, keepdims=keepdims)
        if ord == -_np.inf:
            return r.min(abs(x), axis, keepdims=keepdims)
        if ord == 0:
            return r.sum(x != 0, axis, dtype=x._dtype, keepdims=keepdims)
        if ord == 1:
            return r.sum(abs(x), axis, keepdims=keepdims)
        return r.sum(abs(x) ** ord, axis, keepdims=keepdims) ** (1.0 / ord)
    axis = axis or (-2, -1)
    r0, c0 = (a % x.ndim for a in axis)
    if ord in (1, -1):
        s = r.sum(abs(x), r0, keepdims=True)
        red = r.max if ord == 1 else r.min
        res = red(s, c0, keepdims=True)
    elif ord in (_np.inf, -_np.inf):
        s = r.sum(abs(x), c0, keepdims=True)
        red = r.max if ord > 0 else r.min
        res = red(s, r0, keepdims=True)
    else:
        h = _np.linalg.norm(x.asnumpy(), ord, axis, keepdims)
        return array(h, dtype=x._dtype, ctx=x._ctx)
    if keepdims:
        return res
    return res.reshape(tuple(s for i, s in enumerate(res.shape) if i not in (r0, c0)))


def _host(fn, *xs, **kw):
    xs = [asarray(x) for x in xs]
    res = fn(*[x.asnumpy() for x in xs], **kw)
    dt = xs[0]._dtype

    def wrap(v):
        v = _np.asarray(v)
        return array(v, dtype=dt if v.dtype.kind == 'f' else v.dtype, ctx=xs[0]._ctx)
    if isinstance(res, tuple):
        return tuple(wrap(v) for v in res)
    return wrap(res)


def pinv(a, rcond=1e-15, hermitian=False):
    """The Moore-Penrose pseudo-inverse (no gradient)."""
    return _host(_np.linalg.pinv, a, rcond=rcond, hermitian=hermitian)


def svd(a):
    """``(U, S, V)`` with ``a = U @ diag(S) @ V`` (MXNet's order; no gradient)."""
    return _host(lambda x: _np.linalg.svd(x, full_matrices=False), a)


def qr(a, mode='reduced'):
    """``(Q, R)`` (no gradient)."""
    return _host(lambda x: tuple(_np.linalg.qr(x, mode)), a)


def eig(a):
    """Eigenvalues and right eigenvectors (real parts; no gradient)."""
    return _host(lambda x: tuple(_np.real(v) for v in _np.linalg.eig(x)), a)


def eigh(a, UPLO='L'):
    """Eigenvalues and eigenvectors of a symmetric matrix (no gradient)."""
    return _host(lambda x: tuple(_np.linalg.eigh(x, UPLO)), a)


def eigvals(a):
    """Eigenvalues (real parts; no gradient)."""
    return _host(lambda x: _np.real(_np.linalg.eigvals(x)), a)


def eigvalsh(a, UPLO='L'):
    """Eigenvalues of a symmetric matrix (no gradient)."""
    return _host(_np.linalg.eigvalsh, a, UPLO=UPLO)


def lstsq(a, b, rcond='warn'):
    """The least-squares solution, residuals, rank and singular values."""
    res = _host(lambda x, y: _np.linalg.lstsq(x, y, rcond=None if rcond == 'warn'
                                              else rcond), a, b)
    return res


def matrix_rank(M, tol=None, hermitian=False):
    """The rank (int64)."""
    return _host(lambda x: _np.linalg.matrix_rank(x, tol, hermitian).astype(_np.int64), M)


def tensorinv(a, ind=2):
    """The inverse of ``a`` as a tensor (no gradient)."""
    return _host(_np.linalg.tensorinv, a, ind=ind)


def tensorsolve(a, b, axes=None):
    """``x`` with ``tensordot(a, x, x.ndim) = b`` (no gradient)."""
    return _host(_np.linalg.tensorsolve, a, b, axes=axes)


def multi_dot(arrays):
    """The product of a chain of matrices (differentiable)."""
    from .shapes import dot
    out = asarray(arrays[0])
    for m in arrays[1:]:
        out = dot(out, m)
    return out


def matrix_power(a, n):
    """``a`` multiplied by itself ``n`` times (``n < 0``: of its inverse)."""
    from .shapes import matmul
    a = asarray(a)
    if n < 0:
        a, n = inv(a), -n
    res = array(_np.broadcast_to(_np.eye(a.shape[-1]), a.shape), dtype=a._dtype,
                ctx=a._ctx)
    for _ in range(n):
        res = matmul(res, a)
    return res
