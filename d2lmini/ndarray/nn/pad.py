"""``pad``: MXNet's ``Pad`` operator (constant, edge or reflect borders).

MXNet's rules, kept as they are: ``data`` is 4-D or 5-D, ``pad_width`` has
two numbers (before, after) per axis, and the batch and channel axes are not
padded (its first four numbers are 0).  ``reflect`` mirrors without
repeating the edge (NumPy's ``'reflect'``), so each pad must be smaller than
its axis.

The gradient is the adjoint of the padding: crop the border off
('constant'), or add each border cell back onto the cell it copies ('edge',
'reflect').  It is an op of its own, ``_pad_backward``, whose gradient is
``pad`` again.
"""
from ...base import _check_kwargs
from ..ndarray import invoke
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import _result

__all__ = ['pad', 'Pad']

_MODES = ('constant', 'edge', 'reflect')


def _pairs(name, shape, mode, pad_width):
    """Check MXNet's rules; ``pad_width`` as ``((before, after), ...)``."""
    if mode not in _MODES:
        raise ValueError(f"operator '{name}': mode={mode!r} is not one of {_MODES}")
    if len(shape) not in (4, 5):
        raise ValueError(f"operator '{name}': data must be 4-D or 5-D, got shape "
                         f"{tuple(shape)}")
    if pad_width is None or len(pad_width) != 2 * len(shape):
        raise ValueError(f"operator '{name}': pad_width needs {2 * len(shape)} "
                         f"numbers (before, after for each axis of data shape "
                         f"{tuple(shape)}), got {pad_width!r}")
    pw = tuple(int(p) for p in pad_width)
    if any(pw[:4]) or min(pw) < 0:
        raise ValueError(f"operator '{name}': pad_width={pw}: the batch and channel "
                         f"axes cannot be padded (its first four numbers must be 0) "
                         f"and no pad can be negative")
    pairs = tuple(zip(pw[::2], pw[1::2]))
    if mode == 'reflect':
        for ax, ((b, a), n) in enumerate(zip(pairs, shape)):
            if b >= n or a >= n:
                raise ValueError(f"operator '{name}': reflect padding {(b, a)} of axis "
                                 f"{ax} must be smaller than its size {n} (data shape "
                                 f"{tuple(shape)})")
    return pairs


def _axis_key(ndim, ax, s):
    return (slice(None),) * ax + (s,)


def _unpad(g, pairs, mode):
    """The adjoint of ``numpy.pad(x, pairs, mode)`` applied to ``g``."""
    xp = _xp(g)
    for ax, (b, a) in enumerate(pairs):
        if not (b or a):
            continue
        n = g.shape[ax] - b - a
        key = lambda s: _axis_key(g.ndim, ax, s)       # noqa: E731
        core = g[key(slice(b, b + n))].copy()
        if mode == 'edge':
            if b:
                core[key(slice(0, 1))] += g[key(slice(0, b))].sum(axis=ax, keepdims=True)
            if a:
                core[key(slice(n - 1, n))] += g[key(slice(b + n, None))].sum(
                    axis=ax, keepdims=True)
        elif mode == 'reflect':
            # out[j] = x[b - j] for j < b; out[b + n + i] = x[n - 2 - i] for i < a
            if b:
                core[key(slice(1, b + 1))] += xp.flip(g[key(slice(0, b))], axis=ax)
            if a:
                core[key(slice(n - 1 - a, n - 1))] += xp.flip(
                    g[key(slice(b + n, None))], axis=ax)
        g = core
    return g


@register
class PadOp(Op):
    """Pads the spatial axes of 4-D/5-D ``data`` (MXNet's ``Pad``)."""
    name = 'pad'
    cases = (Case((2, 2, 3, 4), mode='constant', pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                  constant_value=0.5),
             Case((1, 2, 3, 4), mode='edge', pad_width=(0, 0, 0, 0, 2, 1, 1, 3)),
             Case((1, 2, 3, 4), mode='reflect', pad_width=(0, 0, 0, 0, 2, 1, 1, 3)),
             Case((1, 1, 3, 3, 4), mode='reflect',
                  pad_width=(0, 0, 0, 0, 1, 2, 2, 1, 3, 1)),
             Case((1, 1, 2, 3, 2), mode='edge', pad_width=(0, 0, 0, 0, 1, 1, 2, 0, 0, 3)))

    def infer(self, shapes, dtypes, mode='constant', pad_width=None,
              constant_value=0.0):
        pairs = _pairs(self.name, shapes[0], mode, pad_width)
        return tuple(n + b + a for n, (b, a) in zip(shapes[0], pairs)), dtypes[0]

    def forward(self, x, mode='constant', pad_width=None, constant_value=0.0):
        pairs = _pairs(self.name, x.shape, mode, pad_width)
        if mode == 'constant':
            return _xp(x).pad(x, pairs, mode='constant', constant_values=constant_value)
        return _xp(x).pad(x, pairs, mode=mode)

    def backward(self, g, inputs, out, mode='constant', pad_width=None,
                 constant_value=0.0):
        return [invoke(OPS['_pad_backward'], (g,), {'mode': mode,
                                                    'pad_width': pad_width})]


@register
class PadBackwardOp(Op):
    """The gradient of ``pad``: borders cropped, or folded back onto the cells
    they copy.  Linear; its own gradient is ``pad`` with zeros."""
    name = '_pad_backward'
    cases = (Case((2, 2, 6, 7), mode='constant', pad_width=(0, 0, 0, 0, 1, 2, 2, 1)),
             Case((1, 2, 6, 8), mode='edge', pad_width=(0, 0, 0, 0, 2, 1, 1, 3)),
             Case((1, 2, 6, 8), mode='reflect', pad_width=(0, 0, 0, 0, 2, 1, 1, 3)))

    def infer(self, shapes, dtypes, mode='constant', pad_width=None):
        pw = tuple(pad_width or ())
        shape = tuple(n - b - a for n, b, a in zip(shapes[0], pw[::2], pw[1::2]))
        _pairs(self.name, shape, mode, pad_width)
        return shape, dtypes[0]

    def forward(self, g, mode='constant', pad_width=None):
        pw = tuple(pad_width)
        return _unpad(g, tuple(zip(pw[::2], pw[1::2])), mode)

    def backward(self, gg, inputs, out, mode='constant', pad_width=None):
        return [invoke(OPS['pad'], (gg,), {'mode': mode, 'pad_width': pad_width,
                                           'constant_value': 0.0})]


def pad(data, mode='constant', pad_width=None, constant_value=0.0, out=None,
        name=None, **kwargs):
    """Pads the spatial axes of a 4-D or 5-D array (MXNet's ``nd.pad``).

    ``pad_width``: (before, after) for every axis, flattened; the first four
    (batch and channel axes) must be 0.  ``mode``: 'constant' (with
    ``constant_value``), 'edge' or 'reflect'.

    >>> nd.pad(nd.ones((1, 1, 2, 2)), mode='constant',
    ...        pad_width=(0, 0, 0, 0, 1, 1, 1, 1)).shape
    (1, 1, 4, 4)
    """
    _check_kwargs(pad, kwargs)
    attrs = {'mode': mode,
             'pad_width': None if pad_width is None else tuple(int(p) for p in pad_width),
             'constant_value': float(constant_value)}
    return _result(invoke(OPS['pad'], (data,), attrs), out)


Pad = pad
