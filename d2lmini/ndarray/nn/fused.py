"""Fused operators that only a graph can use: ``conv -> relu -> pool``.

Run one at a time (imperatively), a convolution cannot know that a pooling
comes next.  A traced graph can: ``d2lmini.symbol.graph`` replaces the
pair ``_conv_act`` (convolution + relu) -> ``Pooling(k x k, stride k)`` by
one op, which computes the same values with fewer passes over the
convolution's output, the biggest array of a CNN (LeNet's first layer:
14 MB for a batch of 256).  Forward, the pooling reads each band of the
output right after the GEMM wrote it, still in the cache.

Average pooling (:class:`ConvActAvgPoolOp`), backward, separately, is
three passes over the output's gradient:

* the pooling backward writes ``dy`` (each pooled gradient, k*k times),
* the relu backward reads ``dy`` and ``y`` and writes ``dy * (y > 0)``,
* the bias gradient reads it once more (a sum over N, H, W).

Fused (:class:`AvgPoolReluGradOp`), the three happen band by band while each
band is in the CPU cache: one write of ``dy``, one read of ``y``.

Max pooling (:class:`ConvActMaxPoolOp`) gains most where nothing is
recorded: a max commutes with adding the bias and with the relu, so the
graph's inference plan pools the GEMM's output first and adds the bias
and takes the relu on the pooled values only (``forward_infer``); the
convolution's output is then never stored whole.  Its backward is the
three ops' own.

Each op has two outputs, the pooled map and the convolution's output ``y``
(the relu mask of the backward pass); nothing reads ``y`` forward, and its
gradient is usually absent (``none_ograds``: autograd then passes None
instead of a tensor of zeros).
"""
import numpy as np

from ..ndarray import invoke, zeros_like
from ..layout import chwn as _chwn, copyto as _copyto
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import _needs_grad, _ws
from .convolution import _conv_forward, _conv_geom, _conv_grads

_BAND = 1 << 20           # bytes of dy per band: stays in the cache


@register
class ConvActAvgPoolOp(Op):
    """``Pooling(relu(Convolution(x, w, b)), 'avg', kernel=pool, stride=pool)``
    and the convolution's output ``y``: outputs ``[pooled, y]``."""
    name = '_conv_act_pool'
    nout = 2
    none_ograds = True
    cases = (Case((2, 3, 6, 6), (4, 3, 3, 3), (4,), kernel=(3, 3), num_filter=4,
                  pool=(2, 2)),
             Case((1, 2, 7, 6), (3, 2, 2, 3), kernel=(2, 3), num_filter=3,
                  pool=(2, 2)))

    def infer(self, shapes, dtypes, pool, act_type='relu', **conv):
        y, dt = type(OPS['_conv_act']).infer(self, shapes, dtypes, act_type=act_type,
                                             **conv)
        n, f, oh, ow = y
        if oh < pool[0] or ow < pool[1]:
            raise ValueError(f"operator '{self.name}': pool {pool} larger than the "
                             f"convolution's output {y}")
        return [((n, f, oh // pool[0], ow // pool[1]), dt), (y, dt)]

    def forward(self, x, w, b=None, pool=(2, 2), act_type='relu', kernel=None,
                stride=(1, 1), dilate=(1, 1), pad=(0, 0), num_filter=None,
                num_group=1):
        g = _conv_geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                       num_group)
        y, p = _conv_forward(x, w, b, g, num_group, act=act_type, pool=pool)
        return [p, y]

    def backward(self, ograds, inputs, outputs, pool=(2, 2), act_type='relu',
                 **conv):
        gp, gy = ograds
        y = outputs[1]
        x, w = inputs[0], inputs[1]
        geom = {k: conv[k] for k in _CONV_KEYS if k in conv}
        if gy is None and gp is not None and _needs_grad(w):
            # the usual case: one banded sweep (see _ConvActPoolGradsOp)
            if _needs_grad(x):
                dx, dw, db = invoke(OPS['_conv_act_pool_grads'], (gp, y, x, w),
                                    dict(geom, pool=pool))
            else:
                dx = None
                dw, db = invoke(OPS['_conv_act_pool_wgrad'], (gp, y, x),
                                dict(geom, pool=pool, weight_shape=w.shape))
            grads = [dx, dw]
        else:
            if gp is None:
                gp = zeros_like(outputs[0])
            dz, db = invoke(OPS['_avgpool_relu_grad'], (gp, y), {'pool': pool})
            if gy is not None:                   # y itself was used: add its part
                gz = invoke(OPS['_relu_backward'], (gy, y))
                dz = dz + gz
                db = db + gz.sum(axis=(0, 2, 3))
            grads = OPS['Convolution'].backward(dz, inputs[:2], y, **conv)
        if len(inputs) == 3:
            grads.append(db if _needs_grad(inputs[2]) else None)
        return grads


@register
class ConvActMaxPoolOp(type(ConvActAvgPoolOp)):   # (register returns the instance)
    """``Pooling(relu(Convolution(x, w, b)), 'max', kernel=pool, stride=pool)``
    and the convolution's output ``y``: outputs ``[pooled, y]``."""
    name = '_conv_act_maxpool'
    cases = (Case((2, 3, 6, 6), (4, 3, 3, 3), (4,), kernel=(3, 3), num_filter=4,
                  pool=(2, 2)),
             Case((1, 2, 7, 6), (3, 2, 2, 3), kernel=(2, 3), num_filter=3,
                  pool=(2, 2)))

    def forward(self, x, w, b=None, pool=(2, 2), act_type='relu', kernel=None,
                stride=(1, 1), dilate=(1, 1), pad=(0, 0), num_filter=None,
                num_group=1, keep=True):
        g = _conv_geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                       num_group)
        y, p = _conv_forward(x, w, b, g, num_group, act=act_type, pool=pool,
                             pool_type='max', keep=keep)
        return [p, y]

    def forward_infer(self, *args, **attrs):
        """``[pooled, None]``: :meth:`forward` for a plan that drops ``y``
        at once (inference), without computing it."""
        return self.forward(*args, keep=False, **attrs)

    def backward(self, ograds, inputs, outputs, pool=(2, 2), act_type='relu',
                 **conv):
        gp, gy = ograds
        p, y = outputs
        if gp is None:
            gp = zeros_like(p)
        dy = invoke(OPS['_pool_backward'], (gp, y, p),
                    {'kernel': pool, 'stride': pool, 'pool_type': 'max'})
        if gy is not None:                       # y itself was used: add its part
            dy = dy + gy
        return OPS['_conv_act'].backward(dy, inputs, y, act_type=act_type, **conv)


def _dz_bands(gp, y, pool, db):
    """``band(rows, out=None)``: rows ``r0:r1`` of ``dy = upsample(gp) / (k*k)
    * (y > 0)`` as ``(F, rows * OW * N)``, each band's sum added to ``db``
    (the bias gradient) unless it is None.  Rows start on multiples of the
    pool height."""
    xp = _xp(y)
    kh, kw = pool
    n, f, oh, ow = y.shape
    ph, pw = gp.shape[2], gp.shape[3]
    yt = _chwn(y)
    if yt is None:                               # stored NCHW: make it CHWN
        yt = xp.ascontiguousarray(y.transpose(1, 2, 3, 0))
    gt = _chwn(gp)
    if gt is None:
        gt = xp.empty((f, ph, pw, n), gp.dtype)
        _copyto(gt.transpose(3, 0, 1, 2), gp)
    scale = y.dtype.type(1.0 / (kh * kw))

    def band(rows, out=None):
        r0, r1 = rows
        if out is None:
            out = _ws(xp, 'dz_band', (f, r1 - r0, ow, n), y.dtype)
        rv = min(r1, ph * kh)                    # rows some window covers
        if rv > r0:
            blk = out[:, :rv - r0]
            src = gt[:, r0 // kh:rv // kh] * scale
            for i in range(kh):
                for j in range(kw):
                    blk[:, i::kh, j:pw * kw:kw] = src
            if ow > pw * kw:
                blk[:, :, pw * kw:] = 0
        if r1 > rv:
            out[:, max(rv, r0) - r0:] = 0
        xp.multiply(out, yt[:, r0:r1] > 0, out=out)
        if db is not None:
            xp.add(db, out.reshape(f, -1).sum(axis=1), out=db)
        return out.reshape(f, -1)
    return band


@register
class AvgPoolReluGradOp(Op):
    """``dy = upsample(gp) / (k*k) * (y > 0)`` (zero on rows and columns the
    pooling left out) and its sum per channel, the bias gradient; banded."""
    name = '_avgpool_relu_grad'
    nout = 2
    differentiable = False           # as _pool_backward

    def infer(self, shapes, dtypes, pool):
        gp, y = tuple(shapes[0]), tuple(shapes[1])
        want = (y[0], y[1], y[2] // pool[0], y[3] // pool[1])
        if gp != want:
            raise ValueError(f"operator '{self.name}': pooled gradient {gp} does not "
                             f"fit y {y} and pool {pool}: expected {want}")
        return [(y, dtypes[1]), ((y[1],), dtypes[1])]

    def forward(self, gp, y, pool):
        xp = _xp(y)
        n, f, oh, ow = y.shape
        dzt = xp.empty((f, oh, ow, n), y.dtype)
        db = xp.zeros(f, y.dtype)
        band = _dz_bands(gp, y, pool, db)
        row_bytes = ow * n * f * y.dtype.itemsize
        step = pool[0] * max(1, _BAND // max(1, row_bytes * pool[0])) \
            if xp is np else oh
        for r0 in range(0, oh, step):
            band((r0, min(r0 + step, oh)), out=dzt[:, r0:r0 + step])
        return [dzt.transpose(3, 0, 1, 2), db]


class _ConvActPoolGradsOp(Op):
    """The gradients of ``_conv_act_pool`` in ONE sweep over bands of rows:
    each band of ``dy`` is made from the pooled gradient and the relu mask
    (:func:`_dz_bands`) and used at once by the weight (and data) GEMMs of
    :func:`_conv_grads`, while it is in the cache; ``dy`` never exists whole.
    """
    differentiable = False

    def _run(self, gp, y, x, w, wshape, pool, conv):
        g = _conv_geom(self.name, x.shape, tuple(wshape), conv.get('kernel'),
                       conv.get('stride', (1, 1)), conv.get('dilate', (1, 1)),
                       conv.get('pad', (0, 0)), conv.get('num_group', 1))
        xp = _xp(y)
        f = y.shape[1]
        groups = conv.get('num_group', 1)
        # one group: the weight GEMM sums dy for the bias (a row of ones)
        db = None if groups == 1 else xp.zeros(f, y.dtype)
        bands = (f, y.dtype, pool[0], _dz_bands(gp, y, pool, db))
        res = _conv_grads(None, g, groups, w=w, x=x, wshape=tuple(wshape),
                          dy_bands=bands, bias=db is None)
        return res if db is None else res + (db,)


_CONV_KEYS = ('kernel', 'stride', 'dilate', 'pad', 'num_group')


@register
class ConvActPoolWeightGradOp(_ConvActPoolGradsOp):
    """``(dW, db)`` of ``_conv_act_pool`` from ``(gp, y, x)``."""
    name = '_conv_act_pool_wgrad'
    nout = 2

    def infer(self, shapes, dtypes, weight_shape, pool, **conv):
        return [(tuple(weight_shape), dtypes[1]), ((shapes[1][1],), dtypes[1])]

    def forward(self, gp, y, x, weight_shape, pool, **conv):
        _, dw, db = self._run(gp, y, x, None, weight_shape, pool, conv)
        return [dw, db]


@register
class ConvActPoolGradsOp(_ConvActPoolGradsOp):
    """``(dx, dW, db)`` of ``_conv_act_pool`` from ``(gp, y, x, w)``."""
    name = '_conv_act_pool_grads'
    nout = 3

    def infer(self, shapes, dtypes, pool, **conv):
        return [(tuple(shapes[2]), dtypes[2]), (tuple(shapes[3]), dtypes[3]),
                ((shapes[1][1],), dtypes[1])]

    def forward(self, gp, y, x, w, pool, **conv):
        return list(self._run(gp, y, x, w, w.shape, pool, conv))


def fusable_pool(attrs):
    """The fused op for a Pooling of ``attrs`` after ``_conv_act`` (relu),
    and the pool size: an average or max pooling that tiles its input
    (kernel == stride, no padding, 'valid'); else None."""
    k = attrs.get('kernel')
    kind = attrs.get('pool_type', 'max')
    if kind not in ('avg', 'max') or attrs.get('global_pool') or k is None:
        return None
    if len(k) != 2 or tuple(attrs.get('stride', (1, 1))) != tuple(k):
        return None
    if any(attrs.get('pad', (0, 0))) or attrs.get('pooling_convention',
                                                  'valid') != 'valid':
        return None
    return ('_conv_act_pool' if kind == 'avg' else '_conv_act_maxpool'), tuple(k)
