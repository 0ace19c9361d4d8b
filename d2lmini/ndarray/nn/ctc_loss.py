"""``CTCLoss`` (``ctc_loss``): Connectionist Temporal Classification
(Graves et al., 2006), with MXNet 1.x's arguments.

``data (T, N, A)`` are unnormalized scores for an alphabet of A symbols, one
of them the *blank*; ``label (N, L)`` the target sequences.  The loss of a
sample is ``-log p(label | data)``, summed over every alignment of the label
to the T steps (repeats merged, blanks dropped), with ``softmax(data)``
over the alphabet at each step (applied inside, as MXNet's warp-ctc does).

The forward-backward recursions run in log space (``logaddexp``), so long
sequences do not underflow, and are vectorised over the batch: each step is
a few array operations on ``(N, 2L + 1)`` states.  The gradient with respect
to ``data`` is ``softmax - occupancy``, where the occupancy of symbol ``a``
at step ``t`` is the posterior probability that an alignment emits ``a``
there; steps past a sample's length get 0.

MXNet's rules for the arguments:

* ``blank_label='first'``: blank is 0, symbols are ``1 .. A-1``, and
  without ``use_label_lengths`` a label ends at its first 0;
  ``'last'``: blank is ``A-1``, symbols ``0 .. A-2``, padding ``-1``.
* ``use_data_lengths``/``use_label_lengths``: the lengths are extra inputs
  ``data_lengths (N,)`` / ``label_lengths (N,)``.
"""
import numpy as np

from ... import backend
from ...base import _check_kwargs
from ..ndarray import invoke
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import _float_dtype, _result

__all__ = ['CTCLoss', 'ctc_loss']

_NEG_INF = -np.inf


def _unpack(arrays, use_data_lengths, use_label_lengths):
    data, label = arrays[0], arrays[1]
    rest = list(arrays[2:])
    dlen = rest.pop(0) if use_data_lengths else None
    llen = rest.pop(0) if use_label_lengths else None
    return data, label, dlen, llen


def _lengths(data, label, dlen, llen, blank_label):
    """Host int arrays: per-sample data lengths, labels (N, L), label lengths.

    Read on the host on purpose (one small copy each from a GPU): they are
    checked here (a bad length or label is an error the host raises), and
    they shape the recursion (its states and where each sample ends)."""
    t, n, _ = data.shape
    lab = np.asarray(backend.to_numpy(label)).astype(np.int64).reshape(n, -1)
    if llen is not None:
        ll = np.asarray(backend.to_numpy(llen)).astype(np.int64).reshape(n)
    else:                              # up to the first padding value
        pad = 0 if blank_label == 'first' else -1
        hit = lab == pad
        ll = np.where(hit.any(axis=1), hit.argmax(axis=1), lab.shape[1])
    dl = np.full(n, t, np.int64) if dlen is None else \
        np.asarray(backend.to_numpy(dlen)).astype(np.int64).reshape(n)
    if (dl < 0).any() or (dl > t).any() or (ll < 0).any() or (ll > lab.shape[1]).any():
        raise ValueError(f"operator 'CTCLoss': lengths out of range: data_lengths "
                         f"{dl.tolist()} (max {t}), label_lengths {ll.tolist()} "
                         f"(max {lab.shape[1]})")
    return dl, lab, ll


def _ctc(data, label, dlen, llen, blank_label, need_grad):
    """``(loss (N,), grad (T, N, A) or None)`` in float64, on ``data``'s
    device: only the labels and lengths are read on the host (``_lengths``);
    the index arrays built from them are copied to the device."""
    xp = _xp(data)
    x = xp.asarray(data, dtype=np.float64)
    t_max, n, a = x.shape
    blank = 0 if blank_label == 'first' else a - 1
    dl, lab, ll = _lengths(data, label, dlen, llen, blank_label)
    m = x.max(axis=2, keepdims=True)
    logp = x - m - xp.log(xp.exp(x - m).sum(axis=2, keepdims=True))
    # extended labels: blank, l1, blank, l2, ..., blank  (S = 2L + 1 states)
    s_max = 2 * lab.shape[1] + 1
    used = np.arange(lab.shape[1])[None, :] < ll[:, None]             # (N, L)
    if ((lab < 0) | (lab >= a))[used].any():
        raise ValueError(f"operator 'CTCLoss': label values must lie in [0, {a}) for "
                         f"an alphabet of {a} (blank_label={blank_label!r}), got "
                         f"{lab.tolist()} with lengths {ll.tolist()}")
    ext = np.full((n, s_max), blank, np.int64)
    ext[:, 1::2] = np.where(used, lab, blank)
    valid = np.arange(s_max)[None, :] < (2 * ll + 1)[:, None]         # (N, S)
    # a state may skip the blank before it if its symbol differs from s - 2
    skip = np.zeros((n, s_max), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    skip_back = np.concatenate([skip[:, 2:], np.zeros((n, 2), bool)], axis=1)
    end = 2 * ll
    # the host-built index arrays, on the device (no-ops on the CPU)
    ext_d, valid_d, skip_d, skip_back_d = (xp.asarray(v) for v in
                                           (ext, valid, skip, skip_back))
    dl_d, ll_d, end_d = xp.asarray(dl), xp.asarray(ll), xp.asarray(end)
    ar = xp.arange(n)
    emit = xp.where(valid_d[None], logp[:, ar[:, None], ext_d], _NEG_INF)  # (T, N, S)

    def step(prev, fwd):
        """One step of the recursion from the states of the previous step."""
        if fwd:
            one = xp.concatenate([xp.full((n, 1), _NEG_INF), prev[:, :-1]], axis=1)
            two = xp.concatenate([xp.full((n, 2), _NEG_INF), prev[:, :-2]], axis=1)
            two = xp.where(skip_d, two, _NEG_INF)
        else:
            one = xp.concatenate([prev[:, 1:], xp.full((n, 1), _NEG_INF)], axis=1)
            two = xp.concatenate([prev[:, 2:], xp.full((n, 2), _NEG_INF)], axis=1)
            two = xp.where(skip_back_d, two, _NEG_INF)
        return xp.logaddexp(xp.logaddexp(prev, one), two)

    with np.errstate(invalid='ignore', divide='ignore'):
        alpha = xp.full((t_max, n, s_max), _NEG_INF)
        first = xp.full((n, s_max), _NEG_INF)
        first[:, :2] = emit[0, :, :2]
        alpha[0] = first
        for t in range(1, t_max):
            alpha[t] = step(alpha[t - 1], True) + emit[t]
        # end in the last blank or the last symbol, at each sample's last step
        last = xp.asarray(np.maximum(dl - 1, 0))
        fin = alpha[last, ar]                                         # (N, S)
        before = xp.asarray(np.maximum(end - 1, 0))
        logz = xp.logaddexp(fin[ar, end_d],
                            xp.where(ll_d > 0, fin[ar, before], _NEG_INF))
        logz = xp.where(dl_d > 0, logz, xp.where(ll_d == 0, 0.0, _NEG_INF))
        loss = -logz
        if not need_grad:
            return loss, None
        beta = xp.full((t_max, n, s_max), _NEG_INF)
        init = xp.full((n, s_max), _NEG_INF)
        init[ar, end_d] = 0.0
        init[ar, before] = xp.where(ll_d > 0, 0.0, init[ar, before])
        nxt = xp.full((n, s_max), _NEG_INF)          # beta[t + 1] + emit[t + 1]
        for t in range(t_max - 1, -1, -1):
            cur = step(nxt, False)
            cur = xp.where((t == dl_d - 1)[:, None], init, cur)
            cur = xp.where((t > dl_d - 1)[:, None], _NEG_INF, cur)
            beta[t] = cur
            nxt = cur + emit[t]
        # posterior of each state at each step, summed per symbol
        post = xp.exp(alpha + beta - logz[None, :, None])
        post = xp.where(xp.isfinite(logz)[None, :, None], post, 0.0)
        occ = xp.zeros((t_max, n, a))
        for s in range(s_max):                       # S is small: 2L + 1
            # one state per sample: no index repeats, so += adds as add.at
            occ[:, ar, ext_d[:, s]] += post[:, :, s]
        grad = xp.exp(logp) - occ
        grad[xp.asarray(np.arange(t_max)[:, None] >= dl[None, :])] = 0.0
    return loss, grad


def _xp_like(res, like):
    xp = _xp(like)
    return res.astype(like.dtype) if xp is np else xp.asarray(res, dtype=like.dtype)


class _CTCBaseOp(Op):
    def infer(self, shapes, dtypes, use_data_lengths=False, use_label_lengths=False,
              blank_label='first'):
        want = 2 + bool(use_data_lengths) + bool(use_label_lengths)
        if len(shapes) != want:
            raise ValueError(f"operator 'CTCLoss': expected {want} inputs (data, label"
                             f"{', data_lengths' if use_data_lengths else ''}"
                             f"{', label_lengths' if use_label_lengths else ''}), got "
                             f"{len(shapes)}")
        if blank_label not in ('first', 'last'):
            raise ValueError(f"operator 'CTCLoss': blank_label={blank_label!r} is not "
                             f"'first' or 'last'")
        d, lab = tuple(shapes[0]), tuple(shapes[1])
        if len(d) != 3 or len(lab) != 2 or lab[0] != d[1]:
            raise ValueError(f"operator 'CTCLoss': needs data (T, N, A) and label "
                             f"(N, L), got shapes {d} and {lab}")
        for s in shapes[2:]:
            if tuple(s) != (d[1],):
                raise ValueError(f"operator 'CTCLoss': lengths must have shape "
                                 f"({d[1]},), got {tuple(s)}")
        return d, _float_dtype(self.name, dtypes[:1])


@register
class CTCLossOp(_CTCBaseOp):
    """The CTC loss per sample, ``(N,)``; differentiable in ``data`` only."""
    name = 'CTCLoss'

    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (5, 2, 4)),
                          lambda r: np.array([[1, 2, 2], [3, 1, 0]], np.float64)],
                  grad=[0]),
             Case(inputs=[lambda r: r.uniform(-1, 1, (6, 2, 4)),
                          lambda r: np.array([[0, 1, -1], [2, 2, 1]], np.float64),
                          lambda r: np.array([4.0, 6.0])],
                  grad=[0], use_data_lengths=True, blank_label='last'),
             Case(inputs=[lambda r: r.uniform(-1, 1, (5, 3, 3)),
                          lambda r: np.array([[1, 1], [2, 1], [1, 2]], np.float64),
                          lambda r: np.array([2.0, 1.0, 0.0])],
                  grad=[0], use_label_lengths=True))

    def infer(self, shapes, dtypes, **attrs):
        d, dt = super().infer(shapes, dtypes, **attrs)
        return (d[1],), dt

    def forward(self, *arrays, use_data_lengths=False, use_label_lengths=False,
                blank_label='first'):
        data, label, dlen, llen = _unpack(arrays, use_data_lengths, use_label_lengths)
        loss, _ = _ctc(data, label, dlen, llen, blank_label, need_grad=False)
        return _xp_like(loss, data)

    def backward(self, g, inputs, out, **attrs):
        grad = invoke(OPS['_ctc_loss_grad'], tuple(inputs), attrs)
        return [grad * g.reshape((1, -1, 1))] + [None] * (len(inputs) - 1)


@register
class CTCLossGradOp(_CTCBaseOp):
    """d CTCLoss / d data, ``(T, N, A)``: ``softmax(data) - occupancy``."""
    name = '_ctc_loss_grad'
    differentiable = False

    def forward(self, *arrays, use_data_lengths=False, use_label_lengths=False,
                blank_label='first'):
        data, label, dlen, llen = _unpack(arrays, use_data_lengths, use_label_lengths)
        _, grad = _ctc(data, label, dlen, llen, blank_label, need_grad=True)
        return _xp_like(grad, data)


def CTCLoss(data, label, data_lengths=None, label_lengths=None, use_data_lengths=False,
            use_label_lengths=False, blank_label='first', out=None, name=None,
            **kwargs):
    """CTC loss of ``data (T, N, A)`` (scores, softmax applied inside) for
    ``label (N, L)``; returns ``(N,)``.  See the module docstring for
    MXNet's ``blank_label`` and length rules.

    >>> nd.CTCLoss(nd.zeros((3, 1, 2)), nd.array([[1]])).shape
    (1,)
    """
    _check_kwargs(CTCLoss, kwargs)
    args = [data, label]
    if use_data_lengths:
        if data_lengths is None:
            raise ValueError("CTCLoss: use_data_lengths=True needs data_lengths")
        args.append(data_lengths)
    if use_label_lengths:
        if label_lengths is None:
            raise ValueError("CTCLoss: use_label_lengths=True needs label_lengths")
        args.append(label_lengths)
    attrs = {'use_data_lengths': bool(use_data_lengths),
             'use_label_lengths': bool(use_label_lengths), 'blank_label': blank_label}
    return _result(invoke(OPS['CTCLoss'], tuple(args), attrs), out)


ctc_loss = CTCLoss
