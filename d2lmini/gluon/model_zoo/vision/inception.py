"""Inception V3 as in MXNet 1.9.1's model zoo (Szegedy et al., 2015,
"Rethinking the Inception Architecture for Computer Vision").

An Inception module runs a few *branches* on the same input (1x1, 3x3 and
5x5-like convolutions, a pooling) and concatenates their outputs on the
channel axis (``HybridConcurrent(axis=1)``), so the net chooses per layer
which receptive field to use.  V3 factorizes the large kernels: a 5x5 is
two 3x3s, a 7x7 is a 1x7 then a 7x1, which cuts the computation at the
same receptive field.  Modules A (35x35), B (reduction to 17x17), C
(17x17, factorized 7x7), D (reduction to 8x8) and E (8x8, split 1x3/3x1)
follow a stem of plain convolutions; every convolution has a BatchNorm
(epsilon 1e-3) and a ReLU.  Each module has its own prefix (``A1_``,
``B_``, ``C1_`` ...), inside which the layers are counted as in MXNet
(``inception30_A1_conv0_weight``).  The input is 299x299.

>>> net = inception_v3(classes=10)
>>> net.initialize()
>>> net(nd.zeros((1, 3, 299, 299))).shape        # doctest: +SKIP
(1, 10)
"""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import ROOT, load_pretrained

__all__ = ['Inception3', 'inception_v3']


def _make_basic_conv(channels, kernel_size, strides=1, padding=0):
    """Convolution (no bias), BatchNorm (epsilon 1e-3), ReLU."""
    out = nn.HybridSequential(prefix='')
    out.add(nn.Conv2D(channels, kernel_size, strides, padding, use_bias=False))
    out.add(nn.BatchNorm(epsilon=0.001))
    out.add(nn.Activation('relu'))
    return out


def _make_branch(pool, *convs):
    """An optional pooling ('avg': 3x3/1, size kept; 'max': 3x3/2), then
    one basic convolution per ``(channels, kernel[, strides[, padding]])``."""
    out = nn.HybridSequential(prefix='')
    if pool == 'avg':
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == 'max':
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for conv in convs:
        out.add(_make_basic_conv(*conv))
    return out


def _make_module(prefix, *branches):
    """Branches ``(pool, conv, ...)`` side by side, concatenated."""
    out = nn.HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for branch in branches:
            out.add(_make_branch(*branch))
    return out


def _make_A(pool_features, prefix):
    return _make_module(prefix,
                        (None, (64, 1)),
                        (None, (48, 1), (64, 5, 1, 2)),
                        (None, (64, 1), (96, 3, 1, 1), (96, 3, 1, 1)),
                        ('avg', (pool_features, 1)))


def _make_B(prefix):
    return _make_module(prefix,
                        (None, (384, 3, 2)),
                        (None, (64, 1), (96, 3, 1, 1), (96, 3, 2)),
                        ('max',))


# the two halves of a factorized 7x7 convolution: kernel, stride, padding
_ROW, _COL = ((1, 7), 1, (0, 3)), ((7, 1), 1, (3, 0))


def _make_C(c7, prefix):
    return _make_module(prefix,
                        (None, (192, 1)),
                        (None, (c7, 1), (c7, *_ROW), (192, *_COL)),
                        (None, (c7, 1), (c7, *_COL), (c7, *_ROW), (c7, *_COL),
                         (192, *_ROW)),
                        ('avg', (192, 1)))


def _make_D(prefix):
    return _make_module(prefix,
                        (None, (192, 1), (320, 3, 2)),
                        (None, (192, 1), (192, *_ROW), (192, *_COL), (192, 3, 2)),
                        ('max',))


def _make_E(prefix):
    """Two of the four branches end in a 1x3 and a 3x1 convolution side by
    side (both on the same input), concatenated."""
    out = nn.HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (320, 1)))
        for stem in ([(384, 1)], [(448, 1), (384, 3, 1, 1)]):
            branch = nn.HybridSequential(prefix='')
            branch.add(_make_branch(None, *stem))
            split = nn.HybridConcurrent(axis=1, prefix='')
            split.add(_make_branch(None, (384, (1, 3), 1, (0, 1))))
            split.add(_make_branch(None, (384, (3, 1), 1, (1, 0))))
            branch.add(split)
            out.add(branch)
        out.add(_make_branch('avg', (192, 1)))
    return out


class Inception3(HybridBlock):
    """Inception V3 for 299x299 images (without the auxiliary classifier).

    Parameters
    ----------
    classes : int, default 1000
        Number of classes (units of the output layer).
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(_make_basic_conv(32, 3, 2))
            self.features.add(_make_basic_conv(32, 3))
            self.features.add(_make_basic_conv(64, 3, 1, 1))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_make_basic_conv(80, 1))
            self.features.add(_make_basic_conv(192, 3))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            for i, pool_features in enumerate([32, 64, 64]):
                self.features.add(_make_A(pool_features, f'A{i + 1}_'))
            self.features.add(_make_B('B_'))
            for i, c7 in enumerate([128, 160, 160, 192]):
                self.features.add(_make_C(c7, f'C{i + 1}_'))
            self.features.add(_make_D('D_'))
            self.features.add(_make_E('E1_'))
            self.features.add(_make_E('E2_'))
            self.features.add(nn.AvgPool2D(pool_size=8))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=cpu(), root=ROOT, **kwargs):
    """Inception V3; ``pretrained=True`` loads MXNet's ImageNet weights from
    ``root`` onto ``ctx``; other keywords (``classes``, ``prefix``) go to
    :class:`Inception3`."""
    net = Inception3(**kwargs)
    return load_pretrained(net, 'inceptionv3', ctx, root) if pretrained else net
