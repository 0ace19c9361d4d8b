"""``gluon.data.vision``: image datasets and transforms."""
from .datasets import MNIST, FashionMNIST, CIFAR10, CIFAR100
from . import transforms

__all__ = ['MNIST', 'FashionMNIST', 'CIFAR10', 'CIFAR100', 'transforms']
