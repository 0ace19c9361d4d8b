"""DenseNet-BC as in MXNet 1.9.1's model zoo (Huang et al., 2016,
"Densely Connected Convolutional Networks").

Where a residual block *adds* its output to its input, a dense layer
*concatenates* it: each layer (BN, ReLU, 1x1 conv to ``bn_size * k``
channels, BN, ReLU, 3x3 conv to ``k`` channels) sees every feature map
computed before it in its block and adds ``k`` (the growth rate) new ones
(``HybridConcurrent([Identity(), layer])``).  Between blocks a transition
(BN, ReLU, 1x1 conv, 2x2 average pooling) halves the channels and the
size.  The dense layers of stage ``i`` are created in its name scope
without one of their own, so they are counted across the stage
(``densenet0_stage1_conv0``, ``stage1_conv1``, ...) as in MXNet.

>>> net = densenet121(classes=10)
>>> net.initialize()
>>> net(nd.zeros((1, 3, 224, 224))).shape
(1, 10)
"""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import ROOT, load_pretrained

__all__ = ['DenseNet', 'densenet121', 'densenet161', 'densenet169', 'densenet201',
           'get_densenet']


def _bn_relu_conv(out, channels, kernel_size, padding=0):
    out.add(nn.BatchNorm())
    out.add(nn.Activation('relu'))
    out.add(nn.Conv2D(channels, kernel_size=kernel_size, padding=padding,
                      use_bias=False))


def _make_dense_layer(growth_rate, bn_size, dropout):
    """``concat([x, new(x)])`` with ``growth_rate`` new channels."""
    new_features = nn.HybridSequential(prefix='')
    _bn_relu_conv(new_features, bn_size * growth_rate, 1)
    _bn_relu_conv(new_features, growth_rate, 3, padding=1)
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = nn.HybridConcurrent(axis=1, prefix='')
    out.add(nn.Identity())
    out.add(new_features)
    return out


def _make_dense_block(num_layers, bn_size, growth_rate, dropout, stage_index):
    out = nn.HybridSequential(prefix=f'stage{stage_index}_')
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_make_dense_layer(growth_rate, bn_size, dropout))
    return out


def _make_transition(channels):
    out = nn.HybridSequential(prefix='')
    _bn_relu_conv(out, channels, 1)
    out.add(nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet-BC for 224x224 images.

    Parameters
    ----------
    num_init_features : int
        Channels of the first (7x7/2) convolution.
    growth_rate : int
        New channels of each dense layer (``k`` in the paper).
    block_config : list of int
        Number of dense layers in each block.
    bn_size : int, default 4
        The bottleneck 1x1 convolution has ``bn_size * growth_rate`` channels.
    dropout : float, default 0
        Dropout after each dense layer (none if 0).
    classes : int, default 1000
        Number of classes (units of the output layer).
    """

    def __init__(self, num_init_features, growth_rate, block_config,
                 bn_size=4, dropout=0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7,
                                        strides=2, padding=3, use_bias=False))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation('relu'))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            channels = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_make_dense_block(num_layers, bn_size,
                                                    growth_rate, dropout, i + 1))
                channels += num_layers * growth_rate
                if i != len(block_config) - 1:
                    channels //= 2
                    self.features.add(_make_transition(channels))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation('relu'))
            self.features.add(nn.AvgPool2D(pool_size=7))
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# number of layers: (num_init_features, growth_rate, block_config)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=cpu(), root=ROOT, **kwargs):
    """DenseNet-BC of 121, 161, 169 or 201 layers; ``pretrained=True`` loads
    MXNet's ImageNet weights from ``root`` onto ``ctx``; other keywords
    (``classes``, ``bn_size``, ``dropout``, ``prefix``) go to
    :class:`DenseNet`."""
    if num_layers not in densenet_spec:
        raise ValueError(f'Invalid number of layers: {num_layers}. Options are '
                         f'{sorted(densenet_spec)}')
    net = DenseNet(*densenet_spec[num_layers], **kwargs)
    return load_pretrained(net, f'densenet{num_layers}', ctx, root) \
        if pretrained else net


def densenet121(**kwargs):
    """DenseNet-BC-121; keywords as :func:`get_densenet`'s."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs):
    """DenseNet-BC-161; keywords as :func:`get_densenet`'s."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs):
    """DenseNet-BC-169; keywords as :func:`get_densenet`'s."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs):
    """DenseNet-BC-201; keywords as :func:`get_densenet`'s."""
    return get_densenet(201, **kwargs)
