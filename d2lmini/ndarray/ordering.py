"""Sorting: topk, sort, argsort (MXNet's ``src/operator/tensor/ordering_op``).

All three are one kernel, the indices of the top ``k`` along an axis; values
are then gathered along that axis by an op whose gradient scatters back, so
``topk(..., ret_typ='value')`` and ``sort`` are differentiable (their
gradient check is the gather's).  Ties keep their order (a stable sort).
"""
import numpy as np

from .ndarray import invoke
from .registry import OPS, Case, Op, register
from .op_utils import _axis, _xp, into

# The front ends this family gives nd (and mx.sym, less NOT_SYMBOLIC)
__all__ = ['topk', 'sort', 'argsort']


@register
class TopkIndicesOp(Op):
    """Indices of the ``k`` smallest (``is_ascend``) or largest along ``axis``."""
    name = '_topk_indices'
    differentiable = False

    def infer(self, shapes, dtypes, axis, k, is_ascend, dtype):
        s = list(shapes[0])
        s[axis] = k
        return tuple(s), np.dtype(dtype)

    def forward(self, a, axis, k, is_ascend, dtype):
        xp = _xp(a)
        if is_ascend:
            idx = xp.argsort(a, axis=axis, kind='stable')
        else:
            # a stable descending sort (ties keep their order) without negating,
            # which unsigned and minimum integers do not survive: sort the
            # reversed array, reverse the order, map back the positions
            n = a.shape[axis]
            idx = n - 1 - xp.flip(xp.argsort(xp.flip(a, axis), axis=axis,
                                             kind='stable'), axis)
        sl = [slice(None)] * a.ndim
        sl[axis] = slice(0, k)
        return idx[tuple(sl)].astype(dtype)


def _scatter_axis(xp, g, idx, shape, axis):
    out = xp.zeros(shape, g.dtype)
    # open grids (NumPy's indices(sparse=True), which CuPy lacks)
    nd = idx.ndim
    grid = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - d - 1))
            for d, n in enumerate(idx.shape)]
    grid[axis] = idx.astype(np.int64)
    xp.add.at(out, tuple(grid), g)          # repeated indices accumulate
    return out


def _check_gather(name, shapes, axis):
    a, i = shapes
    if len(a) != len(i) or any(x != y for d, (x, y) in enumerate(zip(a, i))
                               if d != axis):
        raise ValueError(f"operator '{name}': index shape {i} must match data shape "
                         f"{a} on every axis but {axis}")


@register
class GatherAxisOp(Op):
    """``out[..., j, ...] = a[..., idx[..., j, ...], ...]`` along ``axis``
    (NumPy's ``take_along_axis``)."""
    name = '_gather_axis'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (3, 4)),
                          [[0, 2], [1, 1], [3, 0]]], grad=[0], axis=1),)

    def infer(self, shapes, dtypes, axis):
        _check_gather(self.name, shapes, axis)
        return tuple(shapes[1]), dtypes[0]

    def forward(self, a, idx, axis):
        return _xp(a).take_along_axis(a, idx.astype(np.int64), axis=axis)

    def backward(self, g, inputs, out, axis):
        a, idx = inputs
        return [invoke(OPS['_gather_axis_backward'], (g, idx),
                       {'shape': a.shape, 'axis': axis}), None]


@register
class GatherAxisBackwardOp(Op):
    """Scatter-add ``g`` into zeros of ``shape`` at ``idx`` along ``axis``."""
    name = '_gather_axis_backward'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (3, 2)),
                          [[0, 2], [1, 1], [3, 0]]], grad=[0], shape=(3, 4), axis=1),)

    def infer(self, shapes, dtypes, shape, axis):
        _check_gather(self.name, [tuple(shape), shapes[1]], axis)
        return tuple(shape), dtypes[0]

    def forward(self, g, idx, shape, axis):
        return _scatter_axis(_xp(g), g, idx, shape, axis)

    def backward(self, g, inputs, out, shape, axis):
        return [invoke(OPS['_gather_axis'], (g, inputs[1]), {'axis': axis}), None]


_RET_TYPES = ('value', 'indices', 'mask', 'both')


def topk(data, axis=-1, k=1, ret_typ='indices', is_ascend=False, dtype='float32',
         out=None, name=None):
    """The top ``k`` elements along ``axis`` (the largest unless ``is_ascend``).

    ``ret_typ``: 'indices' (as ``dtype``, float32 by default), 'value',
    'both' (``[value, indices]``) or 'mask' (1 where an element is in the
    top ``k``, in ``data``'s shape).  ``axis=None`` works on the flattened
    array; ``k < 1`` keeps every element (a full sort).

    >>> nd.topk(nd.array([[3, 1, 2]]), k=2, ret_typ='value')
    [[3. 2.]]
    """
    if ret_typ not in _RET_TYPES:
        raise ValueError(f"topk: ret_typ must be one of {_RET_TYPES}, got {ret_typ!r}")
    shape = data.shape
    if axis is None:
        data, axis = data.reshape((-1,)), 0
    ax = _axis('topk', axis, data.shape)
    n = data.shape[ax]
    k = n if k < 1 else int(k)
    if k > n:
        raise ValueError(f"topk: k={k} is larger than axis {axis} of shape "
                         f"{data.shape} ({n} elements)")
    want = np.dtype(dtype) if ret_typ == 'indices' else np.dtype(np.int64)
    idx = invoke(OPS['_topk_indices'], (data,),
                 {'axis': ax, 'k': k, 'is_ascend': bool(is_ascend), 'dtype': want})
    if ret_typ == 'indices':
        res = idx
    elif ret_typ == 'mask':
        ones = invoke(OPS['ones_like_op'], (idx,)).astype(data.dtype)
        res = invoke(OPS['_gather_axis_backward'], (ones, idx),
                     {'shape': data.shape, 'axis': ax}).reshape(shape)
    else:
        res = invoke(OPS['_gather_axis'], (data, idx), {'axis': ax})
        if ret_typ == 'both':
            if out is not None:
                raise ValueError('topk: out= is not supported with ret_typ="both"')
            return [res, idx.astype(dtype)]
    return into(out, res, 'topk')


def sort(data, axis=-1, is_ascend=True, out=None, name=None):
    """``data`` sorted along ``axis`` (flattened when ``axis=None``)."""
    return topk(data, axis=axis, k=0, ret_typ='value', is_ascend=is_ascend, out=out)


def argsort(data, axis=-1, is_ascend=True, dtype='float32', out=None, name=None):
    """The indices that sort ``data`` along ``axis``, as ``dtype``."""
    return topk(data, axis=axis, k=0, ret_typ='indices', is_ascend=is_ascend,
                dtype=dtype, out=out)
