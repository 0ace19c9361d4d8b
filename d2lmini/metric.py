"""Evaluation metrics that accumulate over batches: ``mx.metric`` as in MXNet 1.x.

Why one long file: ``mx.metric`` is a family of 20 small metric classes on
one base class, kept together as in MXNet; each class reads on its own.

A metric keeps a running ``sum_metric`` and ``num_inst``; ``update(labels,
preds)`` adds a batch (lists of NDArrays or numpy arrays, or single arrays),
``get()`` returns ``(name, sum_metric / num_inst)`` as a Python float and
``reset()`` starts over.  Beside these *local* figures every metric keeps
*global* ones that ``reset_local()`` leaves alone, so a callback can print a
figure per 50 batches (``get``) while the epoch's figure (``get_global``)
keeps growing.

>>> acc = mx.metric.create('acc')
>>> acc.update([mx.nd.array([0, 1, 1])],
...            [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
>>> acc.get()
('accuracy', 0.6666666666666666)
"""
import json
import math
import warnings
from collections import OrderedDict

import numpy

from .ndarray.ndarray import NDArray

__all__ = ['EvalMetric', 'CompositeEvalMetric', 'Accuracy', 'TopKAccuracy',
           'F1', 'MCC', 'Perplexity', 'MAE', 'MSE', 'RMSE', 'CrossEntropy',
           'NegativeLogLikelihood', 'PearsonCorrelation', 'PCC', 'Loss',
           'CustomMetric', 'np', 'create', 'register', 'alias',
           'check_label_shapes']


def _host(x):
    """A NumPy view of one label or prediction."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    return numpy.asarray(x)


def _as_list(x):
    return [x] if isinstance(x, (NDArray, numpy.ndarray)) else x


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Check that there are as many labels as predictions (``shape=True``:
    that the two arrays have the same shape); ``wrap=True`` also turns a
    single array into a one-element list.  Returns ``(labels, preds)``."""
    if wrap:
        labels, preds = _as_list(labels), _as_list(preds)
    if shape:
        if tuple(labels.shape) != tuple(preds.shape):
            raise ValueError(f'Shape of labels {tuple(labels.shape)} does not '
                             f'match shape of predictions {tuple(preds.shape)}')
    elif len(labels) != len(preds):
        raise ValueError(f'Number of labels {len(labels)} does not match number '
                         f'of predictions {len(preds)}')
    return labels, preds


def _same_size(metric, label, pred):
    """Reshape ``label`` like ``pred`` when they hold as many values."""
    if label.size != pred.size:
        raise ValueError(f'{metric}: labels of shape {label.shape} and '
                         f'predictions of shape {pred.shape} do not match')
    return label.reshape(pred.shape)


def _class_indices(metric, label, num_rows, num_classes=None):
    """Labels as int64 class indices, one per row of the predictions."""
    label = label.ravel()
    if label.shape[0] != num_rows:
        raise ValueError(f'{metric}: {label.shape[0]} labels for {num_rows} '
                         f'predictions')
    index = label.astype(numpy.int64)
    if num_classes is not None and index.size and \
            (index.min() < 0 or index.max() >= num_classes):
        raise ValueError(f'{metric}: labels must be class indices in '
                         f'[0, {num_classes}), got values from {index.min()} '
                         f'to {index.max()}')
    return index


class EvalMetric:
    """Base class of the metrics.

    ``output_names`` / ``label_names``: which entries of the dicts given to
    :meth:`update_dict` this metric reads (None: all, in order).
    A subclass accumulates into ``sum_metric``/``num_inst`` and, when it keeps
    global statistics (``has_global_stats=True``), into
    ``global_sum_metric``/``global_num_inst`` too.
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop('has_global_stats', False)
        self._kwargs = kwargs          # the constructor's arguments, for get_config
        self.reset()

    def __str__(self):
        return f'EvalMetric: {dict(self.get_name_value())}'

    def get_config(self):
        """The arguments that rebuild this metric with ``create(**config)``."""
        config = dict(self._kwargs)
        config.update({'metric': type(self).__name__, 'name': self.name,
                       'output_names': self.output_names,
                       'label_names': self.label_names})
        return config

    def update_dict(self, label, pred):
        """Update from dicts name -> array, picking the entries named by
        ``label_names`` and ``output_names``."""
        def pick(entries, names, what):
            if names is None:
                return list(entries.values())
            missing = [n for n in names if n not in entries]
            if missing:
                raise KeyError(f'{self.name}: no {what} named {missing}; '
                               f'have {list(entries)}')
            return [entries[n] for n in names]
        self.update(pick(label, self.label_names, 'label'),
                    pick(pred, self.output_names, 'output'))

    def update(self, labels, preds):
        """Add one batch of labels and predictions."""
        raise NotImplementedError(f'{type(self).__name__} must define update')

    def _add(self, value, count):
        """Add ``value`` over ``count`` instances, locally and globally."""
        value = float(value)
        self.sum_metric += value
        self.num_inst += count
        self.global_sum_metric += value
        self.global_num_inst += count

    def reset(self):
        """Forget everything, local and global."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Forget the local figures only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)`` of the local figures; NaN before any update."""
        if self.num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, float(self.sum_metric / self.num_inst))

    def get_global(self):
        """``(name, value)`` since the last :meth:`reset`."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, float(self.global_sum_metric / self.global_num_inst))

    @staticmethod
    def _pairs(name, value):
        names = name if isinstance(name, list) else [name]
        values = value if isinstance(value, list) else [value]
        return list(zip(names, values))

    def get_name_value(self):
        """``[(name, value), ...]`` of :meth:`get`."""
        return self._pairs(*self.get())

    def get_global_name_value(self):
        """``[(name, value), ...]`` of :meth:`get_global`."""
        return self._pairs(*self.get_global())


# ------------------------------------------------------------------ registry

_REGISTRY = {}


def register(klass, name=None):
    """Make ``create(name)`` build ``klass`` (name: the class's, lowercased)."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError(f'register: {klass!r} is not a subclass of EvalMetric')
    name = (name or klass.__name__).lower()
    if name in _REGISTRY and _REGISTRY[name] is not klass:
        warnings.warn(f'metric {klass.__module__}.{klass.__name__} registered '
                      f'as {name!r} replaces {_REGISTRY[name].__name__}',
                      UserWarning, stacklevel=2)
    _REGISTRY[name] = klass
    return klass


def alias(*aliases):
    """Class decorator: also register the class under ``aliases``."""
    def decorate(klass):
        for name in aliases:
            register(klass, name)
        return klass
    return decorate


def _create(metric, *args, **kwargs):
    """A metric from a registered name, a config dict or its JSON."""
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise ValueError('create: the metric is already an instance; '
                             'extra arguments are not allowed')
        return metric
    if isinstance(metric, dict):
        config = dict(metric)
        return _create(config.pop('metric'), **config)
    if not isinstance(metric, str):
        raise TypeError(f'create: a metric is a name, an EvalMetric, a '
                        f'function or a list of them, got {type(metric).__name__}')
    if metric.startswith('['):                       # '["acc", {"axis": 0}]'
        name, config = json.loads(metric)
        return _create(name, **config)
    if metric.startswith('{'):                       # a get_config() as JSON
        return _create(json.loads(metric))
    key = metric.lower()
    if key not in _REGISTRY:
        raise ValueError(f'create: unknown metric {metric!r}; registered: '
                         f'{sorted(_REGISTRY)}')
    return _REGISTRY[key](*args, **kwargs)


def create(metric, *args, **kwargs):
    """A metric from a name (``'acc'``, ``'top_k_accuracy'``, ``'ce'``,
    ``'mse'``...), an :class:`EvalMetric`, a function ``f(label, pred)`` on
    numpy arrays (a :class:`CustomMetric`) or a list of these (a
    :class:`CompositeEvalMetric`).  Extra arguments go to the constructor.

    >>> mx.metric.create(['acc', 'rmse']).get()
    (['accuracy', 'rmse'], [nan, nan])
    """
    if callable(metric) and not isinstance(metric, EvalMetric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


# ----------------------------------------------------------------- composite

@register
@alias('composite')
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns their names and
    values as two lists."""

    def __init__(self, metrics=None, name='composite', output_names=None,
                 label_names=None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names,
                         label_names=label_names, has_global_stats=True)

    def add(self, metric):
        """Add a child metric (anything :func:`create` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The ``index``-th child metric."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise IndexError(f'metric index {index} is out of range: this '
                             f'composite has {len(self.metrics)} metrics')
        return self.metrics[index]

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items()
                                 if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items()
                                if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, 'metrics', []):
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, method):
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, method)()
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return (names, values)

    def get(self):
        return self._collect('get')

    def get_global(self):
        return self._collect('get_global')

    def get_config(self):
        config = super().get_config()
        config['metrics'] = [m.get_config() for m in self.metrics]
        return config


# ----------------------------------------------------------- classification

@register
@alias('acc')
class Accuracy(EvalMetric):
    """Fraction of correct predictions.  A prediction is a class index (same
    shape as the label) or a score per class along ``axis`` (argmax wins)."""

    def __init__(self, axis=1, name='accuracy', output_names=None,
                 label_names=None):
        super().__init__(name, axis=axis, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            if pred.shape != label.shape:
                pred = pred.argmax(axis=self.axis)
            if pred.size != label.size:
                raise ValueError(f'{self.name}: predicted classes of shape '
                                 f'{pred.shape} do not match labels of shape '
                                 f'{label.shape}')
            correct = (pred.astype('int32').ravel() ==
                       label.astype('int32').ravel()).sum()
            self._add(correct, label.size)


@register
@alias('top_k_accuracy', 'top_k_acc')
class TopKAccuracy(EvalMetric):
    """Fraction of examples whose label is among the ``top_k`` highest
    scores (``top_k`` > 1; for 1 use :class:`Accuracy`)."""

    def __init__(self, top_k=1, name='top_k_accuracy', output_names=None,
                 label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        if top_k <= 1:
            raise ValueError(f'TopKAccuracy needs top_k > 1, got {top_k}; '
                             f'use Accuracy for top_k = 1')
        self.top_k = top_k
        self._given_name = self.name
        self.name += f'_{top_k}'

    def get_config(self):
        config = super().get_config()
        config['name'] = self._given_name    # create() appends _k again
        return config

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred).astype('float32')
            if pred.ndim == 1:                   # already class indices
                label = _same_size(self.name, label, pred)
                self._add((pred.astype('int32') == label.astype('int32')).sum(),
                          pred.shape[0])
                continue
            if pred.ndim != 2:
                raise ValueError(f'{self.name}: predictions must be (batch, '
                                 f'classes), got shape {pred.shape}')
            num_classes = pred.shape[1]
            index = _class_indices(self.name, label, pred.shape[0])
            k = min(num_classes, self.top_k)
            # argpartition: the k best in any order, cheaper than a sort
            best = numpy.argpartition(pred, num_classes - k, axis=1)[:, -k:]
            self._add((best == index[:, None]).sum(), pred.shape[0])


class _BinaryStats:
    """True/false positive/negative counts of a binary classifier, local and
    global (the sufficient statistics of F1 and MCC)."""

    KEYS = ('tp', 'fp', 'fn', 'tn')

    def __init__(self):
        self.local = dict.fromkeys(self.KEYS, 0)
        self.total = dict.fromkeys(self.KEYS, 0)

    def update(self, metric, label, pred):
        label, pred = _host(label), _host(pred)
        if pred.ndim != 2:
            raise ValueError(f'{metric}: predictions must be (batch, 2) class '
                             f'scores, got shape {pred.shape}')
        label = _class_indices(metric, label, pred.shape[0])
        if len(numpy.unique(label)) > 2:
            raise ValueError(f'{metric} only supports binary classification; '
                             f'labels hold {numpy.unique(label).tolist()}')
        pred_pos = pred.argmax(axis=1) == 1
        label_pos = label == 1
        counts = {'tp': pred_pos & label_pos, 'fp': pred_pos & ~label_pos,
                  'fn': ~pred_pos & label_pos, 'tn': ~pred_pos & ~label_pos}
        for key, hits in counts.items():
            self.local[key] += int(hits.sum())
            self.total[key] += int(hits.sum())

    def reset_local(self):
        self.local = dict.fromkeys(self.KEYS, 0)

    def reset(self):
        self.reset_local()
        self.total = dict.fromkeys(self.KEYS, 0)

    @staticmethod
    def count(c):
        return c['tp'] + c['fp'] + c['fn'] + c['tn']

    @staticmethod
    def fscore(c):
        precision = c['tp'] / (c['tp'] + c['fp']) if c['tp'] + c['fp'] else 0.
        recall = c['tp'] / (c['tp'] + c['fn']) if c['tp'] + c['fn'] else 0.
        if precision + recall == 0:
            return 0.
        return 2 * precision * recall / (precision + recall)

    @staticmethod
    def mcc(c):
        if not _BinaryStats.count(c):
            return 0.
        tp, fp, fn, tn = (float(c[k]) for k in _BinaryStats.KEYS)
        denom = 1.
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            if term:                  # an empty row or column counts as 1
                denom *= term
        return (tp * tn - fp * fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: ``average='macro'`` averages the per-update scores,
    ``'micro'`` scores the counts pooled over all updates."""

    def __init__(self, name, output_names, label_names, average):
        if average not in ('macro', 'micro'):
            raise ValueError(f"{name}: average must be 'macro' or 'micro', "
                             f"got {average!r}")
        self.average = average
        self.stats = _BinaryStats()
        super().__init__(name, output_names=output_names,
                         label_names=label_names, average=average,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.stats.update(self.name, label, pred)
        stats, score = self.stats, self._score
        if self.average == 'macro':
            self._add(score(stats.local), 1)
            stats.reset()
        else:
            self.sum_metric = score(stats.local) * stats.count(stats.local)
            self.num_inst = stats.count(stats.local)
            self.global_sum_metric = score(stats.total) * stats.count(stats.total)
            self.global_num_inst = stats.count(stats.total)

    def reset(self):
        super().reset()
        self.stats.reset()

    def reset_local(self):
        super().reset_local()
        self.stats.reset_local()


@register
class F1(_BinaryMetric):
    """F1 score (harmonic mean of precision and recall) of a binary
    classifier; predictions are (batch, 2) scores."""

    def __init__(self, name='f1', output_names=None, label_names=None,
                 average='macro'):
        super().__init__(name, output_names, label_names, average)

    _score = staticmethod(_BinaryStats.fscore)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier."""

    def __init__(self, name='mcc', output_names=None, label_names=None,
                 average='macro'):
        super().__init__(name, output_names, label_names, average)

    _score = staticmethod(_BinaryStats.mcc)


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Pearson's correlation of the
    one-hot labels and predictions) from a confusion matrix that grows with
    the classes seen."""

    def __init__(self, name='pcc', output_names=None, label_names=None,
                 has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names=output_names,
                         label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, k):
        pad = ((0, k - self.k), (0, k - self.k))
        self.lcm = numpy.pad(self.lcm, pad)
        self.gcm = numpy.pad(self.gcm, pad)
        self.k = k

    @staticmethod
    def _calc_mcc(cm):
        n = cm.sum()
        rows, cols = cm.sum(axis=1), cm.sum(axis=0)
        cov_xx = numpy.sum(rows * (n - rows))
        cov_yy = numpy.sum(cols * (n - cols))
        if cov_xx == 0 or cov_yy == 0:
            return float('nan')
        cov_xy = numpy.sum(cm.diagonal() * n - rows * cols)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label).astype('int32'), _host(pred)
            if pred.shape != label.shape:
                pred = pred.argmax(axis=1)
            pred, label = pred.astype('int32').ravel(), label.ravel()
            if pred.size != label.size:
                raise ValueError(f'{self.name}: {pred.size} predictions for '
                                 f'{label.size} labels')
            if pred.size and min(pred.min(), label.min()) < 0:
                raise ValueError(f'{self.name}: class indices must be >= 0')
            top = int(max(pred.max(), label.max())) + 1 if pred.size else 0
            if top > self.k:
                self._grow(top)
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred, label), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    def get(self):
        if self.num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, float(self._calc_mcc(self.lcm)))

    def get_global(self):
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, float(self._calc_mcc(self.gcm)))

    def reset(self):
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))


# -------------------------------------------------- probabilities and losses

@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log probability given to the true label
    (``axis``: the class axis of the predictions); labels equal to
    ``ignore_label`` are left out."""

    def __init__(self, ignore_label, axis=-1, name='perplexity',
                 output_names=None, label_names=None):
        super().__init__(name, ignore_label=ignore_label, axis=axis,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            pred = numpy.moveaxis(pred, self.axis, -1)
            pred = pred.reshape(-1, pred.shape[-1])
            index = _class_indices(self.name, label, pred.shape[0])
            keep = numpy.ones(index.shape, bool) if self.ignore_label is None \
                else index != self.ignore_label
            if keep.any() and (index[keep].min() < 0 or
                               index[keep].max() >= pred.shape[1]):
                raise ValueError(f'{self.name}: labels must be class indices '
                                 f'in [0, {pred.shape[1]})')
            prob = pred[numpy.nonzero(keep)[0], index[keep]]
            self._add(-numpy.log(numpy.maximum(1e-10, prob)).sum(),
                      int(keep.sum()))

    def get(self):
        if self.num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


class _Regression(EvalMetric):
    """Mean over updates of a per-batch error of predictions vs labels.

    As in MXNet, 1-D labels and predictions count as columns, and the two
    broadcast: a (n,) label against (n, c) predictions compares the label
    with every output.
    """

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names,
                         label_names=label_names, has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            label = label.reshape(-1, 1) if label.ndim == 1 else label
            pred = pred.reshape(-1, 1) if pred.ndim == 1 else pred
            try:
                diff = label - pred
            except ValueError:
                raise ValueError(f'{self.name}: labels of shape {label.shape} '
                                 f'and predictions of shape {pred.shape} do '
                                 f'not broadcast') from None
            self._add(self._error(diff), 1)


@register
class MAE(_Regression):
    """Mean absolute error."""

    def __init__(self, name='mae', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(diff):
        return numpy.abs(diff).mean()


@register
class MSE(_Regression):
    """Mean squared error."""

    def __init__(self, name='mse', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(diff):
        return (diff ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error (per batch, then averaged over batches)."""

    def __init__(self, name='rmse', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(diff):
        return numpy.sqrt((diff ** 2.0).mean())


class _LogLikelihood(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over examples; predictions are
    (batch, classes) probabilities."""

    def __init__(self, eps, name, output_names, label_names):
        super().__init__(name, eps=eps, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _host(pred)
            if pred.ndim != 2:
                raise ValueError(f'{self.name}: predictions must be (batch, '
                                 f'classes) probabilities, got shape '
                                 f'{pred.shape}')
            index = _class_indices(self.name, _host(label), pred.shape[0],
                                   pred.shape[1])
            prob = pred[numpy.arange(pred.shape[0]), index]
            self._add((-numpy.log(prob + self.eps)).sum(), pred.shape[0])


@register
@alias('ce')
class CrossEntropy(_LogLikelihood):
    """Cross-entropy of predicted probabilities and the true class."""

    def __init__(self, eps=1e-12, name='cross-entropy', output_names=None,
                 label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias('nll_loss')
class NegativeLogLikelihood(_LogLikelihood):
    """Negative log-likelihood of the true class."""

    def __init__(self, eps=1e-12, name='nll-loss', output_names=None,
                 label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias('pearsonr')
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: ``'macro'`` averages
    the per-array coefficients, ``'micro'`` pools every value seen."""

    def __init__(self, name='pearsonr', output_names=None, label_names=None,
                 average='macro'):
        if average not in ('macro', 'micro'):
            raise ValueError(f"{name}: average must be 'macro' or 'micro', "
                             f"got {average!r}")
        self.average = average
        super().__init__(name, output_names=output_names,
                         label_names=label_names, average=average,
                         has_global_stats=True)

    # Pooled statistics as running sums: count, sums, sums of squares and
    # of products (in float64, which is exact enough for metric sizes).
    @staticmethod
    def _zero():
        return numpy.zeros(6)

    @staticmethod
    def _corr(s):
        n, sl, sp, sll, spp, slp = s
        cov = slp - sl * sp / n
        var_l, var_p = sll - sl * sl / n, spp - sp * sp / n
        return cov / math.sqrt(var_l * var_p) if var_l * var_p > 0 else float('nan')

    def reset(self):
        super().reset()
        self._local, self._total = self._zero(), self._zero()

    def reset_local(self):
        super().reset_local()
        self._local = self._zero()

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            check_label_shapes(label, pred, shape=True)
            label = label.ravel().astype(numpy.float64)
            pred = pred.ravel().astype(numpy.float64)
            if self.average == 'macro':
                self._add(numpy.corrcoef(pred, label)[0, 1], 1)
            else:
                sums = numpy.array([label.size, label.sum(), pred.sum(),
                                    label @ label, pred @ pred, label @ pred])
                self._local += sums
                self._total += sums
                self.num_inst += 1
                self.global_num_inst += 1

    def get(self):
        if self.average == 'macro' or self.num_inst == 0:
            return super().get()
        return (self.name, self._corr(self._local))

    def get_global(self):
        if self.average == 'macro' or self.global_num_inst == 0:
            return super().get_global()
        return (self.name, self._corr(self._total))


@register
class Loss(EvalMetric):
    """Mean of the values of the predictions (a loss output); labels are
    ignored."""

    def __init__(self, name='loss', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names,
                         label_names=label_names, has_global_stats=True)

    def update(self, _, preds):
        for pred in _as_list(preds):
            pred = _host(pred)
            self._add(pred.sum(), pred.size)


# -------------------------------------------------------------------- custom

@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on numpy arrays, returning a
    value (one instance) or a ``(sum, count)`` pair.
    ``allow_extra_outputs=True`` lets there be more predictions than labels
    (an RNN's states); the extra ones are not passed to ``feval``."""

    def __init__(self, feval, name=None, allow_extra_outputs=False,
                 output_names=None, label_names=None):
        if name is None:
            name = feval.__name__
            if '<' in name:
                name = f'custom({name})'
        super().__init__(name, feval=feval,
                         allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        labels, preds = _as_list(labels), _as_list(preds)
        if not self._allow_extra_outputs:
            check_label_shapes(labels, preds)
        for pred, label in zip(preds, labels):
            result = self._feval(_host(label), _host(pred))
            if isinstance(result, tuple):
                value, count = result
                self._add(value, count)
            else:
                self._add(result, 1)

    def get_config(self):
        raise NotImplementedError('CustomMetric cannot be serialized: its '
                                  'function is Python code')


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A :class:`CustomMetric` from ``numpy_feval(label, pred)`` on numpy
    arrays.

    >>> mae = mx.metric.np(lambda label, pred: abs(label - pred).mean())
    """
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
