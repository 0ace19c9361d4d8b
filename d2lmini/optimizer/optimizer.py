"""The optimizer base class, the registry and the Updater.

The update rules are MXNet 1.x's, and so are their names and defaults::

    opt = mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9, wd=1e-4)
    state = opt.create_state(0, weight)
    opt.update(0, weight, grad, state)          # weight, state change in place

Every update is ONE fused kernel pushed to the weight's device stream, like
MXNet's ``sgd_mom_update`` (the kernels are in
:mod:`d2lmini.ndarray.optimizer_op`): it rewrites the weight and its states
in place, so an update is asynchronous, keeps the engine's ordering, and
costs one push instead of one per arithmetic step.
:meth:`Optimizer.update_multi` goes further and updates a whole list of
parameters of one device in a single push (MXNet's ``multi_sgd_update``);
the :class:`~d2lmini.gluon.Trainer` uses that.

``multi_precision=True`` with float16 weights keeps a float32 *master copy*
of each weight in its state and runs the update on it in float32; the
float16 weight receives the rounded result.  An update far below float16's
resolution (``1e-4`` on a weight of ``1.0``) is then accumulated instead of
rounded away.  SGD and NAG hold ``(momentum, weight32)`` and use
``mp_sgd_*``/``mp_nag_*``; the others hold ``(weight32, state)``.
"""
import warnings

import numpy as np

from .. import lr_scheduler    # noqa: F401 - mx.lr_scheduler with mx.optimizer
from ..ndarray.ndarray import NDArray
from ..ndarray import optimizer_op
from ..ndarray.optimizer_op import OPS, push, multi_fn

__all__ = ['Optimizer', 'Updater', 'get_updater', 'create', 'register',
           'register_optimizer']


def _states(state):
    """The arrays of a state (None, an NDArray, or nested tuples), in order."""
    if state is None:
        return ()
    if isinstance(state, NDArray):
        return (state,)
    out = ()
    for s in state:
        out += _states(s)
    return out


def _zeros_like(weight, dtype=None):
    from ..ndarray.ndarray import zeros
    return zeros(weight.shape, weight.context,
                 weight._dtype if dtype is None else dtype)


def _is_fp16(weight):
    return np.dtype(weight.dtype) == np.float16


def _clip_attr(c):
    """MXNet's optimizers pass ``clip_gradient`` to a kernel only when truthy."""
    return c if c else -1.0


class Optimizer:
    """Base class: learning rate, weight decay, gradient rescaling, counters.

    Subclasses define :meth:`create_state` and :meth:`_step`, which returns
    the fused kernel call for one parameter; :meth:`update` and
    :meth:`update_multi` push it.  A subclass may instead define
    :meth:`update` itself with NDArray operations (as in MXNet); the
    Updater and ``multi_precision`` then work through it.  Update counts are
    kept per context, so that data-parallel copies of a parameter (one per
    device, each updated once a step) count one step, not one per device.

    Parameters
    ----------
    rescale_grad : float
        Gradients are multiplied by this first (a Trainer sets ``1/batch``).
    wd : float
        Weight decay (L2), times each parameter's ``wd_mult``.
    clip_gradient : float or None
        Clip the rescaled gradient to ``[-clip, clip]``.
    learning_rate : float
        Times each parameter's ``lr_mult``; default 0.01 (Adam 0.001).  With
        an ``lr_scheduler`` it becomes the scheduler's ``base_lr``.
    lr_scheduler : LRScheduler or None
        ``lr_scheduler(num_update) -> lr``, e.g. ``mx.lr_scheduler.FactorScheduler``.
    multi_precision : bool
        Keep a float32 master copy of float16 weights (see the module doc).
    param_dict : dict index -> Parameter
        Where ``lr_mult``/``wd_mult`` come from (the Trainer sets it).
    """
    opt_registry = {}
    _default_lr = 0.01
    _extra_hyper = ()

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
        self.lr_scheduler = lr_scheduler
        if learning_rate is None:
            learning_rate = getattr(lr_scheduler, 'base_lr', self._default_lr)
        self.lr = float(learning_rate)
        if lr_scheduler is not None:
            # MXNet: learning_rate, when given, overrides the scheduler's base_lr.
            if hasattr(lr_scheduler, '_set_base_lr'):
                lr_scheduler._set_base_lr(self.lr)
            elif hasattr(lr_scheduler, 'base_lr'):
                lr_scheduler.base_lr = self.lr
        self.begin_num_update = self.num_update = int(begin_num_update)
        self.multi_precision = bool(multi_precision)
        self.idx2name = dict(param_idx2name or {})
        self.param_dict = dict(param_dict or {})
        self.set_lr_mult({})
        self.set_wd_mult({})
        # 0: one push per parameter; n: up to n parameters per push.
        self.aggregate_num = 1 << 30 if aggregate_num is None else int(aggregate_num)
        self._all_index_update_counts = {None: {}}
        self._index_update_count = self._all_index_update_counts[None]

    # -- registry ----------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Class decorator: make ``create(klass.__name__.lower())`` work."""
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry and \
                Optimizer.opt_registry[name] is not klass:
            warnings.warn(f'optimizer {klass.__module__}.{klass.__name__} '
                          f'overrides the registered {name!r}')
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
            raise UserWarning('LRScheduler of the optimizer has already been '
                              'defined: set_learning_rate can change the learning '
                              'rate only when the optimizer has no LRScheduler')
        self.lr = float(lr)

    def set_lr_mult(self, args_lr_mult):
        self.lr_mult = dict(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """As MXNet: parameters named in ``param_idx2name`` that are not
        ``*_weight`` or ``*_gamma`` (biases, ...) get no weight decay."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not (n.endswith('_weight') or n.endswith('_gamma'))}
        self.wd_mult.update(args_wd_mult)

    def _mult(self, index, attr, table):
        p = self.param_dict.get(index)
        if p is not None:
            return float(getattr(p, attr, 1.0))
        if index in table:
            return table[index]
        return table.get(self.idx2name.get(index), 1.0)

    def _get_lrs(self, indices):
        lr = self.learning_rate
        return [lr * self._mult(i, 'lr_mult', self.lr_mult) for i in indices]

    def _get_wds(self, indices):
        return [self.wd * self._mult(i, 'wd_mult', self.wd_mult) for i in indices]

    def _get_lr(self, index):
        return self.learning_rate * self._mult(index, 'lr_mult', self.lr_mult)

    def _get_wd(self, index):
        return self.wd * self._mult(index, 'wd_mult', self.wd_mult)

    def _hyper(self):
        """Hyperparameters saved by ``Trainer.save_states`` (JSON-able)."""
        keys = ['lr', 'wd', 'rescale_grad', 'clip_gradient', 'begin_num_update',
                'multi_precision']
        keys += list(self._extra_hyper)
        return {k: getattr(self, k) for k in keys}

    # -- counters (per context) --------------------------------------------------
    def _set_current_context(self, ctx):
        counts = self._all_index_update_counts.get(ctx)
        if counts is None:
            counts = self._all_index_update_counts[ctx] = {}
        self._index_update_count = counts

    def _update_count(self, index):
        if isinstance(index, (list, tuple)):
            for i in index:
                self._update_count(i)
            return
        counts = self._index_update_count
        n = counts.get(index, self.begin_num_update) + 1
        counts[index] = n
        if n > self.num_update:
            self.num_update = n

    # -- states --------------------------------------------------------------------
    def create_state(self, index, weight):
        """The optimizer state of one weight (None, an NDArray or a tuple)."""
        return None

    def _use_mp(self, weight):
        return self.multi_precision and _is_fp16(weight)

    def create_state_multi_precision(self, index, weight):
        """``(weight32, state)`` for a float16 weight with ``multi_precision``."""
        if self._use_mp(weight):
            w32 = weight.astype(np.float32)
            return (w32, self.create_state(index, w32))
        if _is_fp16(weight):
            warnings.warn('Accumulating with float16 in optimizer can lead to '
                          'poor accuracy or slow convergence. Consider using '
                          'multi_precision=True option of the optimizer')
        return self.create_state(index, weight)

    # -- the fused path ------------------------------------------------------------
    def _step(self, index, weight, grad, state):
        """The kernel call ``(name, fn, writes, reads)`` updating ``weight``.

        Called after the update count of ``index`` moved on; ``weight`` is
        the master copy under multi-precision.
        """
        raise NotImplementedError(f'{type(self).__name__} defines no update')

    def _fused(self, opname, weight, grad, states, **attrs):
        """The call of fused op ``opname`` on ``(weight, grad, *states)``."""
        args = (weight, grad) + tuple(states)
        return optimizer_op.plan(OPS[opname], args, attrs, weight)

    def _step_mp(self, index, weight, grad, state):
        """Multi-precision: the step on ``weight32``, rounded into ``weight``."""
        w32, inner = state
        name, fn, writes, reads = self._step(index, w32, grad, inner)

        def mp_fn(w, *raw):
            n = len(writes)
            res = fn(*raw[:n], raw[n].astype(np.float32), *raw[n + 1:])
            res = res if isinstance(res, tuple) else (res,)
            w = optimizer_op._own(w)
            w[...] = res[0]
            return (w,) + res
        return 'mp_' + name, mp_fn, (weight,) + tuple(writes), reads

    def _plan(self, index, weight, grad, state, mp):
        self._update_count(index)
        if mp:
            return self._step_mp(index, weight, grad, state)
        return self._step(index, weight, grad, state)

    def _custom_update(self):
        return type(self).update is not Optimizer.update

    # -- updates -------------------------------------------------------------------
    def update(self, index, weight, grad, state):
        """Update ``weight`` (and ``state``) in place from ``grad``: one push."""
        if isinstance(index, (list, tuple)):
            return self.update_multi(index, weight, grad, state, mp=False)
        push(*self._plan(index, weight, grad, state, False))

    def update_multi_precision(self, index, weight, grad, state):
        """:meth:`update`, on the float32 master copy for float16 weights."""
        if isinstance(index, (list, tuple)):
            return self.update_multi(index, weight, grad, state)
        if not self._custom_update():
            push(*self._plan(index, weight, grad, state, self._use_mp(weight)))
        elif self._use_mp(weight):
            # A subclass's own NDArray update runs on the master copy.
            w32, inner = state
            self.update(index, w32, grad.astype(np.float32), inner)
            w32.astype(weight.dtype).copyto(weight)
        else:
            self.update(index, weight, grad, state)

    def update_multi(self, indices, weights, grads, states, mp=None):
        """Update several parameters of ONE context with one push per kernel."""
        if self._custom_update():
            # A subclass with its own update(): call it for each parameter.
            for i, w, g, s in zip(indices, weights, grads, states):
                if mp is False:
                    self.update(i, w, g, s)
                else:
                    self.update_multi_precision(i, w, g, s)
            return
        groups = {}
        for i, w, g, s in zip(indices, weights, grads, states):
            use_mp = self._use_mp(w) if mp is None else mp
            name, fn, writes, reads = self._plan(i, w, g, s, use_mp)
            groups.setdefault(name, []).append((fn, writes, reads))
        step = max(1, self.aggregate_num)
        for name, items in groups.items():
            for lo in range(0, len(items), step):
                chunk = items[lo:lo + step]
                if len(chunk) == 1:
                    push(name, *chunk[0])
                    continue
                push('multi_' + name, multi_fn(chunk),
                     [a for _, ws, _ in chunk for a in ws],
                     [a for _, _, rs in chunk for a in rs])

    def __repr__(self):
        hyper = ', '.join(f'{k}={v}' for k, v in self._hyper().items())
        return f'{type(self).__name__}({hyper})'


register_optimizer = register = Optimizer.register     # mx.optimizer.register


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
    state on first use (``create_state_multi_precision``); lists of indices,
    grads and weights update them all with :meth:`Optimizer.update_multi`.
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
