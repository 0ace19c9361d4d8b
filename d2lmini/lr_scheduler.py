"""``mx.lr_scheduler``: learning rate as a function of the update count.

A scheduler is called with ``num_update``, the largest number of updates any
weight has received (the optimizer counts; a Trainer step is one update per
parameter, however many devices hold copies), and returns the learning
rate::

    sched = mx.lr_scheduler.FactorScheduler(step=250, factor=0.5, base_lr=0.1)
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'lr_scheduler': sched})
    trainer.learning_rate            # sched(trainer.optimizer.num_update)

Every scheduler can warm up first: for ``num_update < warmup_steps`` the
rate goes from ``warmup_begin_lr`` to ``base_lr`` linearly
(``warmup_mode='linear'``) or stays at ``warmup_begin_lr`` (``'constant'``).

As in MXNet, an optimizer given both ``learning_rate`` and ``lr_scheduler``
sets the scheduler's ``base_lr`` to ``learning_rate``.  Deliberate
difference: MXNet 1.9.1 keeps using the *constructor's* ``base_lr`` as the
warm-up target and as the start of the Poly and Cosine curves, so that
override is half-applied there; here the whole schedule follows it.
"""
import math

__all__ = ['LRScheduler', 'FactorScheduler', 'MultiFactorScheduler',
           'PolyScheduler', 'CosineScheduler']


def _log():
    import logging                  # only when a rate changes: keeps import light
    return logging


class LRScheduler:
    """Base class: ``base_lr`` and the warm-up; subclasses define ``__call__``.

    Parameters
    ----------
    base_lr : float
        The rate after warm-up (an optimizer's ``learning_rate`` overrides it).
    warmup_steps : int
        Number of updates to warm up for (0: none).
    warmup_begin_lr : float
        The rate at update 0 of the warm-up.
    warmup_mode : 'linear' or 'constant'
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode='linear'):
        if not isinstance(warmup_steps, int):
            raise TypeError(f'{type(self).__name__}: warmup_steps must be an int, '
                            f'got {warmup_steps!r}')
        if warmup_steps < 0:
            raise ValueError('Warmup steps has to be positive or 0')
        if warmup_begin_lr > base_lr:
            raise ValueError(f'Base lr has to be higher than warmup_begin_lr: '
                             f'base_lr={base_lr}, warmup_begin_lr={warmup_begin_lr}')
        if warmup_mode not in ('linear', 'constant'):
            raise ValueError(f"Supports only linear and constant modes of warmup, "
                             f"got {warmup_mode!r}")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def _set_base_lr(self, lr):
        """The optimizer's ``learning_rate`` becomes the schedule's base."""
        self.base_lr = self.warmup_final_lr = lr

    def get_warmup_lr(self, num_update):
        if num_update >= self.warmup_steps:
            raise ValueError(f'update {num_update} is past the warm-up '
                             f'({self.warmup_steps} steps)')
        if self.warmup_mode == 'constant':
            return self.warmup_begin_lr
        frac = float(num_update) / float(self.warmup_steps)
        return self.warmup_begin_lr + (self.warmup_final_lr - self.warmup_begin_lr) * frac

    def __call__(self, num_update):
        raise NotImplementedError('must override this')

    def __repr__(self):
        return f'{type(self).__name__}(base_lr={self.base_lr})'


class FactorScheduler(LRScheduler):
    """``base_lr * factor ** floor((num_update - 1) / step)``, not below
    ``stop_factor_lr``.

    The rate is multiplied by ``factor`` when ``num_update`` first exceeds
    ``step``, ``2*step``, ...  (MXNet's counting: update ``step`` still has
    the old rate).  Like MXNet's, it keeps its position: call it with
    non-decreasing ``num_update``.
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError('Schedule step must be greater or equal than 1 round')
        if factor > 1.0:
            raise ValueError('Factor must be no more than 1 to make lr reduce')
        self.step, self.factor = step, factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr = max(self.base_lr * self.factor, self.stop_factor_lr)
            _log().info('Update[%d]: Change learning rate to %0.5e',
                         num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply by ``factor`` when ``num_update`` passes each of ``step``
    (an increasing list): ``base_lr * factor ** k`` for
    ``step[k-1] < num_update <= step[k]``."""

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or not step:
            raise ValueError(f'MultiFactorScheduler: step must be a non-empty '
                             f'list of ints, got {step!r}')
        for i, s in enumerate(step):
            if i and s <= step[i - 1]:
                raise ValueError('Schedule step must be an increasing integer list')
            if s < 1:
                raise ValueError('Schedule step must be greater or equal than 1 round')
        if factor > 1.0:
            raise ValueError('Factor must be no more than 1 to make lr reduce')
        self.step, self.factor = step, factor
        self.cur_step_ind = 0
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while (self.cur_step_ind < len(self.step)
               and num_update > self.step[self.cur_step_ind]):
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            _log().info('Update[%d]: Change learning rate to %0.5e',
                         num_update, self.base_lr)
        return self.base_lr


class _Curve(LRScheduler):
    """A decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates
    (warm-up included); ``final_lr`` after that."""

    def __init__(self, max_update, base_lr, final_lr, warmup_steps,
                 warmup_begin_lr, warmup_mode):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int) or max_update < 1:
            raise ValueError(f'maximum number of updates must be a strictly '
                             f'positive int, got {max_update!r}')
        self.base_lr_orig = base_lr
        self.max_update, self.final_lr = max_update, final_lr
        self.max_steps = max_update - warmup_steps

    def _set_base_lr(self, lr):
        super()._set_base_lr(lr)
        self.base_lr_orig = lr

    def _decay(self, frac):         # 1 at the start, 0 at max_update
        raise NotImplementedError

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = (self.final_lr
                            + (self.base_lr_orig - self.final_lr) * self._decay(frac))
        return self.base_lr


class PolyScheduler(_Curve):
    """``final_lr + (base_lr - final_lr) * (1 - t/T) ** pwr`` after warm-up,
    ``t`` counted from the end of the warm-up, ``T = max_update - warmup_steps``."""

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(max_update, base_lr, final_lr, warmup_steps,
                         warmup_begin_lr, warmup_mode)
        self.power = pwr

    def _decay(self, frac):
        return pow(1.0 - frac, self.power)


class CosineScheduler(_Curve):
    """``final_lr + (base_lr - final_lr) * (1 + cos(pi * t/T)) / 2`` after
    warm-up (``t``, ``T`` as in :class:`PolyScheduler`)."""

    def __init__(self, max_update, base_lr=0.01, final_lr=0,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(max_update, base_lr, final_lr, warmup_steps,
                         warmup_begin_lr, warmup_mode)

    def _decay(self, frac):
        return (1.0 + math.cos(math.pi * frac)) / 2.0
