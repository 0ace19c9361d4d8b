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
from .ops import allreduce_, grouped_allreduce

__all__ = ['DistributedTrainer', 'DistributedOptimizer']


class DistributedTrainer(Trainer):
    """A gluon ``Trainer`` whose gradients are summed over the ranks (fused)
    before every update; one device per rank, as in Horovod."""

    def __init__(self, params, optimizer, optimizer_params=None, name=None):
        super().__init__(params, optimizer, optimizer_params, kvstore=None)
        self._scale /= size()
        self._hvd_name = name or 'DistributedTrainer'

    def _allreduce_grads(self, fresh):
        if size() == 1:
            return
        todo = [p for i, p in enumerate(self._params)
                if p.grad_req != 'null' and any(fresh[i])]
        grads = [p.list_grad()[0] for p in todo]
        for g, total in zip(grads, grouped_allreduce(grads, average=False,
                                                     name=self._hvd_name)):
            g[:] = total


class DistributedOptimizer(opt.Optimizer):
    """Wraps an optimizer: every update first sums its gradients over the ranks.

    For training without a gluon ``Trainer`` (or with one, as
    ``gluon.Trainer(params, hvd.DistributedOptimizer(o), kvstore=None)``).
    Everything else is the wrapped optimizer's.
    """

    def __init__(self, optimizer):
        if not isinstance(optimizer, opt.Optimizer):
            raise TypeError(f'DistributedOptimizer wraps an Optimizer, got '
                            f'{type(optimizer).__name__}')
        object.__setattr__(self, '_optimizer', optimizer)
        optimizer.rescale_grad /= size()

    def __getattr__(self, name):
        return getattr(self._optimizer, name)

    def __setattr__(self, name, value):
        setattr(self._optimizer, name, value)

    def _sum(self, index, grad):
        if size() == 1:
            return
        if isinstance(index, (list, tuple)):
            for i, g in zip(index, grad):
                allreduce_(g, average=False, name=f'grad.{i}')
        else:
            allreduce_(grad, average=False, name=f'grad.{index}')

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
