"""Random number generation, one seedable generator per context.

Sampling runs on the context's stream, in issue order, so a seed gives the
same numbers whatever the engine mode.  Distribution parameters are checked
inside the kernel, as MXNet does: ``normal(0, -1)`` returns at once and
fails at the next sync point (``asnumpy``, ``wait_to_read``, ``waitall``).

Parameters may be numbers (``shape`` samples) or NDArrays of one shape
``p`` (``p + shape`` samples: ``shape`` draws per parameter, MXNet's
``sample_*`` operators).  The legacy names (``nd.random_normal``,
``nd.sample_normal``, ``nd.uniform``, ...) are at the end.
"""
import numpy as np

from .. import backend
from ..base import _check_kwargs
from .ndarray import (NDArray, _IGNORED, _ctx, _dtype, _from_host, _make, _run,
                      _shape, invoke)
from .registry import OPS, Op, register

__all__ = ['seed', 'uniform', 'normal', 'randn', 'poisson', 'exponential', 'gamma',
           'multinomial', 'negative_binomial', 'generalized_negative_binomial',
           'shuffle', 'randint', 'generator']
# mx.sym.random has the samplers, not the generators' state
NOT_SYMBOLIC = ('seed', 'generator')

_GENS = {}
_LAST = {}                    # ctx -> its latest sample (a failure passes on)
_SEED = [None]


def generator(ctx):
    """The random generator of ``ctx`` (created from the global seed)."""
    g = _GENS.get(ctx)
    if g is None:
        backend.check_context(ctx)       # "no GPU: install the extra", not a crash
        s = _SEED[0]
        # Different contexts get different, reproducible streams.
        g = _GENS[ctx] = _new_generator(ctx, None if s is None else _seeds(s, ctx))
    return g


def _seeds(seed_state, ctx):
    return [int(seed_state), ctx.device_type == 'gpu', ctx.device_id]


def _new_generator(ctx, ss):
    seed = None if ss is None else np.random.SeedSequence(ss).generate_state(1)[0]
    if ctx.device_type != 'gpu':
        return np.random.default_rng(seed)
    from .. import engine
    # CuPy's generator keeps its state in device memory, set up by kernels on
    # the current stream: put them on the stream that will draw, or the first
    # draws may read an unset state (all values equal), and on ctx's device,
    # which the generator then belongs to.
    with backend.device_guard(ctx), engine.stream_for(ctx).cuda_stream:
        return backend.xp(ctx).random.default_rng(seed)


def seed(seed_state, ctx='all'):
    """Seed the generators of all contexts (or only ``ctx``).

    A generator that exists is re-seeded in place: a traced graph
    (``hybridize``, an executor) holds the generator of its context, and
    must follow the new seed too.
    """
    from .. import engine
    engine.waitall()          # pending samples use the old state
    if ctx == 'all':
        _SEED[0] = int(seed_state)
        for c in list(_GENS):
            _reseed(c, _seeds(seed_state, c))
    else:
        _reseed(ctx, _seeds(seed_state, ctx))


def _reseed(ctx, ss):
    new = _new_generator(ctx, ss)
    old = _GENS.get(ctx)
    if old is None:
        _GENS[ctx] = new
    elif isinstance(old, np.random.Generator):
        old.bit_generator.state = new.bit_generator.state    # NumPy: a dict
    else:
        # CuPy: the state is device memory, and ``bit_generator.state`` a
        # method returning its address; the Generator takes the new one
        old.bit_generator = new.bit_generator


# === draws that NumPy's Generator has and CuPy's (14) lacks ==========================
def _shape_of(size, params):
    if size is not None:
        return size
    return np.broadcast_shapes(*[getattr(p, 'shape', ()) for p in params])


def _xp_of(z):
    return np if isinstance(z, np.ndarray) else backend.xp_of(z)


def _exp(g, *params, size):
    return g.standard_exponential(_shape_of(size, params))


def _log(z):
    return _xp_of(z).log(z)


# name: g, parameters (NumPy's order), size -> samples, from CuPy's methods
_DERIVED = {
    'normal': lambda g, loc=0.0, scale=1.0, size=None:
        loc + scale * g.standard_normal(_shape_of(size, (loc, scale))),
    'lognormal': lambda g, mean=0.0, sigma=1.0, size=None: _xp_of(
        z := g.standard_normal(_shape_of(size, (mean, sigma)))).exp(mean + sigma * z),
    # the difference of two exponentials; -log of one; powers of one
    'laplace': lambda g, loc=0.0, scale=1.0, size=None:
        loc + scale * (_exp(g, loc, scale, size=size) - _exp(g, loc, scale, size=size)),
    'gumbel': lambda g, loc=0.0, scale=1.0, size=None:
        loc - scale * _log(_exp(g, loc, scale, size=size)),
    'logistic': lambda g, loc=0.0, scale=1.0, size=None: loc + scale * (
        lambda u: _log(u) - _xp_of(u).log1p(-u))(g.random(_shape_of(size, (loc, scale)))),
    'rayleigh': lambda g, scale=1.0, size=None:
        scale * _xp_of(z := _exp(g, scale, size=size)).sqrt(2 * z),
    'weibull': lambda g, a, size=None: _exp(g, a, size=size) ** (1.0 / a),
    'pareto': lambda g, a, size=None: _xp_of(z := _exp(g, a, size=size)).expm1(z / a),
    # a Poisson whose rate is Gamma(n, (1 - p) / p)
    'negative_binomial': lambda g, n, p, size=None:
        g.poisson(g.gamma(n, (1 - p) / p, _shape_of(size, (n, p)))),
    'choice': lambda g, a, size=None: g.integers(0, a, size),
    'permutation': lambda g, n: _xp_of(u := g.random(n)).argsort(u).astype(np.int64),
}


def draw_with(g, method, *params, size=None, **kw):
    """``g.method(*params, size=size)`` on a NumPy or a CuPy generator.

    CuPy's Generator has only some of NumPy's methods; the others are made
    here from those it has (``lognormal`` is ``exp(normal)``...).  Array
    parameters must be on the generator's device.
    """
    f = getattr(g, method, None)
    if f is None:
        f = _DERIVED[method].__get__(g)
    if method == 'permutation':
        return f(*params)
    return f(*params, size=size, **kw)


def _device_params(params, xp):
    """Parameters as CuPy's generator takes them: device arrays or Python
    numbers (it refuses NumPy scalars and host arrays)."""
    return [xp.asarray(p) if isinstance(p, np.ndarray) and xp is not np else
            p.item() if isinstance(p, np.generic) else p for p in params]


def _sample_scalar(draw, shape, ctx, dtype, name, out=None):
    if out is not None:                  # MXNet's out=: fill an existing array
        shape, ctx, dtype = out.shape, out.context, out.dtype
    elif shape is None:
        shape = (1,)
    shape, ctx, dtype = _shape(shape), _ctx(ctx), _dtype(dtype)
    gen, xp = generator(ctx), backend.xp(ctx)
    res = _make(shape, dtype, ctx)
    # MXNet's samplers share the generator: one that fails leaves it failed,
    # and the samplers after it fail with that error until a sync point
    # reports it.  Here each sampler reads the previous one's output (its
    # values unused), so the engine passes a failure on the same way.
    prev = _LAST.get(ctx)
    _run(name, lambda *_: xp.asarray(draw(gen, shape)).astype(dtype, copy=False),
         () if prev is None else (prev,), [res], ctx)
    _LAST[ctx] = res
    if out is not None:
        out[:] = res
        return out
    return res


def _check(dist, what, value, ok, need):
    """A parameter check that runs in the kernel (errors surface at a sync)."""
    good = ok(value)
    if backend.is_gpu_array(good):
        # Raising the error is the host's decision: one explicit read of the
        # verdict (a device array of the parameter itself stays there).
        good = backend.to_numpy(backend.xp_of(good).all(good))
    if not bool(np.all(good)):
        raise ValueError(f'random.{dist}: {what} must be {need}, got {value!r:.80}')


@register
class SampleArrayOp(Op):
    """Samples with NDArray-valued parameters: ``shape`` draws for each element
    of the parameters (all of one shape), so the output is ``p.shape + shape``."""
    name = '_sample_array'
    differentiable = False

    def infer(self, shapes, dtypes, draw, gen, shape, dtype, dist):
        if any(s != shapes[0] for s in shapes):
            raise ValueError(f"random.{dist}: the parameter arrays must have one "
                             f"shape, got {list(shapes)}")
        return tuple(shapes[0]) + tuple(shape), np.dtype(dtype)

    def forward(self, *params, draw, gen, shape, dtype, dist):
        size = params[0].shape + tuple(shape)
        params = [p.reshape(p.shape + (1,) * len(shape)) for p in params]
        return draw(gen, *params, size=size).astype(dtype, copy=False)


def _sample(front, draw, params, shape, dtype, ctx, out, kw):
    """Draw ``draw(gen, *params, size=...)`` with number or NDArray params,
    for the front end ``front`` (``normal``...) whose ``**kw`` caught ``kw``."""
    _check_kwargs(front, kw, _IGNORED)
    dist = front.__name__
    arrays = [isinstance(p, NDArray) for p in params]
    if not any(arrays):
        params = _device_params(params, np)          # NumPy scalars: numbers
        return _sample_scalar(lambda g, s: draw(g, *params, size=s), shape, ctx,
                              dtype, 'random_' + dist, out)
    if not all(arrays):
        raise TypeError(f'random.{dist}: distribution parameters must all be numbers '
                        f'or all NDArrays, got {[type(p).__name__ for p in params]}')
    shape = () if shape is None else _shape(shape)
    dtype = params[0].dtype if dtype is None else _dtype(dtype)
    res = invoke(OPS['_sample_array'], tuple(params),
                 {'draw': draw, 'gen': generator(params[0].context), 'shape': shape,
                  'dtype': np.dtype(dtype), 'dist': dist})
    if out is not None:
        out[:] = res
        return out
    return res


def _uniform(g, low, high, size):
    _check('uniform', 'high - low', high - low, lambda d: d >= 0, '>= 0')
    return g.uniform(low, high, size)


def _normal(g, loc, scale, size):
    _check('normal', 'scale', scale, lambda s: s >= 0, '>= 0')
    return draw_with(g, 'normal', loc, scale, size=size)


def _poisson(g, lam, size):
    _check('poisson', 'lam', lam, lambda v: v >= 0, '>= 0')
    return g.poisson(lam, size)


def _exponential(g, scale, size):
    _check('exponential', 'scale', scale, lambda v: v > 0, '> 0')
    return g.exponential(scale, size)


def _gamma(g, alpha, beta, size):
    _check('gamma', 'alpha', alpha, lambda v: v > 0, '> 0')
    _check('gamma', 'beta', beta, lambda v: v > 0, '> 0')
    return g.gamma(alpha, beta, size)


def _negative_binomial(g, k, p, size):
    _check('negative_binomial', 'k', k, lambda v: v > 0, '> 0')
    _check('negative_binomial', 'p', p, lambda v: (v > 0) & (v <= 1), 'in (0, 1]')
    return draw_with(g, 'negative_binomial', k, p, size=size)


def _generalized_negative_binomial(g, mu, alpha, size):
    """A Poisson whose rate is Gamma(1/alpha, alpha*mu): mean mu, variance
    mu + alpha*mu**2 (alpha = 0: Poisson(mu))."""
    _check('generalized_negative_binomial', 'mu', mu, lambda v: v >= 0, '>= 0')
    _check('generalized_negative_binomial', 'alpha', alpha, lambda v: v >= 0, '>= 0')
    if not isinstance(g, np.random.Generator):    # a GPU generator
        return _gnb_device(g, mu, alpha, size)
    mu, alpha = np.broadcast_to(mu, size), np.broadcast_to(alpha, size)
    pos = alpha > 0
    lam = np.array(mu, dtype=np.float64)
    if pos.any():
        lam[pos] = g.gamma(1 / alpha[pos], alpha[pos] * mu[pos])
    return g.poisson(lam)


def _gnb_device(g, mu, alpha, size):
    """``_generalized_negative_binomial`` without reading the data on the
    host: the Gamma rates are drawn everywhere, and kept where alpha > 0."""
    if not backend.is_gpu_array(mu):           # numbers: the host decides
        lam = g.gamma(1 / alpha, alpha * mu, size) if alpha > 0 else mu
        return g.poisson(lam, size)
    xp = backend.xp_of(mu)
    mu, alpha = xp.broadcast_to(mu, size), xp.broadcast_to(alpha, size)
    pos = alpha > 0
    safe = xp.where(pos, alpha, 1.0)
    lam = xp.where(pos, g.gamma(1 / safe, safe * mu), mu.astype(np.float64))
    return g.poisson(lam)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kw):
    """Samples from U[low, high).

    >>> nd.random.uniform(-1, 1, shape=(2,))     # doctest: +SKIP
    [0.0976 0.4304]
    """
    return _sample(uniform, _uniform, (low, high), shape, dtype, ctx, out, kw)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kw):
    """Samples from N(loc, scale^2)."""
    return _sample(normal, _normal, (loc, scale), shape, dtype, ctx, out, kw)


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, **kw):
    """Normal samples of shape ``shape`` (given as separate ints)."""
    return normal(loc, scale, shape or (1,), dtype, ctx, **kw)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kw):
    """Samples from Poisson(lam) (as float32 unless ``dtype``)."""
    return _sample(poisson, _poisson, (lam,), shape, dtype, ctx, out, kw)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kw):
    """Samples from the exponential distribution of mean ``scale`` (rate 1/scale)."""
    return _sample(exponential, _exponential, (scale,), shape, dtype, ctx, out, kw)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kw):
    """Samples from Gamma(shape ``alpha``, scale ``beta``)."""
    return _sample(gamma, _gamma, (alpha, beta), shape, dtype, ctx, out, kw)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kw):
    """Failures before the ``k``-th success, success probability ``p``."""
    return _sample(negative_binomial, _negative_binomial, (k, p), shape, dtype, ctx,
                   out, kw)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None,
                                  out=None, **kw):
    """Negative binomial of mean ``mu`` and dispersion ``alpha``."""
    return _sample(generalized_negative_binomial, _generalized_negative_binomial,
                   (mu, alpha), shape, dtype, ctx, out, kw)


@register
class MultinomialOp(Op):
    """Indices drawn from the distributions along the last axis of ``p``."""
    name = '_sample_multinomial'
    differentiable = False

    def infer(self, shapes, dtypes, gen, shape, dtype):
        return (tuple(shapes[0][:-1]) + tuple(shape)) or (1,), np.dtype(dtype)

    def forward(self, p, gen, shape, dtype):
        _check('multinomial', 'data', p, lambda v: v >= 0, '>= 0 (probabilities)')
        xp = backend.xp_of(p) if not isinstance(p, np.ndarray) else np
        batch, k = p.shape[:-1], p.shape[-1]
        u = xp.asarray(gen.random(batch + tuple(shape)))
        cdf = xp.cumsum(p, axis=-1).reshape(batch + (1,) * len(shape) + (k,))
        # the first outcome whose cumulative probability passes u
        r = xp.minimum((u[..., None] >= cdf).sum(-1), k - 1)
        return r.reshape((batch + tuple(shape)) or (1,)).astype(dtype)


def multinomial(data, shape=None, get_prob=False, out=None, dtype='int32', **kw):
    """Indices drawn from the distributions along ``data``'s last axis:
    ``shape`` draws from each (one when ``shape`` is None).  With
    ``get_prob``, also the log-probabilities of the draws (differentiable in
    ``data``, for REINFORCE-style estimators)."""
    _check_kwargs(multinomial, kw, _IGNORED)
    shape = () if shape is None else _shape(shape)
    res = invoke(OPS['_sample_multinomial'], (data,),
                 {'gen': generator(data.context), 'shape': shape,
                  'dtype': np.dtype(dtype)})
    if out is not None:
        out[:] = res
        res = out
    if not get_prob:
        return res
    batch = data.shape[:-1]
    idx = res.reshape(batch + (-1,))
    prob = invoke(OPS['_gather_axis'], (data, idx), {'axis': len(batch)})
    return [res, invoke(OPS['log'], (prob.reshape(res.shape),))]


def randint(low, high, shape=None, dtype='int32', ctx=None, out=None, **kw):
    """Integers in [low, high)."""
    _check_kwargs(randint, kw, _IGNORED)
    if low >= high:
        raise ValueError(f'randint: need low < high, got low={low}, high={high}')
    return _sample_scalar(lambda g, s: g.integers(low, high, s), shape, ctx, dtype,
                          'random_randint', out)


def shuffle(data, **kw):
    """A copy of ``data`` with its first axis shuffled."""
    _check_kwargs(shuffle, kw, _IGNORED)
    gen = generator(data.context)
    n = data.shape[0]

    perm = _from_host(lambda xp: draw_with(gen, 'permutation', n), (data.shape[0],),
                      np.dtype(np.int64), data.context, 'random_permutation')
    return invoke(OPS['take'], (data, perm), {'axis': 0})


# === MXNet's older names: nd.random_normal, nd.sample_normal, nd.uniform, ... =======
def _reciprocal(lam):
    return 1 / lam            # rate -> scale, for a number or an NDArray


def random_uniform(low=0, high=1, shape=None, ctx=None, dtype=None, out=None,
                   name=None, **kw):
    """MXNet's older name for ``nd.random.uniform`` (``ctx`` before ``dtype``)."""
    return uniform(low, high, shape, dtype, ctx, out, **kw)


def random_normal(loc=0, scale=1, shape=None, ctx=None, dtype=None, out=None,
                  name=None, **kw):
    """MXNet's older name for ``nd.random.normal`` (``ctx`` before ``dtype``)."""
    return normal(loc, scale, shape, dtype, ctx, out, **kw)


def random_poisson(lam=1, shape=None, ctx=None, dtype=None, out=None, name=None, **kw):
    """MXNet's older name for ``nd.random.poisson`` (``ctx`` before ``dtype``)."""
    return poisson(lam, shape, dtype, ctx, out, **kw)


def random_exponential(lam=1, shape=None, ctx=None, dtype=None, out=None, name=None,
                       **kw):
    """Exponential samples of *rate* ``lam`` (``random.exponential`` takes the
    scale ``1/lam``)."""
    return exponential(_reciprocal(lam), shape, dtype, ctx, out, **kw)


def random_gamma(alpha=1, beta=1, shape=None, ctx=None, dtype=None, out=None,
                 name=None, **kw):
    """MXNet's older name for ``nd.random.gamma`` (``ctx`` before ``dtype``)."""
    return gamma(alpha, beta, shape, dtype, ctx, out, **kw)


def random_negative_binomial(k=1, p=1, shape=None, ctx=None, dtype=None, out=None,
                             name=None, **kw):
    """MXNet's older name for ``nd.random.negative_binomial``."""
    return negative_binomial(k, p, shape, dtype, ctx, out, **kw)


def random_generalized_negative_binomial(mu=1, alpha=1, shape=None, ctx=None,
                                         dtype=None, out=None, name=None, **kw):
    """MXNet's older name for ``nd.random.generalized_negative_binomial``."""
    return generalized_negative_binomial(mu, alpha, shape, dtype, ctx, out, **kw)


def random_randint(low, high, shape=None, ctx=None, dtype='int32', out=None,
                   name=None, **kw):
    """MXNet's older name for ``nd.random.randint`` (``ctx`` before ``dtype``)."""
    return randint(low, high, shape, dtype, ctx, out, **kw)


def sample_uniform(low, high, shape=None, dtype=None, out=None, name=None, **kw):
    """Samples from U[low, high) for each element of the arrays ``low``, ``high``."""
    return uniform(low, high, shape, dtype, None, out, **kw)


def sample_normal(mu, sigma, shape=None, dtype=None, out=None, name=None, **kw):
    """Samples from N(mu, sigma^2) for each element of the arrays ``mu``, ``sigma``."""
    return normal(mu, sigma, shape, dtype, None, out, **kw)


def sample_poisson(lam, shape=None, dtype=None, out=None, name=None, **kw):
    """Poisson samples for each element of the array ``lam``."""
    return poisson(lam, shape, dtype, None, out, **kw)


def sample_exponential(lam, shape=None, dtype=None, out=None, name=None, **kw):
    """Exponential samples of *rate* ``lam`` (one distribution per element)."""
    return exponential(_reciprocal(lam), shape, dtype, None, out, **kw)


def sample_gamma(alpha, beta, shape=None, dtype=None, out=None, name=None, **kw):
    """Gamma samples for each element of the arrays ``alpha``, ``beta``."""
    return gamma(alpha, beta, shape, dtype, None, out, **kw)


def sample_negative_binomial(k, p, shape=None, dtype=None, out=None, name=None, **kw):
    """Negative binomial samples for each element of the arrays ``k``, ``p``."""
    return negative_binomial(k, p, shape, dtype, None, out, **kw)


def sample_generalized_negative_binomial(mu, alpha, shape=None, dtype=None, out=None,
                                         name=None, **kw):
    """Generalized negative binomial samples for each element of ``mu``, ``alpha``."""
    return generalized_negative_binomial(mu, alpha, shape, dtype, None, out, **kw)


def sample_multinomial(data, shape=None, get_prob=False, out=None, dtype='int32',
                       name=None, **kw):
    """MXNet's older name for ``nd.random.multinomial``."""
    return multinomial(data, shape, get_prob, out, dtype, **kw)


# What this family gives nd's (and mx.sym's) top level: the older names, not
# ``__all__`` (that is ``nd.random``); ``nd.uniform`` is ``random_uniform``.
TOP_LEVEL = {f.__name__: f for f in (
    random_uniform, random_normal, random_poisson, random_exponential, random_gamma,
    random_negative_binomial, random_generalized_negative_binomial, random_randint,
    sample_uniform, sample_normal, sample_poisson, sample_exponential, sample_gamma,
    sample_negative_binomial, sample_generalized_negative_binomial,
    sample_multinomial)}
TOP_LEVEL.update(uniform=random_uniform, normal=random_normal)
