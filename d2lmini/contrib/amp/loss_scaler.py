"""Dynamic loss scaling (MXNet's ``contrib/amp/loss_scaler.py``).

float16 gradients lose small values: below about 6e-8 they are 0.  AMP
multiplies the loss by a large *loss scale* before ``backward()``, so every
gradient is that much larger and stays representable, and the Trainer
divides it out again (``rescale_grad``).  Too large a scale overflows
(``inf``/``nan`` in a gradient), so the scale adapts, by MXNet's rule:

* it starts at 2**16;
* a step whose gradients are not all finite is skipped (the weights stay
  as they are) and the scale is halved;
* after 2000 steps in a row without overflow it doubles, up to 2**24.

As in MXNet's code, a new scale takes effect one step late: the check of
step t sets the scale that step t + 1 reports, from the decision of step
t - 1 (``loss_scale`` becomes what the previous check asked for).
"""
import logging

from ... import autograd
from ... import ndarray as nd

__all__ = ['LossScaler']


class LossScaler:
    """Dynamic loss scaler for AMP.

    Attributes
    ----------
    loss_scale : float
        The current loss scale (what ``amp.scale_loss`` multiplies by).

    Examples
    --------
    >>> ls = LossScaler()
    >>> ls.loss_scale
    65536.0
    """

    def __init__(self):
        self._loss_scale = 2.0 ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2.0 ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self):
        return self._loss_scale

    def has_overflow(self, params):
        """Whether any gradient of ``params`` holds an inf or a nan; updates
        the scale by the rule above.  The check runs on the devices, one
        flag per context, read back once."""
        with autograd.pause():
            by_ctx = {}
            for p in params:
                if p.grad_req != 'null' and p._data is not None:
                    for g in p.list_grad():
                        by_ctx.setdefault(g.context, []).append(g)
            # Every context's copies: after an all-reduce they are equal,
            # but without a store (kvstore=None) each context has its own.
            flags = [nd.multi_all_finite(*grads) for grads in by_ctx.values()]
            overflow = any(f.asscalar() == 0 for f in flags)
        self._record(overflow)
        return overflow

    def _record(self, overflow):
        """The scale schedule: the decision of one step (MXNet's order)."""
        self._loss_scale = self._next_loss_scale
        if overflow:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info('AMP: decreasing loss scale to %f', self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            logging.info('AMP: increasing loss scale to %f', self._next_loss_scale)
