"""``mx.image``: read, resize, crop and augment images (MXNet's ``mxnet.image``).

``image.py`` holds the functions (decoding with Pillow, OpenCV's resize
arithmetic from ``resize.py``, crops); ``augmenters.py`` the ``Augmenter``
classes and ``CreateAugmenter``.  MXNet's ``detection`` augmenters are not
here.
"""
from .image import *          # noqa: F401,F403
from .image import __all__ as _image_all
from .image import _get_interp_method   # noqa: F401  (MXNet's tests use it)
from .augmenters import *     # noqa: F401,F403
from .augmenters import __all__ as _aug_all

__all__ = _image_all + _aug_all
