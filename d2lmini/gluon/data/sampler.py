"""``gluon.data.sampler``: where MXNet code finds the samplers.

They live in :mod:`.dataloader`, next to the loader that draws from them;
this module only names them the way MXNet's does, so that classic code such
as ``class MySampler(gluon.data.sampler.Sampler)`` runs unchanged.
"""
from .dataloader import (Sampler, SequentialSampler, RandomSampler,
                         SplitSampler, FilterSampler, BatchSampler)

__all__ = ['Sampler', 'SequentialSampler', 'RandomSampler', 'SplitSampler',
           'FilterSampler', 'BatchSampler']
