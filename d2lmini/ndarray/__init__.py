"""``nd``: NDArrays and their operators (``from d2lmini import nd``)."""
from .ndarray import (NDArray, array, empty, zeros, ones, full, arange, zeros_like,
                      ones_like, full_like, empty_like, waitall, invoke,
                      from_numpy)
from .registry import OPS
from . import ops
from .ops import *          # noqa: F401,F403 - the functional operator surface
from . import nn_ops        # registers the neural-network operators
from .nn_ops import *       # noqa: F401,F403
from .nn_ops import _conv_act  # noqa: F401 - fused conv + relu, for gluon's Conv2D
from . import random
from . import _internal
from .random import (random_uniform, random_normal, random_poisson,  # noqa: F401
                     random_exponential, random_gamma, random_negative_binomial,
                     random_generalized_negative_binomial, random_randint,
                     sample_uniform, sample_normal, sample_poisson, sample_exponential,
                     sample_gamma, sample_negative_binomial,
                     sample_generalized_negative_binomial, sample_multinomial)
from .utils import save, load, load_frombuffer
from . import fluent
from .. import context as _context

uniform, normal = random_uniform, random_normal     # MXNet's nd.uniform, nd.normal


def op_names():
    """Names of all registered operators."""
    return sorted(OPS)


from ..optimizer.updates import *  # noqa: E402,F401,F403 - nd.sgd_update & co.

# Last: the fluent methods take their signatures and summaries from the
# nd functions, which all exist now.
fluent.install(NDArray)
