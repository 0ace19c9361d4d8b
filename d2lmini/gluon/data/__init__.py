"""``gluon.data``: datasets, samplers, the DataLoader and vision datasets."""
from .dataset import Dataset, SimpleDataset, ArrayDataset
from .dataloader import (DataLoader, default_batchify_fn,
                         default_mp_batchify_fn, Sampler, SequentialSampler,
                         RandomSampler, SplitSampler, FilterSampler,
                         BatchSampler)
from . import sampler, vision

__all__ = ['Dataset', 'SimpleDataset', 'ArrayDataset', 'DataLoader',
           'default_batchify_fn', 'default_mp_batchify_fn', 'Sampler',
           'SequentialSampler', 'RandomSampler', 'SplitSampler',
           'FilterSampler', 'BatchSampler', 'sampler', 'vision']
