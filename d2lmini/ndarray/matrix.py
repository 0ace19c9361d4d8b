"""Shape manipulation: reshape, transpose, expand/squeeze, tile, repeat, flip,
concat, stack, split, slicing.

Why one long file: one family, 27 front ends over 16 operator classes,
each class short (``infer``, ``forward``, ``backward``, gradient-check
cases) and next to the front ends that call it.

MXNet keeps these in ``src/operator/tensor/matrix_op*``.
"""
import builtins

import numpy as np

from .. import backend
from ..base import _check_kwargs
from .ndarray import invoke
from .registry import OPS, Case, Op, register, norm_axis
from .op_utils import _axis, _common_dtype, _xp, into

# The front ends this family gives nd (and mx.sym, less NOT_SYMBOLIC)
__all__ = ['Flatten', 'Concat', 'reshape', 'reshape_like', 'transpose', 'moveaxis',
           'swapaxes', 'SwapAxis', 'flatten', 'expand_dims', 'squeeze', 'tile',
           'repeat', 'flip', 'reverse', 'concat', 'concatenate', 'stack', 'split',
           'SliceChannel', 'split_v2', 'shape_array', 'size_array', 'slice_axis',
           'slice', 'crop', 'slice_like']

# _copies_note: transpose, swapaxes, flip, split, slice_axis and slice return
# new arrays, as in MXNet, not NumPy views: a view would silently change when
# its source is later written in place (x[:] = ..., an optimizer update,
# out=), and writing into it would change the source.  Only x[a:b] (basic
# indexing) is a view, tracked as one; reshape, flatten, expand_dims and
# squeeze still share the buffer, as MXNet's x.reshape() does.


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
class ReshapeOp(Op):
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
        return [g._reshape_to(inputs[0].shape)]


@register
class NpReshapeOp(Op):
    """``mx.np``'s reshape: ``shape`` is literal (a 0 is a zero-length axis,
    not MXNet's copy code); ``ndarray.reshape`` resolves its -1 first."""
    name = '_np_reshape'
    cases = (Case((3, 4), shape=(2, 6)),)    # zero-size: tests/test_numpy_ndarray.py

    def infer(self, shapes, dtypes, shape):
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape) or np.prod(shape) != np.prod(shapes[0]):
            raise ValueError(f"operator '_np_reshape': cannot reshape array of shape "
                             f"{tuple(shapes[0])} into shape {shape}")
        return shape, dtypes[0]

    def forward(self, a, shape):
        return a.reshape(shape)

    def backward(self, g, inputs, out, shape):
        return [g._reshape_to(inputs[0].shape)]


@register
class NpiReshapeOp(type(NpReshapeOp)):      # register gives the instance
    """``np.ndarray.reshape`` as MXNet 1.9.1 runs it: a new array, not a view
    (after ``X = x.reshape(3, 4); X[0] = 1``, ``x`` is unchanged in MXNet,
    where NumPy would change it)."""
    name = '_npi_reshape'
    cases = (Case((3, 4), shape=(2, 6)),)

    def forward(self, a, shape):
        return a.reshape(shape).copy()


@register
class FlattenOp(Op):
    """Collapse all axes but the first: (N, a, b, ...) -> (N, a*b*...)."""
    name = 'flatten'
    cases = (Case((2, 3, 4)),)

    def infer(self, shapes, dtypes):
        s = shapes[0]
        return ((s[0], int(np.prod(s[1:], dtype=np.int64))) if s else (1, 1)), dtypes[0]

    def forward(self, a):
        return a.reshape(a.shape[0], -1) if a.ndim else a.reshape(1, 1)

    def backward(self, g, inputs, out):
        return [g._reshape_to(inputs[0].shape)]


@register
class TransposeOp(Op):
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
        return a.transpose(axes).copy()         # MXNet copies; see _copies_note

    def backward(self, g, inputs, out, axes=None):
        inv = None if axes is None else tuple(np.argsort([a % g.ndim for a in axes]))
        return [g.transpose(inv) if inv is not None else g.transpose()]


@register
class SwapAxesOp(Op):
    name = 'swapaxes'
    cases = (Case((2, 3, 4), dim1=0, dim2=2),)

    def infer(self, shapes, dtypes, dim1=0, dim2=0):
        s = list(shapes[0])
        dim1, dim2 = _axis(self.name, dim1, s), _axis(self.name, dim2, s)
        s[dim1], s[dim2] = s[dim2], s[dim1]
        return tuple(s), dtypes[0]

    def forward(self, a, dim1=0, dim2=0):
        return a.swapaxes(dim1, dim2).copy()

    def backward(self, g, inputs, out, dim1=0, dim2=0):
        return [invoke(self, (g,), {'dim1': dim1, 'dim2': dim2})]


@register
class ExpandDimsOp(Op):
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
        return backend.xp_of(a).expand_dims(a, axis)

    def backward(self, g, inputs, out, axis):
        return [g._reshape_to(inputs[0].shape)]


@register
class SqueezeOp(Op):
    name = 'squeeze'
    cases = (Case((2, 1, 3)), Case((2, 1, 1), axis=1))

    def infer(self, shapes, dtypes, axis=None):
        s = shapes[0]
        axes = norm_axis(self.name, axis, len(s)) if axis is not None else \
            tuple(i for i, d in enumerate(s) if d == 1)
        for i in axes:
            if i < len(s) and s[i] != 1:      # (a 0-d array: NumPy's axis 0 or -1)
                raise ValueError(f"operator 'squeeze': axis {i} of shape {s} is not 1")
        return tuple(d for i, d in enumerate(s) if i not in axes), dtypes[0]

    def forward(self, a, axis=None):
        return backend.xp_of(a).squeeze(a, axis=axis)

    def backward(self, g, inputs, out, axis=None):
        return [g._reshape_to(inputs[0].shape)]


@register
class TileOp(Op):
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
        return backend.xp_of(a).tile(a, reps)

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
class RepeatOp(Op):
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
        return backend.xp_of(a).repeat(a, repeats, axis=axis)

    def backward(self, g, inputs, out, repeats, axis=None):
        x = inputs[0]
        if axis is None:
            return [g.reshape((-1, repeats)).sum(axis=1).reshape(x.shape)]
        ax = axis % x.ndim
        shape = x.shape[:ax] + (x.shape[ax], repeats) + x.shape[ax + 1:]
        return [g.reshape(shape).sum(axis=ax + 1)]


@register
class FlipOp(Op):
    name = 'flip'
    cases = (Case((3, 4), axis=1),)

    def infer(self, shapes, dtypes, axis):
        for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)):
            _axis(self.name, ax, shapes[0])
        return shapes[0], dtypes[0]

    def forward(self, a, axis):
        return _xp(a).flip(a, axis).copy()

    def backward(self, g, inputs, out, axis):
        return [invoke(self, (g,), {'axis': axis})]


@register
class ConcatOp(Op):
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
        return backend.xp_of(arrays[0]).concatenate(arrays, axis=dim)

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
class StackOp(Op):
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
        return backend.xp_of(arrays[0]).stack(arrays, axis=axis)

    def backward(self, g, inputs, out, axis=0):
        return split(g, len(inputs), axis=axis, squeeze_axis=True) \
            if len(inputs) > 1 else [g.squeeze(axis=axis)]


@register
class SplitOp(Op):
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
        parts = [p.copy() for p in _xp(a).split(a, num_outputs, axis=axis)]
        if squeeze_axis:
            parts = [p.squeeze(axis) for p in parts]
        return parts

    def backward(self, grads, inputs, outputs, num_outputs, axis=1, squeeze_axis=False):
        if squeeze_axis:
            return [invoke(OPS['stack'], tuple(grads), {'axis': axis})]
        return [invoke(OPS['concat'], tuple(grads), {'dim': axis})]


@register
class SliceAxisOp(Op):
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
        return a[tuple(idx)].copy()

    def backward(self, g, inputs, out, axis, begin, end):
        x = inputs[0]
        return [invoke(OPS['_slice_backward'], (g,),
                       {'shape': x.shape, 'key': _axis_key(x.ndim, axis, begin, end)})]


def _axis_key(ndim, axis, begin, end):
    idx = [builtins.slice(None)] * ndim
    idx[axis] = builtins.slice(begin, end)
    return tuple(idx)


@register
class SliceOp(Op):
    """MXNet's ``slice``: ``data[begin[0]:end[0]:step[0], ...]`` as a new array
    (a copy, unlike ``x[a:b]``, which is a view).  Axes past ``len(begin)``
    are kept whole; ``None`` in begin/end/step means the default."""
    name = 'slice'
    cases = (Case((4, 5), begin=(1, 0), end=(3, 4), step=(None, None)),
             Case((5, 4), begin=(4, None), end=(0, None), step=(-2, None)))

    def infer(self, shapes, dtypes, begin, end, step):
        from .ndarray import _slice_shape
        return _slice_shape(shapes[0], _slice_key(shapes[0], begin, end, step)), \
            dtypes[0]

    def forward(self, a, begin, end, step):
        return a[_slice_key(a.shape, begin, end, step)].copy()

    def backward(self, g, inputs, out, begin, end, step):
        x = inputs[0]
        return [invoke(OPS['_slice_backward'], (g,),
                       {'shape': x.shape,
                        'key': _slice_key(x.shape, begin, end, step)})]


def _slice_key(shape, begin, end, step):
    if not len(begin) == len(end) == len(step) or len(begin) > len(shape):
        raise ValueError(f"operator 'slice': begin {tuple(begin)}, end {tuple(end)} "
                         f"and step {tuple(step)} must have equal lengths, at most "
                         f"the {len(shape)} axes of shape {tuple(shape)}")
    for s in step:
        if s == 0:
            raise ValueError(f"operator 'slice': step must not be 0, got {tuple(step)}")
    return tuple(builtins.slice(b, e, s) for b, e, s in zip(begin, end, step))


# === functional front ends ==========================================================
def reshape(data, shape, reverse=False, out=None, name=None):
    """``data`` with a new shape; MXNet's codes 0, -1, -2, -3, -4 (see
    :func:`infer_reshape`)."""
    return into(out, invoke(OPS['reshape'], (data,), {'shape': tuple(shape),
                                                      'reverse': reverse}), 'reshape')


def reshape_like(lhs, rhs, out=None, name=None):
    """``lhs`` reshaped to ``rhs``'s shape (same size)."""
    return reshape(lhs, rhs.shape, out=out)


def transpose(data, axes=None, out=None, name=None):
    """``data`` with its axes permuted: reversed, or in the order ``axes``.

    >>> nd.transpose(nd.zeros((2, 3, 4)), axes=(1, 0, 2)).shape
    (3, 2, 4)
    """
    return into(out, invoke(OPS['transpose'], (data,),
                            {'axes': None if axes is None else tuple(axes)}),
                'transpose')


def moveaxis(tensor, source, destination):
    """Move axes ``source`` to positions ``destination`` (ints or sequences),
    keeping the order of the others, as NumPy's ``moveaxis``."""
    nd_ = tensor.ndim

    def axes(a, what):
        a = [a] if isinstance(a, (int, np.integer)) else list(a)
        for x in a:
            if not -nd_ <= x < nd_:
                raise ValueError(f"moveaxis: {what} axis {x} out of range for "
                                 f"shape {tensor.shape}")
        a = [x % nd_ for x in a]
        if len(set(a)) != len(a):
            raise ValueError(f"moveaxis: repeated {what} axis in {a}")
        return a
    src, dst = axes(source, 'source'), axes(destination, 'destination')
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} "
                         f"must have the same number of axes")
    order = [i for i in range(nd_) if i not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return transpose(tensor, order)


def swapaxes(data, dim1=0, dim2=0, out=None, name=None):
    """``data`` with axes ``dim1`` and ``dim2`` exchanged.

    >>> nd.swapaxes(nd.zeros((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    return into(out, invoke(OPS['swapaxes'], (data,), {'dim1': dim1, 'dim2': dim2}),
                'swapaxes')


SwapAxis = swapaxes


def flatten(data, out=None, name=None):
    """``data`` as a 2-D array: the first axis kept, the others merged.

    >>> nd.flatten(nd.zeros((2, 3, 4))).shape
    (2, 12)
    """
    return into(out, invoke(OPS['flatten'], (data,)), 'flatten')


Flatten = flatten


def expand_dims(data, axis, out=None, name=None):
    """``data`` with a new axis of size 1 at position ``axis``.

    >>> nd.expand_dims(nd.zeros((2, 3)), axis=1).shape
    (2, 1, 3)
    """
    return into(out, invoke(OPS['expand_dims'], (data,), {'axis': axis}),
                'expand_dims')


def squeeze(data, axis=None, out=None, name=None):
    """``data`` without its axes of size 1 (all of them, or those in ``axis``).

    >>> nd.squeeze(nd.zeros((2, 1, 3, 1))).shape
    (2, 3)
    """
    return into(out, invoke(OPS['squeeze'], (data,), {'axis': axis}), 'squeeze')


def tile(data, reps, out=None, name=None):
    """``data`` repeated as a whole ``reps[i]`` times along axis ``i``.

    >>> nd.tile(nd.array([1, 2]), reps=(2,))
    <BLANKLINE>
    [1. 2. 1. 2.]
    <NDArray 4 @cpu(0)>
    """
    return into(out, invoke(OPS['tile'], (data,), {'reps': tuple(reps)}), 'tile')


def repeat(data, repeats, axis=None, out=None, name=None):
    """Each element ``repeats`` times in a row along ``axis`` (of the
    flattened array when ``axis`` is None).

    >>> nd.repeat(nd.array([1, 2]), repeats=2)
    <BLANKLINE>
    [1. 1. 2. 2.]
    <NDArray 4 @cpu(0)>
    """
    return into(out, invoke(OPS['repeat'], (data,), {'repeats': repeats,
                                                     'axis': axis}), 'repeat')


def flip(data, axis, out=None, name=None):
    """``data`` in reverse order along ``axis`` (also ``nd.reverse``).

    >>> nd.flip(nd.array([[1, 2], [3, 4]]), axis=1)
    <BLANKLINE>
    [[2. 1.]
     [4. 3.]]
    <NDArray 2x2 @cpu(0)>
    """
    return into(out, invoke(OPS['flip'], (data,), {'axis': axis}), 'flip')


reverse = flip


def _arrays(name, data):
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if not data:
        raise ValueError(f'{name} needs at least one array')
    return tuple(data)


def concat(*data, dim=1, out=None, name=None, **kwargs):
    """Join arrays along ``dim`` (MXNet's default ``dim=1``)."""
    _check_kwargs(concat, kwargs, ('num_args',))
    return into(out, invoke(OPS['concat'], _arrays('concat', data), {'dim': dim}),
                'concat')


Concat = concat


def concatenate(arrays, axis=0, always_copy=True):
    """MXNet's ``nd.concatenate``: join a list of arrays along ``axis``
    (default 0); with one array and ``always_copy=False``, that array."""
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    return concat(*arrays, dim=axis)


def stack(*data, axis=0, out=None, name=None, **kwargs):
    """Arrays of one shape joined along a new axis ``axis``.

    >>> nd.stack(nd.zeros((2, 3)), nd.ones((2, 3)), axis=1).shape
    (2, 2, 3)
    """
    _check_kwargs(stack, kwargs, ('num_args',))
    return into(out, invoke(OPS['stack'], _arrays('stack', data), {'axis': axis}),
                'stack')


def split(data, num_outputs, axis=1, squeeze_axis=False, name=None):
    """Split into ``num_outputs`` equal parts (a list; a single array if 1)."""
    outs = invoke(OPS['split'], (data,),
                  {'num_outputs': num_outputs, 'axis': axis, 'squeeze_axis': squeeze_axis})
    return outs[0] if num_outputs == 1 else outs


SliceChannel = split


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False, name=None):
    """NumPy-style split: into ``indices_or_sections`` equal parts (an int) or
    at the given indices (a sequence).  Always a list."""
    n = ary.shape[_axis('split_v2', axis, ary.shape)]
    if isinstance(indices_or_sections, (int, np.integer)):
        outs = invoke(OPS['split'], (ary,), {'num_outputs': int(indices_or_sections),
                                            'axis': axis, 'squeeze_axis': squeeze_axis})
        return list(outs)
    bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    if any(b > e for b, e in zip(bounds, bounds[1:])):
        raise ValueError(f"operator 'split_v2': indices {tuple(indices_or_sections)} "
                         f"must be increasing and within axis {axis} of shape "
                         f"{ary.shape}")
    parts = [slice_axis(ary, axis, b, e) for b, e in zip(bounds, bounds[1:])]
    return [p.squeeze(axis=axis) for p in parts] if squeeze_axis else parts


@register
class ShapeArrayOp(Op):
    name = 'shape_array'
    differentiable = False

    def infer(self, shapes, dtypes):
        return (len(shapes[0]),), np.dtype(np.int64)

    def forward(self, a):
        return _xp(a).asarray(a.shape, dtype=np.int64)


@register
class SizeArrayOp(Op):
    name = 'size_array'
    differentiable = False

    def infer(self, shapes, dtypes):
        return (1,), np.dtype(np.int64)

    def forward(self, a):
        return _xp(a).asarray([a.size], dtype=np.int64)


def shape_array(data, out=None, name=None):
    """``data``'s shape as an int64 array."""
    return into(out, invoke(OPS['shape_array'], (data,)), 'shape_array')


def size_array(data, out=None, name=None):
    """``data``'s number of elements as a 1-element int64 array."""
    return into(out, invoke(OPS['size_array'], (data,)), 'size_array')


def slice_axis(data, axis, begin, end, out=None, name=None):
    """``data[begin:end]`` along ``axis`` (``end=None``: to the end).

    >>> nd.slice_axis(nd.arange(6).reshape(2, 3), axis=1, begin=1, end=None)
    <BLANKLINE>
    [[1. 2.]
     [4. 5.]]
    <NDArray 2x2 @cpu(0)>
    """
    if end is None:
        end = data.shape[axis]
    return into(out, invoke(OPS['slice_axis'], (data,),
                            {'axis': axis, 'begin': begin, 'end': end}), 'slice_axis')


def slice(data, begin, end, step=(), out=None, name=None):  # noqa: A001 - MXNet's name
    """``data[begin[0]:end[0]:step[0], ...]`` as a new array; ``None`` means
    the default, axes past ``len(begin)`` are kept whole."""
    begin, end = tuple(begin), tuple(end)
    step = tuple(step) if step else (None,) * len(begin)
    return into(out, invoke(OPS['slice'], (data,), {'begin': begin, 'end': end,
                                                    'step': step}), 'slice')


crop = slice


def slice_like(data, shape_like, axes=(), out=None, name=None):
    """The leading part of ``data`` with ``shape_like``'s sizes on ``axes``
    (all axes when empty)."""
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    if not axes:
        if shape_like.ndim != data.ndim:
            raise ValueError(f"operator 'slice_like': shapes {data.shape} and "
                             f"{shape_like.shape} have different numbers of axes")
        axes = tuple(range(data.ndim))
    end = [None] * data.ndim
    for a in axes:
        a = _axis('slice_like', a, data.shape)
        if a >= shape_like.ndim or shape_like.shape[a] > data.shape[a]:
            raise ValueError(f"operator 'slice_like': cannot slice axis {a} of shape "
                             f"{data.shape} like shape {shape_like.shape}")
        end[a] = shape_like.shape[a]
    return slice(data, (0,) * data.ndim, end, out=out)
