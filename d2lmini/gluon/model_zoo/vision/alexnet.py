"""AlexNet as in MXNet 1.9.1's model zoo (Krizhevsky, 2014, "One weird
trick for parallelizing convolutional neural networks").

Five convolutions (11x11/4, 5x5, then three 3x3), three max poolings, and
two hidden Dense layers of 4096 with dropout: the net that started deep
learning's run on ImageNet, in the one-tower form of the 2014 paper.  All
layers are created in the net's own name scope, so the parameters are
``alexnet0_conv0_weight`` ... ``alexnet0_dense2_bias`` as in MXNet.

>>> net = alexnet(classes=10)
>>> net.initialize()
>>> net(nd.zeros((1, 3, 224, 224))).shape
(1, 10)
"""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import ROOT, load_pretrained

__all__ = ['AlexNet', 'alexnet']


class AlexNet(HybridBlock):
    """AlexNet for 224x224 images (the features end at 6x6x256).

    Parameters
    ----------
    classes : int, default 1000
        Number of classes (units of the output layer).
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            for channels, kernel, stride, pad, pool in [(64, 11, 4, 2, True),
                                                        (192, 5, 1, 2, True),
                                                        (384, 3, 1, 1, False),
                                                        (256, 3, 1, 1, False),
                                                        (256, 3, 1, 1, True)]:
                self.features.add(nn.Conv2D(channels, kernel, stride, pad,
                                            activation='relu'))
                if pool:
                    self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(nn.Flatten())
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation='relu'))
                self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=cpu(), root=ROOT, **kwargs):
    """AlexNet; ``pretrained=True`` loads MXNet's ImageNet weights from
    ``root`` onto ``ctx`` (see
    :func:`~d2lmini.gluon.model_zoo.model_store.get_model_file`); other
    keywords (``classes``, ``prefix``) go to :class:`AlexNet`."""
    net = AlexNet(**kwargs)
    return load_pretrained(net, 'alexnet', ctx, root) if pretrained else net
