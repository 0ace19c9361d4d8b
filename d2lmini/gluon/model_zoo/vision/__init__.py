"""Image classification networks of MXNet 1.9.1's model zoo, by name.

So far the ResNet family (:mod:`.resnet`): ``resnet18_v1`` ...
``resnet152_v1`` and ``resnet18_v2`` ... ``resnet152_v2``.  Each takes
``classes=`` and ``thumbnail=`` (a 3x3 stem for small images such as
CIFAR's), and ``pretrained=True`` loads MXNet's ImageNet weights (see
:mod:`..model_store`).

>>> net = get_model('resnet18_v1', classes=10, thumbnail=True)
>>> net.initialize()
>>> net(nd.zeros((2, 3, 32, 32))).shape
(2, 10)
"""
from .resnet import *                     # noqa: F401,F403
from .resnet import __all__ as _resnet_all
from . import resnet

__all__ = _resnet_all + ['get_model']

_models = {name: getattr(resnet, name) for name in _resnet_all
           if name.startswith('resnet')}


def get_model(name, **kwargs):
    """The network ``name`` of the model zoo (``'resnet18_v1'``).

    Parameters
    ----------
    name : str
        A model name (case does not matter); an unknown one raises a
        ValueError that lists the known ones.
    **kwargs
        For the model's constructor: ``pretrained``, ``ctx``, ``root``,
        ``classes``, ``thumbnail``, ...

    Examples
    --------
    >>> get_model('ResNet50_v2', classes=10).output
    Dense(2048 -> 10, linear)
    """
    key = name.lower()
    if key not in _models:
        raise ValueError(f'Model {name!r} is not in the model zoo; the known '
                         f'models are: {", ".join(sorted(_models))}.')
    return _models[key](**kwargs)
