"""gluon.loss: per-sample values against NumPy and PyTorch, stability, gradients."""
import numpy as np
import pytest

from d2lmini import autograd, nd
from d2lmini.gluon import loss as gloss


from oracles import needs_torch, tF, torch


def rnd(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).uniform(-1, 1, shape) * scale).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-6):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else a
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def np_log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# --- softmax cross-entropy ----------------------------------------------------
def test_softmax_ce_sparse_labels(ctx):
    pred, label = rnd(5, 4, scale=3), np.array([0, 3, 1, 1, 2])
    l = gloss.SoftmaxCrossEntropyLoss()(nd.array(pred), nd.array(label))
    assert l.shape == (5,) and l.context == ctx
    close(l, -np_log_softmax(pred)[np.arange(5), label], rtol=1e-5)


def test_softmax_ce_dense_labels_from_logits_weights_and_axis():
    pred = rnd(3, 4, scale=2)
    dist = np.abs(rnd(3, 4, seed=1))
    dist /= dist.sum(1, keepdims=True)
    l = gloss.SoftmaxCELoss(sparse_label=False)(nd.array(pred), nd.array(dist))
    close(l, -(np_log_softmax(pred) * dist).sum(1), rtol=1e-5)
    logp = np_log_softmax(pred).astype(np.float32)
    l = gloss.SoftmaxCELoss(from_logits=True, weight=2.0)(nd.array(logp),
                                                         nd.array([1, 2, 3]))
    close(l, -2 * logp[np.arange(3), [1, 2, 3]], rtol=1e-5)
    sw = nd.array([[1.0], [0.0], [0.5]])
    l = gloss.SoftmaxCELoss()(nd.array(pred), nd.array([0, 1, 2]), sw)
    close(l, -np_log_softmax(pred)[np.arange(3), [0, 1, 2]] * [1, 0, 0.5], rtol=1e-5)
    # classes on axis 1 of (N, C, T): the loss averages over T
    p3 = rnd(2, 3, 5)
    lab = np.random.default_rng(0).integers(0, 3, (2, 5))
    l = gloss.SoftmaxCELoss(axis=1)(nd.array(p3), nd.array(lab))
    ref = -np.take_along_axis(np_log_softmax(p3, 1), lab[:, None], 1)[:, 0].mean(1)
    close(l, ref, rtol=1e-5)


def test_softmax_ce_is_stable_for_huge_logits():
    pred = nd.array([[1000.0, 0.0, -1000.0], [-500.0, 500.0, 0.0]])
    l = gloss.SoftmaxCrossEntropyLoss()(pred, nd.array([0, 0]))
    close(l, [0.0, 1000.0], rtol=1e-6)


@needs_torch
def test_softmax_ce_value_and_gradient_match_torch():
    pred, label = rnd(6, 5, scale=4), np.array([4, 0, 1, 2, 3, 0])
    p = nd.array(pred)
    p.attach_grad()
    with autograd.record():
        l = gloss.SoftmaxCrossEntropyLoss()(p, nd.array(label))
    l.backward()
    tp = torch.tensor(pred, dtype=torch.float64, requires_grad=True)
    tl = tF.cross_entropy(tp, torch.tensor(label), reduction='none')
    tl.sum().backward()
    close(l, tl.detach().numpy(), rtol=1e-5)
    close(p.grad, tp.grad.numpy(), rtol=1e-5, atol=1e-6)


# --- L2, L1 -------------------------------------------------------------------
def test_l2_and_l1(ctx):
    pred, label = rnd(4, 3), rnd(4, 3, seed=1)
    close(gloss.L2Loss()(nd.array(pred), nd.array(label)),
          (0.5 * (pred - label) ** 2).mean(1))
    close(gloss.L1Loss()(nd.array(pred), nd.array(label)), np.abs(pred - label).mean(1))
    close(gloss.L2Loss(weight=4.0)(nd.array(pred), nd.array(label)),
          (2 * (pred - label) ** 2).mean(1))


def test_l2_with_1d_predictions_and_label_reshape():
    # (batch,) predictions: one value per sample, no averaging away of the batch
    l = gloss.L2Loss()(nd.array([1.0, 2.0, 3.0]), nd.array([1.0, 0.0, 0.0]))
    assert l.shape == (3,)
    close(l, [0.0, 2.0, 4.5])
    # (batch, 1) predictions with (batch,) labels, as in linear regression
    l = gloss.L2Loss()(nd.array([[1.0], [2.0]]), nd.array([0.0, 0.0]))
    assert l.shape == (2,)
    close(l, [0.5, 2.0])
    with pytest.raises(ValueError, match='does not match'):
        gloss.L2Loss()(nd.ones((2, 3)), nd.ones((2,)))


def test_batch_axis_other_than_zero():
    pred, label = rnd(3, 5), rnd(3, 5, seed=2)
    l = gloss.L1Loss(batch_axis=1)(nd.array(pred), nd.array(label))
    assert l.shape == (5,)
    close(l, np.abs(pred - label).mean(0))


@needs_torch
def test_l2_l1_match_torch():
    pred, label = rnd(4, 3), rnd(4, 3, seed=1)
    tp, tl = torch.tensor(pred), torch.tensor(label)
    close(gloss.L2Loss()(nd.array(pred), nd.array(label)),
          0.5 * tF.mse_loss(tp, tl, reduction='none').mean(1).numpy(), rtol=1e-5)
    close(gloss.L1Loss()(nd.array(pred), nd.array(label)),
          tF.l1_loss(tp, tl, reduction='none').mean(1).numpy(), rtol=1e-5)


# --- sigmoid binary cross-entropy ---------------------------------------------
def test_sigmoid_bce_from_logits_and_probabilities(ctx):
    x = rnd(4, 3, scale=5)
    z = (rnd(4, 3, seed=3) > 0).astype(np.float32)
    ref = (np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))).mean(1)
    close(gloss.SigmoidBinaryCrossEntropyLoss()(nd.array(x), nd.array(z)), ref,
          rtol=1e-5)
    p = 1 / (1 + np.exp(-x))
    close(gloss.SigmoidBCELoss(from_sigmoid=True)(nd.array(p), nd.array(z)), ref,
          rtol=1e-4, atol=1e-5)


def test_sigmoid_bce_is_stable_and_pos_weight():
    x = nd.array([[1000.0, -1000.0]])
    z = nd.array([[0.0, 1.0]])
    close(gloss.SigmoidBCELoss()(x, z), [1000.0], rtol=1e-6)
    xs, zs = rnd(3, 2, scale=3), (rnd(3, 2, seed=5) > 0).astype(np.float32)
    pw = np.array([2.0, 0.5], dtype=np.float32)
    sig = 1 / (1 + np.exp(-xs.astype(np.float64)))
    ref = -(pw * zs * np.log(sig) + (1 - zs) * np.log(1 - sig)).mean(1)
    close(gloss.SigmoidBCELoss()(nd.array(xs), nd.array(zs), None, nd.array(pw)), ref,
          rtol=1e-5)


@needs_torch
def test_sigmoid_bce_matches_torch():
    x = rnd(5, 4, scale=6)
    z = (rnd(5, 4, seed=3) > 0).astype(np.float32)
    t = tF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(z),
                                            reduction='none').mean(1)
    close(gloss.SigmoidBCELoss()(nd.array(x), nd.array(z)), t.numpy(), rtol=1e-5)


# --- the others ---------------------------------------------------------------
def test_kl_huber_hinge_logistic():
    pred, label = rnd(3, 4, scale=2), rnd(3, 4, seed=1, scale=2)
    d = np.abs(label - pred)
    close(gloss.HuberLoss(rho=0.5)(nd.array(pred), nd.array(label)),
          np.where(d > 0.5, d - 0.25, d ** 2).mean(1), rtol=1e-5)
    sgn = np.sign(label)
    close(gloss.HingeLoss()(nd.array(pred), nd.array(sgn)),
          np.maximum(0, 1 - pred * sgn).mean(1), rtol=1e-5)
    close(gloss.SquaredHingeLoss()(nd.array(pred), nd.array(sgn)),
          (np.maximum(0, 1 - pred * sgn) ** 2).mean(1), rtol=1e-5)
    close(gloss.LogisticLoss()(nd.array(pred), nd.array(sgn)),
          np.log1p(np.exp(-pred * sgn)).mean(1), rtol=1e-5)
    close(gloss.LogisticLoss(label_format='binary')(nd.array(pred),
                                                    nd.array((sgn + 1) / 2)),
          np.log1p(np.exp(-pred * sgn)).mean(1), rtol=1e-5)
    logp = np_log_softmax(pred).astype(np.float32)
    q = np.exp(np_log_softmax(label)).astype(np.float32)
    close(gloss.KLDivLoss()(nd.array(logp), nd.array(q)),
          (q * (np.log(q) - logp)).mean(1), rtol=1e-4)


def test_repr_and_unknown_keyword():
    assert repr(gloss.L2Loss()) == 'L2Loss(batch_axis=0, w=1.0)'
    with pytest.raises(TypeError, match="'sparse_labels'.*'sparse_label'"):
        gloss.SoftmaxCrossEntropyLoss(sparse_labels=False)
    with pytest.raises(TypeError, match='weight must be a number'):
        gloss.L1Loss(weight=nd.ones(1))(nd.ones((1, 1)), nd.ones((1, 1)))


def numeric_grad(f, x, eps=1e-3):
    """Central differences of the scalar f(x) (x float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


# --- Poisson negative log-likelihood ------------------------------------------
def np_poisson_nll(pred, target, from_logits=True, compute_full=False, eps=1e-8):
    if from_logits:
        loss = np.exp(pred) - target * pred
    else:
        loss = pred - target * np.log(pred + eps)
    if compute_full:
        t = np.where(target > 1, target, 1.0)
        loss = loss + (t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t)) * (target > 1)
    return loss.mean()


@pytest.mark.parametrize('from_logits', [True, False])
@pytest.mark.parametrize('compute_full', [False, True])
def test_poisson_nll_matches_numpy(from_logits, compute_full, ctx):
    rng = np.random.default_rng(1)
    pred = rng.uniform(0.1, 3, (4, 5))
    target = rng.poisson(2.0, (4, 5)).astype(np.float64)     # zeros included
    f = gloss.PoissonNLLLoss(from_logits=from_logits, compute_full=compute_full)
    l = f(nd.array(pred, ctx=ctx), nd.array(target, ctx=ctx))
    assert l.shape == (1,) and l.context == ctx and np.isfinite(l.asscalar())
    close(l, [np_poisson_nll(pred, target, from_logits, compute_full)], rtol=1e-5)


def test_poisson_nll_weights_epsilon_and_label_shape():
    pred, target = np.array([[0.5], [2.0]]), np.array([1.0, 3.0])
    f = gloss.PoissonNLLLoss(from_logits=False, weight=2.0)
    l = f(nd.array(pred), nd.array(target), nd.array([[1.0], [0.0]]), epsilon=0.5)
    want = 2.0 * np.mean((pred[:, 0] - target * np.log(pred[:, 0] + 0.5)) * [1, 0])
    close(l, [want], rtol=1e-6)


def test_poisson_nll_gradient_by_central_differences():
    rng = np.random.default_rng(2)
    pred = rng.uniform(0.5, 2, (3, 4))
    target = rng.poisson(3.0, (3, 4)).astype(np.float64)
    for from_logits in (True, False):
        x = nd.array(pred, dtype='float64')
        x.attach_grad()
        f = gloss.PoissonNLLLoss(from_logits=from_logits, compute_full=True)
        with autograd.record():
            l = f(x, nd.array(target, dtype='float64'))
        l.backward()
        want = numeric_grad(lambda p: np_poisson_nll(p, target, from_logits, True), pred)
        close(x.grad, want, rtol=1e-5, atol=1e-8)


@needs_torch
@pytest.mark.parametrize('from_logits', [True, False])
def test_poisson_nll_matches_torch_full(from_logits):
    rng = np.random.default_rng(3)
    pred = rng.uniform(0.1, 3, (6, 2)).astype(np.float32)
    target = rng.poisson(2.5, (6, 2)).astype(np.float32)
    l = gloss.PoissonNLLLoss(from_logits=from_logits, compute_full=True)(
        nd.array(pred), nd.array(target))
    t = tF.poisson_nll_loss(torch.tensor(pred), torch.tensor(target),
                            log_input=from_logits, full=True, eps=1e-8)
    close(l, [t.item()], rtol=1e-5)


# --- cosine embedding ---------------------------------------------------------
def np_cosine_embedding(x, y, label, margin=0.0):
    cos = (x * y).sum(-1) / np.maximum(np.linalg.norm(x, axis=-1) *
                                       np.linalg.norm(y, axis=-1), 1e-12)
    return np.where(label == 1, 1 - cos, np.maximum(0, cos - margin))[:, None]


@pytest.mark.parametrize('margin', [0.0, 0.3])
def test_cosine_embedding_matches_numpy(margin, ctx):
    x, y = rnd(6, 4, seed=1), rnd(6, 4, seed=2)
    label = np.array([1, -1, 1, -1, -1, 1], dtype=np.float32)
    f = gloss.CosineEmbeddingLoss(margin=margin)
    l = f(nd.array(x, ctx=ctx), nd.array(y, ctx=ctx), nd.array(label, ctx=ctx))
    assert l.shape == (6, 1) and l.context == ctx          # MXNet's shape
    close(l, np_cosine_embedding(x, y, label, margin), rtol=1e-5, atol=1e-6)
    w = gloss.CosineEmbeddingLoss(margin=margin, weight=0.5)(
        nd.array(x), nd.array(y), nd.array(label), nd.arange(6).reshape(6, 1))
    close(w, 0.5 * np.arange(6)[:, None] * np_cosine_embedding(x, y, label, margin),
          rtol=1e-5, atol=1e-6)


def test_cosine_embedding_of_a_zero_vector_is_finite():
    l = gloss.CosineEmbeddingLoss()(nd.zeros((1, 3)), nd.ones((1, 3)), nd.array([1]))
    close(l, [[1.0]])


def test_cosine_embedding_gradient_by_central_differences():
    x, y = rnd(3, 4, seed=4).astype(np.float64), rnd(3, 4, seed=5).astype(np.float64)
    label = np.array([1.0, -1.0, -1.0])
    a = nd.array(x, dtype='float64')
    a.attach_grad()
    with autograd.record():
        l = gloss.CosineEmbeddingLoss(margin=-0.5)(a, nd.array(y, dtype='float64'),
                                                   nd.array(label))
    l.backward()
    want = numeric_grad(lambda p: np_cosine_embedding(p, y, label, -0.5).sum(), x)
    close(a.grad, want, rtol=1e-5, atol=1e-8)


@needs_torch
def test_cosine_embedding_matches_torch():
    x, y = rnd(5, 7, seed=6), rnd(5, 7, seed=7)
    label = np.array([1, -1, -1, 1, -1], dtype=np.float32)
    l = gloss.CosineEmbeddingLoss(margin=0.2)(nd.array(x), nd.array(y), nd.array(label))
    t = tF.cosine_embedding_loss(torch.tensor(x), torch.tensor(y), torch.tensor(label),
                                 margin=0.2, reduction='none')
    close(l[:, 0], t.numpy(), rtol=1e-5, atol=1e-6)


# --- metric learning: triplet and SDML ----------------------------------------
def test_triplet_loss_matches_numpy():
    a, p, n = rnd(4, 3, 2, seed=8), rnd(4, 3, 2, seed=9), rnd(4, 6, seed=10)
    l = gloss.TripletLoss(margin=0.5)(nd.array(a), nd.array(p), nd.array(n))
    d = ((p - a) ** 2).sum(axis=(1, 2)) - ((n.reshape(a.shape) - a) ** 2).sum(axis=(1, 2))
    assert l.shape == (4,)
    close(l, np.maximum(d + 0.5, 0), rtol=1e-5, atol=1e-6)


def np_sdml(x1, x2, smoothing=0.3):
    n = x1.shape[0]
    dist = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    logp = np_log_softmax(-dist, axis=1)
    labels = np.where(np.eye(n) == 1, 1 - smoothing, smoothing / (n - 1))
    return (labels * (np.log(labels + 1e-12) - logp)).mean(axis=1)


def test_sdml_loss_matches_numpy_and_central_differences():
    x1, x2 = rnd(5, 3, seed=11).astype(np.float64), rnd(5, 3, seed=12).astype(np.float64)
    a = nd.array(x1, dtype='float64')
    a.attach_grad()
    with autograd.record():
        l = gloss.SDMLLoss(smoothing_parameter=0.2)(a, nd.array(x2, dtype='float64'))
    assert l.shape == (5,)
    close(l, np_sdml(x1, x2, 0.2), rtol=1e-6)
    l.backward()
    close(a.grad, numeric_grad(lambda v: np_sdml(v, x2, 0.2).sum(), x1),
          rtol=1e-5, atol=1e-8)
    with pytest.raises(ValueError, match=r'\(batch, dim\)'):
        gloss.SDMLLoss()(nd.ones((2, 3)), nd.ones((3, 3)))
