"""MobileNet V1 and V2 as in MXNet 1.9.1's model zoo.

* **V1** (Howard et al., 2017, "MobileNets: Efficient Convolutional Neural
  Networks for Mobile Vision Applications") splits each 3x3 convolution in
  two: a *depthwise* 3x3 convolution (``groups`` = channels: each channel
  filtered on its own) and a *pointwise* 1x1 convolution that mixes the
  channels.  For C channels in and out that costs ``9C + C^2`` weights
  instead of ``9C^2``.
* **V2** (Sandler et al., 2018, "MobileNetV2: Inverted Residuals and Linear
  Bottlenecks") wraps the depthwise convolution in an *inverted*
  bottleneck: 1x1 up to ``t`` times the channels, depthwise 3x3, 1x1 back
  down with no activation after it (a "linear" bottleneck: ReLU on few
  channels would lose information), and a shortcut where the shape allows.
  Its activation is ReLU6, ``min(max(x, 0), 6)``.

The width ``multiplier`` (1.0, 0.75, 0.5, 0.25) scales every layer's
channels.  Names follow MXNet: V1's layers are counted across the net
(``mobilenet0_conv0`` ...), V2's inside ``features_`` and each
``linearbottleneck<i>_``, and V2 ends with a 1x1 convolution
``output_pred`` instead of a Dense layer.

>>> net = mobilenet0_25(classes=10)
>>> net.initialize()
>>> net(nd.zeros((1, 3, 64, 64))).shape       # any size: global pooling
(1, 10)
"""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import ROOT, load_pretrained

__all__ = ['MobileNet', 'MobileNetV2', 'LinearBottleneck', 'RELU6',
           'mobilenet1_0', 'mobilenet0_75', 'mobilenet0_5', 'mobilenet0_25',
           'mobilenet_v2_1_0', 'mobilenet_v2_0_75', 'mobilenet_v2_0_5',
           'mobilenet_v2_0_25', 'get_mobilenet', 'get_mobilenet_v2']


class RELU6(HybridBlock):
    """ReLU6: ``clip(x, 0, 6)``."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name='relu6')


def _add_conv(out, channels=1, kernel=1, stride=1, pad=0, num_group=1,
              active=True, relu6=False):
    """Append a convolution (no bias), a BatchNorm and, if ``active``, a
    ReLU (or ReLU6) to ``out``."""
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group,
                      use_bias=False))
    out.add(nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation('relu'))


def _add_conv_dw(out, dw_channels, channels, stride):
    """A depthwise separable convolution: depthwise 3x3, then pointwise 1x1."""
    _add_conv(out, dw_channels, kernel=3, stride=stride, pad=1, num_group=dw_channels)
    _add_conv(out, channels)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's block: 1x1 expansion by ``t``, depthwise 3x3 (strided),
    linear 1x1 projection to ``channels``; plus the input if the stride is
    1 and the channels do not change.

    Parameters
    ----------
    in_channels : int
        Number of input channels.
    channels : int
        Number of output channels.
    t : int
        Expansion factor.
    stride : int
        Stride of the depthwise convolution.
    """

    def __init__(self, in_channels, channels, t, stride, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            _add_conv(self.out, in_channels * t, relu6=True)
            _add_conv(self.out, in_channels * t, kernel=3, stride=stride, pad=1,
                      num_group=in_channels * t, relu6=True)
            _add_conv(self.out, channels, active=False)

    def hybrid_forward(self, F, x):
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


def _scaled(multiplier, channels):
    return [int(c * multiplier) for c in channels]


class MobileNet(HybridBlock):
    """MobileNet V1: a 3x3/2 convolution, 13 depthwise separable ones,
    global average pooling and a Dense layer.

    Parameters
    ----------
    multiplier : float, default 1.0
        Width multiplier: every layer has this fraction of the channels
        (at least 0.25).
    classes : int, default 1000
        Number of classes (units of the output layer).
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        dw_channels = _scaled(multiplier, [32, 64] + [128] * 2 + [256] * 2 +
                              [512] * 6 + [1024])
        channels = _scaled(multiplier, [64] + [128] * 2 + [256] * 2 + [512] * 6 +
                           [1024] * 2)
        strides = [1, 2] * 3 + [1] * 5 + [2, 1]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            _add_conv(self.features, int(32 * multiplier), kernel=3, pad=1, stride=2)
            for dwc, c, s in zip(dw_channels, channels, strides):
                _add_conv_dw(self.features, dwc, c, s)
            self.features.add(nn.GlobalAvgPool2D())
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNet V2: a 3x3/2 convolution, 17 linear bottlenecks, a 1x1
    convolution to 1280 channels, global average pooling, and a 1x1
    convolution to ``classes``.

    Parameters
    ----------
    multiplier : float, default 1.0
        Width multiplier (the 1280 channels are scaled only when it is
        above 1).
    classes : int, default 1000
        Number of classes (channels of the last convolution).
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        in_channels = _scaled(multiplier, [32, 16] + [24] * 2 + [32] * 3 +
                              [64] * 4 + [96] * 3 + [160] * 3)
        channels = _scaled(multiplier, [16] + [24] * 2 + [32] * 3 + [64] * 4 +
                           [96] * 3 + [160] * 3 + [320])
        expansions = [1] + [6] * 16
        strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
        last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='features_')
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2,
                          pad=1, relu6=True)
                for in_c, c, t, s in zip(in_channels, channels, expansions, strides):
                    self.features.add(LinearBottleneck(in_c, c, t, s))
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix='output_')
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix='pred_'),
                                nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _store_name(multiplier):
    """MXNet's file-name spelling of a multiplier: 1.0, 0.75, 0.5, 0.25."""
    s = f'{multiplier:.2f}'
    return s[:-1] if s.endswith('0') else s


def get_mobilenet(multiplier, pretrained=False, ctx=cpu(), root=ROOT, **kwargs):
    """MobileNet V1 of width ``multiplier``; ``pretrained=True`` loads
    MXNet's ImageNet weights (for 1.0, 0.75, 0.5, 0.25) from ``root`` onto
    ``ctx``; other keywords (``classes``, ``prefix``) go to
    :class:`MobileNet`."""
    net = MobileNet(multiplier, **kwargs)
    return load_pretrained(net, f'mobilenet{_store_name(multiplier)}', ctx, root) \
        if pretrained else net


def get_mobilenet_v2(multiplier, pretrained=False, ctx=cpu(), root=ROOT, **kwargs):
    """MobileNet V2 of width ``multiplier``; as :func:`get_mobilenet`."""
    net = MobileNetV2(multiplier, **kwargs)
    return load_pretrained(net, f'mobilenetv2_{_store_name(multiplier)}', ctx,
                           root) if pretrained else net


def mobilenet1_0(**kwargs):
    """MobileNet V1, width 1.0; keywords as :func:`get_mobilenet`'s."""
    return get_mobilenet(1.0, **kwargs)


def mobilenet0_75(**kwargs):
    """MobileNet V1, width 0.75; keywords as :func:`get_mobilenet`'s."""
    return get_mobilenet(0.75, **kwargs)


def mobilenet0_5(**kwargs):
    """MobileNet V1, width 0.5; keywords as :func:`get_mobilenet`'s."""
    return get_mobilenet(0.5, **kwargs)


def mobilenet0_25(**kwargs):
    """MobileNet V1, width 0.25; keywords as :func:`get_mobilenet`'s."""
    return get_mobilenet(0.25, **kwargs)


def mobilenet_v2_1_0(**kwargs):
    """MobileNet V2, width 1.0; keywords as :func:`get_mobilenet_v2`'s."""
    return get_mobilenet_v2(1.0, **kwargs)


def mobilenet_v2_0_75(**kwargs):
    """MobileNet V2, width 0.75; keywords as :func:`get_mobilenet_v2`'s."""
    return get_mobilenet_v2(0.75, **kwargs)


def mobilenet_v2_0_5(**kwargs):
    """MobileNet V2, width 0.5; keywords as :func:`get_mobilenet_v2`'s."""
    return get_mobilenet_v2(0.5, **kwargs)


def mobilenet_v2_0_25(**kwargs):
    """MobileNet V2, width 0.25; keywords as :func:`get_mobilenet_v2`'s."""
    return get_mobilenet_v2(0.25, **kwargs)
