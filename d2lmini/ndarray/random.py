"""Random number generation, one seedable generator per context.

Sampling runs on the context's stream, in issue order, so a seed gives the
same numbers whatever the engine mode.
"""
import numpy as np

from .. import backend
from ..context import Context
from .ndarray import NDArray, _check_kwargs, _ctx, _dtype, _from_host, _shape, invoke
from .registry import OPS

__all__ = ['seed', 'normal', 'uniform', 'randint', 'randn', 'shuffle', 'generator']

_GENS = {}
_SEED = [None]


def generator(ctx):
    """The random generator of ``ctx`` (created from the global seed)."""
    g = _GENS.get(ctx)
    if g is None:
        backend.check_context(ctx)       # "no GPU: install the extra", not a crash
        s = _SEED[0]
        # Different contexts get different, reproducible streams.
        ss = None if s is None else [s, ctx.device_type == 'gpu', ctx.device_id]
        g = _GENS[ctx] = (backend.xp(ctx).random.default_rng(
            np.random.SeedSequence(ss).generate_state(1)[0] if ss else None))
    return g


def seed(seed_state, ctx='all'):
    """Seed the generators of all contexts (or only ``ctx``)."""
    from .. import engine
    engine.waitall()          # pending samples use the old state
    if ctx == 'all':
        _SEED[0] = int(seed_state)
        _GENS.clear()
    else:
        ss = [int(seed_state), ctx.device_type == 'gpu', ctx.device_id]
        _GENS[ctx] = backend.xp(ctx).random.default_rng(
            np.random.SeedSequence(ss).generate_state(1)[0])


def _sample(draw, shape, ctx, dtype, name, out=None):
    if out is not None:                  # MXNet's out=: fill an existing array
        shape, ctx, dtype = out.shape, out.context, out.dtype
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    gen = generator(ctx)
    res = _from_host(lambda xp: draw(gen, shape).astype(dtype, copy=False),
                     shape, dtype, ctx, name)
    if out is not None:
        out[:] = res
        return out
    return res


def _params(*vals):
    for v in vals:
        if isinstance(v, NDArray):
            raise TypeError('array-valued distribution parameters are not supported; '
                            'pass Python numbers')


def uniform(low=0, high=1, shape=(1,), dtype=None, ctx=None, out=None, **kw):
    """Samples from U[low, high)."""
    _params(low, high)
    _check_kwargs('uniform', kw)
    return _sample(lambda g, s: g.uniform(low, high, s), shape, ctx, dtype,
                   'random_uniform', out)


def normal(loc=0, scale=1, shape=(1,), dtype=None, ctx=None, out=None, **kw):
    """Samples from N(loc, scale^2)."""
    _params(loc, scale)
    _check_kwargs('normal', kw)
    if scale < 0:                   # fail here, not later inside the engine
        raise ValueError(f'normal: scale must be >= 0, got {scale}')
    # CuPy's Generator has no normal(); NumPy's normal is exactly this anyway
    return _sample(lambda g, s: loc + scale * g.standard_normal(s), shape, ctx,
                   dtype, 'random_normal', out)


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None):
    return normal(loc, scale, shape, dtype, ctx)


def randint(low, high, shape=(1,), dtype='int32', ctx=None, out=None, **kw):
    """Integers in [low, high)."""
    _check_kwargs('randint', kw)
    if low >= high:
        raise ValueError(f'randint: need low < high, got low={low}, high={high}')
    return _sample(lambda g, s: g.integers(low, high, s), shape, ctx, dtype,
                   'random_randint', out)


def exponential(scale=1, shape=(1,), dtype=None, ctx=None, **kw):
    _check_kwargs('exponential', kw)
    return _sample(lambda g, s: g.exponential(scale, s), shape, ctx, dtype,
                   'random_exponential')


def shuffle(data):
    """A copy of ``data`` with its first axis shuffled."""
    gen = generator(data.context)
    n = data.shape[0]

    def draw(xp):                   # CuPy's Generator may lack permutation()
        return gen.permutation(n) if hasattr(gen, 'permutation') else \
            xp.argsort(gen.random(n))
    perm = _from_host(draw, (data.shape[0],),
                      np.dtype(np.int64), data.context, 'random_permutation')
    return invoke(OPS['take'], (data, perm), {'axis': 0})
