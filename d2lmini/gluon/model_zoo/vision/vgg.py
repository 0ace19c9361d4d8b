"""VGG as in MXNet 1.9.1's model zoo (Simonyan and Zisserman, 2014, "Very
Deep Convolutional Networks for Large-Scale Image Recognition").

VGG's idea is one repeated unit: a few 3x3 convolutions (padding 1, so
the size stays) followed by a 2x2 max pooling that halves it.  Five such
stages of 64, 128, 256, 512 and 512 channels take 224x224 to 7x7, and
three Dense layers (4096, 4096, classes) classify.  VGG-11, -13, -16 and
-19 differ only in how many convolutions each stage has; the ``_bn``
variants put a BatchNorm after each convolution.  The initializers are
MXNet's (He's Gaussian for the convolutions, N(0, 0.01) for the Dense
layers), so a net trained from scratch starts where MXNet's does.

>>> net = vgg11_bn(classes=10)
>>> net.initialize()
>>> net(nd.zeros((1, 3, 224, 224))).shape
(1, 10)
"""
from ....context import cpu
from ....initializer import Xavier
from ...block import HybridBlock
from ... import nn
from ..model_store import ROOT, load_pretrained

__all__ = ['VGG', 'vgg11', 'vgg13', 'vgg16', 'vgg19',
           'vgg11_bn', 'vgg13_bn', 'vgg16_bn', 'vgg19_bn', 'get_vgg']


class VGG(HybridBlock):
    """Stages of 3x3 convolutions and max pooling, then three Dense layers.

    Parameters
    ----------
    layers : list of int
        Number of convolutions in each stage.
    filters : list of int
        Channels of each stage (as many as ``layers``).
    classes : int, default 1000
        Number of classes (units of the output layer).
    batch_norm : bool, default False
        A BatchNorm after each convolution.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f'VGG: layers and filters must have the same length, '
                             f'got layers={layers} and filters={filters}')
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            he = Xavier(rnd_type='gaussian', factor_type='out', magnitude=2)
            for num, channels in zip(layers, filters):
                for _ in range(num):
                    self.features.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                                weight_initializer=he,
                                                bias_initializer='zeros'))
                    if batch_norm:
                        self.features.add(nn.BatchNorm())
                    self.features.add(nn.Activation('relu'))
                self.features.add(nn.MaxPool2D(strides=2))
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation='relu',
                                           weight_initializer='normal',
                                           bias_initializer='zeros'))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer='normal',
                                   bias_initializer='zeros')

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# number of layers: (convolutions per stage, channels per stage)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=ROOT, **kwargs):
    """VGG of 11, 13, 16 or 19 layers (``batch_norm=True`` for the ``_bn``
    variant); ``pretrained=True`` loads MXNet's ImageNet weights from
    ``root`` onto ``ctx``; other keywords (``classes``, ``prefix``) go to
    :class:`VGG`."""
    if num_layers not in vgg_spec:
        raise ValueError(f'Invalid number of layers: {num_layers}. Options are '
                         f'{sorted(vgg_spec)}')
    net = VGG(*vgg_spec[num_layers], **kwargs)
    if pretrained:
        suffix = '_bn' if kwargs.get('batch_norm') else ''
        load_pretrained(net, f'vgg{num_layers}{suffix}', ctx, root)
    return net


def vgg11(**kwargs):
    """VGG-11; keywords as :func:`get_vgg`'s."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs):
    """VGG-13; keywords as :func:`get_vgg`'s."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs):
    """VGG-16; keywords as :func:`get_vgg`'s."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs):
    """VGG-19; keywords as :func:`get_vgg`'s."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs):
    """VGG-11 with BatchNorm; keywords as :func:`get_vgg`'s."""
    return get_vgg(11, batch_norm=True, **kwargs)


def vgg13_bn(**kwargs):
    """VGG-13 with BatchNorm; keywords as :func:`get_vgg`'s."""
    return get_vgg(13, batch_norm=True, **kwargs)


def vgg16_bn(**kwargs):
    """VGG-16 with BatchNorm; keywords as :func:`get_vgg`'s."""
    return get_vgg(16, batch_norm=True, **kwargs)


def vgg19_bn(**kwargs):
    """VGG-19 with BatchNorm; keywords as :func:`get_vgg`'s."""
    return get_vgg(19, batch_norm=True, **kwargs)
