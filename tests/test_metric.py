"""mx.metric against NumPy oracles written out here (sklearn's definitions,
no sklearn): values over several batches, local vs global figures, the
registry and configs, errors."""
import copy
import json
import math

import numpy as np
import pytest

import d2lmini as mx

RNG = np.random.default_rng(0)


def _batches(num, shape_pred, num_classes=None, same=False):
    """``num`` (label, pred) numpy pairs; labels are class indices or, with
    ``same``, values of the prediction's shape."""
    out = []
    for _ in range(num):
        pred = RNG.random(shape_pred).astype(np.float32)
        if same:
            label = RNG.random(shape_pred).astype(np.float32)
        else:
            label = RNG.integers(0, num_classes, shape_pred[0]).astype(np.float32)
        out.append((label, pred))
    return out


def _feed(metric, batches, as_nd=True):
    for label, pred in batches:
        if as_nd:
            metric.update([mx.nd.array(label)], [mx.nd.array(pred)])
        else:
            metric.update(label, pred)          # bare numpy arrays
    return metric.get()[1]


# ---------------------------------------------------------------- oracles

def softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def confusion(label, pred_class, k):
    cm = np.zeros((k, k))
    for t, p in zip(label.astype(int), pred_class.astype(int)):
        cm[t, p] += 1
    return cm


def f1_oracle(label, pred_class):
    tp = np.sum((pred_class == 1) & (label == 1))
    fp = np.sum((pred_class == 1) & (label == 0))
    fn = np.sum((pred_class == 0) & (label == 1))
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def mcc_multiclass_oracle(label, pred_class, k):
    """sklearn's matthews_corrcoef from the confusion matrix: 0 where it is
    undefined (one class only, in the labels or the predictions), as
    sklearn and MXNet give."""
    cm = confusion(label, pred_class, k)
    t, p = cm.sum(axis=1), cm.sum(axis=0)
    c, s = np.trace(cm), cm.sum()
    denom = (s * s - p @ p) * (s * s - t @ t)
    return (c * s - t @ p) / math.sqrt(denom) if denom else 0.0


# ------------------------------------------------------------ classification

@pytest.mark.parametrize('as_nd', [True, False])
def test_accuracy(as_nd):
    batches = _batches(4, (16, 5), 5)
    want = np.mean([np.argmax(p, 1)[i] == l[i]
                    for l, p in batches for i in range(16)])
    assert _feed(mx.metric.Accuracy(), batches, as_nd) == pytest.approx(want)
    # class indices as predictions; axis=0 when classes run down the columns
    acc = mx.metric.create('acc')
    acc.update([mx.nd.array([1, 2, 0])], [mx.nd.array([1, 2, 2])])
    assert acc.get() == ('accuracy', pytest.approx(2 / 3))
    acc0 = mx.metric.Accuracy(axis=0)
    acc0.update([np.array([0, 1, 1])], [np.array([[0.9, 0.1, 0.7],
                                                  [0.1, 0.9, 0.3]])])
    assert acc0.get()[1] == pytest.approx(2 / 3)
    assert isinstance(acc0.get()[1], float)


def test_top_k_accuracy():
    batches = _batches(3, (20, 6), 6)
    k = 3
    want = np.mean([l[i] in np.argsort(-p[i])[:k]
                    for l, p in batches for i in range(20)])
    metric = mx.metric.create('top_k_accuracy', top_k=k)
    assert metric.name == 'top_k_accuracy_3'
    assert _feed(metric, batches) == pytest.approx(want)
    big = mx.metric.TopKAccuracy(top_k=10)       # k above the class count: all
    assert _feed(big, batches) == 1.0
    with pytest.raises(ValueError, match='top_k > 1'):
        mx.metric.TopKAccuracy(top_k=1)


@pytest.mark.parametrize('name', ['f1', 'mcc'])
def test_binary_macro_and_micro(name):
    batches = []
    for n in (12, 7, 20):
        label = RNG.integers(0, 2, n).astype(np.float32)
        batches.append((label, RNG.random((n, 2)).astype(np.float32)))

    def oracle(label, pred_class):
        if name == 'f1':
            return f1_oracle(label, pred_class)
        return mcc_multiclass_oracle(label, pred_class, 2)
    per_batch = [oracle(l, p.argmax(1)) for l, p in batches]
    pooled = oracle(np.concatenate([l for l, _ in batches]),
                    np.concatenate([p.argmax(1) for _, p in batches]))
    macro = mx.metric.create(name, average='macro')
    micro = mx.metric.create(name, average='micro')
    assert _feed(macro, batches) == pytest.approx(np.mean(per_batch))
    assert _feed(micro, batches) == pytest.approx(pooled)
    assert macro.num_inst == 3 and micro.num_inst == 39
    with pytest.raises(ValueError, match='binary'):
        macro.update([np.array([0, 1, 2])], [np.ones((3, 2))])
    with pytest.raises(ValueError, match="'macro' or 'micro'"):
        mx.metric.create(name, average='weighted')


def test_f1_and_mcc_degenerate_cases():
    # no positive predicted or true: F1 and MCC are 0, not NaN
    f1, mcc = mx.metric.F1(), mx.metric.MCC()
    for m in (f1, mcc):
        assert math.isnan(m.get()[1])
        m.update([mx.nd.array([0, 0])], [mx.nd.array([[0.9, 0.1], [0.8, 0.2]])])
        assert m.get()[1] == 0.0


def test_pcc_is_multiclass_mcc():
    batches = _batches(3, (30, 4), 4)
    label = np.concatenate([l for l, _ in batches])
    pred = np.concatenate([p.argmax(1) for _, p in batches])
    pcc = mx.metric.create('pcc')
    assert _feed(pcc, batches) == pytest.approx(mcc_multiclass_oracle(label, pred, 4))
    # it grows with new classes, and takes class indices as predictions
    pcc.reset()
    pcc.update([np.array([0, 5, 5, 1])], [np.array([0, 5, 4, 1])])
    assert pcc.k == 6
    assert pcc.get()[1] == pytest.approx(
        mcc_multiclass_oracle(np.array([0, 5, 5, 1]), np.array([0, 5, 4, 1]), 6))


# ------------------------------------------------- probabilities and losses

@pytest.mark.parametrize('name,cls', [('ce', mx.metric.CrossEntropy),
                                      ('nll_loss', mx.metric.NegativeLogLikelihood)])
def test_cross_entropy_and_nll(name, cls):
    batches = [(l, softmax_rows(p)) for l, p in _batches(3, (10, 4), 4)]
    eps = 1e-12
    want = np.mean([-np.log(p[i, int(l[i]) ] + eps)
                    for l, p in batches for i in range(10)])
    metric = mx.metric.create(name)
    assert isinstance(metric, cls)
    assert _feed(metric, batches) == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match=r'class indices in \[0, 4\)'):
        metric.update([np.array([4.0])], [np.ones((1, 4))])


def test_perplexity_with_ignored_label():
    batches = [(l, softmax_rows(p)) for l, p in _batches(2, (12, 5), 5)]
    batches[0][0][:3] = 2                      # label 2 is ignored below
    kept = [(p[i, int(l[i])]) for l, p in batches for i in range(12) if l[i] != 2]
    want = math.exp(-np.mean(np.log(kept)))
    metric = mx.metric.Perplexity(ignore_label=2)
    assert _feed(metric, batches) == pytest.approx(want, rel=1e-5)
    assert metric.num_inst == len(kept)
    every = mx.metric.create('perplexity', None)
    all_p = [p[i, int(l[i])] for l, p in batches for i in range(12)]
    assert _feed(every, batches) == pytest.approx(
        math.exp(-np.mean(np.log(all_p))), rel=1e-5)
    # classes on axis 1 of a (batch, classes, time) prediction
    pred = softmax_rows(RNG.random((6, 3))).reshape(2, 3, 3).transpose(0, 2, 1)
    label = RNG.integers(0, 3, (2, 3)).astype(np.float32)
    want = math.exp(-np.mean(np.log(
        [pred[b, label[b, t].astype(int), t] for b in range(2) for t in range(3)])))
    ax = mx.metric.Perplexity(ignore_label=None, axis=1)
    ax.update([label], [pred])
    assert ax.get()[1] == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize('name,err', [
    ('mae', lambda d: np.abs(d).mean()),
    ('mse', lambda d: (d ** 2).mean()),
    ('rmse', lambda d: np.sqrt((d ** 2).mean()))])
def test_regression(name, err):
    batches = _batches(3, (8, 2), same=True)
    want = np.mean([err(l.astype(np.float64) - p) for l, p in batches])
    assert _feed(mx.metric.create(name), batches) == pytest.approx(want, rel=1e-6)
    # (n,) labels against (n, 1) predictions, not an (n, n) broadcast
    m = mx.metric.create(name)
    m.update(mx.nd.array([1, 2, 3]), mx.nd.array([[1], [2], [5]]))
    assert m.get()[1] == pytest.approx(err(np.array([0, 0, -2.0])))
    # a label per row against several outputs: compared with each (MXNet)
    m.reset()
    m.update([np.array([1.0, 2.0])], [np.array([[1.0, 3.0], [2.0, 2.0]])])
    assert m.get()[1] == pytest.approx(err(np.array([0, -2.0, 0, 0])))
    with pytest.raises(ValueError, match=r'\(3, 1\).*\(4, 1\)'):
        m.update([np.ones(3)], [np.ones(4)])


@pytest.mark.parametrize('average', ['macro', 'micro'])
def test_pearson(average):
    batches = _batches(3, (10, 2), same=True)
    for l, p in batches:
        p += 0.5 * l                               # some correlation
    metric = mx.metric.create('pearsonr', average=average)
    got = _feed(metric, batches)
    if average == 'macro':
        want = np.mean([np.corrcoef(l.ravel(), p.ravel())[0, 1]
                        for l, p in batches])
    else:
        want = np.corrcoef(np.concatenate([l.ravel() for l, _ in batches]),
                           np.concatenate([p.ravel() for _, p in batches]))[0, 1]
    assert got == pytest.approx(want, rel=1e-6)
    with pytest.raises(ValueError, match=r'\(2,\).*\(3,\)'):
        metric.update([np.ones(2)], [np.ones(3)])


def test_loss_ignores_labels():
    preds = [RNG.random((4, 3)), RNG.random(5)]
    loss = mx.metric.Loss()
    loss.update(None, [mx.nd.array(p) for p in preds])
    want = sum(p.sum() for p in preds) / 17
    assert loss.get() == ('loss', pytest.approx(want))
    single = mx.metric.create('loss')
    single.update(None, mx.nd.array(preds[0]))
    assert single.get()[1] == pytest.approx(preds[0].mean())


# ------------------------------------------------------- custom and composite

def test_custom_metric_and_np():
    def mean_abs(label, pred):
        return np.abs(label - pred).mean()

    def hits(label, pred):
        return int((pred.argmax(1) == label).sum()), len(label)
    batches = _batches(2, (6, 3), 3)
    custom = mx.metric.create(mean_abs)
    assert custom.name == 'mean_abs'
    same = _batches(2, (6,), same=True)
    assert _feed(custom, same) == pytest.approx(
        np.mean([mean_abs(l, p) for l, p in same]))
    counted = mx.metric.np(hits)
    assert _feed(counted, batches) == pytest.approx(
        np.mean([p.argmax(1)[i] == l[i] for l, p in batches for i in range(6)]))
    assert mx.metric.CustomMetric(lambda l, p: 0.0).name == 'custom(<lambda>)'
    with pytest.raises(NotImplementedError, match='serialized'):
        custom.get_config()
    extra = mx.metric.np(mean_abs, allow_extra_outputs=True)
    extra.update([np.ones(2)], [np.zeros(2), np.ones(7)])   # the state is skipped
    assert extra.get()[1] == 1.0
    with pytest.raises(ValueError, match='Number of labels 1 .* predictions 2'):
        custom.update([np.ones(2)], [np.zeros(2), np.ones(7)])


def test_composite():
    metric = mx.metric.create(['acc', mx.metric.F1(), 'ce'])
    assert isinstance(metric, mx.metric.CompositeEvalMetric)
    label, pred = np.array([0., 1, 1]), np.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])
    metric.update([label], [pred])
    names, values = metric.get()
    assert names == ['accuracy', 'f1', 'cross-entropy']
    assert values == [pytest.approx(2 / 3), pytest.approx(0.8),
                      pytest.approx(-np.log([0.3, 1.0, 0.6]).mean())]
    assert metric.get_name_value()[0] == ('accuracy', pytest.approx(2 / 3))
    assert metric.get_metric(1).name == 'f1'
    assert metric.get_metric(-1).name == 'cross-entropy'
    with pytest.raises(IndexError, match='out of range'):
        metric.get_metric(3)
    metric.add('loss')
    assert metric.get()[0][-1] == 'loss' and math.isnan(metric.get()[1][-1])


def test_update_dict_picks_named_entries():
    acc = mx.metric.Accuracy(output_names=['out'], label_names=['y'])
    acc.update_dict({'y': mx.nd.array([1, 0]), 'z': mx.nd.array([0, 0])},
                    {'aux': mx.nd.array([5, 5]), 'out': mx.nd.array([1, 1])})
    assert acc.get()[1] == 0.5
    with pytest.raises(KeyError, match="no output named \\['out'\\]"):
        acc.update_dict({'y': mx.nd.array([1])}, {'o': mx.nd.array([1])})
    both = mx.metric.CompositeEvalMetric(['acc'], label_names=['y'])
    both.update_dict({'y': mx.nd.array([1, 0]), 'z': mx.nd.array([9, 9])},
                     {'out': mx.nd.array([1, 0])})
    assert both.get() == (['accuracy'], [1.0])


# ------------------------------------------------------ local/global, registry

@pytest.mark.parametrize('name,kwargs,shape,same', [
    ('acc', {}, (8, 3), False), ('top_k_acc', {'top_k': 2}, (8, 3), False),
    ('f1', {}, (8, 2), False), ('f1', {'average': 'micro'}, (8, 2), False),
    ('mcc', {'average': 'micro'}, (8, 2), False), ('pcc', {}, (8, 3), False),
    ('perplexity', {'ignore_label': None}, (8, 3), False),
    ('ce', {}, (8, 3), False), ('mae', {}, (8, 2), True),
    ('rmse', {}, (8, 2), True), ('pearsonr', {'average': 'micro'}, (8, 2), True),
    ('loss', {}, (8, 2), True)])
def test_global_figures_survive_reset_local(name, kwargs, shape, same):
    batches = _batches(4, shape, shape[1], same=same)
    if name in ('f1', 'mcc'):
        for l, _ in batches:
            l[:4] = 0
            l[4:] = 1
    local = mx.metric.create(name, **kwargs)
    whole = copy.deepcopy(local)
    for label, pred in batches:
        local.update([label], [pred])
        local.reset_local()
        whole.update([label], [pred])
    assert local.get_global() == pytest.approx(whole.get())
    assert math.isnan(local.get()[1])
    local.update([batches[-1][0]], [batches[-1][1]])
    fresh = mx.metric.create(name, **kwargs)
    fresh.update([batches[-1][0]], [batches[-1][1]])
    assert local.get() == pytest.approx(fresh.get())
    local.reset()
    assert math.isnan(local.get_global()[1])


@pytest.mark.parametrize('alias,cls', [
    ('acc', 'Accuracy'), ('accuracy', 'Accuracy'), ('top_k_acc', 'TopKAccuracy'),
    ('ce', 'CrossEntropy'), ('nll_loss', 'NegativeLogLikelihood'),
    ('pearsonr', 'PearsonCorrelation'), ('composite', 'CompositeEvalMetric'),
    ('MSE', 'MSE'), ('rmse', 'RMSE'), ('mae', 'MAE'), ('f1', 'F1'),
    ('mcc', 'MCC'), ('loss', 'Loss')])
def test_create_aliases_and_config_round_trip(alias, cls):
    kwargs = {'top_k': 4} if cls == 'TopKAccuracy' else {}
    metric = mx.metric.create(alias, **kwargs)
    assert type(metric).__name__ == cls
    config = metric.get_config()
    assert config['metric'] == cls
    again = mx.metric.create(json.dumps(config))
    assert type(again) is type(metric) and again.get_config() == config


def test_create_forms_and_register():
    acc = mx.metric.Accuracy(axis=0)
    assert mx.metric.create(acc) is acc
    assert mx.metric.create('["acc", {"axis": 0}]').axis == 0
    assert mx.metric.create({'metric': 'perplexity', 'ignore_label': 3}).ignore_label == 3
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        mx.metric.create('bleu')
    with pytest.raises(ValueError, match='already an instance'):
        mx.metric.create(acc, 1)

    @mx.metric.register
    @mx.metric.alias('twice_acc')
    class TwiceAccuracy(mx.metric.Accuracy):
        def get(self):
            return (self.name, 2 * super().get()[1])
    made = mx.metric.create('twice_acc')
    made.update([np.array([1.0])], [np.array([1.0])])
    assert isinstance(made, TwiceAccuracy) and made.get()[1] == 2.0
    with pytest.raises(TypeError, match='not a subclass of EvalMetric'):
        mx.metric.register(int)


def test_count_and_shape_errors_name_both():
    acc = mx.metric.Accuracy()
    with pytest.raises(ValueError, match='Number of labels 2 .* predictions 1'):
        acc.update([mx.nd.ones(3), mx.nd.ones(3)], [mx.nd.ones((3, 2))])
    with pytest.raises(ValueError, match=r'\(4,\) .* \(3,\)'):
        acc.update([mx.nd.ones(3)], [mx.nd.ones((4, 2))])
    with pytest.raises(ValueError, match=r'Shape of labels \(2,\) does not '
                                         r'match shape of predictions \(3,\)'):
        mx.metric.check_label_shapes(np.ones(2), np.ones(3), shape=True)
    with pytest.raises(ValueError, match='5 labels for 4 predictions'):
        mx.metric.CrossEntropy().update([np.zeros(5)], [np.ones((4, 2))])
