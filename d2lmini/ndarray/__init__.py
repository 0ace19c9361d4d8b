"""``nd``: NDArrays and their operators (``from d2lmini import nd``)."""
from .ndarray import (NDArray, array, empty, zeros, ones, full, arange, zeros_like,
                      ones_like, full_like, empty_like, waitall, invoke,
                      from_numpy, reset_arrays)
from .registry import OPS
from . import ops
from .ops import *          # noqa: F401,F403 - the functional operator surface
from . import nn_ops        # registers the neural-network operators
from .nn_ops import *       # noqa: F401,F403
from .nn_ops import _conv_act  # noqa: F401 - fused conv + relu, for gluon's Conv2D
from . import random
from .io import save, load, load_frombuffer
from .. import context as _context

concatenate = ops.concat


def op_names():
    """Names of all registered operators."""
    return sorted(OPS)


from ..optimizer.updates import *  # noqa: E402,F401,F403 - nd.sgd_update & co.
