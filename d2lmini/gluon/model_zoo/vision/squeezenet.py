"""SqueezeNet as in MXNet 1.9.1's model zoo (Iandola et al., 2016,
"SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB
model size"; version 1.1 from the authors' repository).

Its unit is the *fire* module: a 1x1 "squeeze" convolution to few
channels, then two "expand" convolutions side by side (1x1 and 3x3)
whose outputs are concatenated.  There is no Dense layer: a 1x1
convolution to ``classes`` channels and a 13x13 average pooling give the
scores, so the net expects 224x224 images.  Version 1.1 starts with a 3x3
instead of a 7x7 convolution and pools earlier, for 2.4x less computation
at the same accuracy.

>>> net = squeezenet1_1(classes=10)
>>> net.initialize()
>>> net(nd.zeros((1, 3, 224, 224))).shape
(1, 10)
"""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import ROOT, load_pretrained

__all__ = ['SqueezeNet', 'squeezenet1_0', 'squeezenet1_1', 'get_squeezenet']


def _make_fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix='')
    out.add(nn.Conv2D(channels, kernel_size, padding=padding))
    out.add(nn.Activation('relu'))
    return out


def _make_fire(squeeze_channels, expand1x1_channels, expand3x3_channels):
    """Squeeze, then ``concat([expand1x1, expand3x3])`` on the channels."""
    out = nn.HybridSequential(prefix='')
    out.add(_make_fire_conv(squeeze_channels, 1))
    paths = nn.HybridConcurrent(axis=1, prefix='')
    paths.add(_make_fire_conv(expand1x1_channels, 1))
    paths.add(_make_fire_conv(expand3x3_channels, 3, 1))
    out.add(paths)
    return out


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(HybridBlock):
    """SqueezeNet 1.0 or 1.1.

    Parameters
    ----------
    version : str
        '1.0' or '1.1'.
    classes : int, default 1000
        Number of classes (channels of the last convolution).
    """

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ('1.0', '1.1'):
            raise ValueError(f"Unsupported SqueezeNet version {version!r}: '1.0' or "
                             f"'1.1' expected")
        # a fire module: its (squeeze, expand) channels; 'pool': a max pooling
        if version == '1.0':
            stem = (96, 7)             # channels, kernel size (stride 2)
            body = [(16, 64), (16, 64), (32, 128), 'pool', (32, 128), (48, 192),
                    (48, 192), (64, 256), 'pool', (64, 256)]
        else:
            stem = (64, 3)
            body = [(16, 64), (16, 64), 'pool', (32, 128), (32, 128), 'pool',
                    (48, 192), (48, 192), (64, 256), (64, 256)]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.Conv2D(*stem, strides=2))
            self.features.add(nn.Activation('relu'))
            self.features.add(_pool())
            for layer in body:
                self.features.add(_pool() if layer == 'pool' else
                                  _make_fire(layer[0], layer[1], layer[1]))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix='')
            self.output.add(nn.Conv2D(classes, kernel_size=1))
            self.output.add(nn.Activation('relu'))
            self.output.add(nn.AvgPool2D(13))
            self.output.add(nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=cpu(), root=ROOT, **kwargs):
    """SqueezeNet ``version`` ('1.0' or '1.1'); ``pretrained=True`` loads
    MXNet's ImageNet weights from ``root`` onto ``ctx``; other keywords
    (``classes``, ``prefix``) go to :class:`SqueezeNet`."""
    net = SqueezeNet(version, **kwargs)
    return load_pretrained(net, f'squeezenet{version}', ctx, root) \
        if pretrained else net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0; keywords as :func:`get_squeezenet`'s."""
    return get_squeezenet('1.0', **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1; keywords as :func:`get_squeezenet`'s."""
    return get_squeezenet('1.1', **kwargs)
