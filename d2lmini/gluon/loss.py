"""Loss functions (``gluon.loss``): one loss value per sample.

A loss is a HybridBlock called as ``loss(pred, label[, sample_weight])``.
It returns shape ``(batch,)``: the per-element loss averaged over every
axis but ``batch_axis``.  ``l.backward()`` on that vector sums it (a head
gradient of ones), which is why ``trainer.step(batch_size)`` divides by the
batch size.  All formulas are the numerically stable ones (log-softmax,
``max(x, 0) - x*z + log(1 + exp(-|x|))``), safe for large logits.

Examples
--------
>>> loss = gluon.loss.SoftmaxCrossEntropyLoss()
>>> loss(nd.array([[10., 0.], [0., 10.]]), nd.array([0, 1])).shape
(2,)
"""
import math
import numbers

import numpy as np

from ..ndarray import NDArray, invoke
from ..ndarray.registry import OPS
from .block import HybridBlock

__all__ = ['Loss', 'L2Loss', 'L1Loss', 'SigmoidBinaryCrossEntropyLoss',
           'SigmoidBCELoss', 'SoftmaxCrossEntropyLoss', 'SoftmaxCELoss',
           'KLDivLoss', 'HuberLoss', 'HingeLoss', 'SquaredHingeLoss', 'LogisticLoss',
           'TripletLoss', 'PoissonNLLLoss', 'CosineEmbeddingLoss', 'SDMLLoss',
           'CTCLoss']


def _reshape_like(x, y):
    """``x`` in ``y``'s shape (labels may come as (N,) for (N, 1) predictions)."""
    if not isinstance(x, NDArray):           # a Symbol (hybridize): no shapes yet
        return x.reshape_like(y)
    if x.shape == y.shape:
        return x
    if x.size != y.size:
        raise ValueError(f'label of shape {x.shape} does not match prediction of '
                         f'shape {y.shape}')
    return x.reshape(y.shape)


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise TypeError(f'the loss weight must be a number, got '
                            f'{type(weight).__name__}')
        loss = loss * weight
    return loss


def _batch_mean(F, loss, batch_axis):
    """Mean over all axes except ``batch_axis``: shape (batch,)."""
    if not isinstance(loss, NDArray):        # a Symbol (hybridize): no ndim yet
        return F.mean(loss, axis=batch_axis, exclude=True)
    axes = tuple(i for i in range(loss.ndim) if i != batch_axis % max(loss.ndim, 1))
    if not axes:
        return loss
    return F.mean(loss, axis=axes)


class Loss(HybridBlock):
    """Base class: ``weight`` scales the loss, ``batch_axis`` marks the samples."""

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f'{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})'

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class L2Loss(Loss):
    r"""``0.5 * (pred - label)^2``, averaged per sample."""

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class L1Loss(Loss):
    r"""``|pred - label|``, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class SigmoidBinaryCrossEntropyLoss(Loss):
    r"""Binary cross-entropy on logits (default) or probabilities.

    With ``from_sigmoid=False`` ``pred`` are logits and the loss is
    ``max(x, 0) - x*z + log(1 + exp(-|x|))`` (never overflows).
    ``pos_weight`` (an array broadcast against ``pred``) weights positives.
    """

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(label, pred)
        if not self._from_sigmoid:
            softplus_neg_abs = F.softrelu(-F.abs(pred))       # log(1 + exp(-|x|))
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus_neg_abs
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus_neg_abs +
                                                           F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label +
                         F.log(1. - pred + eps) * (1. - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight) +
                         F.log(1. - pred + eps) * (1. - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    r"""Cross-entropy of ``softmax(pred)`` against the labels.

    ``sparse_label=True``: labels are class indices, shape (batch,);
    otherwise a distribution with ``pred``'s shape.  ``from_logits=True``
    means ``pred`` already holds log-probabilities.
    """

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        # the common case: one op (unless mx.contrib.amp wrapped log_softmax,
        # whose float32 cast must run)
        if self._fusable(pred, label, sample_weight) and \
                not hasattr(F.log_softmax, '__wrapped__'):
            return invoke(OPS['_softmax_ce_loss'], (pred, label))
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)

    def _fusable(self, pred, label, sample_weight):
        """Imperative (N, K) logits with class labels along the last axis,
        no weights: ``_softmax_ce_loss`` computes the same bits in one op."""
        return (isinstance(pred, NDArray) and isinstance(label, NDArray)
                and self._sparse_label and not self._from_logits
                and sample_weight is None and self._weight is None
                and self._batch_axis == 0 and pred.ndim == 2
                and self._axis in (-1, 1) and label.shape in ((pred.shape[0],),
                                                             (pred.shape[0], 1)))


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    r"""``label * (log(label) - pred)`` with ``pred`` log-probabilities
    (``from_logits=True``, default) or logits."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class HuberLoss(Loss):
    r"""``0.5/rho * d^2`` for ``|d| <= rho``, else ``|d| - 0.5*rho`` (d = label - pred)."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        d = F.abs(label - pred)
        loss = F.where(d > self._rho, d - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(d))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class HingeLoss(Loss):
    r"""``max(0, margin - pred * label)`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class SquaredHingeLoss(Loss):
    r"""``max(0, margin - pred * label)^2`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class LogisticLoss(Loss):
    r"""``log(1 + exp(-pred * label))``; labels in {-1, 1} ('signed') or {0, 1}
    ('binary')."""

    def __init__(self, weight=None, batch_axis=0, label_format='signed', **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ('signed', 'binary'):
            raise ValueError(f"label_format must be 'signed' or 'binary', got "
                             f"{label_format!r}")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        if self._label_format == 'binary':
            label = 2 * label - 1
        loss = F.softrelu(-pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class PoissonNLLLoss(Loss):
    r"""Negative log-likelihood of ``target`` counts under Poisson(``pred``).

    ``from_logits=True`` (default): ``pred`` is ``log(rate)`` and the loss is
    ``exp(pred) - target * pred``; otherwise ``pred`` is the rate and the loss
    is ``pred - target * log(pred + epsilon)``.  ``compute_full=True`` adds
    Stirling's approximation of ``log(target!)``,
    ``target*log(target) - target + 0.5*log(2*pi*target)``, where
    ``target > 1`` (0 elsewhere; MXNet's formula gives NaN at ``target == 0``,
    here it is 0 like at every other ``target <= 1``).

    As in MXNet, the result is the mean over *all* elements, shape (1,),
    not one value per sample.  ``epsilon`` is an argument of the call:
    ``loss(pred, target, sample_weight=None, epsilon=1e-08)``.
    """

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            counted = target > 1
            # log() only of targets > 1, so neither value nor gradient is NaN
            t = F.where(counted, target, F.ones_like(target))
            stirling = t * F.log(t) - t + 0.5 * F.log(2 * math.pi * t)
            loss = loss + stirling * counted
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    r"""``1 - cos(input1, input2)`` for pairs labelled 1 (similar),
    ``max(0, cos(input1, input2) - margin)`` for pairs labelled -1.

    The cosine is taken along the last axis, ``x.y / max(|x| |y|, 1e-12)``;
    ``label`` holds one 1 or -1 per pair.  As in MXNet the result has shape
    (batch, 1) and is not averaged further.

    >>> loss = gluon.loss.CosineEmbeddingLoss()
    >>> loss(nd.array([[1., 0.]]), nd.array([[0., 1.]]), nd.array([1])).shape
    (1, 1)
    """

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(input1, input2)
        label = label.reshape((-1, 1))
        x_norm = F.norm(input1, axis=-1).reshape((-1, 1))
        y_norm = F.norm(input2, axis=-1).reshape((-1, 1))
        x_dot_y = F.sum(input1 * input2, axis=-1).reshape((-1, 1))
        cos_sim = x_dot_y / F.maximum(x_norm * y_norm, 1e-12)
        similar = (1 - cos_sim) * (label == 1)
        dissimilar = F.relu((label == -1) * (cos_sim - self._margin))
        loss = similar + dissimilar
        return _apply_weighting(F, loss, self._weight, sample_weight)


class TripletLoss(Loss):
    r"""``max(0, |pred - positive|^2 - |pred - negative|^2 + margin)`` per sample.

    The squared distances sum over every axis but ``batch_axis``: the anchor
    ``pred`` should be nearer its positive than its negative by ``margin``.
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        positive = _reshape_like(positive, pred)
        negative = _reshape_like(negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, None)


class SDMLLoss(Loss):
    r"""Smoothed Deep Metric Learning (Bonadiman et al. 2019) on a batch of pairs.

    ``x1[i]`` and ``x2[i]`` (shape (batch, dim)) form a positive pair and
    every ``x2[j]``, ``j != i``, serves as a negative: the loss is the KL
    divergence between ``softmax(-|x1[i] - x2[j]|^2)`` over ``j`` and the
    smoothed identity (``1 - smoothing_parameter`` on the diagonal, the rest
    spread evenly), one value per sample.
    """

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F, x1, x2):
        if x1.shape != x2.shape or x1.ndim != 2:
            raise ValueError(f'SDMLLoss: x1 and x2 must both be (batch, dim), got '
                             f'{x1.shape} and {x2.shape}')
        n, dim = x1.shape
        diffs = F.broadcast_to(x1.expand_dims(1), (n, n, dim)) - \
            F.broadcast_to(x2.expand_dims(0), (n, n, dim))
        distances = F.sum(F.square(diffs), axis=2)     # (i, j): |x1[i] - x2[j]|^2
        gold = np.eye(n)
        labels = gold * (1 - self.smoothing_parameter) + \
            (1 - gold) * self.smoothing_parameter / max(n - 1, 1)
        labels = F.array(labels, ctx=x1.context, dtype=x1.dtype)
        return self.kl_loss(F.log_softmax(-distances, axis=1), labels)


class CTCLoss(Loss):
    r"""Connectionist Temporal Classification loss (``F.CTCLoss``), for
    unaligned sequences: speech, handwriting.

    ``pred``: scores ``(N, T, C)`` for ``layout='NTC'`` (``(T, N, C)`` for
    'TNC'), softmax applied inside; the LAST class ``C-1`` is the blank.
    ``label``: ``(N, L)`` (``label_layout='NT'``, or ``(L, N)`` for 'TN'),
    padded with ``-1`` unless ``label_lengths`` are given.  Optional
    ``pred_lengths``/``label_lengths`` ``(N,)`` give each sample's lengths.
    Returns one loss per sample, ``(N,)``.

    >>> loss = gluon.loss.CTCLoss()
    >>> loss(nd.ones((2, 20, 4)), nd.array([[1, 0, -1, -1], [2, 1, 1, -1]]))
    <BLANKLINE>
    [18.828205 16.505817]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, layout='NTC', label_layout='NT', weight=None, **kwargs):
        if layout not in ('NTC', 'TNC'):
            raise ValueError(f"CTCLoss: layout must be 'NTC' or 'TNC', got {layout!r}")
        if label_layout not in ('NT', 'TN'):
            raise ValueError(f"CTCLoss: label_layout must be 'NT' or 'TN', got "
                             f"{label_layout!r}")
        self._layout, self._label_layout = layout, label_layout
        super().__init__(weight, label_layout.find('N'), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == 'NTC':
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        loss = F.CTCLoss(pred, label, pred_lengths, label_lengths,
                         use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None,
                         blank_label='last')
        return _apply_weighting(F, loss, self._weight, sample_weight)
