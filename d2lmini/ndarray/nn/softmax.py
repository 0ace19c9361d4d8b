"""The softmax family: ``softmax``, ``log_softmax``, ``softmax_cross_entropy``,
``SoftmaxOutput`` (MXNet's classic loss head) and ``SoftmaxActivation``."""
import numpy as np

from ...base import _check_kwargs
from ..ndarray import invoke
from ..indexing import one_hot
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import _float_dtype, _result

__all__ = ['softmax', 'softmin', 'log_softmax', 'softmax_cross_entropy',
           'SoftmaxActivation']


def _scaled(a, temperature):
    return a if temperature is None or temperature == 1 else a / temperature


def _check_axis(name, axis, shape):
    if not -len(shape) <= axis < max(1, len(shape)):
        raise ValueError(f"operator '{name}': axis {axis} out of range for shape "
                         f"{shape}")


class _AlongAxisOp(Op):
    """An op that normalizes along ``axis``: same shape out, float dtype."""

    def infer(self, shapes, dtypes, axis=-1, temperature=None):
        _check_axis(self.name, axis, shapes[0])
        return shapes[0], _float_dtype(self.name, dtypes)


@register
class SoftmaxOp(_AlongAxisOp):
    """``exp(x/T) / sum(exp(x/T))`` along ``axis``, computed without overflow."""
    name = 'softmax'
    cases = (Case((3, 4)), Case((2, 3, 4), axis=1), Case((3, 4), temperature=2.0))

    def forward(self, a, axis=-1, temperature=None):
        xp = _xp(a)
        a = _scaled(a, temperature)
        e = xp.exp(a - a.max(axis=axis, keepdims=True))
        e /= e.sum(axis=axis, keepdims=True)
        return e

    def backward(self, g, inputs, y, axis=-1, temperature=None):
        gy = g * y
        return [_scaled(gy - y * gy.sum(axis=axis, keepdims=True), temperature)]


@register
class SoftminOp(type(SoftmaxOp)):      # (register returns the instance)
    """``softmax(-x/T)`` along ``axis``: the smallest entries get the weight."""
    name = 'softmin'                # infer and the gradient cases: softmax's

    def forward(self, a, axis=-1, temperature=None):
        return super().forward(-a, axis, temperature)

    def backward(self, g, inputs, y, axis=-1, temperature=None):
        return [-super().backward(g, inputs, y, axis, temperature)[0]]


@register
class LogSoftmaxOp(_AlongAxisOp):
    """``log(softmax(x))`` along ``axis``, as ``x - max - log(sum(exp(x - max)))``."""
    name = 'log_softmax'
    cases = (Case((3, 4)), Case((2, 3, 4), axis=0), Case((3, 4), temperature=0.5))

    def forward(self, a, axis=-1, temperature=None):
        xp = _xp(a)
        a = _scaled(a, temperature)
        s = a - a.max(axis=axis, keepdims=True)
        s -= xp.log(xp.exp(s).sum(axis=axis, keepdims=True))
        return s

    def backward(self, g, inputs, y, axis=-1, temperature=None):
        p = invoke(OPS['exp'], (y,))
        return [_scaled(g - p * g.sum(axis=axis, keepdims=True), temperature)]


@register
class SoftmaxCrossEntropyOp(Op):
    """MXNet's ``softmax_cross_entropy(data, label)``: the SUM over the batch
    of ``-log softmax(data)[label]``, shape ``(1,)``."""
    name = 'softmax_cross_entropy'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (4, 3)), [0, 2, 1, 2]], grad=[0]),)

    def infer(self, shapes, dtypes):
        d, lab = tuple(shapes[0]), tuple(shapes[1])
        if len(d) != 2 or lab != d[:1]:
            raise ValueError(f"operator 'softmax_cross_entropy': needs data (N, K) and "
                             f"label (N,), got {d} and {lab}")
        return (1,), _float_dtype(self.name, dtypes[:1])

    def forward(self, x, label):
        xp = _xp(x)
        logp = OPS['log_softmax'].forward(x, axis=1)
        idx = label.astype(np.int64).reshape(-1, 1)
        return -xp.take_along_axis(logp, idx, axis=1).sum(keepdims=True).reshape(1)

    def backward(self, g, inputs, out):
        x, label = inputs
        p = invoke(OPS['softmax'], (x,), {'axis': 1})
        return [(p - one_hot(label, x.shape[1], dtype=x.dtype)) * g, None]


@register
class SoftmaxCELossOp(Op):
    """Per-sample ``-log softmax(x)[label]`` of ``(N, K)`` logits, shape
    ``(N,)``: gluon's ``SoftmaxCrossEntropyLoss`` (sparse labels, no
    weights) as ONE op forward and ONE backward, instead of four forward
    (log_softmax, pick, negative, mean) and about a dozen backward.

    The arithmetic is that of the op chain, op for op, so the loss and the
    gradient are the same bits: forward ``-pick(log_softmax(x), label)``
    (labels clipped, as pick does); backward ``gy = onehot(label) * -g``
    (the gradient pick and negative send) then log_softmax's
    ``gy - exp(logp) * sum(gy)``, with ``logp`` recomputed.
    """
    name = '_softmax_ce_loss'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (4, 3)), [0, 2, 1, 2]], grad=[0]),)

    def infer(self, shapes, dtypes):
        d, lab = tuple(shapes[0]), tuple(shapes[1])
        if len(d) != 2 or lab not in (d[:1], (d[0], 1)):
            raise ValueError(f"operator '{self.name}': needs data (N, K) and label "
                             f"(N,), got {d} and {lab}")
        return d[:1], _float_dtype(self.name, dtypes[:1])

    def forward(self, x, label):
        logp = OPS['log_softmax'].forward(x, axis=-1)
        return -OPS['pick'].forward(logp, label.reshape(-1), axis=-1)

    def backward(self, g, inputs, out):
        return [invoke(OPS['_softmax_ce_loss_grad'], (g,) + tuple(inputs)), None]


@register
class SoftmaxCELossGradOp(Op):
    """The gradient ``_softmax_ce_loss`` sends back to the logits:
    ``-g * (onehot - r * p)`` with ``p = softmax(x)`` and ``r`` = 1 for a
    label in range (0 for one ``one_hot`` drops).  Differentiable, so
    second-order gradients through the loss work as through the op chain."""
    name = '_softmax_ce_loss_grad'
    cases = (Case(inputs=[lambda r: r.uniform(0.5, 1.5, (4,)),
                          lambda r: r.uniform(-1, 1, (4, 3)), [0, 2, 1, 5]],
                  grad=[0, 1]),)

    def infer(self, shapes, dtypes):
        return shapes[1], _float_dtype(self.name, dtypes[1:2])

    def forward(self, g, x, label):
        xp = _xp(x)
        logp = OPS['log_softmax'].forward(x, axis=-1)
        hot = OPS['one_hot'].forward(label.reshape(-1), x.shape[1], dtype=x.dtype)
        gy = hot * -(g[:, None] / 1)                 # what pick and negative send
        p = xp.exp(logp)                             # log_softmax's backward
        return (gy - p * gy.sum(axis=-1, keepdims=True)).astype(x.dtype, copy=False)

    def backward(self, gg, inputs, out):
        g, x, label = inputs
        p = invoke(OPS['softmax'], (x,), {'axis': -1})
        hot = one_hot(label, x.shape[1], dtype=x.dtype)
        r = hot.sum(axis=1, keepdims=True)
        dg = -(gg * (hot - p * r)).sum(axis=1)
        v = gg * g.reshape((-1, 1)) * r              # through p: softmax's backward
        return [dg, p * (v - (p * v).sum(axis=1, keepdims=True)), None]


@register
class SoftmaxOutputGradOp(Op):
    """The gradient SoftmaxOutput sends back: ``(p - onehot(label)) * scale``."""
    name = '_softmax_output_grad'
    differentiable = False

    def infer(self, shapes, dtypes, **params):
        return shapes[0], dtypes[0]

    def forward(self, p, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,
                use_ignore=False, preserve_shape=False, normalization='null',
                out_grad=False, smooth_alpha=0.0):
        xp = _xp(p)
        if multi_output:                     # classes on axis 1: move them last
            q = xp.moveaxis(p, 1, -1)
        elif preserve_shape:
            q = p
        else:
            q = p.reshape(p.shape[0], -1)
        k = q.shape[-1]
        lab = label.reshape(q.shape[:-1])
        hot = lab.astype(np.int64)[..., None] == xp.arange(k)
        if smooth_alpha:
            target = xp.where(hot, 1.0 - smooth_alpha, smooth_alpha / (k - 1))
        else:
            target = hot
        grad = (q - target).astype(p.dtype, copy=False)
        scale = grad_scale
        if use_ignore:
            keep = lab != ignore_label
            grad *= keep[..., None]
        if normalization == 'batch':
            scale = scale / p.shape[0]
        elif normalization == 'valid':
            if not use_ignore:
                scale = scale / max(lab.size, 1.0)
            elif xp is np:
                scale = scale / max(float(keep.sum()), 1.0)
            else:                            # a 0-d device array: no host sync
                scale = (scale / xp.maximum(keep.sum(), 1)).astype(p.dtype)
        grad *= scale
        if multi_output:
            grad = xp.moveaxis(grad, -1, 1)
        return xp.ascontiguousarray(grad.reshape(p.shape))


def softmax(data, axis=-1, temperature=None, out=None, name=None, **kwargs):
    """Softmax along ``axis`` (of ``data / temperature``)."""
    _check_kwargs(softmax, kwargs)
    res = invoke(OPS['softmax'], (data,), {'axis': int(axis), 'temperature': temperature})
    return _result(res, out)


def log_softmax(data, axis=-1, temperature=None, out=None, name=None, **kwargs):
    """``log(softmax(data))`` along ``axis``, stable for large inputs."""
    _check_kwargs(log_softmax, kwargs)
    res = invoke(OPS['log_softmax'], (data,), {'axis': int(axis),
                                                'temperature': temperature})
    return _result(res, out)


def softmin(data, axis=-1, temperature=None, out=None, name=None, **kwargs):
    """``softmax(-data)`` along ``axis``.

    >>> nd.softmin(nd.array([[1, 2, 3]]), axis=-1).asnumpy().argmax()
    0
    """
    _check_kwargs(softmin, kwargs)
    res = invoke(OPS['softmin'], (data,), {'axis': int(axis), 'temperature': temperature})
    return _result(res, out)


def SoftmaxActivation(data, mode='instance', out=None, name=None, **kwargs):
    """Deprecated MXNet op: softmax over axis 1 ('channel') or the rest."""
    _check_kwargs(SoftmaxActivation, kwargs)
    if mode == 'channel':
        return _result(softmax(data, axis=1), out)
    flat = softmax(data.reshape((data.shape[0], -1)), axis=-1)
    return _result(flat.reshape(data.shape), out)


def softmax_cross_entropy(data, label, out=None, name=None, **kwargs):
    """Sum over the batch of ``-log softmax(data)[label]``; shape ``(1,)``.

    >>> round(nd.softmax_cross_entropy(nd.zeros((2, 4)), nd.array([0, 3])).asscalar(), 4)
    2.7726
    """
    _check_kwargs(softmax_cross_entropy, kwargs)
    return _result(invoke(OPS['softmax_cross_entropy'], (data, label)), out)
