"""Data-parallel training with allreduce: no store, no servers.

Every rank holds the whole model and computes gradients on its own batch;
an allreduce sums the gradients, and every rank applies the same update,
so the copies stay identical.  Dividing ``rescale_grad`` by the number of
ranks (instead of averaging in the allreduce) makes one step with a local
batch ``b`` on each of ``n`` ranks the step of one process on all the
ranks' batches joined, ``trainer.step(b)`` as usual.
"""
from .. import optimizer as opt
from ..gluon.trainer import Trainer
from .basics import size
from .compression import Compression
from .ops import allreduce_, grouped_allreduce

__all__ = ['DistributedTrainer', 'DistributedOptimizer']


class DistributedTrainer(Trainer):
    """A gluon ``Trainer`` whose gradients are summed over the ranks (fused)
    before every update; one device per rank, as in Horovod.

    ``compression``: ``Compression.fp16`` sends float16 gradients.
    ``gradient_predivide_factor`` f: gradients are divided by f before the
    sum and multiplied by f / size() after it (the average either way; a
    larger f keeps float16 sums from overflowing).  ``prefix`` names the
    allreduce; ``num_groups`` is accepted for Horovod's signature (the
    gradients are fused by ``HOROVOD_FUSION_THRESHOLD`` instead).
    """

    def __init__(self, params, optimizer, optimizer_params=None,
                 compression=Compression.none, gradient_predivide_factor=1.0,
                 prefix=None, num_groups=0):
        super().__init__(params, optimizer, optimizer_params, kvstore=None)
        self._compression = compression
        self._predivide = float(gradient_predivide_factor)
        self._scale *= self._predivide / size()
        self._hvd_name = f'{prefix or ""}DistributedTrainer'

    def _allreduce_grads(self, fresh):
        if size() == 1 and self._predivide == 1.0:
            return                       # nothing to sum, nothing to scale
        todo = [p for i, p in enumerate(self._params)
                if p.grad_req != 'null' and any(fresh[i])]
        grads = [p.list_grad()[0] for p in todo]
        packed = [self._compression.compress(g) for g in grads]
        sums = grouped_allreduce([t for t, _ in packed], average=False,
                                 name=self._hvd_name,
                                 prescale_factor=1.0 / self._predivide)
        for g, total, (_, ctx) in zip(grads, sums, packed):
            g[:] = self._compression.decompress(total, ctx)


class DistributedOptimizer(opt.Optimizer):
    """Wraps an optimizer: every update first sums its gradients over the ranks.

    For training without a gluon ``Trainer`` (or with one, as
    ``gluon.Trainer(params, hvd.DistributedOptimizer(o), kvstore=None)``).
    Everything else is the wrapped optimizer's.
    """

    def __init__(self, optimizer, gradient_predivide_factor=1.0, num_groups=0):
        if not isinstance(optimizer, opt.Optimizer):
            raise TypeError(f'DistributedOptimizer wraps an Optimizer, got '
                            f'{type(optimizer).__name__}')
        object.__setattr__(self, '_optimizer', optimizer)
        object.__setattr__(self, '_predivide', float(gradient_predivide_factor))
        optimizer.rescale_grad *= self._predivide / size()

    def __getattr__(self, name):
        return getattr(self._optimizer, name)

    def __setattr__(self, name, value):
        setattr(self._optimizer, name, value)

    def _sum(self, index, grad):
        if size() == 1 and self._predivide == 1.0:
            return
        if isinstance(index, (list, tuple)):
            for i, g in zip(index, grad):
                allreduce_(g, average=False, name=f'grad.{i}',
                           prescale_factor=1.0 / self._predivide)
        else:
            allreduce_(grad, average=False, name=f'grad.{index}',
                       prescale_factor=1.0 / self._predivide)

    def update(self, index, weight, grad, state):
        self._sum(index, grad)
        self._optimizer.update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        self._sum(index, grad)
        self._optimizer.update_multi_precision(index, weight, grad, state)

    def update_multi(self, indices, weights, grads, states):
        self._sum(indices, grads)
        self._optimizer.update_multi(indices, weights, grads, states)

    def create_state(self, index, weight):
        return self._optimizer.create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        return self._optimizer.create_state_multi_precision(index, weight)

    def __repr__(self):
        return f'DistributedOptimizer({self._optimizer!r})'
