"""``gluon.data.vision``: image datasets and transforms."""
from .datasets import FashionMNIST
from . import transforms

__all__ = ['FashionMNIST', 'transforms']
