"""Adaptive optimizers: Adam, Adamax, Nadam, AdaGrad, AdaDelta, RMSProp,
FTML, Ftrl, LAMB — MXNet 1.9.1's update rules.

Each step is one fused kernel (the public ones in
:mod:`d2lmini.ndarray.optimizer_op`; AdaGrad, AdaDelta, Adamax, Nadam and
LAMB, which MXNet runs as several NDArray operations, have private kernels
here with the same arithmetic).  With
``multi_precision=True`` and float16 weights, the state is
``(weight32, state)`` and the kernel runs on the float32 master copy.

How the gradient enters (``rescale_grad`` is ``1/batch_size`` in a Trainer,
``clip`` is ``clip_gradient``):

* AdaGrad, AdaDelta, Ftrl, LAMB: ``g = clip(rescale_grad * grad)``, weight
  decay added to the step;
* Adam, Adamax, Nadam, RMSProp, FTML: ``g = clip(rescale_grad * grad + wd * w)``.
"""
import math

from .. import backend
from ..ndarray.registry import register as register_op
from .optimizer import Optimizer, _clip_attr, _zeros_like
from ..ndarray.optimizer_op import _FusedOp, _grad, _lamb1, _own, _trust_lr

__all__ = ['Adam', 'Adamax', 'Nadam', 'AdaGrad', 'AdaDelta', 'RMSProp', 'FTML',
           'Ftrl', 'LAMB']


def _clip_none(c):
    """Optimizers that MXNet writes with NDArray ops clip when ``c is not None``."""
    return -1.0 if c is None else c


# === private kernels =========================================================
@register_op
class AdaGradUpdateOp(_FusedOp):
    """``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``, ``g = clip(r*grad)``."""
    name = 'adagrad_update'
    mutate = (2,)

    def kernel(self, w, g, history, lr, epsilon=1e-7, wd=0.0, rescale_grad=1.0,
               clip_gradient=-1.0):
        w, history = _own(w), _own(history)
        xp = backend.xp_of(w)
        t = _grad(g, rescale_grad, clip_gradient)
        history += t * t
        d = history + epsilon
        xp.sqrt(d, out=d)
        xp.divide(t, d, out=t)
        if wd:
            t += wd * w
        t *= lr
        w -= t
        return w, history


@register_op
class AdaDeltaUpdateOp(_FusedOp):
    """Zeiler's AdaDelta (no learning rate), MXNet's rule::

        acc_g = rho*acc_g + (1-rho)*g^2
        d = sqrt(acc_delta + eps) / sqrt(acc_g + eps) * g
        acc_delta = rho*acc_delta + (1-rho)*d^2;   w -= d + wd*w
    """
    name = 'adadelta_update'
    mutate = (2, 3)

    def kernel(self, w, g, acc_g, acc_delta, rho=0.9, epsilon=1e-5, wd=0.0,
               rescale_grad=1.0, clip_gradient=-1.0):
        w, acc_g, acc_delta = _own(w), _own(acc_g), _own(acc_delta)
        xp = backend.xp_of(w)
        t = _grad(g, rescale_grad, clip_gradient)
        acc_g *= rho
        acc_g += (1.0 - rho) * t * t
        cur = xp.sqrt(acc_delta + epsilon)
        cur /= xp.sqrt(acc_g + epsilon)
        cur *= t
        acc_delta *= rho
        acc_delta += (1.0 - rho) * cur * cur
        if wd:
            cur += wd * w
        w -= cur
        return w, acc_g, acc_delta


@register_op
class AdamaxUpdateOp(_FusedOp):
    """``m = b1*m + (1-b1)*g; u = max(b2*u, |g|); w -= lr * m / u``
    (``lr`` carries ``1/(1-b1^t)``)."""
    name = '_adamax_update'
    mutate = (2, 3)

    def kernel(self, w, g, m, u, lr, beta1=0.9, beta2=0.999, wd=0.0,
               rescale_grad=1.0, clip_gradient=-1.0):
        w, m, u = _own(w), _own(m), _own(u)
        xp = backend.xp_of(w)
        t = _grad(g, rescale_grad, clip_gradient, wd, w)
        m *= beta1
        m += (1.0 - beta1) * t
        u *= beta2
        xp.maximum(u, xp.abs(t), out=u)
        w -= lr * m / u
        return w, m, u


@register_op
class NadamUpdateOp(_FusedOp):
    """Nadam (Dozat), MXNet's form; the momentum schedule comes in as scalars::

        m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
        m_bar = (1-mu_t) * g/(1-sched) + mu_t1 * m/(1-sched_next)
        w -= lr * m_bar / (sqrt(v/(1-b2^t)) + eps)
    """
    name = '_nadam_update'
    mutate = (2, 3)

    def kernel(self, w, g, m, v, lr, t, mu_t, mu_t1, sched, sched_next,
               beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
               clip_gradient=-1.0):
        w, m, v = _own(w), _own(m), _own(v)
        xp = backend.xp_of(w)
        gr = _grad(g, rescale_grad, clip_gradient, wd, w)
        m *= beta1
        m += (1.0 - beta1) * gr
        v *= beta2
        v += (1.0 - beta2) * gr * gr
        m_bar = (1.0 - mu_t) / (1.0 - sched) * gr
        m_bar += mu_t1 / (1.0 - sched_next) * m
        d = xp.sqrt(v / (1.0 - beta2 ** t))
        d += epsilon
        w -= lr * m_bar / d
        return w, m, v


@register_op
class LambUpdateOp(_FusedOp):
    """Both LAMB phases in one kernel: ``lamb_update_phase1``, the norms
    ``r1 = ||w||``, ``r2 = ||g||``, then ``lamb_update_phase2``."""
    name = '_lamb_update'
    mutate = (2, 3)

    def kernel(self, w, g, mean, var, lr, t, beta1=0.9, beta2=0.999, epsilon=1e-6,
               bias_correction=True, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               lower_bound=-1.0, upper_bound=-1.0):
        w, mean, var = _own(w), _own(mean), _own(var)
        xp = backend.xp_of(w)
        d = _lamb1(w, g, mean, var, beta1, beta2, epsilon, t, bias_correction, wd,
                   rescale_grad, clip_gradient)
        r1, r2 = xp.linalg.norm(w.ravel()), xp.linalg.norm(d.ravel())
        w -= (_trust_lr(lr, r1, r2, lower_bound, upper_bound, d.dtype) * d).astype(
            w.dtype, copy=False)
        return w, mean, var


# === optimizers ===============================================================
class _TwoMoments(Optimizer):
    """Adam-like: two zero states in the weight's dtype."""

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))


@Optimizer.register
class Adam(_TwoMoments):
    """Adam (Kingma & Ba), in MXNet's form.

    With ``lr_t = lr * sqrt(1-b2^t)/(1-b1^t)``::

        g = clip(rescale_grad*grad + wd*w);  m = b1*m + (1-b1)*g
        v = b2*v + (1-b2)*g^2;  w -= lr_t * m / (sqrt(v) + epsilon)
    """
    _default_lr = 0.001
    _extra_hyper = ('beta1', 'beta2', 'epsilon')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lazy_update = lazy_update

    def _step(self, index, weight, grad, state):
        t = self._index_update_count[index]
        lr = self._get_lr(index)
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        return self._fused('adam_update', weight, grad, state, lr=lr,
                           beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                           wd=self._get_wd(index), rescale_grad=self.rescale_grad,
                           clip_gradient=_clip_attr(self.clip_gradient))


@Optimizer.register
class Adamax(_TwoMoments):
    """AdaMax (Kingma & Ba, section 7): Adam with the infinity norm.

    ::

        g = clip(rescale_grad*grad + wd*w);  m = b1*m + (1-b1)*g
        u = max(b2*u, |g|);  w -= lr/(1-b1^t) * m / u
    """
    _extra_hyper = ('beta1', 'beta2')

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = float(beta1), float(beta2)

    def _step(self, index, weight, grad, state):
        t = self._index_update_count[index]
        lr = self._get_lr(index) / (1.0 - self.beta1 ** t)
        return self._fused('_adamax_update', weight, grad, state, lr=lr,
                           beta1=self.beta1, beta2=self.beta2,
                           wd=self._get_wd(index), rescale_grad=self.rescale_grad,
                           clip_gradient=_clip_none(self.clip_gradient))


@Optimizer.register
class Nadam(_TwoMoments):
    """Nadam: Adam with Nesterov momentum and a warming momentum schedule
    ``mu_t = b1 * (1 - 0.5 * 0.96^(t*schedule_decay))``.

    As in MXNet, the product of the ``mu_t`` (``m_schedule``) is one number
    for the whole optimizer, multiplied at every parameter's update.
    """
    _extra_hyper = ('beta1', 'beta2', 'epsilon', 'schedule_decay', 'm_schedule')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.schedule_decay = float(schedule_decay)
        self.m_schedule = 1.0

    def _step(self, index, weight, grad, state):
        t = self._index_update_count[index]
        mu_t = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mu_t1 = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= mu_t
        return self._fused('_nadam_update', weight, grad, state,
                           lr=self._get_lr(index), t=t, mu_t=mu_t, mu_t1=mu_t1,
                           sched=self.m_schedule, sched_next=self.m_schedule * mu_t1,
                           beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                           wd=self._get_wd(index), rescale_grad=self.rescale_grad,
                           clip_gradient=_clip_none(self.clip_gradient))


@Optimizer.register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al.): per-coordinate steps shrink with past gradients.

    ::

        g = clip(rescale_grad*grad);  h += g^2
        w -= lr * (g / sqrt(h + eps) + wd * w)
    """
    _extra_hyper = ('float_stable_eps',)

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = float(eps)

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def _step(self, index, weight, grad, state):
        return self._fused('adagrad_update', weight, grad, (state,),
                           lr=self._get_lr(index), epsilon=self.float_stable_eps,
                           wd=self._get_wd(index), rescale_grad=self.rescale_grad,
                           clip_gradient=_clip_none(self.clip_gradient))


@Optimizer.register
class AdaDelta(_TwoMoments):
    """AdaDelta (Zeiler): no learning rate; ``rho`` and ``epsilon``."""
    _extra_hyper = ('rho', 'epsilon')

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho, self.epsilon = float(rho), float(epsilon)

    def _step(self, index, weight, grad, state):
        return self._fused('adadelta_update', weight, grad, state, rho=self.rho,
                           epsilon=self.epsilon, wd=self._get_wd(index),
                           rescale_grad=self.rescale_grad,
                           clip_gradient=_clip_none(self.clip_gradient))


@Optimizer.register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's (``rmsprop_update``, state ``(n,)``), or
    with ``centered=True`` Graves' (``rmspropalex_update``, state
    ``(n, g, delta)``; ``gamma2`` is its momentum).  ``clip_weights`` clips
    the updated weight to ``[-clip_weights, clip_weights]``.
    """
    _default_lr = 0.001
    _extra_hyper = ('gamma1', 'gamma2', 'epsilon', 'centered', 'clip_weights')

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2 = float(gamma1), float(gamma2)
        self.epsilon, self.centered = float(epsilon), bool(centered)
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        return tuple(_zeros_like(weight) for _ in range(3 if self.centered else 1))

    def _step(self, index, weight, grad, state):
        attrs = dict(lr=self._get_lr(index), gamma1=self.gamma1,
                     epsilon=self.epsilon, wd=self._get_wd(index),
                     rescale_grad=self.rescale_grad,
                     clip_gradient=_clip_attr(self.clip_gradient),
                     clip_weights=_clip_attr(self.clip_weights))
        if self.centered:
            return self._fused('rmspropalex_update', weight, grad, state,
                               gamma2=self.gamma2, **attrs)
        return self._fused('rmsprop_update', weight, grad, state, **attrs)


@Optimizer.register
class FTML(Optimizer):
    """FTML, Follow the Moving Leader (Zheng & Kwok); ``ftml_update``,
    state ``(d, v, z)``."""
    _extra_hyper = ('beta1', 'beta2', 'epsilon')

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)

    def create_state(self, index, weight):
        return tuple(_zeros_like(weight) for _ in range(3))

    def _step(self, index, weight, grad, state):
        return self._fused('ftml_update', weight, grad, state,
                           lr=self._get_lr(index), t=self._index_update_count[index],
                           beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                           wd=self._get_wd(index), rescale_grad=self.rescale_grad,
                           clip_grad=_clip_attr(self.clip_gradient))


@Optimizer.register
class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al.); ``ftrl_update``, state ``(z, n)``.
    ``lamda1`` is the L1 strength, ``beta`` the per-coordinate lr offset."""
    _extra_hyper = ('lamda1', 'beta')

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1, self.beta = float(lamda1), float(beta)

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _step(self, index, weight, grad, state):
        return self._fused('ftrl_update', weight, grad, state,
                           lr=self._get_lr(index), lamda1=self.lamda1,
                           beta=self.beta, wd=self._get_wd(index),
                           rescale_grad=self.rescale_grad,
                           clip_gradient=_clip_attr(self.clip_gradient))


@Optimizer.register
class LAMB(_TwoMoments):
    """LAMB (You et al.): Adam's direction, scaled per layer by the trust
    ratio ``||w|| / ||g||`` (``lamb_update_phase1`` then ``_phase2``; both
    run in one kernel here).  ``lower_bound``/``upper_bound`` clip ``||w||``.
    """
    _default_lr = 0.001
    _extra_hyper = ('beta1', 'beta2', 'epsilon', 'lower_bound', 'upper_bound',
                    'bias_correction')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bool(bias_correction)

    def _step(self, index, weight, grad, state):
        return self._fused('_lamb_update', weight, grad, state,
                           lr=self._get_lr(index), t=self._index_update_count[index],
                           beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                           bias_correction=self.bias_correction,
                           wd=self._get_wd(index), rescale_grad=self.rescale_grad,
                           clip_gradient=_clip_attr(self.clip_gradient),
                           lower_bound=_clip_attr(self.lower_bound),
                           upper_bound=_clip_attr(self.upper_bound))
