"""Convolution: the ``Convolution`` op, its gradient ops, and the fused
convolution + relu that gluon's ``Conv2D(activation='relu')`` runs.

All of them run on im2col (ndarray/nn/im2col.py): the windows become the
columns of a matrix and the convolution ONE matrix product, a band of
output rows at a time; the result keeps the GEMM's CHWN layout, seen as
NCHW.
"""
import functools

import numpy as np

from ...base import _check_kwargs
from ..ndarray import invoke
from ..cpu_kernels import maximum0
from ..layout import chwn as _chwn, copyto as _copyto, transpose_into as _transpose_into
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import (_Geom, _channels_first, _channels_last, _float_dtype, _lift,
                      _matmul, _needs_grad, _result, _spatial, _tuple, _ws)
from .activation import _FROM_OUTPUT, activate_
from .im2col import _band, _bands, _col2im, _grouped, _im2col, _windows
from .pad import pad as _pad

__all__ = ['Convolution', '_conv_act']    # _conv_act: gluon's Conv2D calls F._conv_act


@functools.lru_cache(maxsize=512)
def _conv_geom(name, dshape, wshape, kernel, stride, dilate, pad, num_group):
    """Check a convolution's shapes (errors name the op) and size it."""
    if len(dshape) != 4:
        raise ValueError(f"operator '{name}': data must be 4-D (N, C, H, W), got "
                         f"shape {dshape}")
    if len(wshape) != 4:
        raise ValueError(f"operator '{name}': weight must be 4-D (num_filter, "
                         f"C/num_group, KH, KW), got shape {wshape}")
    kernel = _tuple(name, 'kernel', wshape[2:] if kernel is None else kernel, 2)
    stride = _tuple(name, 'stride', stride, 2)
    dilate = _tuple(name, 'dilate', dilate, 2)
    pad = _tuple(name, 'pad', pad, 2)
    if min(stride + dilate) < 1 or min(pad) < 0 or min(kernel) < 1:
        raise ValueError(f"operator '{name}': need kernel, stride, dilate >= 1 and "
                         f"pad >= 0, got kernel={kernel}, stride={stride}, "
                         f"dilate={dilate}, pad={pad}")
    n, c = dshape[:2]
    f = wshape[0]
    if c % num_group or f % num_group:
        raise ValueError(f"operator '{name}': channels ({c}) and num_filter ({f}) "
                         f"must be divisible by num_group ({num_group})")
    expect = (f, c // num_group) + kernel
    if tuple(wshape) != expect:
        raise ValueError(f"operator '{name}': weight shape {wshape} does not match "
                         f"data shape {dshape} with kernel={kernel}, num_group="
                         f"{num_group}: expected {expect}")
    g = _Geom(dshape, kernel, stride, dilate, pad)
    if g.OH < 1 or g.OW < 1:
        raise ValueError(f"operator '{name}': kernel {kernel} (dilate {dilate}) is "
                         f"larger than the padded input {(g.H + 2 * g.ph, g.W + 2 * g.pw)}"
                         f" of data shape {dshape}")
    return g


def _gemm_rows(f, k, groups, xp):
    """Rows to give the forward GEMM for ``f`` filters of ``k`` taps.

    OpenBLAS's float32 kernels work on blocks of 8 rows here, and a ragged
    last block runs on narrower edge kernels.  Zero rows up to a multiple of
    8, dropped afterwards, pay off in two cases (measured on 28,672 columns,
    padded against plain):

    * the ragged block has 5 to 7 rows and ``k >= 16``: 1.25-1.6x faster
      (6 x 25, the classic LeNet's first layer: 1.39x; 6 x 150: 1.98x;
      15 x 25: 1.25x); with 1 to 4 rows padding is slower (4 x 25: 0.86x)
      and with 9 taps there is nothing to gain (6 x 9: 1.00x);
    * a compute-bound GEMM (``f >= 8``, ``k >= 64``): a 50 x 500 by
      500 x 20736 product takes longer than a 56-row one (1.2x).
    """
    ragged = f % 8
    if xp is not np or groups != 1 or not ragged:
        return f
    if (ragged >= 5 and k >= 16) or (f >= 8 and k >= 64):
        return f + 8 - ragged
    return f


def _conv_forward(x, w, b, g, groups, act=None, pool=None, pool_type='avg',
                  keep=True):
    """The convolution (plus bias, plus ``act`` = 'relu' if given), returned
    as an (N, F, OH, OW) view of an (F, OH, OW, N) array: the GEMM's layout,
    kept as it is (see :func:`_chwn`).

    ``pool = (kh, kw)``: also the ``pool_type`` ('avg' or 'max') pooling of
    the result with that window and stride, computed band by band while
    each band is in the cache (the fused ops of ndarray/nn/fused.py);
    returns ``(y, pooled)``.  ``keep=False`` (max pooling only): ``y`` is
    not wanted, and ``(None, pooled)`` comes back.  Then each band is
    pooled straight from the GEMM's scratch output and the bias and relu
    are applied to the pooled values only, a quarter as many for a 2x2
    window: a max commutes with adding a constant and with a relu, so the
    values are those of the three ops in a row.
    """
    xp = _xp(x)
    f = w.shape[0]
    w2 = w.reshape(f, -1)
    fp = _gemm_rows(f, w2.shape[1], groups, xp)
    if fp != f:
        wp = _ws(xp, 'w_rows', (fp, w2.shape[1]), w.dtype)
        wp[:f] = w2
        wp[f:] = 0
        w2 = wp
    wg = _grouped(w2, groups)
    win = _windows(x, g)
    early = pool is not None and not keep          # pool first, then b and relu
    if early and (pool_type != 'max' or act not in (None, 'relu')):
        raise ValueError(f'keep=False needs max pooling and relu, not '
                         f'{pool_type} pooling and {act}')
    ypad = None if early else xp.empty((fp, g.OH, g.OW, g.N), x.dtype)
    y = None if early else ypad[:f]                # C-contiguous either way
    bias = None if b is None else b.reshape(f, 1)
    if pool is not None:
        kh, kw = pool
        pt = xp.empty((f, g.OH // kh, g.OW // kw, g.N), x.dtype)
    for rows in _bands(g, x.dtype, xp, fp, align=1 if pool is None else pool[0]):
        cols = _im2col(win, rows, g)
        if early:                                  # a scratch band, pooled now
            zb = _ws(xp, 'conv_rows', (fp, rows[1] - rows[0], g.OW, g.N), x.dtype)
            _matmul(xp, wg, _grouped(cols, groups),
                    _grouped(zb.reshape(fp, -1), groups))
            _pool_rows(zb[:f], rows, pt, pool, 'max')
            continue
        _matmul(xp, wg, _grouped(cols, groups), _grouped(_band(ypad, rows), groups))
        yb = _band(y, rows)                        # still in the cache:
        if bias is not None:
            yb += bias
        if act == 'relu':
            maximum0(yb, out=yb)
        if pool is not None:                       # ... and pool it
            _pool_rows(y[:, rows[0]:rows[1]], rows, pt, pool, pool_type)
    if early:
        if bias is not None:
            pt += bias.reshape(f, 1, 1, 1)
        if act == 'relu':
            maximum0(pt, out=pt)
        return None, pt.transpose(3, 0, 1, 2)
    if act not in (None, 'relu'):                  # threaded, over all of y
        activate_(y, act)
    yv = y.transpose(3, 0, 1, 2)
    if pool is not None:
        return yv, pt.transpose(3, 0, 1, 2)
    return yv


def _pool_rows(src, rows, out, pool, pool_type):
    """Pool ``src``, the ``(F, r1 - r0, OW, N)`` output rows ``rows = (r0,
    r1)``, into the rows of ``(F, PH, PW, N)`` ``out`` that its whole
    windows make, as Pooling does: taps in order, then / for 'avg'.
    ``r0`` is a multiple of the window height; rows past the last whole
    window are left out ('valid')."""
    xp = _xp(src)
    kh, kw = pool
    q0, q1 = rows[0] // kh, rows[1] // kh
    if q1 <= q0:
        return
    pw = out.shape[2]
    blk, dst = src[:, :(q1 - q0) * kh], out[:, q0:q1]
    taps = [blk[:, i::kh, j:pw * kw:kw] for i in range(kh) for j in range(kw)]
    combine = xp.maximum if pool_type == 'max' else xp.add
    if len(taps) > 1:                              # ((t0 + t1) + t2) + ...
        combine(taps[0], taps[1], out=dst)
    else:
        dst[...] = taps[0]
    for t in taps[2:]:
        combine(dst, t, out=dst)
    if pool_type == 'avg':
        dst /= float(kh * kw)


def _conv_grads(dy, g, groups, w=None, x=None, wshape=None, dy_bands=None,
                bias=False):
    """``dx`` (if ``w`` is given) and ``dW`` (if ``x`` is given) of a
    convolution, in one pass over the bands of output rows: each band's cols
    and dcols are used while they are in the cache.  ``dx`` is col2im of
    ``W.T @ dY``; ``dW = dY @ cols.T``.  ``dY`` is used in place if it is
    stored as (F, OH, OW, N) (it is when it comes from the layers above),
    and ``dx`` comes back stored like ``x``.

    ``dy_bands = (f, dtype, align, band(rows))`` instead of ``dy``: each
    band of ``dY``, ``(f, rows * OW * N)``, is made when it is needed (a
    fused op computes it from the layer above's gradient), so the whole
    ``dY`` never exists; bands start on multiples of ``align``.  ``bias``
    (with ``x``, one group): also the bias gradient, from a row of ones
    appended to ``cols``; then returns ``(dx, dW, db)``.
    """
    if dy_bands is None:
        xp = _xp(dy)
        f, dtype, align = dy.shape[1], dy.dtype, 1
        dyt = _chwn(dy)
        if dyt is None:
            dyt = _ws(xp, 'dy', (f, g.OH, g.OW, g.N), dy.dtype)
            _transpose_into(dy.reshape(g.N, -1), dyt.reshape(-1, g.N))

        def band_of(rows):
            return _band(dyt, rows)
    else:
        f, dtype, align, band_of = dy_bands
        xp = _xp(x if x is not None else w)
    dx = dw = None
    if x is not None:
        win = _windows(x, g)                         # recomputed, as MXNet does
        # dW.T = cols @ dY.T: this orientation of the GEMM is ~15% faster
        # with OpenBLAS than dY @ cols.T, and dW is small to transpose back.
        bias = bias and groups == 1
        dwt = xp.empty((groups, g.C * g.KH * g.KW // groups + bias, f // groups),
                       dtype)
        part = xp.empty_like(dwt)
    # dx is stored like x (a gradient takes its variable's layout): CHWN
    # inside a CNN, NCHW for a network's input.  Unknown x: CHWN.
    as_chwn = x is None or _chwn(x) is not None
    if w is not None:
        wt = _grouped(w.reshape(f, -1), groups).transpose(0, 2, 1)
        shape = (g.C, g.H + 2 * g.ph, g.W + 2 * g.pw, g.N)
        dxc = xp.empty(shape, dtype) if as_chwn and not (g.ph or g.pw) else \
            _ws(xp, 'dchwn', shape, dtype)           # else the result itself
        dxc.fill(0)
    for k, rows in enumerate(_bands(g, dtype, xp, align=align)):
        dy_band = _grouped(band_of(rows), groups)
        if x is not None:                            # dW = sum over bands
            cols = _grouped(_im2col(win, rows, g, ones=bias), groups)
            _matmul(xp, cols, dy_band.transpose(0, 2, 1), part if k else dwt)
            if k:
                dwt += part
        if w is not None:                            # (reuses the cols buffer)
            dcols = _ws(xp, 'cols', (g.C * g.KH * g.KW, dy_band.shape[2]),
                        dtype)
            _matmul(xp, wt, dy_band, _grouped(dcols, groups))
            _col2im(dcols, rows, dxc, g)
    if w is not None:
        if g.ph or g.pw:                             # crop the padding
            dxc = dxc[:, g.ph:g.ph + g.H, g.pw:g.pw + g.W]
            if as_chwn:
                dxc = xp.ascontiguousarray(dxc)
        dx = dxc.transpose(3, 0, 1, 2)
        if not as_chwn:
            dx = _copyto(xp.empty(dx.shape, dx.dtype), dx)
    if x is not None:
        if bias:
            db = dwt[0, -1].copy()
            dwt = dwt[:, :-1]
        dw = xp.ascontiguousarray(dwt.transpose(0, 2, 1)).reshape(wshape)
        if bias:
            return dx, dw, db
    return dx, dw


def _check_out_grad(name, dy, g, f):
    """The gradient ops' check: ``dy`` has the convolution output's shape."""
    if tuple(dy) != (g.N, f, g.OH, g.OW):
        raise ValueError(f"operator '{name}': output gradient shape {tuple(dy)} "
                         f"!= convolution output {(g.N, f, g.OH, g.OW)}")


@register
class ConvolutionOp(Op):
    """2-D convolution (cross-correlation, as in every DL framework), NCHW.

    ``data (N, C, H, W)``, ``weight (num_filter, C/num_group, KH, KW)``,
    optional ``bias (num_filter,)`` -> ``(N, num_filter, OH, OW)`` with
    ``OH = (H + 2*pad - dilate*(KH-1) - 1) // stride + 1``.
    """
    name = 'Convolution'
    cases = (Case((2, 3, 5, 5), (4, 3, 3, 3), (4,), kernel=(3, 3), num_filter=4),
             Case((2, 3, 6, 5), (4, 3, 3, 2), kernel=(3, 2), stride=(2, 1),
                  pad=(1, 1), num_filter=4),
             Case((1, 4, 6, 6), (6, 2, 2, 3), (6,), kernel=(2, 3), dilate=(2, 1),
                  pad=(0, 1), num_group=2, num_filter=6))

    def infer(self, shapes, dtypes, kernel=None, stride=(1, 1), dilate=(1, 1),
              pad=(0, 0), num_filter=None, num_group=1):
        d, w = tuple(shapes[0]), tuple(shapes[1])
        g = _conv_geom(self.name, d, w, kernel, stride, dilate, pad, num_group)
        f = w[0]
        if num_filter is not None and num_filter != f:
            raise ValueError(f"operator 'Convolution': num_filter={num_filter} but "
                             f"weight shape {w} has {f} filters")
        if len(shapes) == 3 and tuple(shapes[2]) != (f,):
            raise ValueError(f"operator 'Convolution': bias shape {shapes[2]} != "
                             f"({f},) for weight shape {w}")
        return (g.N, f, g.OH, g.OW), _float_dtype(self.name, dtypes)

    def forward(self, x, w, b=None, kernel=None, stride=(1, 1), dilate=(1, 1),
                pad=(0, 0), num_filter=None, num_group=1):
        g = _conv_geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                       num_group)
        return _conv_forward(x, w, b, g, num_group)

    def backward(self, dy, inputs, out, kernel=None, stride=(1, 1), dilate=(1, 1),
                 pad=(0, 0), num_filter=None, num_group=1):
        x, w = inputs[0], inputs[1]
        geom = {'kernel': kernel, 'stride': stride, 'dilate': dilate, 'pad': pad,
                'num_group': num_group}
        grads = [None, None]
        if _needs_grad(x) and _needs_grad(w):        # both in one pass
            grads = invoke(OPS['_conv_backward'], (dy, x, w), geom)
        elif _needs_grad(x):
            grads[0] = invoke(OPS['_conv_data_grad'], (dy, w),
                              dict(geom, data_shape=x.shape))
        elif _needs_grad(w):                         # e.g. the first layer
            grads[1] = invoke(OPS['_conv_weight_grad'], (dy, x),
                              dict(geom, weight_shape=w.shape))
        if len(inputs) == 3:
            grads.append(dy.sum(axis=(0, 2, 3)) if _needs_grad(inputs[2]) else None)
        return grads


@register
class ConvDataGradOp(Op):
    """``dx`` of a convolution from ``dy`` and ``weight``: GEMM, then col2im.

    (A "transposed convolution".)  Linear in both inputs, so its own gradient
    is a convolution and a weight gradient.
    """
    name = '_conv_data_grad'
    cases = (Case((2, 4, 3, 3), (4, 3, 3, 3), data_shape=(2, 3, 5, 5), kernel=(3, 3)),
             Case((2, 4, 3, 6), (4, 3, 3, 2), data_shape=(2, 3, 6, 5), kernel=(3, 2),
                  stride=(2, 1), pad=(1, 1)),
             Case((1, 6, 4, 6), (6, 2, 2, 3), data_shape=(1, 4, 6, 6), kernel=(2, 3),
                  dilate=(2, 1), pad=(0, 1), num_group=2))

    def infer(self, shapes, dtypes, data_shape, kernel=None, stride=(1, 1),
              dilate=(1, 1), pad=(0, 0), num_group=1):
        dy, w = tuple(shapes[0]), tuple(shapes[1])
        g = _conv_geom(self.name, tuple(data_shape), w, kernel, stride, dilate, pad,
                       num_group)
        _check_out_grad(self.name, dy, g, w[0])
        return tuple(data_shape), _float_dtype(self.name, dtypes)

    def forward(self, dy, w, data_shape, kernel=None, stride=(1, 1), dilate=(1, 1),
                pad=(0, 0), num_group=1):
        g = _conv_geom(self.name, tuple(data_shape), w.shape, kernel, stride, dilate,
                       pad, num_group)
        return _conv_grads(dy, g, num_group, w=w)[0]

    def backward(self, gx, inputs, out, data_shape, **geom):
        dy, w = inputs
        grads = [None, None]
        if _needs_grad(dy):       # d<gx, D(dy, w)>/d dy = conv(gx, w)
            grads[0] = invoke(OPS['Convolution'], (gx, w), geom)
        if _needs_grad(w):        # ... and d/dw = the weight gradient for (dy, gx)
            grads[1] = invoke(OPS['_conv_weight_grad'], (dy, gx),
                              dict(geom, weight_shape=w.shape))
        return grads


@register
class ConvWeightGradOp(Op):
    """``dW`` of a convolution from ``dy`` and ``data``: im2col, then one GEMM."""
    name = '_conv_weight_grad'
    cases = (Case((2, 4, 3, 3), (2, 3, 5, 5), weight_shape=(4, 3, 3, 3), kernel=(3, 3)),
             Case((2, 4, 3, 6), (2, 3, 6, 5), weight_shape=(4, 3, 3, 2), kernel=(3, 2),
                  stride=(2, 1), pad=(1, 1)),
             Case((1, 6, 4, 6), (1, 4, 6, 6), weight_shape=(6, 2, 2, 3), kernel=(2, 3),
                  dilate=(2, 1), pad=(0, 1), num_group=2))

    def infer(self, shapes, dtypes, weight_shape, kernel=None, stride=(1, 1),
              dilate=(1, 1), pad=(0, 0), num_group=1):
        dy, x = tuple(shapes[0]), tuple(shapes[1])
        w = tuple(weight_shape)
        g = _conv_geom(self.name, x, w, kernel, stride, dilate, pad, num_group)
        _check_out_grad(self.name, dy, g, w[0])
        return w, _float_dtype(self.name, dtypes)

    def forward(self, dy, x, weight_shape, kernel=None, stride=(1, 1), dilate=(1, 1),
                pad=(0, 0), num_group=1):
        w = tuple(weight_shape)
        g = _conv_geom(self.name, x.shape, w, kernel, stride, dilate, pad, num_group)
        return _conv_grads(dy, g, num_group, x=x, wshape=w)[1]

    def backward(self, gw, inputs, out, weight_shape, **geom):
        dy, x = inputs
        grads = [None, None]
        if _needs_grad(dy):       # d<gw, Wg(dy, x)>/d dy = conv(x, gw)
            grads[0] = invoke(OPS['Convolution'], (x, gw), geom)
        if _needs_grad(x):        # ... and d/dx = the data gradient for (dy, gw)
            grads[1] = invoke(OPS['_conv_data_grad'], (dy, gw),
                              dict(geom, data_shape=x.shape))
        return grads


@register
class ConvBackwardOp(Op):
    """Both ``(dx, dW)`` of a convolution from ``(dy, data, weight)``, in one
    pass (what ``ConvolutionOp.backward`` uses when both are needed)."""
    name = '_conv_backward'
    nout = 2
    cases = (Case((2, 4, 3, 3), (2, 3, 5, 5), (4, 3, 3, 3), kernel=(3, 3)),
             Case((1, 6, 4, 6), (1, 4, 6, 6), (6, 2, 2, 3), kernel=(2, 3),
                  dilate=(2, 1), pad=(0, 1), num_group=2))

    def infer(self, shapes, dtypes, kernel=None, stride=(1, 1), dilate=(1, 1),
              pad=(0, 0), num_group=1):
        dy, x, w = (tuple(s) for s in shapes)
        g = _conv_geom(self.name, x, w, kernel, stride, dilate, pad, num_group)
        _check_out_grad(self.name, dy, g, w[0])
        dt = _float_dtype(self.name, dtypes)
        return [(x, dt), (w, dt)]

    def forward(self, dy, x, w, kernel=None, stride=(1, 1), dilate=(1, 1), pad=(0, 0),
                num_group=1):
        g = _conv_geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                       num_group)
        return list(_conv_grads(dy, g, num_group, w=w, x=x, wshape=w.shape))

    def backward(self, ograds, inputs, outputs, **geom):
        gx, gw = ograds
        dy, x, w = inputs
        ddy = None
        if _needs_grad(dy):       # the two linear maps of dy, added
            ddy = invoke(OPS['Convolution'], (gx, w), geom) + \
                invoke(OPS['Convolution'], (x, gw), geom)
        dx = invoke(OPS['_conv_data_grad'], (dy, gw),
                    dict(geom, data_shape=x.shape)) if _needs_grad(x) else None
        dw = invoke(OPS['_conv_weight_grad'], (dy, gx),
                    dict(geom, weight_shape=w.shape)) if _needs_grad(w) else None
        return [ddy, dx, dw]


@register
class ConvolutionActOp(Op):
    """``Activation(Convolution(x, w, b), act_type)`` as ONE op.

    A relu is applied to each band of the GEMM's output while it is still
    in the CPU cache, instead of in a second pass over the largest array of
    a CNN (LeNet's first layer: 14 MB per batch of 256); the other
    activations run on every core over the whole output right after the
    GEMM (``cpu_kernels``: one band is too small to split).  The backward
    pass takes the derivative from the output alone (MXNet's MKL-DNN
    backend fuses the same pair).  gluon's ``Conv2D(...,
    activation=...)`` runs this op; the values are those of the two ops in
    sequence.
    """
    name = '_conv_act'
    cases = (Case((2, 3, 5, 5), (4, 3, 3, 3), (4,), kernel=(3, 3), num_filter=4,
                  act_type='relu'),
             Case((2, 3, 6, 5), (4, 3, 3, 2), kernel=(3, 2), stride=(2, 1),
                  pad=(1, 1), num_filter=4, act_type='relu')) + tuple(
        Case((2, 3, 5, 5), (4, 3, 3, 3), (4,), kernel=(3, 3), num_filter=4,
             act_type=a) for a in ('sigmoid', 'tanh', 'softrelu', 'softsign'))

    def infer(self, shapes, dtypes, act_type='relu', **conv):
        if act_type not in _FROM_OUTPUT:
            raise ValueError(f"operator '{self.name}': act_type={act_type!r} is not "
                             f"one of {sorted(_FROM_OUTPUT)}")
        return type(OPS['Convolution']).infer(self, shapes, dtypes, **conv)

    def forward(self, x, w, b=None, act_type='relu', kernel=None, stride=(1, 1),
                dilate=(1, 1), pad=(0, 0), num_filter=None, num_group=1):
        g = _conv_geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                       num_group)
        return _conv_forward(x, w, b, g, num_group, act=act_type)

    def backward(self, dy, inputs, out, act_type='relu', **conv):
        dz = _FROM_OUTPUT[act_type](dy, None, out)    # through the activation
        return OPS['Convolution'].backward(dz, inputs, out, **conv)


_CONV_IGNORED = ('workspace', 'cudnn_tune', 'cudnn_off')


def Convolution(data, weight, bias=None, kernel=None, stride=None, dilate=None,
                pad=None, num_filter=None, num_group=1, no_bias=False, layout=None,
                out=None, name=None, **kwargs):
    """N-D convolution: 1-D on ``(N, C, W)``, 2-D on ``(N, C, H, W)``, 3-D on
    ``(N, C, D, H, W)``; or channels last with ``layout='NWC'``, ``'NHWC'``,
    ``'NDHWC'`` (the weight then is ``(num_filter, *kernel, C/num_group)``).

    ``kernel``, ``stride``, ``dilate``, ``pad`` take ints or tuples;
    ``bias`` is used unless ``no_bias`` (or it is None).

    >>> x, w = nd.ones((1, 1, 4, 4)), nd.ones((2, 1, 3, 3))
    >>> nd.Convolution(x, w, kernel=3, num_filter=2, no_bias=True).shape
    (1, 2, 2, 2)
    """
    _check_kwargs(Convolution, kwargs, _CONV_IGNORED)
    return _result(_convolution('Convolution', data, weight, bias, kernel, stride,
                                dilate, pad, num_filter, num_group, no_bias,
                                layout), out)


def _conv_act(data, weight, bias=None, act_type='relu', kernel=None, stride=None,
              dilate=None, pad=None, num_filter=None, num_group=1, no_bias=False,
              layout=None, name=None):
    """``Activation(Convolution(...), act_type)`` as one fused op (2-D):
    what gluon's ``Conv2D(activation=...)`` runs."""
    return _convolution('_conv_act', data, weight, bias, kernel, stride, dilate,
                        pad, num_filter, num_group, no_bias, layout,
                        act_type=act_type)


def _conv_attrs(name, n, kernel, stride, dilate, pad):
    return {'kernel': _tuple(name, 'kernel', kernel, n),
            'stride': _tuple(name, 'stride', 1 if stride is None else stride, n),
            'dilate': _tuple(name, 'dilate', 1 if dilate is None else dilate, n),
            'pad': _tuple(name, 'pad', 0 if pad is None else pad, n)}


def _lift_attrs(attrs):
    """1-D attributes as those of a 2-D op of height 1."""
    return {k: ((0,) if k in ('pad', 'adj') else (1,)) + v if isinstance(v, tuple)
            else v for k, v in attrs.items()}


def _convolution(op, data, weight, bias, kernel, stride, dilate, pad, num_filter,
                 num_group, no_bias, layout, **extra):
    if kernel is None or num_filter is None:
        raise TypeError("Convolution() needs the keywords 'kernel' and 'num_filter'")
    n, last = _spatial('Convolution', data, layout)
    if last:
        res = _convolution(op, _channels_first(data), _channels_first(weight), bias,
                           kernel, stride, dilate, pad, num_filter, num_group,
                           no_bias, None, **extra)
        return _channels_last(res)
    if op != 'Convolution' and n != 2:
        raise ValueError(f"operator '{op}': 2-D only, got data shape {data.shape}")
    if weight.ndim != n + 2:
        raise ValueError(f"operator 'Convolution': {n}-D weight must be {n + 2}-D "
                         f"(num_filter, C/num_group, *kernel), got shape {weight.shape}")
    attrs = dict(_conv_attrs('Convolution', n, kernel, stride, dilate, pad),
                 num_filter=int(num_filter), num_group=int(num_group))
    bias = None if no_bias else bias
    if n == 3:
        return _conv3d(data, weight, bias, attrs)
    if n == 1:
        attrs = _lift_attrs(attrs)
        data, weight = _lift(data), _lift(weight)
    args = (data, weight) if bias is None else (data, weight, bias)
    res = invoke(OPS[op], args, dict(attrs, **extra))
    if n == 1:
        res = res.reshape((res.shape[0], res.shape[1], res.shape[3]))
    return res


def _conv3d(data, weight, bias, attrs):
    """A 3-D convolution as a sum of 2-D ones, one per depth tap of the kernel.

    Output depth ``o`` is ``sum_t conv2d(x[:, :, o*sd + t*dd], w[:, :, t])``:
    for each tap ``t`` the input depths it meets are one strided slice,
    folded into the batch, so each tap is ONE 2-D convolution (the fast
    im2col path above).  Built of recorded ops (pad, slice, transpose,
    Convolution, add), so every gradient, of any order, comes with it.
    """
    (kd, kh, kw), (sd, sh, sw) = attrs['kernel'], attrs['stride']
    (dd, dh, dw), (pd, ph, pw) = attrs['dilate'], attrs['pad']
    f, g = attrs['num_filter'], attrs['num_group']
    n, c, d, h, w = data.shape
    expect = (f, c // g, kd, kh, kw)
    if c % g or f % g or tuple(weight.shape) != expect:
        raise ValueError(f"operator 'Convolution': weight shape {weight.shape} does not "
                         f"match data shape {data.shape} with kernel={attrs['kernel']}, "
                         f"num_filter={f}, num_group={g}: expected {expect}")
    od = (d + 2 * pd - dd * (kd - 1) - 1) // sd + 1
    if od < 1 or min(attrs['stride'] + attrs['dilate']) < 1:
        raise ValueError(f"operator 'Convolution': kernel {attrs['kernel']} (dilate "
                         f"{attrs['dilate']}, stride {attrs['stride']}) does not fit "
                         f"data shape {data.shape} with pad {attrs['pad']}")
    if pd:
        data = _pad(data, mode='constant', pad_width=(0, 0, 0, 0, pd, pd, 0, 0, 0, 0))
    plane = {'kernel': (kh, kw), 'stride': (sh, sw), 'dilate': (dh, dw),
             'pad': (ph, pw), 'num_filter': f, 'num_group': g}
    out = None
    for t in range(kd):
        start = t * dd
        xs = data[:, :, start:start + sd * (od - 1) + 1:sd]
        xs = xs.transpose((0, 2, 1, 3, 4)).reshape((n * od, c, h, w))
        y = invoke(OPS['Convolution'], (xs, weight[:, :, t]), plane)
        out = y if out is None else out + y
    out = out.reshape((n, od) + out.shape[1:]).transpose((0, 2, 1, 3, 4))
    if bias is not None:
        out = out + bias.reshape((1, f, 1, 1, 1))
    return out
