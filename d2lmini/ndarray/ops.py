"""The core operator library, one module per family as in MXNet's
``src/operator/tensor/``:

* :mod:`.elemwise` -- unary math, binary with broadcasting, array-with-scalar
* :mod:`.broadcast_reduce` -- sum, mean, max, ..., norm, argmax, broadcast_to
* :mod:`.matrix` -- reshape, transpose, concat, stack, split, slice, tile, ...
* :mod:`.indexing` -- ``x[key]``, take, pick, one_hot, where
* :mod:`.dot_op` -- dot, batch_dot (a module named ``dot`` would shadow ``nd.dot``)
* :mod:`.ordering` -- topk, sort, argsort
* :mod:`.creation` -- eye, linspace

This module gathers their functional front ends (``nd.exp``, ``nd.dot``, ...)
for ``nd``'s namespace.  Neural-network operators live in
:mod:`d2lmini.ndarray.nn`, one module per family.
"""
from .elemwise import *             # noqa: F401,F403
from .broadcast_reduce import *     # noqa: F401,F403
from .matrix import *               # noqa: F401,F403
from .indexing import *             # noqa: F401,F403
from .dot_op import *               # noqa: F401,F403
from .ordering import *             # noqa: F401,F403
from .creation import *             # noqa: F401,F403
from .elemwise import _sigmoid, _softrelu  # noqa: F401 - nn_ops' activations
