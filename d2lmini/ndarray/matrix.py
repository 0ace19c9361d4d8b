"""Shape manipulation: reshape, transpose, expand/squeeze, tile, repeat, flip,
concat, stack, split, slicing.

MXNet keeps these in ``src/operator/tensor/matrix_op*``.
"""
import builtins

import numpy as np

from .ndarray import invoke
from .registry import OPS, Case, Op, register, norm_axis
from .op_utils import _axis, _common_dtype, _check_kwargs


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
class Reshape(Op):
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
        return [g.reshape(inputs[0].shape)]


@register
class Flatten(Op):
    """Collapse all axes but the first: (N, a, b, ...) -> (N, a*b*...)."""
    name = 'flatten'
    cases = (Case((2, 3, 4)),)

    def infer(self, shapes, dtypes):
        s = shapes[0]
        return ((s[0], int(np.prod(s[1:], dtype=np.int64))) if s else (1, 1)), dtypes[0]

    def forward(self, a):
        return a.reshape(a.shape[0], -1) if a.ndim else a.reshape(1, 1)

    def backward(self, g, inputs, out):
        return [g.reshape(inputs[0].shape)]


@register
class Transpose(Op):
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
        return a.transpose(axes)

    def backward(self, g, inputs, out, axes=None):
        inv = None if axes is None else tuple(np.argsort([a % g.ndim for a in axes]))
        return [g.transpose(inv) if inv is not None else g.transpose()]


@register
class SwapAxes(Op):
    name = 'swapaxes'
    cases = (Case((2, 3, 4), dim1=0, dim2=2),)

    def infer(self, shapes, dtypes, dim1=0, dim2=0):
        s = list(shapes[0])
        dim1, dim2 = _axis(self.name, dim1, s), _axis(self.name, dim2, s)
        s[dim1], s[dim2] = s[dim2], s[dim1]
        return tuple(s), dtypes[0]

    def forward(self, a, dim1=0, dim2=0):
        return np.swapaxes(a, dim1, dim2)

    def backward(self, g, inputs, out, dim1=0, dim2=0):
        return [invoke(self, (g,), {'dim1': dim1, 'dim2': dim2})]


@register
class ExpandDims(Op):
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
        return np.expand_dims(a, axis)

    def backward(self, g, inputs, out, axis):
        return [g.reshape(inputs[0].shape)]


@register
class Squeeze(Op):
    name = 'squeeze'
    cases = (Case((2, 1, 3)), Case((2, 1, 1), axis=1))

    def infer(self, shapes, dtypes, axis=None):
        s = shapes[0]
        axes = norm_axis(self.name, axis, len(s)) if axis is not None else \
            tuple(i for i, d in enumerate(s) if d == 1)
        for i in axes:
            if s[i] != 1:
                raise ValueError(f"operator 'squeeze': axis {i} of shape {s} is not 1")
        return tuple(d for i, d in enumerate(s) if i not in axes), dtypes[0]

    def forward(self, a, axis=None):
        return np.squeeze(a, axis=axis)

    def backward(self, g, inputs, out, axis=None):
        return [g.reshape(inputs[0].shape)]


@register
class Tile(Op):
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
        return np.tile(a, reps)

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
class Repeat(Op):
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
        return np.repeat(a, repeats, axis=axis)

    def backward(self, g, inputs, out, repeats, axis=None):
        x = inputs[0]
        if axis is None:
            return [g.reshape((-1, repeats)).sum(axis=1).reshape(x.shape)]
        ax = axis % x.ndim
        shape = x.shape[:ax] + (x.shape[ax], repeats) + x.shape[ax + 1:]
        return [g.reshape(shape).sum(axis=ax + 1)]


@register
class Flip(Op):
    name = 'flip'
    cases = (Case((3, 4), axis=1),)

    def infer(self, shapes, dtypes, axis):
        for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)):
            _axis(self.name, ax, shapes[0])
        return shapes[0], dtypes[0]

    def forward(self, a, axis):
        return np.flip(a, axis)

    def backward(self, g, inputs, out, axis):
        return [invoke(self, (g,), {'axis': axis})]


@register
class Concat(Op):
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
        return np.concatenate(arrays, axis=dim)

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
class Stack(Op):
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
        return np.stack(arrays, axis=axis)

    def backward(self, g, inputs, out, axis=0):
        return split(g, len(inputs), axis=axis, squeeze_axis=True) \
            if len(inputs) > 1 else [g.squeeze(axis=axis)]


@register
class Split(Op):
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
        parts = np.split(a, num_outputs, axis=axis)
        if squeeze_axis:
            parts = [p.squeeze(axis) for p in parts]
        return parts

    def backward(self, grads, inputs, outputs, num_outputs, axis=1, squeeze_axis=False):
        if squeeze_axis:
            return [invoke(OPS['stack'], tuple(grads), {'axis': axis})]
        return [invoke(OPS['concat'], tuple(grads), {'dim': axis})]


@register
class SliceAxis(Op):
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
        return a[tuple(idx)]

    def backward(self, g, inputs, out, axis, begin, end):
        x = inputs[0]
        return [invoke(OPS['_slice_backward'], (g,),
                       {'shape': x.shape, 'key': _axis_key(x.ndim, axis, begin, end)})]


def _axis_key(ndim, axis, begin, end):
    idx = [builtins.slice(None)] * ndim
    idx[axis] = builtins.slice(begin, end)
    return tuple(idx)


# === functional front ends ==========================================================
def reshape(data, shape, reverse=False):
    return invoke(OPS['reshape'], (data,), {'shape': tuple(shape), 'reverse': reverse})


def transpose(data, axes=None):
    return invoke(OPS['transpose'], (data,), {'axes': None if axes is None else tuple(axes)})


def swapaxes(data, dim1=0, dim2=0):
    return invoke(OPS['swapaxes'], (data,), {'dim1': dim1, 'dim2': dim2})


def flatten(data):
    return invoke(OPS['flatten'], (data,))


Flatten = flatten


def expand_dims(data, axis):
    return invoke(OPS['expand_dims'], (data,), {'axis': axis})


def squeeze(data, axis=None):
    return invoke(OPS['squeeze'], (data,), {'axis': axis})


def tile(data, reps):
    return invoke(OPS['tile'], (data,), {'reps': tuple(reps)})


def repeat(data, repeats, axis=None):
    return invoke(OPS['repeat'], (data,), {'repeats': repeats, 'axis': axis})


def flip(data, axis):
    return invoke(OPS['flip'], (data,), {'axis': axis})


reverse = flip


def concat(*data, dim=1, **kwargs):
    """Join arrays along ``dim`` (MXNet's default ``dim=1``)."""
    _check_kwargs('concat', kwargs, ('num_args',))
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if not data:
        raise ValueError('concat needs at least one array')
    return invoke(OPS['concat'], tuple(data), {'dim': dim})


concatenate = concat


def stack(*data, axis=0, **kwargs):
    _check_kwargs('stack', kwargs, ('num_args',))
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if not data:
        raise ValueError('stack needs at least one array')
    return invoke(OPS['stack'], tuple(data), {'axis': axis})


def split(data, num_outputs, axis=1, squeeze_axis=False):
    """Split into ``num_outputs`` equal parts (a list; a single array if 1)."""
    outs = invoke(OPS['split'], (data,),
                  {'num_outputs': num_outputs, 'axis': axis, 'squeeze_axis': squeeze_axis})
    return outs[0] if num_outputs == 1 else outs


def slice_axis(data, axis, begin, end):
    if end is None:
        end = data.shape[axis]
    return invoke(OPS['slice_axis'], (data,), {'axis': axis, 'begin': begin, 'end': end})


def slice(data, begin, end, step=None):       # noqa: A001 - MXNet's name
    """``data[begin[0]:end[0], begin[1]:end[1], ...]`` (None means the full range)."""
    step = step or (None,) * len(begin)
    return data[tuple(builtins.slice(b, e, s) for b, e, s in zip(begin, end, step))]
