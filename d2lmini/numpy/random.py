"""``mx.np.random``: NumPy's sampling functions on d2lmini's generators.

The samples come from the per-context generators of ``mx.random`` (so
``mx.random.seed``/``npx.random.seed`` seed them) and run on the engine.
MXNet's defaults: float32 samples, int64 from ``randint``/``choice``, a 0-d
array when ``size`` is None.  ``normal`` and ``uniform`` with array
parameters are ``loc + scale * z`` and ``low + (high - low) * u``: their
gradients reach ``loc``/``scale``/``low``/``high`` (MXNet's reparameterised
samplers).
"""
import numpy as _np

from .. import backend
from ..context import cpu, current_context
from ..ndarray.ndarray import NDArray, invoke
from ..ndarray.registry import OPS
from ..ndarray import random as _ndr
from .multiarray import asarray, array, _np_class

__all__ = ['seed', 'uniform', 'normal', 'randn', 'rand', 'randint', 'choice',
           'shuffle', 'permutation', 'multinomial', 'gamma', 'exponential', 'beta',
           'chisquare', 'laplace', 'logistic', 'gumbel', 'rayleigh', 'weibull',
           'pareto', 'power', 'lognormal', 'poisson', 'f', 'bernoulli', 'random',
           'random_sample', 'standard_normal']


def seed(seed_state, ctx='all'):
    """Seed the generators (all contexts, or ``ctx``)."""
    _ndr.seed(seed_state, ctx)


def _size(size):
    if size is None:
        return ()
    return (int(size),) if isinstance(size, (int, _np.integer)) else tuple(size)


def _draw(name, method, params, size, dtype, ctx, default='float32'):
    """Samples of ``method(gen, *params, size)``; array parameters are read
    on the host and broadcast with ``size`` as NumPy does."""
    ctx = ctx or current_context()
    host = [p.asnumpy() if isinstance(p, NDArray) else p for p in params]
    shape = _size(size)
    if size is None:
        shape = _np.broadcast_shapes(*[_np.shape(p) for p in host]) if host else ()
    dt = _np.dtype(dtype or default)
    xp = backend.xp(_ndr._ctx(ctx))
    return _np_class(_ndr._sample_scalar(
        lambda g, s: _ndr.draw_with(g, method, *_ndr._device_params(host, xp), size=s),
        shape, ctx, dt, name))


def _arr_param(*ps):
    return any(isinstance(p, NDArray) for p in ps)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from ``[low, high)``, uniformly."""
    ctx = ctx or device
    if _arr_param(low, high):
        shape = _size(size) if size is not None else _np.broadcast_shapes(
            _np.shape(low), _np.shape(high))
        u = _draw('uniform', 'random', (), shape, dtype, ctx or _ctx_of(low, high))
        return low + (high - low) * u
    res = _draw('uniform', 'uniform', (low, high), size, dtype, ctx)
    return _into(out, res)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None, out=None):
    """Samples from the normal distribution N(loc, scale**2)."""
    ctx = ctx or device
    if _arr_param(loc, scale):
        shape = _size(size) if size is not None else _np.broadcast_shapes(
            _np.shape(loc), _np.shape(scale))
        z = _draw('normal', 'standard_normal', (), shape, dtype, ctx or _ctx_of(loc, scale))
        return loc + scale * z
    # standard_normal, scaled (and 1.0, 0.0 left out): as d2lmini always did
    _check_params('normal', ('loc', 'scale'), (loc, scale))
    z = _draw('normal', 'standard_normal', (), size, dtype, ctx)
    return _into(out, z * scale + loc if (scale, loc) != (1.0, 0.0) else z)


def _ctx_of(*ps):
    return next(p._ctx for p in ps if isinstance(p, NDArray))


def _into(out, res):
    if out is None:
        return res
    out[...] = res
    return out


def standard_normal(size=None, dtype=None, ctx=None, device=None):
    """Samples from N(0, 1)."""
    return normal(0.0, 1.0, size, dtype, ctx, device)


def randn(*size, **kwargs):
    """Samples from N(0, 1) of shape ``size``."""
    return normal(0.0, 1.0, size or None, kwargs.get('dtype'), kwargs.get('ctx'))


def rand(*size, **kwargs):
    """Samples from [0, 1) of shape ``size``."""
    return uniform(0.0, 1.0, size or None, kwargs.get('dtype'), kwargs.get('ctx'))


def random_sample(size=None, dtype=None, ctx=None, device=None):
    """Samples from [0, 1)."""
    return uniform(0.0, 1.0, size, dtype, ctx, device)


random = random_sample


def randint(low, high=None, size=None, dtype=None, ctx=None, device=None, out=None):
    """Integers from ``[low, high)`` (or ``[0, low)``), int64 by default."""
    if high is None:
        low, high = 0, low
    return _into(out, _draw('randint', 'integers', (low, high), size, dtype,
                            ctx or device, 'int64'))


def choice(a, size=None, replace=True, p=None, ctx=None, device=None, out=None):
    """Samples from ``range(a)`` (an int) or from the 1-D array ``a``,
    with probabilities ``p``."""
    ctx = ctx or device or (a._ctx if isinstance(a, NDArray) else None)
    n = a if isinstance(a, (int, _np.integer)) else asarray(a).shape[0]
    pp = p.asnumpy() if isinstance(p, NDArray) else p
    idx = _draw('choice', 'choice', (int(n),), size, 'int64', ctx, 'int64') \
        if pp is None and replace else _np_class(_ndr._sample_scalar(   # p: on the host
            lambda g, s: g.choice(int(n), size=s, replace=replace, p=pp),
            _size(size), cpu(), _np.dtype('int64'), 'choice')).as_in_context(
                ctx or current_context())
    if isinstance(a, (int, _np.integer)):
        return _into(out, idx)
    from .host import take
    return _into(out, take(asarray(a), idx.reshape(-1), 0).reshape(
        idx.shape + asarray(a).shape[1:]))


def shuffle(x):
    """Shuffle ``x`` along its first axis, in place."""
    perm = permutation(x.shape[0], ctx=x._ctx)
    x[...] = asarray(x).take(perm, 0)


def permutation(x, ctx=None):
    """A random permutation of ``range(x)`` (int64), or of ``x`` (a copy)."""
    if isinstance(x, (int, _np.integer)):
        return _np_class(_ndr._sample_scalar(
            lambda g, s: _ndr.draw_with(g, 'permutation', int(x)), (int(x),),
            ctx or current_context(),
            _np.dtype('int64'), 'permutation'))
    x = asarray(x)
    return x.take(permutation(x.shape[0], ctx=x._ctx), 0)


def multinomial(n, pvals, size=None):
    """Counts of ``n`` draws over the outcomes of probabilities ``pvals``
    (int64, shape ``size + (len(pvals),)``)."""
    pv = pvals.asnumpy() if isinstance(pvals, NDArray) else _np.asarray(pvals)
    shape = _size(size) + (len(pv),)
    return _np_class(_ndr._sample_scalar(                     # pvals: on the host
        lambda g, s: g.multinomial(n, pv, size=_size(size) or None), shape,
        cpu(), _np.dtype('int64'), 'multinomial')).as_in_context(current_context())


def bernoulli(prob=None, logit=None, size=None, dtype=None, ctx=None, device=None):
    """1 with probability ``prob`` (or ``sigmoid(logit)``), else 0."""
    if prob is None:
        lg = logit.asnumpy() if isinstance(logit, NDArray) else logit
        prob = 1 / (1 + _np.exp(-_np.asarray(lg)))
    u = uniform(0.0, 1.0, size if size is not None else _np.shape(
        prob.asnumpy() if isinstance(prob, NDArray) else prob), None, ctx, device)
    return (u < prob).astype(dtype or 'float32')


# Reparameterised samplers (MXNet's): a standard sample z, no gradient, and the
# parameters applied to it with recorded ops, so gradients reach array parameters.
_PATHWISE = {   # name: (defaults, standard sampler, how the parameters act on z)
    'exponential': ((1.0,), 'exponential', lambda z, scale: scale * z),
    'weibull': ((), 'exponential', lambda z, a: z ** (1.0 / a)),
    'pareto': ((), 'exponential', lambda z, a: _op('expm1', z / a)),
    'rayleigh': ((1.0,), 'exponential', lambda z, scale: scale * _op('sqrt', 2 * z)),
    'lognormal': ((0.0, 1.0), 'standard_normal',
                  lambda z, mean, sigma: _op('exp', mean + sigma * z)),
}
_POSITIVE = {'exponential': ('scale', 0), 'weibull': ('a', 1), 'pareto': ('a', 1),
             'power': ('a', 1), 'lognormal': ('sigma', 0),
             'rayleigh': ('scale', 0), 'normal': ('scale', 0)}   # (name, strictly)
_DEFAULTS = {'gamma': {'scale': 1.0}, 'exponential': {'scale': 1.0},
             'laplace': {'loc': 0.0, 'scale': 1.0}, 'logistic': {'loc': 0.0, 'scale': 1.0},
             'gumbel': {'loc': 0.0, 'scale': 1.0}, 'rayleigh': {'scale': 1.0},
             'lognormal': {'mean': 0.0, 'sigma': 1.0}, 'poisson': {'lam': 1.0}}


def _op(name, x):
    return invoke(OPS[name], (x,))


def _check_params(name, names, vals):
    """NumPy's ValueError for a negative scale (raised here, not from the engine)."""
    if name not in _POSITIVE or _POSITIVE[name][0] not in names:
        return
    i = names.index(_POSITIVE[name][0])
    if i < len(vals) and not isinstance(vals[i], NDArray):
        v = _np.asarray(vals[i])
        if _np.any(v <= 0 if _POSITIVE[name][1] else v < 0):
            raise ValueError(f'{name}: {names[i]} must be '
                             f'{"> 0" if _POSITIVE[name][1] else ">= 0"}, got {vals[i]}')


def _pathwise(name, vals, size, dtype, ctx):
    defaults, std, apply = _PATHWISE[name]
    vals = list(vals) + list(defaults[len(vals):])
    shape = _size(size) if size is not None else _np.broadcast_shapes(
        *[_np.shape(v) for v in vals])
    z = _draw(name, std, (), shape, dtype, ctx or _ctx_of(*vals))
    return apply(z, *vals)


def _simple(name, method, params_doc):
    def fn(*args, size=None, dtype=None, ctx=None, device=None, out=None, **kw):
        names = params_doc.split(',') if params_doc else []
        if len(args) > len(names):           # NumPy's order: the parameters, then size
            if len(args) > len(names) + 1 or size is not None:
                raise TypeError(f'{name}: takes {params_doc} and size positionally, '
                                f'got {len(args)} positional arguments')
            args, size = args[:-1], args[-1]
        vals = list(args)
        for k in names[len(args):]:      # keywords, else NumPy's default, in order
            if k not in kw and k not in _DEFAULTS.get(name, {}):
                raise TypeError(f'{name}: missing the parameter {k!r}')
            vals.append(kw.pop(k) if k in kw else _DEFAULTS[name][k])
        if kw:
            raise TypeError(f'{name}: unexpected keywords {sorted(kw)}')
        _check_params(name, names, vals)
        if name in _PATHWISE and _arr_param(*vals):
            return _into(out, _pathwise(name, vals, size, dtype, ctx or device))
        return _into(out, _draw(name, method, vals, size, dtype, ctx or device))
    fn.__name__ = name
    fn.__doc__ = f'Samples of NumPy\'s ``{method}`` ({params_doc}), float32.'
    return fn


gamma = _simple('gamma', 'gamma', 'shape,scale')
exponential = _simple('exponential', 'exponential', 'scale')
beta = _simple('beta', 'beta', 'a,b')
chisquare = _simple('chisquare', 'chisquare', 'df')
laplace = _simple('laplace', 'laplace', 'loc,scale')
logistic = _simple('logistic', 'logistic', 'loc,scale')
gumbel = _simple('gumbel', 'gumbel', 'loc,scale')
rayleigh = _simple('rayleigh', 'rayleigh', 'scale')
weibull = _simple('weibull', 'weibull', 'a')
pareto = _simple('pareto', 'pareto', 'a')
power = _simple('power', 'power', 'a')
lognormal = _simple('lognormal', 'lognormal', 'mean,sigma')
poisson = _simple('poisson', 'poisson', 'lam')
f = _simple('f', 'f', 'dfnum,dfden')
