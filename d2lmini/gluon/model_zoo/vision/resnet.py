"""ResNets as in MXNet 1.9.1's model zoo: residual blocks, and the nets that
stack them.

A residual block computes ``f(x) + shortcut(x)``: the body ``f`` learns a
correction to its input instead of a whole new function, which is what lets
a net of 152 layers train.  ResNet comes in two versions:

* **V1** (He et al., 2015, "Deep Residual Learning for Image Recognition"):
  convolution, BatchNorm, ReLU in the body, and a ReLU *after* the sum.
* **V2** (He et al., 2016, "Identity Mappings in Deep Residual Networks"):
  BatchNorm and ReLU *before* each convolution ("pre-activation") and nothing
  after the sum, so the shortcut is a clean identity from input to output.

Each version has a *basic* block (two 3x3 convolutions; ResNet-18 and -34)
and a *bottleneck* block (1x1 down to a quarter of the channels, 3x3, 1x1
back up; ResNet-50, -101, -152).  The shortcut is the identity unless the
block changes the number of channels, where a 1x1 convolution (strided like
the body) projects the input.

The Blocks are built in the same order and under the same prefixes as
MXNet's, so the parameters get MXNet's names (``resnetv10_conv0_weight``,
``resnetv10_stage1_batchnorm0_gamma``, ...) and shapes, and the published
``.params`` files load: the residual blocks get ``prefix=''`` and create
their layers without a name scope of their own, so the layers are counted
per stage (``stage1_conv0``, ``stage1_conv1``, ... across blocks).

>>> net = resnet18_v1(classes=10, thumbnail=True)    # for 32x32 images
>>> net.initialize()
>>> net(nd.zeros((1, 3, 32, 32))).shape
(1, 10)
"""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import ROOT, load_pretrained

__all__ = ['ResNetV1', 'ResNetV2',
           'BasicBlockV1', 'BasicBlockV2',
           'BottleneckV1', 'BottleneckV2',
           'resnet18_v1', 'resnet34_v1', 'resnet50_v1', 'resnet101_v1', 'resnet152_v1',
           'resnet18_v2', 'resnet34_v2', 'resnet50_v2', 'resnet101_v2', 'resnet152_v2',
           'get_resnet']


def _conv3x3(channels, stride, in_channels):
    """A 3x3 convolution without bias that keeps the size at stride 1."""
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1,
                     use_bias=False, in_channels=in_channels)


def _projection(channels, stride, in_channels):
    """The shortcut of a block that changes the shape: a strided 1x1 conv."""
    return nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                     in_channels=in_channels)


# --- V1: conv -> BN -> ReLU in the body, ReLU after the sum --------------------------

class _ResidualV1(HybridBlock):
    """``relu(body(x) + downsample(x))``; the subclass fills ``body``."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix='')
        self._build_body(channels, stride, in_channels)
        if downsample:
            self.downsample = nn.HybridSequential(prefix='')
            self.downsample.add(_projection(channels, stride, in_channels))
            self.downsample.add(nn.BatchNorm())
        else:
            self.downsample = None

    # MXNet adds ``residual + x`` in the basic block, ``x + residual`` in the
    # bottleneck: the same numbers, but the order of the exported graph's nodes.
    _shortcut_first = False

    def _build_body(self, channels, stride, in_channels):
        raise NotImplementedError

    def hybrid_forward(self, F, x):
        out = self.body(x)
        shortcut = self.downsample(x) if self.downsample else x
        out = shortcut + out if self._shortcut_first else out + shortcut
        return F.Activation(out, act_type='relu')


class BasicBlockV1(_ResidualV1):
    """The basic block of ResNet V1 (18 and 34 layers): two 3x3 convolutions.

    Parameters
    ----------
    channels : int
        Number of output channels.
    stride : int
        Stride of the first convolution (2 halves the height and width).
    downsample : bool, default False
        Whether the shortcut projects the input (needed when the shape
        changes).
    in_channels : int, default 0
        Number of input channels; 0 infers it from the first input.
    """

    _shortcut_first = True

    def _build_body(self, channels, stride, in_channels):
        self.body.add(_conv3x3(channels, stride, in_channels))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(_conv3x3(channels, 1, channels))
        self.body.add(nn.BatchNorm())


class BottleneckV1(_ResidualV1):
    """The bottleneck block of ResNet V1 (50, 101, 152 layers): 1x1 to a
    quarter of ``channels`` (strided), 3x3, then 1x1 back to ``channels``.

    Parameters are those of :class:`BasicBlockV1`.  (As in MXNet, the two 1x1
    convolutions of the body have a bias and infer their input channels.)
    """

    def _build_body(self, channels, stride, in_channels):
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(_conv3x3(channels // 4, 1, channels // 4))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(nn.Conv2D(channels, kernel_size=1, strides=1))
        self.body.add(nn.BatchNorm())


# --- V2: BN -> ReLU -> conv ("pre-activation"), nothing after the sum ----------------

class _ResidualV2(HybridBlock):
    """``body(x) + shortcut``, where each convolution of the body is preceded
    by its own BatchNorm and ReLU; the projection (if any) reads the input
    after the first BatchNorm and ReLU, as MXNet's does."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._layers = self._build(channels, stride, in_channels)
        self.downsample = (_projection(channels, stride, in_channels)
                           if downsample else None)

    def _build(self, channels, stride, in_channels):
        """Register ``bn1, conv1, bn2, conv2, ...``; return the attribute
        names of the (bn, conv) pairs in order."""
        raise NotImplementedError

    def hybrid_forward(self, F, x):
        shortcut = x
        for i, (bn, conv) in enumerate(self._layers):
            x = F.Activation(getattr(self, bn)(x), act_type='relu')
            if i == 0 and self.downsample:
                shortcut = self.downsample(x)
            x = getattr(self, conv)(x)
        return x + shortcut


class BasicBlockV2(_ResidualV2):
    """The basic block of ResNet V2 (18 and 34 layers): (BN, ReLU, 3x3 conv)
    twice.  Parameters are those of :class:`BasicBlockV1`."""

    def _build(self, channels, stride, in_channels):
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        return [('bn1', 'conv1'), ('bn2', 'conv2')]


class BottleneckV2(_ResidualV2):
    """The bottleneck block of ResNet V2 (50, 101, 152 layers): (BN, ReLU,
    conv) with a 1x1, a strided 3x3 and a 1x1 convolution.  Parameters are
    those of :class:`BasicBlockV1`."""

    def _build(self, channels, stride, in_channels):
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        return [('bn1', 'conv1'), ('bn2', 'conv2'), ('bn3', 'conv3')]


# --- the nets ------------------------------------------------------------------------

class _ResNet(HybridBlock):
    """Stem, four stages of residual blocks, global average pooling, Dense."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False,
                 **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(
                f'{type(self).__name__}: channels must have one more entry than '
                f'layers (the stem\'s, then one per stage); got layers={layers} '
                f'and channels={channels}')
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self._build(block, layers, channels, thumbnail)
            self.output = nn.Dense(classes, in_units=channels[-1])

    def _stem(self, channels, thumbnail):
        """A 3x3 convolution for small images (``thumbnail``, e.g. CIFAR's
        32x32), else ImageNet's 7x7/2 convolution, BN, ReLU and 3x3/2 max
        pooling (224x224 becomes 56x56)."""
        if thumbnail:
            self.features.add(_conv3x3(channels, 1, 0))
        else:
            self.features.add(nn.Conv2D(channels, 7, 2, 3, use_bias=False))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation('relu'))
            self.features.add(nn.MaxPool2D(3, 2, 1))

    def _stages(self, block, layers, channels):
        """Stage i (from 1) has ``layers[i-1]`` blocks of ``channels[i]``
        channels; all but the first stage start by halving the size."""
        for i, num_blocks in enumerate(layers):
            stride = 1 if i == 0 else 2
            self.features.add(self._make_layer(block, num_blocks, channels[i + 1],
                                               stride, i + 1, channels[i]))

    def _make_layer(self, block, layers, channels, stride, stage_index, in_channels=0):
        layer = nn.HybridSequential(prefix=f'stage{stage_index}_')
        with layer.name_scope():
            layer.add(block(channels, stride, channels != in_channels,
                            in_channels=in_channels, prefix=''))
            for _ in range(layers - 1):
                layer.add(block(channels, 1, False, in_channels=channels, prefix=''))
        return layer

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV1(_ResNet):
    """ResNet V1 (He et al., 2015).

    Parameters
    ----------
    block : class
        :class:`BasicBlockV1` or :class:`BottleneckV1`.
    layers : list of int
        Number of blocks in each stage.
    channels : list of int
        Channels of the stem, then of each stage (one more than ``layers``).
    classes : int, default 1000
        Number of classes (units of the output layer).
    thumbnail : bool, default False
        A 3x3 stem for small images instead of ImageNet's 7x7/2 + max pool.
    """

    def _build(self, block, layers, channels, thumbnail):
        self._stem(channels[0], thumbnail)
        self._stages(block, layers, channels)
        self.features.add(nn.GlobalAvgPool2D())


class ResNetV2(_ResNet):
    """ResNet V2 (He et al., 2016): pre-activation blocks, so the net begins
    with a BatchNorm of the input (no scale, no shift) and ends the features
    with BN and ReLU.  Parameters are those of :class:`ResNetV1`, with
    :class:`BasicBlockV2` or :class:`BottleneckV2` as ``block``."""

    def _build(self, block, layers, channels, thumbnail):
        self.features.add(nn.BatchNorm(scale=False, center=False))
        self._stem(channels[0], thumbnail)
        self._stages(block, layers, channels)
        self.features.add(nn.BatchNorm())
        self.features.add(nn.Activation('relu'))
        self.features.add(nn.GlobalAvgPool2D())
        self.features.add(nn.Flatten())


# --- the zoo's entries ---------------------------------------------------------------

resnet_spec = {18: ('basic_block', [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ('basic_block', [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ('bottle_neck', [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ('bottle_neck', [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ('bottle_neck', [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}

resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{'basic_block': BasicBlockV1, 'bottle_neck': BottleneckV1},
                         {'basic_block': BasicBlockV2, 'bottle_neck': BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=cpu(), root=ROOT,
               **kwargs):
    """A ResNet V1 or V2 of 18, 34, 50, 101 or 152 layers.

    Parameters
    ----------
    version : int
        1 or 2.
    num_layers : int
        18, 34, 50, 101 or 152.
    pretrained : bool, default False
        Load MXNet's ImageNet weights from ``root`` (see
        :func:`~d2lmini.gluon.model_zoo.model_store.get_model_file`).
    ctx : Context, default cpu()
        Where the pretrained weights are loaded.
    root : str, default '~/.mxnet/models'
        Folder of the pretrained ``.params`` files.
    **kwargs
        ``classes``, ``thumbnail``, ``prefix``, ``params`` for the net.
    """
    if num_layers not in resnet_spec:
        raise ValueError(f'Invalid number of layers: {num_layers}. Options are '
                         f'{sorted(resnet_spec)}')
    if version not in (1, 2):
        raise ValueError(f'Invalid resnet version: {version}. Options are 1 and 2.')
    block_type, layers, channels = resnet_spec[num_layers]
    block = resnet_block_versions[version - 1][block_type]
    net = resnet_net_versions[version - 1](block, layers, channels, **kwargs)
    if pretrained:
        load_pretrained(net, f'resnet{num_layers}_v{version}', ctx, root)
    return net


def _entry(version, num_layers):
    def make(**kwargs):
        return get_resnet(version, num_layers, **kwargs)
    make.__name__ = make.__qualname__ = f'resnet{num_layers}_v{version}'
    paper = ('"Deep Residual Learning for Image Recognition"' if version == 1 else
             '"Identity Mappings in Deep Residual Networks"')
    make.__doc__ = (f'ResNet-{num_layers} V{version} ({paper}); the keywords are '
                    f'those of :func:`get_resnet` (``pretrained``, ``ctx``, ``root``, '
                    f'``classes``, ``thumbnail``).')
    return make


resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1 = (
    _entry(1, n) for n in (18, 34, 50, 101, 152))
resnet18_v2, resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2 = (
    _entry(2, n) for n in (18, 34, 50, 101, 152))
