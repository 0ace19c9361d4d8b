"""Optimizers: SGD (with momentum), Adam, AdaGrad, RMSProp, AdaDelta.

The update rules are MXNet 1.x's, and so are their names and defaults::

    opt = mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9, wd=1e-4)
    state = opt.create_state(0, weight)
    opt.update(0, weight, grad, state)          # weight, state change in place

Every update is ONE fused kernel pushed to the weight's device stream, like
MXNet's ``sgd_mom_update``: the kernel rewrites the weight and its states in
place with NumPy (CuPy on a GPU), so an update is asynchronous, keeps the
engine's ordering, and costs one push instead of one per arithmetic step.
:meth:`Optimizer.update_multi` goes further and updates a whole list of
parameters of one device in a single push (MXNet's ``multi_sgd_update``);
the :class:`~d2lmini.gluon.Trainer` uses that.

How the gradient enters (``rescale_grad`` is ``1/batch_size`` in a Trainer,
``clip`` is ``clip_gradient``, ``None`` = no clipping):

* SGD, AdaGrad, AdaDelta: ``g = clip(rescale_grad * grad)``, weight decay
  added as ``wd * weight`` to ``g`` (SGD) or to the step (AdaGrad, AdaDelta);
* Adam, RMSProp: ``g = clip(rescale_grad * grad + wd * weight)``: MXNet
  clips *after* adding the weight decay for these two.

The fused kernels are also operators of the op table (``sgd_update``,
``sgd_mom_update``, ``adam_update``, ...; ``differentiable = False``):
:func:`sgd_update` and friends call them functionally, as ``nd.sgd_update``
does in MXNet.
"""
import functools
import math

from . import backend
from .ndarray.ndarray import NDArray, _write_inplace, invoke
from .ndarray.registry import Op, register as register_op

__all__ = ['Optimizer', 'SGD', 'Adam', 'AdaGrad', 'RMSProp', 'AdaDelta',
           'Updater', 'get_updater', 'create', 'register', 'register_optimizer',
           'sgd_update', 'sgd_mom_update', 'adam_update']


# === the fused update kernels ================================================
def _own(a):
    """``a`` if it can be written in place, else a writable copy."""
    flags = getattr(a, 'flags', None)         # CuPy's flags have no 'writeable'
    if flags is None or not getattr(flags, 'writeable', True):
        return backend.xp_of(a).array(a, copy=True)
    return a


def _scaled(g, rescale_grad, clip_gradient, wd=0.0, w=None):
    """A new array ``clip(rescale_grad * g [+ wd * w])``."""
    t = g * rescale_grad
    if wd and w is not None:
        t += wd * w
    if clip_gradient is not None and clip_gradient >= 0:
        backend.xp_of(t).clip(t, -clip_gradient, clip_gradient, out=t)
    return t


class _UpdateOp(Op):
    """An in-place optimizer update: ``kernel(w, g, *states, **attrs)``.

    ``kernel`` rewrites ``w`` and the states in place and returns them (a
    copy where one was read-only).  As an op of the table (the functional
    form) it returns the updated weight as a new array and, like MXNet's
    mutable inputs, updates the states in place.
    """
    differentiable = False
    nstates = 0

    def infer(self, shapes, dtypes, **attrs):
        for s in shapes[1:]:
            if s != shapes[0]:
                raise ValueError(f"operator '{self.name}': weight, gradient and "
                                 f"states must have one shape, got {shapes}")
        return shapes[0], dtypes[0]

    def forward(self, w, g, *states, **attrs):
        w = backend.xp_of(w).array(w, copy=True)
        return self.kernel(w, g, *states, **attrs)[0]

    def kernel(self, w, g, *states, **attrs):      # pragma: no cover - abstract
        raise NotImplementedError


@register_op
class SGDUpdate(_UpdateOp):
    """``w = (1 - lr*wd) * w - lr * clip(rescale_grad * g)``."""
    name = 'sgd_update'

    def kernel(self, w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=None):
        w = _own(w)
        if clip_gradient is None or clip_gradient < 0:
            t = g * (-lr * rescale_grad)
        else:
            t = _scaled(g, rescale_grad, clip_gradient)
            t *= -lr
        if wd:
            w *= 1.0 - lr * wd
        w += t
        return (w,)


@register_op
class SGDMomUpdate(_UpdateOp):
    """``mom = momentum*mom - lr*(clip(rescale_grad*g) + wd*w); w += mom``."""
    name = 'sgd_mom_update'
    nstates = 1

    def kernel(self, w, g, mom, lr, momentum, wd=0.0, rescale_grad=1.0,
               clip_gradient=None):
        w, mom = _own(w), _own(mom)
        t = _scaled(g, rescale_grad, clip_gradient)
        if wd:
            t += wd * w
        t *= -lr
        mom *= momentum
        mom += t
        w += mom
        return w, mom


@register_op
class AdamUpdate(_UpdateOp):
    """``g = clip(rescale_grad*grad + wd*w)``; moments; ``w -= lr*m/(sqrt(v)+eps)``.

    ``lr`` already carries the bias correction ``sqrt(1-beta2^t)/(1-beta1^t)``
    (the :class:`Adam` optimizer computes it on the front end, as MXNet does).
    """
    name = 'adam_update'
    nstates = 2

    def kernel(self, w, g, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8,
               wd=0.0, rescale_grad=1.0, clip_gradient=None):
        w, mean, var = _own(w), _own(mean), _own(var)
        xp = backend.xp_of(w)
        t = _scaled(g, rescale_grad, clip_gradient, wd, w)
        mean *= beta1
        mean += (1.0 - beta1) * t
        var *= beta2
        t *= t
        t *= 1.0 - beta2
        var += t
        d = xp.sqrt(var)
        d += epsilon
        xp.divide(mean, d, out=d)
        d *= lr
        w -= d
        return w, mean, var


@register_op
class AdaGradUpdate(_UpdateOp):
    """``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``, ``g = clip(r*grad)``."""
    name = 'adagrad_update'
    nstates = 1

    def kernel(self, w, g, history, lr, epsilon=1e-7, wd=0.0, rescale_grad=1.0,
               clip_gradient=None):
        w, history = _own(w), _own(history)
        xp = backend.xp_of(w)
        t = _scaled(g, rescale_grad, clip_gradient)
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
class RMSPropUpdate(_UpdateOp):
    """Tieleman & Hinton: ``n = g1*n + (1-g1)*g^2; w -= lr * g / sqrt(n + eps)``."""
    name = 'rmsprop_update'
    nstates = 1

    def kernel(self, w, g, n, lr, gamma1=0.9, epsilon=1e-8, wd=0.0,
               rescale_grad=1.0, clip_gradient=None):
        w, n = _own(w), _own(n)
        xp = backend.xp_of(w)
        t = _scaled(g, rescale_grad, clip_gradient, wd, w)
        n *= gamma1
        n += (1.0 - gamma1) * t * t
        d = n + epsilon
        xp.sqrt(d, out=d)
        xp.divide(t, d, out=t)
        t *= lr
        w -= t
        return w, n


@register_op
class RMSPropAlexUpdate(_UpdateOp):
    """Graves' centered RMSProp (MXNet's ``rmspropalex_update``)."""
    name = 'rmspropalex_update'
    nstates = 3

    def kernel(self, w, g, n, gm, delta, lr, gamma1=0.9, gamma2=0.9,
               epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=None):
        w, n, gm, delta = _own(w), _own(n), _own(gm), _own(delta)
        xp = backend.xp_of(w)
        t = _scaled(g, rescale_grad, clip_gradient, wd, w)
        n *= gamma1
        n += (1.0 - gamma1) * t * t
        gm *= gamma1
        gm += (1.0 - gamma1) * t
        d = n - gm * gm
        d += epsilon
        xp.sqrt(d, out=d)
        xp.divide(t, d, out=t)
        t *= lr
        delta *= gamma2
        delta -= t
        w += delta
        return w, n, gm, delta


@register_op
class AdaDeltaUpdate(_UpdateOp):
    """Zeiler's AdaDelta (no learning rate), MXNet's rule."""
    name = 'adadelta_update'
    nstates = 2

    def kernel(self, w, g, acc_g, acc_delta, rho=0.9, epsilon=1e-5, wd=0.0,
               rescale_grad=1.0, clip_gradient=None):
        w, acc_g, acc_delta = _own(w), _own(acc_g), _own(acc_delta)
        xp = backend.xp_of(w)
        t = _scaled(g, rescale_grad, clip_gradient)
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


# === pushing kernels through the engine ======================================
def _inplace(name, fn, writes, reads):
    """Push ``fn(*writes, *reads)``, which rewrites ``writes`` in place.

    The one place optimizers touch the engine: ordering on the device stream
    comes for free; a pending cross-device read of a written array (say a
    KVStore copying the weight) is waited for first, as in ``x[:] = y``.
    """
    ctx = writes[0]._ctx
    args = tuple(writes) + tuple(reads)
    for a in args:
        if a._ctx != ctx:
            raise ValueError(
                f"optimizer update '{name}': weight, gradient and states must "
                f"be on one context, got "
                f"{', '.join(f'{x._ctx} {x._shape}' for x in args)}")
    _write_inplace(name, fn, writes, reads)


def _kernel_fn(op, attrs):
    """Adapt ``op.kernel`` to the engine: one output is returned bare."""
    k = functools.partial(op.kernel, **attrs)
    if op.nstates == 0:
        return lambda w, g: k(w, g)[0]

    def fn(w, *rest):                      # rest = states..., grad (reads last)
        return k(w, rest[-1], *rest[:-1])
    return fn


def _multi_fn(op, attrs_list):
    """One kernel that updates many parameters (MXNet's ``multi_*_update``)."""
    n, k = len(attrs_list), 1 + op.nstates

    def fn(*raw):
        writes, grads = raw[:n * k], raw[n * k:]
        out = []
        for i, attrs in enumerate(attrs_list):
            ws = writes[i * k:(i + 1) * k]
            out.extend(op.kernel(ws[0], grads[i], *ws[1:], **attrs))
        return out[0] if len(out) == 1 else out
    return fn


def _states(state):
    if state is None:
        return ()
    if isinstance(state, NDArray):
        return (state,)
    return tuple(state)


# === functional forms (MXNet's nd.sgd_update & co.) ==========================
def _functional(opname, weight, grad, states, out, attrs):
    from .ndarray.registry import OPS
    op = OPS[opname]
    if out is None:
        return invoke(op, (weight, grad) + tuple(states), attrs)
    if out is not weight:
        raise ValueError(f'{opname}: out= must be the weight itself (an in-place '
                         f'update) or None')
    _inplace(opname, _kernel_fn(op, attrs), (weight,) + tuple(states), (grad,))
    return weight


def sgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               out=None, **kwargs):
    """MXNet's ``sgd_update``; ``out=weight`` updates in place."""
    return _functional('sgd_update', weight, grad, (), out,
                       dict(lr=lr, wd=wd, rescale_grad=rescale_grad,
                            clip_gradient=clip_gradient))


def sgd_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, out=None, **kwargs):
    """MXNet's ``sgd_mom_update``: ``mom`` is updated in place."""
    return _functional('sgd_mom_update', weight, grad, (mom,), out,
                       dict(lr=lr, momentum=momentum, wd=wd,
                            rescale_grad=rescale_grad, clip_gradient=clip_gradient))


def adam_update(weight, grad, mean, var, lr, beta1=0.9, beta2=0.999,
                epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                out=None, **kwargs):
    """MXNet's ``adam_update`` (no bias correction: fold it into ``lr``)."""
    return _functional('adam_update', weight, grad, (mean, var), out,
                       dict(lr=lr, beta1=beta1, beta2=beta2, epsilon=epsilon,
                            wd=wd, rescale_grad=rescale_grad,
                            clip_gradient=clip_gradient))


# === optimizers ==============================================================
class Optimizer:
    """Base class: learning rate, weight decay, gradient rescaling, counters.

    Subclasses define :meth:`create_state` and :meth:`_kernel` (which fused
    op, with which attributes, for parameter ``index`` now); :meth:`update`
    and :meth:`update_multi` do the rest.  Update counts are kept per
    context, so that data-parallel copies of a parameter (one per device,
    each updated once a step) count one step, not one per device.

    Parameters
    ----------
    rescale_grad : float
        Gradients are multiplied by this first (a Trainer sets ``1/batch``).
    wd : float
        Weight decay (L2), times each parameter's ``wd_mult``.
    clip_gradient : float or None
        Clip the rescaled gradient to ``[-clip, clip]``.
    learning_rate : float
        Times each parameter's ``lr_mult``; default 0.01 (Adam 0.001).
    lr_scheduler : callable or None
        ``lr_scheduler(num_update) -> lr``, e.g. a ``FactorScheduler``.
    param_dict : dict index -> Parameter
        Where ``lr_mult``/``wd_mult`` come from (the Trainer sets it).
    """
    opt_registry = {}
    _default_lr = 0.01

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0,
                 clip_gradient=None, learning_rate=None, lr_scheduler=None,
                 sym=None, begin_num_update=0, multi_precision=False,
                 param_dict=None, aggregate_num=None, **kwargs):
        if kwargs:
            raise TypeError(f'{type(self).__name__}: unknown optimizer '
                            f'argument(s) {sorted(kwargs)}')
        self.rescale_grad = float(rescale_grad)
        self.wd = float(wd)
        self.clip_gradient = None if clip_gradient is None else float(clip_gradient)
        if learning_rate is None:
            learning_rate = getattr(lr_scheduler, 'base_lr', self._default_lr)
        self.lr = float(learning_rate)
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is not None and hasattr(lr_scheduler, 'base_lr'):
            lr_scheduler.base_lr = self.lr
        self.begin_num_update = self.num_update = int(begin_num_update)
        self.multi_precision = multi_precision
        self.idx2name = dict(param_idx2name or {})
        self.param_dict = dict(param_dict or {})
        self.lr_mult, self.wd_mult = {}, {}
        # 0: one push per parameter; n: up to n parameters per push.
        self.aggregate_num = 1 << 30 if aggregate_num is None else int(aggregate_num)
        self._all_index_update_counts = {None: {}}
        self._index_update_count = self._all_index_update_counts[None]

    # -- registry ----------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Class decorator: make ``create(klass.__name__.lower())`` work."""
        name = klass.__name__.lower()
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        key = name.lower()
        if key not in Optimizer.opt_registry:
            raise ValueError(f'unknown optimizer {name!r}; registered: '
                             f'{sorted(Optimizer.opt_registry)}')
        return Optimizer.opt_registry[key](**kwargs)

    # -- hyperparameters ---------------------------------------------------------
    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        if self.lr_scheduler is not None:
            raise UserWarning('the optimizer has an LRScheduler: set_learning_rate '
                              'can change the learning rate only without one')
        self.lr = float(lr)

    def set_lr_mult(self, args_lr_mult):
        self.lr_mult = dict(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        self.wd_mult = dict(args_wd_mult)

    def _mult(self, index, attr, table):
        p = self.param_dict.get(index)
        if p is not None:
            return float(getattr(p, attr, 1.0))
        if index in table:
            return table[index]
        return table.get(self.idx2name.get(index), 1.0)

    def _get_lr(self, index):
        return self.learning_rate * self._mult(index, 'lr_mult', self.lr_mult)

    def _get_wd(self, index):
        return self.wd * self._mult(index, 'wd_mult', self.wd_mult)

    def _hyper(self):
        """Hyperparameters saved by ``Trainer.save_states`` (JSON-able)."""
        keys = ['lr', 'wd', 'rescale_grad', 'clip_gradient', 'begin_num_update']
        keys += list(getattr(self, '_extra_hyper', ()))
        return {k: getattr(self, k) for k in keys}

    # -- counters (per context) --------------------------------------------------
    def _set_current_context(self, ctx):
        counts = self._all_index_update_counts.get(ctx)
        if counts is None:
            # A new device starts where the others are (or at the beginning).
            counts = self._all_index_update_counts[ctx] = {}
        self._index_update_count = counts

    def _update_count(self, index):
        n = self._index_update_count.get(index, self.begin_num_update) + 1
        self._index_update_count[index] = n
        if n > self.num_update:
            self.num_update = n
        return n

    # -- states and updates --------------------------------------------------------
    def create_state(self, index, weight):
        """The optimizer state of one weight (None, an NDArray or a tuple)."""
        return None

    def create_state_multi_precision(self, index, weight):
        return self.create_state(index, weight)

    def _kernel(self, index, weight, state):
        """``(op, attrs)`` for the next update of parameter ``index``."""
        raise NotImplementedError(f'{type(self).__name__} defines no update')

    def _prepare(self, index, weight, state):
        self._update_count(index)
        op, attrs = self._kernel(index, weight, state)
        attrs.setdefault('rescale_grad', self.rescale_grad)
        attrs.setdefault('clip_gradient', self.clip_gradient)
        return op, attrs

    def update(self, index, weight, grad, state):
        """Update ``weight`` (and ``state``) in place from ``grad``: one push."""
        op, attrs = self._prepare(index, weight, state)
        _inplace(op.name, _kernel_fn(op, attrs), (weight,) + _states(state),
                 (grad,))

    def update_multi_precision(self, index, weight, grad, state):
        self.update(index, weight, grad, state)

    def update_multi(self, indices, weights, grads, states):
        """Update several parameters of ONE context with one push per kernel."""
        if type(self).update is not Optimizer.update:
            # A subclass with its own update(): call it for each parameter.
            for i, w, g, s in zip(indices, weights, grads, states):
                self.update_multi_precision(i, w, g, s)
            return
        groups = {}
        for i, w, g, s in zip(indices, weights, grads, states):
            op, attrs = self._prepare(i, w, s)
            groups.setdefault(op.name, (op, []))[1].append(
                (attrs, (w,) + _states(s), g))
        for name, (op, items) in groups.items():
            step = max(1, self.aggregate_num)
            for lo in range(0, len(items), step):
                chunk = items[lo:lo + step]
                if len(chunk) == 1:
                    attrs, ws, g = chunk[0]
                    _inplace(name, _kernel_fn(op, attrs), ws, (g,))
                    continue
                writes = [a for _, ws, _ in chunk for a in ws]
                _inplace('multi_' + name, _multi_fn(op, [a for a, _, _ in chunk]),
                         writes, [g for _, _, g in chunk])

    def __repr__(self):
        hyper = ', '.join(f'{k}={v}' for k, v in self._hyper().items())
        return f'{type(self).__name__}({hyper})'


register_optimizer = register = Optimizer.register     # mx.optimizer.register


def _zeros_like(weight):
    from .ndarray.ndarray import zeros
    return zeros(weight.shape, weight.context, weight._dtype)


def _ops():
    from .ndarray.registry import OPS
    return OPS


@Optimizer.register
class SGD(Optimizer):
    """Stochastic gradient descent, with momentum if ``momentum > 0``.

    >>> opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    """
    _extra_hyper = ('momentum',)

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = float(momentum)
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def _kernel(self, index, weight, state):
        attrs = dict(lr=self._get_lr(index), wd=self._get_wd(index))
        if state is None:
            return _ops()['sgd_update'], attrs
        attrs['momentum'] = self.momentum
        return _ops()['sgd_mom_update'], attrs


@Optimizer.register
class Adam(Optimizer):
    """Adam (Kingma & Ba), with MXNet's bias correction folded into ``lr``."""
    _default_lr = 0.001
    _extra_hyper = ('beta1', 'beta2', 'epsilon')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _kernel(self, index, weight, state):
        t = self._index_update_count[index]
        lr = self._get_lr(index)
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        return _ops()['adam_update'], dict(
            lr=lr, beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
            wd=self._get_wd(index))


@Optimizer.register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al.): per-coordinate steps shrink with past gradients."""
    _extra_hyper = ('float_stable_eps',)

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = float(eps)

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def _kernel(self, index, weight, state):
        return _ops()['adagrad_update'], dict(
            lr=self._get_lr(index), epsilon=self.float_stable_eps,
            wd=self._get_wd(index))


@Optimizer.register
class RMSProp(Optimizer):
    """RMSProp; ``centered=True`` is Graves' variant (``gamma2`` = momentum)."""
    _default_lr = 0.001
    _extra_hyper = ('gamma1', 'gamma2', 'epsilon', 'centered')

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        if clip_weights is not None:
            raise NotImplementedError('RMSProp(clip_weights=...) is not supported')
        self.gamma1, self.gamma2 = float(gamma1), float(gamma2)
        self.epsilon, self.centered = float(epsilon), bool(centered)

    def create_state(self, index, weight):
        if self.centered:
            return tuple(_zeros_like(weight) for _ in range(3))
        return _zeros_like(weight)

    def _kernel(self, index, weight, state):
        attrs = dict(lr=self._get_lr(index), gamma1=self.gamma1,
                     epsilon=self.epsilon, wd=self._get_wd(index))
        if self.centered:
            attrs['gamma2'] = self.gamma2
            return _ops()['rmspropalex_update'], attrs
        return _ops()['rmsprop_update'], attrs


@Optimizer.register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler): no learning rate; ``rho`` and ``epsilon``."""
    _extra_hyper = ('rho', 'epsilon')

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho, self.epsilon = float(rho), float(epsilon)

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _kernel(self, index, weight, state):
        return _ops()['adadelta_update'], dict(
            rho=self.rho, epsilon=self.epsilon, wd=self._get_wd(index))


def create(name, **kwargs):
    """``create('sgd', learning_rate=0.1, momentum=0.9)``: an optimizer by name."""
    if isinstance(name, Optimizer):
        if kwargs:
            raise ValueError('optimizer arguments must be None when passing an '
                             'Optimizer instance')
        return name
    return Optimizer.create_optimizer(name, **kwargs)


# === the updater: states per parameter, for one device ======================
class Updater:
    """Applies an optimizer to parameters of one device, keeping their states.

    ``updater(index, grad, weight)`` (MXNet's argument order) creates the
    state on first use; lists of indices, grads and weights update them all
    with :meth:`Optimizer.update_multi`.
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}

    def _state(self, index, weight):
        s = self.states.get(index)
        if s is None and index not in self.states:
            s = self.states[index] = \
                self.optimizer.create_state_multi_precision(index, weight)
        return s

    def __call__(self, index, grad, weight):
        opt = self.optimizer
        if isinstance(index, (list, tuple)):
            if not index:
                return
            opt._set_current_context(weight[0].context)
            states = [self._state(i, w) for i, w in zip(index, weight)]
            opt.update_multi(list(index), list(weight), list(grad), states)
            return
        opt._set_current_context(weight.context)
        opt.update_multi_precision(index, weight, grad, self._state(index, weight))


def get_updater(optimizer):
    """An :class:`Updater` for ``optimizer``."""
    return Updater(optimizer)


# MXNet spells the classes in lowercase too (mx.optimizer.sgd is a class).
sgd, adam, adagrad, rmsprop, adadelta = SGD, Adam, AdaGrad, RMSProp, AdaDelta
