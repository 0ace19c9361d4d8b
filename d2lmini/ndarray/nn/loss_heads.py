"""Loss heads: MXNet's classic output layers (``SoftmaxOutput``, the regression
outputs, ``MakeLoss``) and ``BlockGrad``.

A loss head's forward is a prediction (softmax, identity, sigmoid), but its
backward sends the gradient of a *loss* (cross-entropy, squared error, ...)
whatever gradient arrives from above: the symbolic API trains a network by
calling ``backward()`` on these outputs without head gradients.  Their
backward is therefore not the derivative of their forward, so they are
marked ``loss_head`` and tested against their formulas instead of central
differences.
"""
import math

from ...base import _check_kwargs
from ..ndarray import invoke
from ..registry import OPS, Op, register
from ._common import _float_dtype, _result

__all__ = ['SoftmaxOutput', 'Softmax', 'LinearRegressionOutput',
           'LogisticRegressionOutput', 'MAERegressionOutput', 'MakeLoss',
           'make_loss', 'BlockGrad', 'stop_gradient']


class _LossHeadOp(Op):
    loss_head = True

    def infer(self, shapes, dtypes, **attrs):
        return shapes[0], _float_dtype(self.name, dtypes[:1])


@register
class SoftmaxOutputOp(_LossHeadOp):
    """Forward: softmax over the classes; backward: ``(p - onehot(label)) *
    grad_scale`` (times the head gradient only with ``out_grad``)."""
    name = 'SoftmaxOutput'

    def infer(self, shapes, dtypes, **attrs):
        x, lab = tuple(shapes[0]), tuple(shapes[1])
        if attrs.get('multi_output'):
            want = (x[0],) + x[2:]
        elif attrs.get('preserve_shape'):
            want = x[:-1]
        else:
            want = x[:1]
        if lab != want and math.prod(lab) != math.prod(want):
            raise ValueError(f"operator 'SoftmaxOutput': label shape {lab} does not "
                             f"match data shape {x}: expected {want}")
        return x, _float_dtype(self.name, dtypes[:1])

    def forward(self, x, label, multi_output=False, preserve_shape=False, **attrs):
        if multi_output:
            return OPS['softmax'].forward(x, axis=1)
        if preserve_shape:
            return OPS['softmax'].forward(x, axis=-1)
        return OPS['softmax'].forward(x.reshape(x.shape[0], -1),
                                      axis=-1).reshape(x.shape)

    def backward(self, g, inputs, p, **attrs):
        grad = invoke(OPS['_softmax_output_grad'], (p, inputs[1]), attrs)
        if attrs.get('out_grad'):
            grad = grad * g
        return [grad, None]


def _per_output_scale(label, grad_scale):
    # MXNet divides by the number of outputs per example.
    n = label.shape[0] if label.ndim else 1
    return grad_scale / max(1, label.size // max(1, n))


class _RegressionOp(_LossHeadOp):
    def infer(self, shapes, dtypes, grad_scale=1.0):
        x, lab = tuple(shapes[0]), tuple(shapes[1])
        if math.prod(lab) != math.prod(x):
            raise ValueError(f"operator '{self.name}': label shape {lab} does not "
                             f"match data shape {x}")
        return x, _float_dtype(self.name, dtypes[:1])

    def backward(self, g, inputs, out, grad_scale=1.0):
        label = inputs[1].reshape(out.shape)
        scale = _per_output_scale(inputs[1], grad_scale)
        return [self._grad(out, label) * scale, None]


@register
class LinearRegressionOutputOp(_RegressionOp):
    """Identity; backward ``(out - label) * grad_scale / outputs per example``."""
    name = 'LinearRegressionOutput'

    def forward(self, x, label, grad_scale=1.0):
        return x.copy()

    def _grad(self, out, label):
        return out - label


@register
class LogisticRegressionOutputOp(_RegressionOp):
    """Sigmoid; backward ``(sigmoid(x) - label) * grad_scale / outputs``."""
    name = 'LogisticRegressionOutput'

    def forward(self, x, label, grad_scale=1.0):
        return OPS['sigmoid'].forward(x)

    def _grad(self, out, label):
        return out - label


@register
class MAERegressionOutputOp(_RegressionOp):
    """Identity; backward ``sign(out - label) * grad_scale / outputs``."""
    name = 'MAERegressionOutput'

    def forward(self, x, label, grad_scale=1.0):
        return x.copy()

    def _grad(self, out, label):
        return (out - label).sign()


@register
class MakeLossOp(_LossHeadOp):
    """Identity; backward ``grad_scale`` per element (``normalization``:
    'null', 'batch' divides by the batch size, 'valid' by the number of
    elements above ``valid_thresh``)."""
    name = 'MakeLoss'

    def forward(self, x, grad_scale=1.0, valid_thresh=0.0, normalization='null'):
        return x.copy()

    def backward(self, g, inputs, out, grad_scale=1.0, valid_thresh=0.0,
                 normalization='null'):
        x = inputs[0]
        scale = grad_scale
        if normalization == 'batch':
            scale = scale / x.shape[0]
        elif normalization == 'valid':
            n = (x > valid_thresh).sum()
            if x.context.device_type != 'cpu':  # the count stays on the GPU
                scale = scale / invoke(OPS['_maximum_scalar'], (n,), {'scalar': 1.0})
                return [invoke(OPS['ones_like_op'], (x,)) * scale.reshape((1,) * x.ndim)]
            scale = scale / max(float(n.asscalar()), 1.0)
        return [invoke(OPS['ones_like_op'], (x,)) * scale]


@register
class BlockGradOp(Op):
    """Identity whose gradient is zero: the graph is cut here."""
    name = 'BlockGrad'
    differentiable = False

    def infer(self, shapes, dtypes):
        return shapes[0], dtypes[0]

    def forward(self, x):
        return x.copy()


_NORMALIZATIONS = ('null', 'batch', 'valid')


def SoftmaxOutput(data, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,
                  use_ignore=False, preserve_shape=False, normalization='null',
                  out_grad=False, smooth_alpha=0.0, out=None, name=None, **kwargs):
    """Softmax forward; backward sends ``grad_scale * (p - onehot(label))``.

    The gradient of the cross-entropy, *ignoring the head gradient* (unless
    ``out_grad``): MXNet's classic loss layer.

    >>> p = nd.SoftmaxOutput(nd.zeros((1, 4)), nd.array([2]))
    >>> p.asnumpy().round(2).tolist()
    [[0.25, 0.25, 0.25, 0.25]]
    """
    _check_kwargs(SoftmaxOutput, kwargs)
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"SoftmaxOutput: normalization={normalization!r} is not one "
                         f"of {', '.join(map(repr, _NORMALIZATIONS))}")
    attrs = {'grad_scale': float(grad_scale), 'ignore_label': float(ignore_label),
             'multi_output': bool(multi_output), 'use_ignore': bool(use_ignore),
             'preserve_shape': bool(preserve_shape), 'normalization': normalization,
             'out_grad': bool(out_grad), 'smooth_alpha': float(smooth_alpha)}
    return _result(invoke(OPS['SoftmaxOutput'], (data, label), attrs), out)


Softmax = SoftmaxOutput          # MXNet's deprecated alias


def _regression(op_name):
    def head(data, label, grad_scale=1.0, out=None, name=None, **kwargs):
        _check_kwargs(head, kwargs)
        return _result(invoke(OPS[op_name], (data, label),
                              {'grad_scale': float(grad_scale)}), out)
    head.__name__ = head.__qualname__ = op_name
    head.__doc__ = OPS[op_name].__doc__
    return head


LinearRegressionOutput = _regression('LinearRegressionOutput')
LogisticRegressionOutput = _regression('LogisticRegressionOutput')
MAERegressionOutput = _regression('MAERegressionOutput')


def MakeLoss(data, grad_scale=1.0, valid_thresh=0.0, normalization='null', out=None,
             name=None, **kwargs):
    """Mark ``data`` as a loss: forward is the identity, backward sends
    ``grad_scale`` (normalized by ``normalization``)."""
    _check_kwargs(MakeLoss, kwargs)
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"MakeLoss: normalization={normalization!r} is not one "
                         f"of {', '.join(map(repr, _NORMALIZATIONS))}")
    return _result(invoke(OPS['MakeLoss'], (data,),
                          {'grad_scale': float(grad_scale),
                           'valid_thresh': float(valid_thresh),
                           'normalization': normalization}), out)


make_loss = MakeLoss


def BlockGrad(data, out=None, name=None, **kwargs):
    """The identity, with no gradient flowing back through it."""
    _check_kwargs(BlockGrad, kwargs)
    return _result(invoke(OPS['BlockGrad'], (data,)), out)


stop_gradient = BlockGrad
