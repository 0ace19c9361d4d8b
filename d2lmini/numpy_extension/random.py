"""``npx.random``: MXNet 1.9.1's extra samplers (``uniform_n``, ``normal_n``,
``bernoulli``) and ``seed``, on the generators of :mod:`d2lmini.ndarray.random`
(``npx.random.seed(0)`` is ``mx.random.seed(0)``).

The ``_n`` samplers draw ``batch_shape + broadcast(params).shape`` values:
one batch of draws per parameter entry.
"""
import numpy as _onp

from ..context import current_context
from ..ndarray import random as _ndr
from ..ndarray.ndarray import NDArray
from .ops import _np

__all__ = ['seed', 'uniform_n', 'normal_n', 'bernoulli']

def seed(seed, ctx='all'):     # pylint: disable=redefined-outer-name
    """Seed the generators (all contexts, or ``ctx``); MXNet's keyword is ``seed``."""
    _ndr.seed(seed, ctx)


def _shape(batch_shape, *params):
    batch = () if batch_shape is None else (
        (batch_shape,) if isinstance(batch_shape, int) else tuple(batch_shape))
    return batch + _onp.broadcast_shapes(*(p.shape if isinstance(p, NDArray) else ()
                                           for p in params))


def _ctx(ctx, *params):
    for p in params:
        if isinstance(p, NDArray):
            return p.context
    return ctx or current_context()


def uniform_n(low=0.0, high=1.0, batch_shape=None, dtype=None, ctx=None):
    """Uniform draws in ``[low, high)``, shape ``batch_shape + low/high's``."""
    u = _ndr.uniform(0, 1, shape=_shape(batch_shape, low, high), dtype=dtype or
                     'float32', ctx=_ctx(ctx, low, high))
    return _np(low + (high - low) * _np(u))


def normal_n(loc=0.0, scale=1.0, batch_shape=None, dtype=None, ctx=None):
    """Normal draws of mean ``loc`` and deviation ``scale``, shape
    ``batch_shape + loc/scale's``."""
    z = _ndr.normal(0, 1, shape=_shape(batch_shape, loc, scale), dtype=dtype or
                    'float32', ctx=_ctx(ctx, loc, scale))
    return _np(loc + scale * _np(z))


def bernoulli(prob=None, logit=None, size=None, dtype=None, ctx=None, out=None):
    """1 with probability ``prob`` (or ``sigmoid(logit)``), else 0; give one."""
    if (prob is None) == (logit is None):
        raise ValueError('npx.random.bernoulli: give exactly one of prob and logit')
    if logit is not None:
        e = (-logit).exp() if isinstance(logit, NDArray) else _onp.exp(-logit)
        prob = 1 / (1 + e)
    shape = _shape(size, prob) if size is None else _shape(size)
    u = _np(_ndr.uniform(0, 1, shape=shape, ctx=_ctx(ctx, prob)))
    draw = (u < prob).astype(dtype or 'float32')
    return _np(draw if out is None else draw.copyto(out))
