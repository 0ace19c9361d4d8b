"""``mx.init``: the initializers, under MXNet's short module name.

Same objects as :mod:`d2lmini.initializer` (``init.Xavier is
initializer.Xavier``).
"""
from .initializer import *            # noqa: F401,F403
from .initializer import __all__      # noqa: F401
