"""``nd``: NDArrays and their operators (``from d2lmini import nd``).

nd's namespace is declared, not gathered: each module of :data:`FAMILIES`
lists the front ends it gives ``nd`` in ``__all__``, and in
``NOT_SYMBOLIC`` those of them that are no graph operator; ``mx.sym``
(:mod:`d2lmini.symbol.ops`) is made from the same declarations.  A helper
a family does not list stays out of both.  ``nd.random`` is a namespace of
its own (:mod:`.random`; its older top-level names are its ``TOP_LEVEL``).
"""
from . import ndarray
from .ndarray import NDArray
from .registry import OPS
from . import (broadcast_reduce, creation, dot_op, elemwise, indexing, matrix, nn,
               optimizer_op, ordering, utils)
from . import random
from . import _internal       # noqa: F401 - nd._internal, MXNet's underscore ops
from . import fluent
from .. import context as _context   # noqa: F401

# One module per operator family, as in MXNet's src/operator/: the core
# library (tensor/), the neural-network operators (nn/), the optimizers'
# fused updates (optimizer_op), and NDArray's own constructors and files.
FAMILIES = (ndarray, elemwise, broadcast_reduce, matrix, indexing, dot_op, ordering,
            creation) + nn.FAMILIES + (optimizer_op, utils)

for _family in FAMILIES:
    globals().update({_name: getattr(_family, _name) for _name in _family.__all__})
globals().update(random.TOP_LEVEL)          # nd.random_uniform, nd.uniform, ...
del _family


def __getattr__(name):
    # ``nd.np``/``nd.npx`` are ``mx.np``/``mx.npx`` (MXNet's ``mx.nd.np``),
    # so ``F.np.dot`` works in a hybrid_forward whose F is nd; loaded lazily
    # (they import this package).
    if name in ('np', 'npx'):
        import importlib
        return importlib.import_module('d2lmini.' + {'np': 'numpy',
                                                     'npx': 'numpy_extension'}[name])
    raise AttributeError(f"module 'd2lmini.ndarray' has no attribute '{name}'")


def op_names():
    """Names of all registered operators."""
    return sorted(OPS)


# Last: the fluent methods take their signatures and summaries from the
# nd functions, which all exist now.
fluent.install(NDArray)
