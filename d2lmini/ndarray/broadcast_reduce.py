"""Reductions (sum, mean, max, ..., norm, argmax) and broadcast_to.

MXNet keeps these in ``src/operator/tensor/broadcast_reduce_op*``.
"""
import builtins

import numpy as np

from .ndarray import invoke
from .registry import OPS, Case, Op, register, broadcast_shapes, norm_axis
from .op_utils import _axis, _sum_to, _xp, into
from ..base import _check_kwargs, error_types

# The front ends this family gives nd (and mx.sym, less NOT_SYMBOLIC)
__all__ = ['sum', 'mean', 'max', 'min', 'prod', 'nansum', 'nanprod', 'argmax',
           'argmin', 'sum_axis', 'max_axis', 'min_axis', 'norm', 'broadcast_to',
           'broadcast_like', 'broadcast_axis', 'broadcast_axes', 'argmax_channel']


# === reductions =================================================================
class ReduceOp(Op):
    """A reduction over ``axis``.  Reducing *every* axis without ``keepdims``
    gives shape ``(1,)``, not ``()``: MXNet 1.x has no 0-d arrays, and code
    such as ``x.sum()[0]`` relies on that.  ``mx.np``'s variants (``_np_sum``,
    :mod:`d2lmini.numpy.reductions`) set ``full_shape = ()``: NumPy's 0-d."""
    full_shape = (1,)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        fwd = cls.__dict__.get('forward')
        if fwd is not None:
            def forward(self, *arrays, **attrs):
                r = fwd(self, *arrays, **attrs)
                return r.reshape(self.full_shape) if r.ndim == 0 else r
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
            out = tuple(s for i, s in enumerate(shape) if i not in axes) or self.full_shape
        return out, self.out_dtype(dtypes[0])

    def out_dtype(self, dtype):
        """The output's dtype for an input of ``dtype``: the same."""
        return dtype

    def _expand(self, g, x, axis, keepdims):
        """Reshape the output gradient so it broadcasts against ``x``."""
        axes = norm_axis(self.name, axis, x.ndim)
        kshape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        return g._reshape_to(kshape)


def _reduce_cases():
    return (Case((3, 4), axis=None), Case((3, 4, 2), axis=1),
            Case((3, 4, 2), axis=(0, 2), keepdims=True))


@register
class SumOp(ReduceOp):
    name = 'sum'
    cases = _reduce_cases()

    def forward(self, a, axis=None, keepdims=False):
        return a.sum(axis=axis, keepdims=keepdims, dtype=a.dtype)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        if x.size == 0:         # (broadcast_to reads a 0 in x.shape as "keep")
            return [x * 0]
        return [self._expand(g, x, axis, keepdims).broadcast_to(x.shape)]


@register
class MeanOp(ReduceOp):
    name = 'mean'
    cases = _reduce_cases()

    def forward(self, a, axis=None, keepdims=False):
        return np.asarray(a.mean(axis=axis, keepdims=keepdims), dtype=a.dtype) \
            if isinstance(a, np.ndarray) else \
            a.mean(axis=axis, keepdims=keepdims).astype(a.dtype, copy=False)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        if x.size == 0:
            return [x * 0]
        n = x.size // builtins.max(1, out.size)
        return [(self._expand(g, x, axis, keepdims) / n).broadcast_to(x.shape)]


class _MaxMinOp(ReduceOp):
    cases = _reduce_cases()

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        y = self._expand(out, x, axis, keepdims)
        mask = x == y
        # ties share the gradient equally, like the subgradient MXNet picks
        count = invoke(OPS['sum'], (mask,), {'axis': axis, 'keepdims': True})
        return [self._expand(g, x, axis, keepdims) * mask / count]


@register
class MaxOp(_MaxMinOp):
    name = 'max'

    def forward(self, a, axis=None, keepdims=False):
        return a.max(axis=axis, keepdims=keepdims)


@register
class MinOp(_MaxMinOp):
    name = 'min'

    def forward(self, a, axis=None, keepdims=False):
        return a.min(axis=axis, keepdims=keepdims)


@register
class ProdOp(ReduceOp):
    name = 'prod'
    cases = tuple(Case(*c.shapes, low=0.5, high=1.5, **c.attrs) for c in _reduce_cases())

    def forward(self, a, axis=None, keepdims=False):
        return a.prod(axis=axis, keepdims=keepdims, dtype=a.dtype)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        return [self._expand(g * out, x, axis, keepdims) / x]


@register
class NanSumOp(ReduceOp):
    """``sum`` that treats NaN as 0 (its gradient there is 0)."""
    name = 'nansum'
    cases = _reduce_cases()

    def forward(self, a, axis=None, keepdims=False):
        return _xp(a).nansum(a, axis=axis, keepdims=keepdims, dtype=a.dtype)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        return [self._expand(g, x, axis, keepdims) * (x == x)]


@register
class NanProdOp(ReduceOp):
    """``prod`` that treats NaN as 1 (its gradient there is 0)."""
    name = 'nanprod'
    cases = tuple(Case(*c.shapes, low=0.5, high=1.5, **c.attrs) for c in _reduce_cases())

    def forward(self, a, axis=None, keepdims=False):
        return _xp(a).nanprod(a, axis=axis, keepdims=keepdims, dtype=a.dtype)

    def backward(self, g, inputs, out, axis=None, keepdims=False):
        x = inputs[0]
        ok = x == x
        safe = invoke(OPS['where'], (ok, x, invoke(OPS['ones_like_op'], (x,))))
        return [self._expand(g * out, x, axis, keepdims) / safe * ok]


@register
class NormOp(ReduceOp):
    """The L2 (``ord=2``) or L1 (``ord=1``) norm over ``axis`` (all elements
    by default)."""
    name = 'norm'
    cases = (Case((3, 4)), Case((3, 4), axis=1), Case((3, 4), axis=1, ord=1),
             Case((2, 3, 4), axis=(0, 2), ord=1, keepdims=True))

    def infer(self, shapes, dtypes, axis=None, keepdims=False, ord=2):
        if ord not in (1, 2):
            raise ValueError(f"operator 'norm': ord must be 1 or 2, got {ord!r}")
        return super().infer(shapes, dtypes, axis, keepdims)

    def forward(self, a, axis=None, keepdims=False, ord=2):
        if ord == 1:
            r = _xp(a).abs(a).sum(axis=axis, keepdims=keepdims)
        else:
            r = _xp(a).sqrt((a * a).sum(axis=axis, keepdims=keepdims))
        return r if r.dtype == a.dtype else r.astype(a.dtype)

    def backward(self, g, inputs, out, axis=None, keepdims=False, ord=2):
        x = inputs[0]
        if ord == 1:
            return [invoke(OPS['sign'], (x,)) * self._expand(g, x, axis, keepdims)]
        return [x * self._expand(g / out, x, axis, keepdims)]


class _ArgOp(ReduceOp):
    differentiable = False

    def infer(self, shapes, dtypes, axis=None, keepdims=False):
        if axis is None:
            return ((1,) * len(shapes[0]) if keepdims else (1,)), np.dtype(np.float32)
        _axis(self.name, axis, shapes[0])         # one axis only, as NumPy's
        return super().infer(shapes, dtypes, axis, keepdims)

    def out_dtype(self, dtype):
        return np.dtype(np.float32)      # MXNet returns indices as float32


@register
class ArgmaxOp(_ArgOp):
    name = 'argmax'

    def forward(self, a, axis=None, keepdims=False):
        return a.argmax(axis=axis, keepdims=keepdims).astype(np.float32)


@register
class ArgminOp(_ArgOp):
    name = 'argmin'

    def forward(self, a, axis=None, keepdims=False):
        return a.argmin(axis=axis, keepdims=keepdims).astype(np.float32)


@register
class BroadcastToOp(Op):
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
        # a new array, as MXNet: a broadcast view would follow its source's
        # later in-place writes
        return _xp(a).broadcast_to(a, self.infer([a.shape], [a.dtype], shape)[0]).copy()

    def backward(self, g, inputs, out, shape):
        return [_sum_to(g, inputs[0].shape)]


# === functional front ends ==========================================================
def _reduce_fn(name):
    op = OPS[name]

    def fn(data, axis=None, keepdims=False, exclude=False, out=None, name=None,
           **kwargs):
        _check_kwargs(fn, kwargs)
        if exclude:
            ax = norm_axis(op.name, axis, data.ndim)
            axis = tuple(i for i in range(data.ndim) if i not in ax)
            if not axis:                 # every axis excluded: nothing to reduce
                res = invoke(OPS['_copy'], (data,))
                return res if out is None else into(out, res, op.name)
        res = invoke(op, (data,), {'axis': axis, 'keepdims': keepdims})
        return res if out is None else into(out, res, op.name)
    fn.__name__ = name
    fn.__doc__ = f'``{name}`` over ``axis`` (all axes by default).'
    return fn


for _name in ['sum', 'mean', 'max', 'min', 'prod', 'nansum', 'nanprod', 'argmax',
              'argmin']:
    globals()[_name] = _reduce_fn(_name)
sum_axis, max_axis, min_axis = sum, max, min    # noqa: A001 - MXNet names


def norm(data, ord=2, axis=None, keepdims=False, out=None, name=None, **kwargs):
    """The L2 (``ord=2``) or L1 (``ord=1``) norm over ``axis`` (all elements
    by default; MXNet's ``out_dtype`` is not supported)."""
    _check_kwargs(norm, kwargs)
    res = invoke(OPS['norm'], (data,), {'axis': axis, 'keepdims': keepdims,
                                        'ord': ord})
    return res if out is None else into(out, res, 'norm')


def broadcast_to(data, shape, out=None, name=None):
    """``data`` broadcast to ``shape`` (a 0 in ``shape`` keeps that axis)."""
    return into(out, invoke(OPS['broadcast_to'], (data,), {'shape': tuple(shape)}),
                'broadcast_to')


def broadcast_like(lhs, rhs, lhs_axes=None, rhs_axes=None, out=None, name=None):
    """``lhs`` broadcast to ``rhs``'s shape, or only ``lhs_axes`` of it to the
    sizes of ``rhs``'s ``rhs_axes``."""
    if lhs_axes is None and rhs_axes is None:
        shape = rhs.shape
    else:
        la = (lhs_axes,) if isinstance(lhs_axes, int) else tuple(lhs_axes or ())
        ra = (rhs_axes,) if isinstance(rhs_axes, int) else tuple(rhs_axes or ())
        if len(la) != len(ra) or not la:
            raise error_types['ValueError'](
                f"operator 'broadcast_like': lhs_axes {lhs_axes} and rhs_axes "
                f"{rhs_axes} must be non-empty and of the same length")
        shape = list(lhs.shape)
        for a, b in zip(la, ra):
            shape[_axis('broadcast_like', a, lhs.shape)] = \
                rhs.shape[_axis('broadcast_like', b, rhs.shape)]
    return broadcast_to(lhs, shape, out=out)


def broadcast_axis(data, axis=(), size=(), out=None, name=None):
    """Broadcast the size-1 axes ``axis`` of ``data`` to the sizes ``size``."""
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    size = (size,) if isinstance(size, int) else tuple(size)
    if len(axis) != len(size):
        raise ValueError(f"operator 'broadcast_axis': axis {axis} and size {size} "
                         f"must have the same length")
    shape = list(data.shape)
    for a, n in zip(axis, size):
        shape[_axis('broadcast_axis', a, data.shape)] = n
    return broadcast_to(data, shape, out=out)


broadcast_axes = broadcast_axis


def argmax_channel(data, out=None, name=None):
    """Indices of the maxima along the last axis (as float32)."""
    return argmax(data, axis=-1, out=out)
