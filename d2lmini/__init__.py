"""d2lmini: a small, real deep-learning framework in the image of MXNet 1.x.

``import d2lmini as mx`` then ``from d2lmini import nd, autograd, gluon, d2l``
runs the classic d2l MXNet code unchanged.
"""
from . import storage              # pooled host memory (before any big array)
from . import base                 # the error types (MXNetError)
from . import context, backend, engine
from .context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus
from . import autograd
from . import ndarray
from . import ndarray as nd
from .ndarray import random as _nd_random
from .engine import waitall, EngineError
from .base import MXNetError

__version__ = '0.1.0'
__all__ = ['nd', 'ndarray', 'autograd', 'context', 'engine', 'base', 'Context',
           'cpu', 'gpu', 'num_gpus', 'current_context', 'waitall', 'random',
           'MXNetError', 'kv', 'kvstore']


class random:                       # mx.random.seed(...), as in MXNet
    """``mx.random``: ``seed(n)`` seeds every context's generator; the
    samplers are ``nd.random``'s."""
    seed = staticmethod(_nd_random.seed)
    uniform = staticmethod(_nd_random.uniform)
    normal = staticmethod(_nd_random.normal)
    randn = staticmethod(_nd_random.randn)
    randint = staticmethod(_nd_random.randint)
    poisson = staticmethod(_nd_random.poisson)
    exponential = staticmethod(_nd_random.exponential)
    gamma = staticmethod(_nd_random.gamma)
    multinomial = staticmethod(_nd_random.multinomial)
    negative_binomial = staticmethod(_nd_random.negative_binomial)
    generalized_negative_binomial = staticmethod(
        _nd_random.generalized_negative_binomial)
    shuffle = staticmethod(_nd_random.shuffle)


# Heavy or optional submodules load on first use.  A module MXNet has and
# d2lmini has not (``mx.rtc``), or a listed one missing from a checkout, is
# an AttributeError, so that ``hasattr(mx, 'rtc')`` is False.  ``mx.kv`` is
# ``mx.kvstore``, as in MXNet.
_LAZY = ('gluon', 'd2l', 'init', 'optimizer', 'kv', 'kvstore', 'initializer', 'metric', 'lr_scheduler', 'name', 'util',
         'runtime', 'collectives', 'pipeline', 'sym', 'symbol', 'executor',
         'io', 'callback', 'mod', 'module', 'model', 'viz', 'visualization',
         'np', 'npx', 'numpy', 'numpy_extension', 'image', 'recordio',
         'profiler', 'contrib')
_ALIAS = {'kv': 'kvstore', 'sym': 'symbol', 'mod': 'module', 'viz': 'visualization',
          'np': 'numpy', 'npx': 'numpy_extension'}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module = _ALIAS.get(name, name)
        try:
            return importlib.import_module(f'.{module}', __name__)
        except ModuleNotFoundError as e:
            if e.name != f'{__name__}.{module}':
                raise                    # the module exists, one of its imports not
    raise AttributeError(f"module 'd2lmini' has no attribute {name!r}")


# A scheduler or server of a distributed job (DMLC_ROLE, set by
# ``python -m d2lmini.launch``) runs its loop here, on import, and exits, as
# MXNet does: one script serves every role of the job.
from .kvstore.dist import config as _dist_config
if _dist_config.serves_on_import():
    from .kvstore.dist import run_role_and_exit
    run_role_and_exit()
