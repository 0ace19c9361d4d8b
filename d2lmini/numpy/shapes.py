"""``mx.np``'s shape functions and products: ``np.concatenate``, ``np.stack``,
``np.split``, ``np.pad``, ``np.dot``, ``np.matmul``, ``np.einsum``, ...

Each is built from operators of the op table (reshape, transpose, concat,
slicing, dot, batch_dot), so each is differentiable through theirs; the one
new op is ``_npi_einsum``, whose gradient is an einsum too.
"""
import numpy as _np

from ..base import as_mxnet_error
from ..ndarray.ndarray import NDArray, invoke
from ..ndarray.registry import OPS, Case, Op, register, norm_axis
from ..ndarray.op_utils import _xp
from .multiarray import ndarray, asarray, array, method, broadcast_to_np, _norm_shape

__all__ = ['reshape', 'ravel', 'transpose', 'swapaxes', 'moveaxis', 'rollaxis',
           'expand_dims', 'squeeze', 'broadcast_to', 'broadcast_arrays', 'concatenate',
           'append', 'stack', 'vstack', 'row_stack', 'hstack', 'dstack', 'column_stack',
           'split', 'array_split', 'hsplit', 'vsplit', 'dsplit', 'flip', 'fliplr',
           'flipud', 'roll', 'rot90', 'tile', 'repeat', 'pad', 'atleast_1d',
           'atleast_2d', 'atleast_3d', 'dot', 'matmul', 'tensordot', 'inner', 'outer',
           'vdot', 'cross', 'kron', 'diff', 'einsum', 'tril', 'triu', 'diag',
           'diagonal', 'trace', 'shape', 'size', 'ndim']


def shape(a):
    """The shape of ``a``."""
    return asarray(a).shape


def size(a, axis=None):
    """The number of elements (along ``axis``)."""
    a = asarray(a)
    return a.size if axis is None else a.shape[axis]


def ndim(a):
    """The number of axes."""
    return asarray(a).ndim


def reshape(a, newshape, order='C'):
    """``a`` in ``newshape`` (one -1 is inferred)."""
    return asarray(a).reshape(newshape, order=order)


def ravel(x, order='C'):
    """``x`` as 1-D."""
    return asarray(x).reshape(-1)


def transpose(a, axes=None):
    """``a`` with its axes reversed, or permuted as ``axes``."""
    return invoke(OPS['transpose'], (asarray(a),),
                  {'axes': None if axes is None else tuple(axes)})


def swapaxes(a, axis1, axis2):
    """``a`` with ``axis1`` and ``axis2`` exchanged."""
    return invoke(OPS['swapaxes'], (asarray(a),), {'dim1': axis1, 'dim2': axis2})


def moveaxis(a, source, destination):
    """``a`` with the axes ``source`` moved to ``destination``."""
    a = asarray(a)
    src = norm_axis('moveaxis', source, a.ndim) if not isinstance(source, int) \
        else (source % a.ndim,)
    src = [s % a.ndim for s in ((source,) if isinstance(source, int) else source)]
    dst = [d % a.ndim for d in ((destination,) if isinstance(destination, int)
                                else destination)]
    if len(src) != len(dst):
        raise ValueError(f'moveaxis: source {source} and destination {destination} '
                         f'must have the same number of elements')
    order = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def rollaxis(a, axis, start=0):
    """``a`` with ``axis`` rolled back to position ``start``."""
    a = asarray(a)
    axis %= a.ndim
    start = start % (a.ndim + 1) if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def expand_dims(a, axis):
    """``a`` with a new axis of size 1 at ``axis``."""
    return invoke(OPS['expand_dims'], (asarray(a),), {'axis': axis})


def squeeze(a, axis=None):
    """``a`` without its axes of size 1 (all, or ``axis``)."""
    return asarray(a).squeeze(axis)


def broadcast_to(array_, shape):
    """``array_`` broadcast to ``shape`` (a new array)."""
    return broadcast_to_np(array_, shape)


def broadcast_arrays(*args):
    """The arrays broadcast to their common shape."""
    arrs = [asarray(a) for a in args]
    s = _np.broadcast_shapes(*[a.shape for a in arrs])
    return [a if a.shape == s else broadcast_to_np(a, s) for a in arrs]


def concatenate(seq, axis=0, out=None):
    """The arrays joined along ``axis`` (flattened first if ``axis`` is None)."""
    arrs = [asarray(a) for a in seq]
    if not arrs:
        raise ValueError('concatenate: need at least one array')
    if axis is None:
        arrs, axis = [a.reshape(-1) for a in arrs], 0
    nd = arrs[0].ndim
    if nd == 0 or any(a.ndim != nd for a in arrs):
        raise ValueError(f'concatenate: the arrays must have the same number of '
                         f'dimensions (>= 1), got shapes {[a.shape for a in arrs]}')
    ax = axis % nd
    for a in arrs:
        if a.shape[:ax] + a.shape[ax + 1:] != arrs[0].shape[:ax] + arrs[0].shape[ax + 1:]:
            raise ValueError(f'concatenate: shapes {[b.shape for b in arrs]} differ '
                             f'off axis {axis}')
    dt = arrs[0]._dtype
    for a in arrs[1:]:
        from .multiarray import promote
        dt = promote(dt, a._dtype)
    arrs = [a.astype(dt, copy=False) for a in arrs]
    res = arrs[0].copy() if len(arrs) == 1 else \
        invoke(OPS['concat'], tuple(arrs), {'dim': ax})
    if out is not None:
        out[...] = res
        return out
    return res


def append(arr, values, axis=None):
    """``values`` appended to ``arr`` (flattened if ``axis`` is None)."""
    return concatenate([arr, values], axis)


def stack(arrays, axis=0, out=None):
    """The arrays (of one shape) joined along a new axis."""
    arrs = [asarray(a) for a in arrays]
    if len({a.shape for a in arrs}) != 1:
        raise ValueError(f'stack: all arrays must have the same shape, got '
                         f'{[a.shape for a in arrs]}')
    return concatenate([expand_dims(a, axis) for a in arrs], axis)


def atleast_1d(*arys):
    """Each array with at least one axis."""
    res = [asarray(a) if asarray(a).ndim >= 1 else asarray(a).reshape(1) for a in arys]
    return res[0] if len(res) == 1 else res


def atleast_2d(*arys):
    """Each array with at least two axes (a 1-D ``(n,)`` becomes ``(1, n)``)."""
    res = []
    for a in arys:
        a = asarray(a)
        res.append(a if a.ndim >= 2 else a.reshape(1, -1) if a.ndim else a.reshape(1, 1))
    return res[0] if len(res) == 1 else res


def atleast_3d(*arys):
    """Each array with at least three axes (``(n,)`` -> ``(1, n, 1)``,
    ``(m, n)`` -> ``(m, n, 1)``)."""
    res = []
    for a in arys:
        a = asarray(a)
        res.append(a if a.ndim >= 3 else a.reshape(1, -1, 1) if a.ndim == 1 else
                   a.reshape(a.shape + (1,)) if a.ndim == 2 else a.reshape(1, 1, 1))
    return res[0] if len(res) == 1 else res


def vstack(tup, out=None):
    """The arrays stacked as rows (1-D arrays become rows)."""
    return concatenate([atleast_2d(a) for a in tup], 0)


row_stack = vstack


def hstack(tup, out=None):
    """The arrays joined along the columns (1-D: along axis 0)."""
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1)


def dstack(tup):
    """The arrays joined along a third axis."""
    return concatenate([atleast_3d(a) for a in tup], 2)


def column_stack(tup):
    """1-D arrays as the columns of a 2-D array (2-D arrays as they are)."""
    return concatenate([asarray(a).reshape(-1, 1) if asarray(a).ndim < 2 else asarray(a)
                        for a in tup], 1)


def array_split(ary, indices_or_sections, axis=0):
    """Split into ``n`` parts (the first ones one longer if ``n`` does not
    divide the axis) or at the given indices."""
    a = asarray(ary)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, _np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError(f'array_split: number of sections must be > 0, got {k}')
        sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
        bounds = list(_np.cumsum([0] + sizes))
    else:
        bounds = [0] + [builtin_min(int(i), n) for i in indices_or_sections] + [n]
    key = [slice(None)] * a.ndim
    parts = []
    for b, e in zip(bounds, bounds[1:]):
        key[axis] = slice(int(b), int(builtin_max(b, e)))
        parts.append(a[tuple(key)])
    return parts


builtin_min, builtin_max = min, max


def split(ary, indices_or_sections, axis=0):
    """Split into equal parts (an error if they cannot be) or at indices."""
    a = asarray(ary)
    if isinstance(indices_or_sections, (int, _np.integer)) and \
            a.shape[axis] % int(indices_or_sections):
        raise ValueError(f'split: array split does not result in an equal division '
                         f'(axis {axis} of shape {a.shape} into '
                         f'{indices_or_sections})')
    return array_split(a, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """Split along the columns (axis 1; axis 0 for 1-D)."""
    return split(ary, indices_or_sections, 1 if asarray(ary).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split along the rows (axis 0)."""
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2."""
    return split(ary, indices_or_sections, 2)


def flip(m, axis=None):
    """``m`` reversed along ``axis`` (all axes if None)."""
    m = asarray(m)
    axes = range(m.ndim) if axis is None else norm_axis('flip', axis, m.ndim)
    key = tuple(slice(None, None, -1) if i in axes else slice(None)
                for i in range(m.ndim))
    return m[key]


def fliplr(m):
    """``m`` reversed left to right (axis 1)."""
    return flip(m, 1)


def flipud(m):
    """``m`` reversed up to down (axis 0)."""
    return flip(m, 0)


def roll(a, shift, axis=None):
    """``a``'s elements shifted by ``shift`` along ``axis`` (flattened if None)."""
    a = asarray(a)
    if axis is None:
        return roll(a.reshape(-1), shift, 0).reshape(a.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    for s, ax in zip(shifts, axes):
        n = a.shape[ax]
        s %= builtin_max(n, 1)
        if s:
            a = concatenate(array_split(a, [n - s], ax)[::-1], ax)
    return a


def rot90(m, k=1, axes=(0, 1)):
    """``m`` rotated by 90 degrees ``k`` times in the plane ``axes``."""
    m = asarray(m)
    k %= 4
    a0, a1 = axes
    if k == 0:
        return m.copy()
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


def tile(A, reps):
    """``A`` repeated ``reps`` times along each axis."""
    A = asarray(A)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    return invoke(OPS['tile'], (A,), {'reps': reps})


def repeat(a, repeats, axis=None):
    """Each element repeated ``repeats`` times (flattened if ``axis`` is None)."""
    a = asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    return invoke(OPS['repeat'], (a,), {'repeats': int(repeats), 'axis': axis})


def pad(x, pad_width, mode='constant', constant_values=0, **kwargs):
    """``x`` padded by ``pad_width`` per axis: constant values (differentiable,
    a concatenation) or NumPy's other modes (on the host)."""
    x = asarray(x)
    pw = _np.broadcast_to(_np.asarray(pad_width, dtype=int), (x.ndim, 2))
    if mode != 'constant':
        return array(_np.pad(x.asnumpy(), pw, mode=mode, **kwargs), ctx=x._ctx)
    for ax, (b, e) in enumerate(pw):
        parts = []
        for n in (b, e):
            s = list(x.shape)
            s[ax] = int(n)
            parts.append(array(_np.full(s, constant_values), dtype=x._dtype,
                               ctx=x._ctx) if n else None)
        seq = [p for p in (parts[0], x, parts[1]) if p is not None]
        if len(seq) > 1:
            x = concatenate(seq, ax)
    return x


# === products ================================================================
def dot(a, b, out=None):
    """NumPy's ``dot``: a scalar product for 1-D arrays, a matrix product for
    2-D, a sum over the last axis of ``a`` and the second-to-last of ``b``."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.ndim == 1 and b.ndim == 1:
        return _vec_dot(a, b)
    return tensordot(a, b, ((a.ndim - 1,), (builtin_max(b.ndim - 2, 0),)))


def _vec_dot(a, b):
    if a.shape != b.shape:
        raise as_mxnet_error(ValueError(f'dot: shapes {a.shape} and {b.shape} not aligned'))
    from .reductions import sum as _sum
    return _sum(a * b)


def matmul(a, b, out=None):
    """The matrix product, broadcast over leading (batch) axes (``a @ b``)."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: input operand does not have enough dimensions "
                         f"(shapes {a.shape} and {b.shape})")
    if a.ndim <= 2 and b.ndim <= 2:
        return dot(a, b)
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = a.reshape(1, -1)
    if vb:
        b = b.reshape(-1, 1)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f'matmul: shapes {a.shape} and {b.shape} not aligned '
                         f'({a.shape[-1]} != {b.shape[-2]})')
    batch = _np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to_np(a, batch + a.shape[-2:]) if a.shape[:-2] != batch else a
    b = broadcast_to_np(b, batch + b.shape[-2:]) if b.shape[:-2] != batch else b
    r = invoke(OPS['batch_dot'], (a.reshape((-1,) + a.shape[-2:]),
                                  b.reshape((-1,) + b.shape[-2:])))
    r = r.reshape(batch + r.shape[-2:])
    if va:
        r = r.squeeze(-2)
    if vb:
        r = r.squeeze(-1)
    return r


def tensordot(a, b, axes=2):
    """The sum of products over ``axes`` (an int: the last of ``a`` with the
    first of ``b``; or two lists of axes)."""
    a, b = asarray(a), asarray(b)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        ax_a, ax_b = ([x] if isinstance(x, int) else list(x) for x in axes)
    ax_a = [x % a.ndim for x in ax_a]
    ax_b = [x % b.ndim for x in ax_b]
    if [a.shape[i] for i in ax_a] != [b.shape[i] for i in ax_b]:
        raise as_mxnet_error(ValueError(   # (an MXNetError too, as MXNet's)
            f'tensordot: shape mismatch for sum: shapes {a.shape} (axes {ax_a}) '
            f'and {b.shape} (axes {ax_b})'))
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = int(_np.prod([a.shape[i] for i in ax_a]))
    m = int(_np.prod([a.shape[i] for i in free_a]))   # (no -1: k or m may be 0)
    n = int(_np.prod([b.shape[i] for i in free_b]))
    at = transpose(a, free_a + ax_a).reshape(m, k)
    bt = transpose(b, ax_b + free_b).reshape(k, n)
    r = invoke(OPS['dot'], (at, bt))
    return r.reshape(tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))


def inner(a, b):
    """The sum of products over the last axes of ``a`` and ``b``."""
    a, b = asarray(a), asarray(b)
    return tensordot(a, b, ((a.ndim - 1,), (b.ndim - 1,)))


def outer(a, b):
    """``a.ravel()[:, None] * b.ravel()[None, :]``."""
    return asarray(a).reshape(-1, 1) * asarray(b).reshape(1, -1)


def vdot(a, b):
    """The dot product of the flattened arrays."""
    return _vec_dot(asarray(a).reshape(-1), asarray(b).reshape(-1))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors along the last axis."""
    a, b = asarray(a), asarray(b)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError(f'cross: the last axis must have size 3, got shapes '
                         f'{a.shape} and {b.shape}')
    c = [a[..., (i + 1) % 3] * b[..., (i + 2) % 3] - a[..., (i + 2) % 3] * b[..., (i + 1) % 3]
         for i in range(3)]
    return stack(c, -1)


def kron(a, b):
    """The Kronecker product (2-D or fewer axes)."""
    a, b = atleast_2d(a), atleast_2d(b)
    m, n = a.shape
    p, q = b.shape
    r = a.reshape(m, 1, n, 1) * b.reshape(1, p, 1, q)
    return r.reshape(m * p, n * q)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th differences along ``axis``."""
    a = asarray(a)
    for _ in range(n):
        k = a.shape[axis]
        lo = [slice(None)] * a.ndim
        hi = [slice(None)] * a.ndim
        lo[axis], hi[axis] = slice(0, k - 1), slice(1, k)
        a = a[tuple(hi)] - a[tuple(lo)]
    return a


def tril(m, k=0):
    """``m`` with the elements above the ``k``-th diagonal zeroed."""
    m = asarray(m)
    mask = _np.tril(_np.ones(m.shape[-2:]), k)
    return m * array(mask, dtype=m._dtype, ctx=m._ctx)


def triu(m, k=0):
    """``m`` with the elements below the ``k``-th diagonal zeroed."""
    m = asarray(m)
    mask = _np.triu(_np.ones(m.shape[-2:]), k)
    return m * array(mask, dtype=m._dtype, ctx=m._ctx)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The ``offset`` diagonal of the plane ``(axis1, axis2)``, as the last axis."""
    a = moveaxis(asarray(a), (axis1, axis2), (-2, -1))
    r, c = a.shape[-2:]
    i = _np.arange(builtin_max(0, builtin_min(r, c - offset) if offset >= 0
                               else builtin_min(r + offset, c)))
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    flat = a.reshape(a.shape[:-2] + (r * c,))
    idx = array(rows * c + cols, dtype=_np.int64, ctx=a._ctx)
    return invoke(OPS['take'], (flat, idx), {'axis': flat.ndim - 1})


def diag(v, k=0):
    """The ``k``-th diagonal of a 2-D array, or a 2-D array with ``v`` (1-D)
    on its ``k``-th diagonal."""
    v = asarray(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f'diag: input must be 1-D or 2-D, got shape {v.shape}')
    return _diag_from_vector(v, k)


def _diag_from_vector(v, k):
    n = v.shape[0] + abs(k)
    rows = _np.arange(v.shape[0]) + (0 if k >= 0 else -k)
    cols = _np.arange(v.shape[0]) + (k if k >= 0 else 0)
    place = _np.zeros((v.shape[0], n * n))
    place[_np.arange(v.shape[0]), rows * n + cols] = 1
    p = array(place, dtype=v._dtype, ctx=v._ctx)
    return invoke(OPS['dot'], (v.reshape(1, -1), p)).reshape(n, n)


def trace(a, offset=0, axis1=0, axis2=1):
    """The sum along the ``offset`` diagonal."""
    from .reductions import sum as _sum
    return _sum(diagonal(a, offset, axis1, axis2), -1)


# === einsum ===================================================================
@register
class NpiEinsumOp(Op):
    """``einsum(subscripts, *operands)`` by NumPy (or CuPy) on the kernel;
    the gradient of each operand is an einsum of the output's gradient with
    the other operands."""
    name = '_npi_einsum'
    cases = (Case((2, 3), (3, 4), subscripts='ij,jk->ik'),
             Case((2, 3), subscripts='ij->j'),
             Case((2, 3), (4, 3), subscripts='ij,kj->ikj'))

    def infer(self, shapes, dtypes, subscripts):
        try:
            out = _np.einsum(subscripts, *[_np.empty(s, dtype=_np.float32) for s in shapes],
                             optimize=False)
        except ValueError as e:
            raise ValueError(f"operator 'einsum' ({subscripts!r}) on shapes "
                             f"{list(shapes)}: {e}") from None
        dt = dtypes[0]
        for d in dtypes[1:]:
            from .multiarray import promote
            dt = promote(dt, d)
        return out.shape, dt

    def forward(self, *arrays, subscripts):
        dt = self.infer([a.shape for a in arrays], [a.dtype for a in arrays],
                        subscripts)[1]
        return _xp(arrays[0]).asarray(_xp(arrays[0]).einsum(subscripts, *arrays),
                                      dtype=dt)

    def backward(self, g, inputs, out, subscripts):
        ins, res = _parse(subscripts, [x.ndim for x in inputs])
        grads = []
        for i, x in enumerate(inputs):
            if len(set(ins[i])) != len(ins[i]):
                raise NotImplementedError(f"einsum's gradient for a repeated index "
                                          f"in an operand ({subscripts!r})")
            others = [ins[j] for j in range(len(inputs)) if j != i]
            known = set(res).union(*others)
            target = ''.join(c for c in ins[i] if c in known)
            sub = ','.join([res] + others) + '->' + target
            gi = invoke(OPS['_npi_einsum'],
                        (g,) + tuple(inputs[j] for j in range(len(inputs)) if j != i),
                        {'subscripts': sub})
            if target != ins[i]:         # an index summed in x alone: broadcast back
                shape = tuple(x.shape[k] if c in known else 1
                              for k, c in enumerate(ins[i]))
                gi = gi.reshape(shape).broadcast_to(x.shape)
            grads.append(gi)
        return grads


def _parse(subscripts, ndims):
    """Operand and output subscripts of an explicit or implicit einsum
    (ellipses expanded into fresh letters)."""
    s = subscripts.replace(' ', '')
    lhs, _, rhs = s.partition('->')
    ins = lhs.split(',')
    letters = iter(c for c in 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' if c not in s)
    ell = ''
    if '...' in s:
        n = builtin_max(nd - (len(t) - 3) for t, nd in zip(ins, ndims) if '...' in t)
        ell = ''.join(next(letters) for _ in range(n))
        ins = [t.replace('...', ell[len(ell) - (nd - (len(t) - 3)):]) if '...' in t
               else t for t, nd in zip(ins, ndims)]
    if '->' in s:
        rhs = rhs.replace('...', ell)
    else:
        counts = {}
        for c in ''.join(ins):
            counts[c] = counts.get(c, 0) + 1
        rhs = ell + ''.join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return ins, rhs


def einsum(subscripts, *operands, out=None, optimize=False):
    """Einstein summation (NumPy's ``einsum``), differentiable."""
    ops = tuple(asarray(o) for o in operands)
    ins, res = _parse(subscripts, [o.ndim for o in ops])
    return invoke(OPS['_npi_einsum'], ops, {'subscripts': ','.join(ins) + '->' + res})


for _fn in (dot, repeat, swapaxes, trace, diagonal):
    method(_fn)
method(lambda self, repeats, axis=None: repeat(self, repeats, axis), 'repeat')
