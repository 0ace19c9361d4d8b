"""The model zoo (``gluon.model_zoo``): classic networks by name, with
MXNet's parameter names, so that MXNet's pretrained weights load.

``vision`` holds the image classifiers of MXNet 1.9.1's zoo (AlexNet,
VGG, ResNet V1/V2, DenseNet, SqueezeNet, MobileNet V1/V2, Inception V3);
``model_store`` finds, checks and downloads their weights files.

>>> net = gluon.model_zoo.vision.get_model('resnet18_v1', classes=10)
>>> net.prefix
'resnetv10_'
"""
from . import model_store, vision       # noqa: F401

__all__ = ['model_store', 'vision']
