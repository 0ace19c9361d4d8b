"""Indexing: ``x[key]`` and its gradient, take, pick, one_hot, where.

MXNet keeps these in ``src/operator/tensor/indexing_op*`` (``where`` in
``control_flow_op``).
"""
import numpy as np

from .ndarray import device_key, invoke
from .registry import OPS, Case, Op, register
from .op_utils import _axis, _common_dtype, into
from .. import backend

# The front ends this family gives nd (and mx.sym, less NOT_SYMBOLIC)
__all__ = ['take', 'pick', 'choose_element_0index', 'fill_element_0index',
           'one_hot', 'onehot_encode', 'where']


@register
class GetItemOp(Op):
    """``x[key]`` for basic and advanced indexing."""
    name = '_getitem'
    cases = (Case((4, 5), key=(slice(1, 3),)), Case((4, 5), key=(1,)),
             Case((4, 5), key=(slice(None), np.array([0, 2, 2]))))

    def infer(self, shapes, dtypes, key):
        from .ndarray import _slice_shape
        return _slice_shape(shapes[0], key), dtypes[0]

    def forward(self, a, key):
        if a.__class__ is not np.ndarray:
            key = device_key(key, backend.xp_of(a))
        return a[key]

    def backward(self, g, inputs, out, key):
        return [invoke(OPS['_slice_backward'], (g,), {'shape': inputs[0].shape,
                                                      'key': key})]


@register
class SliceBackwardOp(Op):
    """Scatter-add ``g`` into zeros of ``shape`` at ``key`` (gradient of indexing)."""
    name = '_slice_backward'
    cases = (Case((2, 5), shape=(4, 5), key=(slice(1, 3),)),
             Case((4, 3), shape=(4, 5), key=(slice(None), np.array([0, 2, 2]))))

    def infer(self, shapes, dtypes, shape, key):
        return tuple(shape), dtypes[0]

    def forward(self, g, shape, key):
        xp = np if isinstance(g, np.ndarray) else backend.xp_of(g)
        out = xp.zeros(shape, g.dtype)
        advanced = _is_advanced(key)
        if xp is not np:
            key = device_key(key, xp)
        if advanced:
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
class TakeOp(Op):
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
class TakeBackwardOp(Op):
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
        xp.add.at(out, idx.reshape(-1), gm.reshape((idx.size,) + out.shape[1:]))
        return xp.moveaxis(out, 0, axis) if axis else out

    def backward(self, g, inputs, out, shape, axis=0, mode='clip'):
        return [invoke(OPS['take'], (g, inputs[1]), {'axis': axis, 'mode': mode}), None]


@register
class PickOp(Op):
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
class OneHotOp(Op):
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
class WhereOp(Op):
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
        return backend.xp_of(x).where(c != 0, x, y)

    def backward(self, g, inputs, out):
        c, x, y = inputs
        if c.ndim == 1 and x.ndim > 1:
            c = c.reshape((-1,) + (1,) * (x.ndim - 1))
        mask = (c != 0)
        return [None, g * mask, g * (1 - mask)]


# === functional front ends ==========================================================
def take(a, indices, axis=0, mode='clip', out=None, name=None):
    """Slices of ``a`` along ``axis`` at ``indices`` (``mode``: 'clip' or 'wrap')."""
    return into(out, invoke(OPS['take'], (a, indices), {'axis': axis, 'mode': mode}),
                'take')


def pick(data, index, axis=-1, keepdims=False, mode='clip', out=None, name=None):
    """One element of ``data`` per position along ``axis``, chosen by ``index``."""
    return into(out, invoke(OPS['pick'], (data, index),
                            {'axis': axis, 'keepdims': keepdims, 'mode': mode}), 'pick')


def choose_element_0index(lhs, rhs, out=None, name=None):
    """MXNet's legacy name for ``pick(lhs, rhs, axis=1)`` on a 2-D ``lhs``."""
    return pick(lhs, rhs, axis=1, out=out)


def fill_element_0index(lhs, mhs, rhs, out=None, name=None):
    """A copy of 2-D ``lhs`` with ``lhs[i, rhs[i]] = mhs[i]`` for every row ``i``."""
    if lhs.ndim != 2 or mhs.shape != (lhs.shape[0],) or rhs.shape != (lhs.shape[0],):
        raise ValueError(f"operator 'fill_element_0index': needs a 2-D lhs and 1-D "
                         f"mhs, rhs of its length, got {lhs.shape}, {mhs.shape}, "
                         f"{rhs.shape}")
    mask = one_hot(rhs, lhs.shape[1], dtype=lhs.dtype)
    res = lhs * (1 - mask) + mask * mhs.astype(lhs.dtype).reshape((-1, 1))
    return into(out, res, 'fill_element_0index')


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype='float32', out=None,
            name=None):
    """Each index as a vector of length ``depth``: ``on_value`` at the
    index, ``off_value`` elsewhere; the shape is ``indices.shape + (depth,)``.

    >>> nd.one_hot(nd.array([0, 2]), 3)
    <BLANKLINE>
    [[1. 0. 0.]
     [0. 0. 1.]]
    <NDArray 2x3 @cpu(0)>
    """
    return into(out, invoke(OPS['one_hot'], (indices,),
                            {'depth': int(depth), 'on_value': on_value,
                             'off_value': off_value, 'dtype': np.dtype(dtype)}),
                'one_hot')


def onehot_encode(indices, out):
    """MXNet's legacy one-hot: writes ``one_hot(indices, out.shape[1])`` into
    the 2-D ``out`` and returns it."""
    return into(out, one_hot(indices, out.shape[1], dtype=out.dtype),
                'onehot_encode')


def where(condition, x, y, out=None, name=None):
    """``x`` where ``condition`` is non-zero, else ``y``."""
    return into(out, invoke(OPS['where'], (condition, x, y)), 'where')
