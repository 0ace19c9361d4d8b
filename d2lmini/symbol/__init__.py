"""``mx.sym`` / ``mx.symbol``: declare a computation as a graph, bind it, run it.

See :mod:`.symbol` for the Symbol, :mod:`.ops` for the operators (every
``nd`` operator its family declares symbolic), :mod:`.infer` for shape and type inference
and :mod:`.graph` for how a graph is lowered to a plan and run;
:mod:`.numpy` makes ``sym.np``/``sym.npx``, the NumPy-mode nodes.
"""
from .symbol import Symbol, Variable, var, Group
from .loading import load, load_json
from .ops import *            # noqa: F401,F403 - the operators
from .ops import random       # noqa: F401
from . import graph           # noqa: F401
from .numpy import np, npx    # noqa: F401 - NumPy-mode nodes (F.np, F.npx)

__all__ = ['Symbol', 'Variable', 'var', 'Group', 'load', 'load_json', 'random', 'np', 'npx']
