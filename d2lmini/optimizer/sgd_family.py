"""The SGD family: SGD (momentum), NAG (Nesterov), Signum/signSGD, SGLD.

Each optimizer picks one fused kernel of :mod:`d2lmini.ndarray.optimizer_op`
per step; the formulas are in the kernels' docstrings.  SGD and NAG carry their own
multi-precision kernels (``mp_sgd_*``, ``mp_nag_mom_update``) and state
``(momentum, weight32)``, as in MXNet.
"""
import math

import numpy as np

from ..ndarray.registry import register as register_op
from .optimizer import Optimizer, _clip_attr, _zeros_like
from ..ndarray.optimizer_op import _FusedOp, _grad, _own

__all__ = ['SGD', 'NAG', 'Signum', 'SGLD', 'ccSGD', 'Test']


class _MomentumSGD(Optimizer):
    """SGD and NAG: a momentum state (None when ``momentum == 0``)."""
    _extra_hyper = ('momentum',)
    _op = _mp_op = None            # fused op with momentum, and its mp form

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = float(momentum)
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        if self._use_mp(weight):
            w32 = weight.astype(np.float32)
            return (self.create_state(index, w32), w32)
        return super().create_state_multi_precision(index, weight)

    def _attrs(self, index):
        attrs = dict(lr=self._get_lr(index), wd=self._get_wd(index),
                     rescale_grad=self.rescale_grad,
                     clip_gradient=_clip_attr(self.clip_gradient))
        if self.momentum > 0:
            attrs['momentum'] = self.momentum
        return attrs

    def _step(self, index, weight, grad, state):
        if state is None:
            return self._fused('sgd_update', weight, grad, (),
                               **self._attrs(index))
        return self._fused(self._op, weight, grad, (state,), **self._attrs(index))

    def _step_mp(self, index, weight, grad, state):
        mom, w32 = state
        if mom is None:
            return self._fused('mp_sgd_update', weight, grad, (w32,),
                               **self._attrs(index))
        return self._fused(self._mp_op, weight, grad, (mom, w32),
                           **self._attrs(index))


@Optimizer.register
class SGD(_MomentumSGD):
    """Stochastic gradient descent, with momentum if ``momentum > 0``::

        mom = momentum * mom - lr * (clip(rescale_grad * grad) + wd * w)
        w = w + mom

    >>> opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    """
    _op, _mp_op = 'sgd_mom_update', 'mp_sgd_mom_update'


@Optimizer.register
class NAG(_MomentumSGD):
    """Nesterov accelerated gradient (``nag_mom_update``)::

        mom = momentum * mom + grad + wd * w    (rescaled, clipped grad)
        w = w - lr * (grad + momentum * mom)

    >>> opt = mx.optimizer.NAG(learning_rate=0.1, momentum=0.9)
    """
    _op, _mp_op = 'nag_mom_update', 'mp_nag_mom_update'


@Optimizer.register
class Signum(Optimizer):
    """Signum (Bernstein et al.): the sign of a momentum; signSGD without one::

        mom = momentum * mom - (1 - momentum) * (clip(rescale_grad*grad) + wd*w)
        w = (1 - lr * wd_lh) * w + lr * sign(mom)

    ``wd_lh`` is decoupled weight decay.  With ``momentum=0``:
    ``w = (1 - lr*(wd + wd_lh)) * w - lr * sign(grad)``.
    """
    _extra_hyper = ('momentum', 'wd_lh')

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum, self.wd_lh = float(momentum), float(wd_lh)

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def _step(self, index, weight, grad, state):
        lr, wd = self._get_lr(index), self._get_wd(index)
        attrs = dict(lr=lr, rescale_grad=self.rescale_grad,
                     clip_gradient=_clip_attr(self.clip_gradient))
        if state is None:
            return self._fused('signsgd_update', weight, grad, (),
                               wd=wd + self.wd_lh, **attrs)
        return self._fused('signum_update', weight, grad, (state,), wd=wd,
                           momentum=self.momentum, wd_lh=self.wd_lh, **attrs)


@register_op
class _SGLDUpdateOp(_FusedOp):
    """``w += -lr/2 * (clip(rescale_grad*g) + wd*w) + noise``, noise ~ N(0, lr)."""
    name = '_sgld_update'

    def kernel(self, w, g, noise, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
        w = _own(w)
        t = _grad(g, rescale_grad, clip_gradient)
        if wd:
            t += wd * w
        t *= -lr / 2
        w += t
        w += noise
        return (w,)


@Optimizer.register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics (Welling & Teh)::

        w = w - lr/2 * (clip(rescale_grad * grad) + wd * w) + N(0, lr)

    The noise is drawn with ``mx.random.normal`` (seeded by ``mx.random.seed``)
    on the weight's context, in the weight's dtype.
    """

    def _step(self, index, weight, grad, state):
        from ..ndarray import random
        lr, wd = self._get_lr(index), self._get_wd(index)
        noise = random.normal(0, math.sqrt(lr), shape=weight.shape,
                              dtype=weight.dtype, ctx=weight.context)
        clip = -1.0 if self.clip_gradient is None else self.clip_gradient
        return self._fused('_sgld_update', weight, grad, (noise,), lr=lr, wd=wd,
                           rescale_grad=self.rescale_grad, clip_gradient=clip)



@Optimizer.register
class ccSGD(SGD):              # noqa: N801 - MXNet's name
    """Deprecated in MXNet: the same as :class:`SGD`."""


@Optimizer.register
class Test(Optimizer):
    """MXNet's test optimizer (KVStore tests use it): ``w += rescale_grad *
    grad``, and the state holds a copy of the new weight."""

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def update(self, index, weight, grad, state):
        weight[:] = weight + grad * self.rescale_grad
        state[:] = weight
