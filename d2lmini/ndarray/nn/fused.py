"""Fused operators that only a graph can use: ``conv -> relu -> avg pool``.

Run one at a time (imperatively), a convolution cannot know that an average
pooling comes next.  A traced graph can: ``d2lmini.symbol.graph`` replaces
the pair ``_conv_act`` (convolution + relu) -> ``Pooling(avg, k x k, stride
k)`` by this one op, which computes the same values with fewer passes
over the convolution's output, the biggest array of a CNN (LeNet's first
layer: 14 MB for a batch of 256).  Forward, the pooling reads each band of
the output right after the GEMM wrote it, still in the cache.  Backward,
separately, it is three passes over the output's gradient:

* the pooling backward writes ``dy`` (each pooled gradient, k*k times),
* the relu backward reads ``dy`` and ``y`` and writes ``dy * (y > 0)``,
* the bias gradient reads it once more (a sum over N, H, W).

Fused (:class:`AvgPoolReluGrad`), the three happen band by band while each
band is in the CPU cache: one write of ``dy``, one read of ``y``.

The op has two outputs, the pooled map and the convolution's output ``y``
(the relu mask of the backward pass); nothing reads ``y`` forward, and its
gradient is usually absent (``none_ograds``: autograd then passes None
instead of a tensor of zeros).
"""
import numpy as np

from ..ndarray import invoke, zeros_like
from ..layout import chwn as _chwn, copyto as _copyto
from ..registry import OPS, Case, Op, register
from ._common import _needs_grad, _xp
from .convolution import _conv_forward, _conv_geom

_BAND = 1 << 20           # bytes of dy per band: stays in the cache


@register
class ConvActAvgPool(Op):
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
        if gp is None:
            gp = zeros_like(outputs[0])
        dz, db = invoke(OPS['_avgpool_relu_grad'], (gp, y), {'pool': pool})
        if gy is not None:                       # y itself was used: add its part
            gz = invoke(OPS['_relu_backward'], (gy, y))
            dz = dz + gz
            db = db + gz.sum(axis=(0, 2, 3))
        grads = OPS['Convolution'].backward(dz, inputs[:2], y, **conv)
        if len(inputs) == 3:
            grads.append(db if _needs_grad(inputs[2]) else None)
        return grads


@register
class AvgPoolReluGrad(Op):
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
        dzt = xp.empty((f, oh, ow, n), y.dtype)
        db = xp.zeros(f, y.dtype)
        scale = y.dtype.type(1.0 / (kh * kw))
        row_bytes = ow * n * f * y.dtype.itemsize * kh
        step = max(1, _BAND // max(1, row_bytes)) if xp is np else ph
        for q0 in range(0, ph, step):
            q1 = min(q0 + step, ph)
            r0, r1 = q0 * kh, q1 * kh
            blk = dzt[:, r0:r1]
            src = gt[:, q0:q1] * scale
            for i in range(kh):
                for j in range(kw):
                    blk[:, i::kh, j:pw * kw:kw] = src
            if ow > pw * kw:
                blk[:, :, pw * kw:] = 0
            xp.multiply(blk, yt[:, r0:r1] > 0, out=blk)
            db += blk.reshape(f, -1).sum(axis=1)
        if oh > ph * kh:
            dzt[:, ph * kh:] = 0
        return [dzt.transpose(3, 0, 1, 2), db]


def fusable_pool(attrs):
    """The pool size if Pooling ``attrs`` are an average pooling that tiles
    its input (kernel == stride, no padding, 'valid'), else None."""
    k = attrs.get('kernel')
    if attrs.get('pool_type', 'max') != 'avg' or attrs.get('global_pool') or k is None:
        return None
    if len(k) != 2 or tuple(attrs.get('stride', (1, 1))) != tuple(k):
        return None
    if any(attrs.get('pad', (0, 0))) or attrs.get('pooling_convention',
                                                  'valid') != 'valid':
        return None
    return tuple(k)
