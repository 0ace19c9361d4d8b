"""Image classification networks of MXNet 1.9.1's model zoo, by name.

One module per family, as in MXNet: :mod:`.alexnet`, :mod:`.vgg` (11, 13,
16, 19 layers, with and without BatchNorm), :mod:`.resnet` (V1 and V2, 18
to 152 layers), :mod:`.densenet` (121, 161, 169, 201), :mod:`.squeezenet`
(1.0, 1.1), :mod:`.mobilenet` (V1 and V2, widths 1.0 to 0.25) and
:mod:`.inception` (V3).  :func:`get_model` knows them by MXNet's names
(``'vgg16_bn'``, ``'squeezenet1.1'``, ``'mobilenetv2_0.5'``,
``'inceptionv3'``, ...).  Every model takes ``classes=``, and
``pretrained=True`` loads MXNet's ImageNet weights (see
:mod:`..model_store`): the parameters have MXNet's names and shapes.

>>> net = get_model('resnet18_v1', classes=10, thumbnail=True)
>>> net.initialize()
>>> net(nd.zeros((2, 3, 32, 32))).shape
(2, 10)
"""
from .alexnet import *                    # noqa: F401,F403
from .densenet import *                   # noqa: F401,F403
from .inception import *                  # noqa: F401,F403
from .mobilenet import *                  # noqa: F401,F403
from .resnet import *                     # noqa: F401,F403
from .squeezenet import *                 # noqa: F401,F403
from .vgg import *                        # noqa: F401,F403
# (``alexnet`` is the function, as in MXNet, so the modules' lists by name)
from .alexnet import __all__ as _alexnet_all
from .densenet import __all__ as _densenet_all
from .inception import __all__ as _inception_all
from .mobilenet import __all__ as _mobilenet_all
from .resnet import __all__ as _resnet_all
from .squeezenet import __all__ as _squeezenet_all
from .vgg import __all__ as _vgg_all

__all__ = (_alexnet_all + _densenet_all + _inception_all + _mobilenet_all +
           _resnet_all + _squeezenet_all + _vgg_all + ['get_model'])

# MXNet's names -> constructors
_models = {name: globals()[name] for name in _resnet_all + _vgg_all
           if name.startswith(('resnet', 'vgg'))}
_models.update({
    'alexnet': alexnet,
    'densenet121': densenet121, 'densenet161': densenet161,
    'densenet169': densenet169, 'densenet201': densenet201,
    'squeezenet1.0': squeezenet1_0, 'squeezenet1.1': squeezenet1_1,
    'inceptionv3': inception_v3,
    'mobilenet1.0': mobilenet1_0, 'mobilenet0.75': mobilenet0_75,
    'mobilenet0.5': mobilenet0_5, 'mobilenet0.25': mobilenet0_25,
    'mobilenetv2_1.0': mobilenet_v2_1_0, 'mobilenetv2_0.75': mobilenet_v2_0_75,
    'mobilenetv2_0.5': mobilenet_v2_0_5, 'mobilenetv2_0.25': mobilenet_v2_0_25})


def get_model(name, **kwargs):
    """The network ``name`` of the model zoo (``'resnet18_v1'``).

    Parameters
    ----------
    name : str
        A model name (case does not matter); an unknown one raises a
        ValueError that lists the known ones.
    **kwargs
        For the model's constructor: ``pretrained``, ``ctx``, ``root``,
        ``classes``, ...

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
