"""``Pooling``: max / average / sum over sliding windows, and its gradient."""
import functools

import numpy as np

from ...base import _check_kwargs
from ..ndarray import invoke
from ..layout import as_layout as _as_layout, empty_as as _empty_as
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import (_Geom, _channels_first, _channels_last, _float_dtype, _lift,
                      _result, _spatial, _tap, _tuple)

__all__ = ['Pooling']


_POOL_TYPES = ('max', 'avg', 'sum')


@functools.lru_cache(maxsize=512)
def _pool_geom(dshape, kernel, pool_type, global_pool, stride, pad, convention):
    name = 'Pooling'
    if len(dshape) != 4:
        raise ValueError(f"operator '{name}': data must be 4-D (N, C, H, W), got "
                         f"shape {dshape}")
    if pool_type not in _POOL_TYPES:
        raise ValueError(f"operator '{name}': pool_type={pool_type!r} is not one of "
                         f"{_POOL_TYPES}")
    if convention not in ('valid', 'full'):
        raise ValueError(f"operator '{name}': pooling_convention={convention!r}; "
                         f"supported: 'valid' (floor) and 'full' (ceil)")
    if global_pool:
        kernel, stride, pad = dshape[2:], (1, 1), (0, 0)
    elif kernel is None:
        raise ValueError(f"operator '{name}': kernel is required unless "
                         f"global_pool=True")
    kernel = _tuple(name, 'kernel', kernel, 2)
    stride = _tuple(name, 'stride', stride, 2)
    pad = _tuple(name, 'pad', pad, 2)
    g = _Geom(dshape, kernel, stride, (1, 1), pad, ceil=convention == 'full')
    if g.OH < 1 or g.OW < 1 or min(kernel + stride) < 1:
        raise ValueError(f"operator '{name}': kernel {kernel} (stride {stride}) does "
                         f"not fit the padded input {(g.H + 2 * g.ph, g.W + 2 * g.pw)}"
                         f" of data shape {dshape}")
    return g


@functools.lru_cache(maxsize=512)
def _pool_divisor(g, count_include_pad):
    """Per-output window sizes for 'avg', as MXNet (and PyTorch) count them.

    With ``count_include_pad`` a window counts its padding but not what lies
    past it ('full' windows near the end); without, only real pixels.
    """
    def sizes(n_out, s, k, p, size):
        start = np.arange(n_out) * s - p
        end = np.minimum(start + k, size + p)
        if count_include_pad:
            return end - start
        return np.minimum(end, size) - np.maximum(start, 0)
    d = np.outer(sizes(g.OH, g.sh, g.KH, g.ph, g.H), sizes(g.OW, g.sw, g.KW, g.pw, g.W))
    return float(d.flat[0]) if (d == d.flat[0]).all() else d


def _pool_padded(x, g, fill):
    """``x`` inside a border of ``fill`` wide enough for every window."""
    if g.Hp == g.H and g.Wp == g.W:
        return x
    buf = _empty_as(_xp(x), (g.N, g.C, g.Hp, g.Wp), x)
    buf.fill(fill)
    buf[:, :, g.ph:g.ph + g.H, g.pw:g.pw + g.W] = x
    return buf


def _low(dtype):
    # MXNet pads max pooling with the lowest finite value, not -inf.
    return np.finfo(dtype).min if np.dtype(dtype).kind == 'f' else np.iinfo(dtype).min


def _pool_key(dshape, kernel, pool_type, global_pool, stride, pad, convention):
    """:func:`_pool_geom` with hashable arguments (it is cached)."""
    return _pool_geom(tuple(dshape), None if kernel is None else tuple(kernel),
                      pool_type, bool(global_pool), tuple(stride), tuple(pad),
                      convention)


@register
class PoolingOp(Op):
    """Max / average / sum pooling over 2-D windows, NCHW.

    MXNet's defaults: ``stride=(1, 1)``, ``pad=(0, 0)``,
    ``pooling_convention='valid'`` (floor; ``'full'`` is ceil),
    ``count_include_pad=True``.  ``global_pool`` pools each whole map.
    """
    name = 'Pooling'
    cases = (Case((2, 3, 4, 4), kernel=(2, 2), stride=(2, 2)),
             Case((1, 2, 5, 5), kernel=(3, 3), stride=(2, 2), pad=(1, 1)),
             Case((1, 2, 6, 6), kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                  pooling_convention='full'),
             Case((1, 2, 6, 6), kernel=(3, 2), stride=(2, 2), pad=(1, 1),
                  pool_type='avg', pooling_convention='full', count_include_pad=False),
             Case((1, 2, 6, 6), kernel=(3, 2), stride=(2, 2), pad=(1, 1),
                  pool_type='avg', pooling_convention='full'),
             Case((2, 2, 5, 5), kernel=(3, 2), stride=(1, 2), pad=(1, 0),
                  pool_type='avg'),
             Case((1, 2, 4, 5), kernel=(2, 2), pool_type='sum'),
             Case((2, 3, 3, 4), global_pool=True),
             Case((2, 3, 3, 4), global_pool=True, pool_type='avg'))

    def infer(self, shapes, dtypes, kernel=None, pool_type='max', global_pool=False,
              stride=(1, 1), pad=(0, 0), pooling_convention='valid',
              count_include_pad=True):
        g = _pool_key(shapes[0], kernel, pool_type, global_pool, stride, pad,
                      pooling_convention)
        return (g.N, g.C, g.OH, g.OW), _float_dtype(self.name, dtypes)

    def forward(self, x, kernel=None, pool_type='max', global_pool=False,
                stride=(1, 1), pad=(0, 0), pooling_convention='valid',
                count_include_pad=True):
        xp = _xp(x)
        if global_pool:
            reduce = {'max': x.max, 'avg': x.mean, 'sum': x.sum}[pool_type]
            return reduce(axis=(2, 3), keepdims=True).astype(x.dtype, copy=False)
        g = _pool_key(x.shape, kernel, pool_type, global_pool, stride, pad,
                      pooling_convention)
        src = _pool_padded(x, g, _low(x.dtype) if pool_type == 'max' else 0)
        combine = xp.maximum if pool_type == 'max' else xp.add
        y = _empty_as(xp, (g.N, g.C, g.OH, g.OW), x)     # x's memory order
        y[...] = _tap(src, 0, 0, g, 2)
        for i in range(g.KH):                 # one pass per kernel tap
            for j in range(g.KW):
                if i or j:
                    combine(y, _tap(src, i, j, g, 2), out=y)
        if pool_type == 'avg':
            d = _pool_divisor(g, bool(count_include_pad))
            y /= d if isinstance(d, float) else xp.asarray(d, dtype=x.dtype)
        return y

    def backward(self, dy, inputs, out, **attrs):
        return [invoke(OPS['_pool_backward'], (dy, inputs[0], out), attrs)]


@register
class PoolBackwardOp(Op):
    """``dx`` of Pooling from ``(dy, x, y)``.

    Max: each window's gradient goes to its first maximum in scan order (as
    MXNet and PyTorch do), found by comparing every tap with ``y``.
    Avg/sum: each tap adds ``dy`` (divided by the window size) back.
    """
    name = '_pool_backward'
    differentiable = False

    def infer(self, shapes, dtypes, **attrs):
        return tuple(shapes[1]), dtypes[1]

    def forward(self, dy, x, y, kernel=None, pool_type='max', global_pool=False,
                stride=(1, 1), pad=(0, 0), pooling_convention='valid',
                count_include_pad=True):
        xp = _xp(x)
        n, c, h, w = x.shape
        if global_pool:
            if pool_type == 'max':
                first = x.reshape(n, c, -1).argmax(axis=2)[..., None]
                hit = xp.arange(h * w) == first
                return (hit * dy.reshape(n, c, 1)).astype(x.dtype).reshape(x.shape)
            dx = xp.empty_like(x)
            dx[...] = dy / (h * w) if pool_type == 'avg' else dy
            return dx
        g = _pool_key(x.shape, kernel, pool_type, global_pool, stride, pad,
                      pooling_convention)
        # When the windows tile x exactly (stride == kernel, no padding, no
        # leftover rows), each pixel belongs to one tap: write, don't add.
        tiles = (g.sh, g.sw) == (g.KH, g.KW) and not (g.ph or g.pw) and \
            (g.OH * g.KH, g.OW * g.KW) == (h, w)
        dxp = _empty_as(xp, (n, c, g.Hp, g.Wp), x)       # x's memory order
        if not tiles:
            dxp.fill(0)
        dy = _as_layout(dy, x)
        taps = [(i, j) for i in range(g.KH) for j in range(g.KW)]
        if pool_type == 'max':
            src = _pool_padded(x, g, _low(x.dtype))
            taken = None
            for k, (i, j) in enumerate(taps):
                eq = _tap(src, i, j, g, 2) == y
                if taken is None:             # the first tap wins its ties
                    hit = taken = eq          # (taken is updated after hit's use)
                else:                         # a later tap: only if none before
                    hit = eq > taken
                    if k < len(taps) - 1:
                        taken |= eq
                v = _tap(dxp, i, j, g, 2)
                if tiles:
                    xp.multiply(dy, hit, out=v)
                else:
                    xp.add(v, dy * hit, out=v)
        else:
            gd = dy
            if pool_type == 'avg':
                d = _pool_divisor(g, bool(count_include_pad))
                gd = dy / (d if isinstance(d, float) else xp.asarray(d, dtype=dy.dtype))
            for i, j in taps:
                v = _tap(dxp, i, j, g, 2)
                if tiles:
                    v[...] = gd
                else:
                    xp.add(v, gd, out=v)
        if dxp.shape == x.shape:
            return dxp
        return _as_layout(dxp[:, :, g.ph:g.ph + h, g.pw:g.pw + w], x, copy=True)


def Pooling(data, kernel=None, pool_type='max', global_pool=False, stride=None,
            pad=None, pooling_convention='valid', count_include_pad=True, layout=None,
            out=None, name=None, **kwargs):
    """Max/avg/sum pooling over 1, 2 or 3 spatial axes (MXNet defaults:
    ``stride=1``, ``pad=0``, 'valid'); channels first (NCW, NCHW, NCDHW) or,
    with ``layout=``, last (NWC, NHWC, NDHWC).

    >>> nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=2, stride=2).shape
    (1, 1, 2, 2)
    """
    _check_kwargs(Pooling, kwargs, ('cudnn_off', 'p_value'))
    n, last = _spatial('Pooling', data, layout)
    if kernel is None and not global_pool:
        raise TypeError("Pooling() needs 'kernel' (or global_pool=True)")
    attrs = {'kernel': None if kernel is None else _tuple('Pooling', 'kernel', kernel, n),
             'pool_type': pool_type, 'global_pool': bool(global_pool),
             'stride': _tuple('Pooling', 'stride', 1 if stride is None else stride, n),
             'pad': _tuple('Pooling', 'pad', 0 if pad is None else pad, n),
             'pooling_convention': pooling_convention,
             'count_include_pad': bool(count_include_pad)}
    if last:
        data = _channels_first(data)
    if n == 3:
        res = _pool3d(data, attrs)
    elif n == 1:
        for k in ('kernel', 'stride', 'pad'):
            if attrs[k] is not None:
                attrs[k] = ((0,) if k == 'pad' else (1,)) + attrs[k]
        res = invoke(OPS['Pooling'], (_lift(data),), attrs)
        res = res.reshape((res.shape[0], res.shape[1], res.shape[3]))
    else:
        res = invoke(OPS['Pooling'], (data,), attrs)
    return _result(_channels_last(res) if last else res, out)


def _pool3d(data, attrs):
    """3-D pooling as two 2-D ones: over (H, W) with the depth folded into the
    channels, then over D with a ``(KD, 1)`` window.

    Exact for every pool type: a max over a box is the max over D of the
    maxima over (H, W); the window sizes that divide an average (with or
    without the padding) are products of one size per axis.  Max gradients
    go to the first maximum in (d, h, w) order, as MXNet's.
    """
    n, c, d, h, w = data.shape
    if attrs['global_pool']:
        res = invoke(OPS['Pooling'], (data.reshape((n, c, d, h * w)),), attrs)
        return res.reshape((n, c, 1, 1, 1))
    (kd, kh, kw), (sd, sh, sw), (pd, ph, pw) = (attrs[k] for k in ('kernel', 'stride',
                                                                    'pad'))
    y = invoke(OPS['Pooling'], (data.reshape((n, c * d, h, w)),),
               dict(attrs, kernel=(kh, kw), stride=(sh, sw), pad=(ph, pw)))
    oh, ow = y.shape[2:]
    y = invoke(OPS['Pooling'], (y.reshape((n, c, d, oh * ow)),),
               dict(attrs, kernel=(kd, 1), stride=(sd, 1), pad=(pd, 0)))
    return y.reshape((n, c, y.shape[2], oh, ow))
