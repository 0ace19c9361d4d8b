"""Weight initializers (``mx.init``): how a Parameter gets its first values.

As in MXNet 1.x, Gluon hands every Parameter to its initializer's
``_init_weight(name, arr)``, which fills ``arr`` in place.  A Parameter's own
``init`` (e.g. Dense's ``bias_initializer='zeros'``) wins over the one given
to ``net.initialize(...)``; that is why biases start at zero whatever the
global initializer.  Random initializers draw from d2lmini's per-context
generator, so ``mx.random.seed(n)`` makes initialization reproducible.

Examples
--------
>>> net.initialize(init.Xavier())                       # doctest: +SKIP
>>> class MyInit(init.Initializer):                     # doctest: +SKIP
...     def _init_weight(self, name, data):
...         data[:] = nd.random.uniform(-10, 10, shape=data.shape)
"""
import json
import warnings

import numpy as np

__all__ = ['InitDesc', 'Initializer', 'register', 'alias', 'create', 'Zero', 'One',
           'Constant', 'Uniform', 'Normal', 'Xavier', 'MSRAPrelu', 'Orthogonal',
           'Bilinear', 'LSTMBias', 'Mixed', 'Load']

_REGISTRY = {}


def register(klass):
    """Class decorator: make ``klass`` creatable by its lower-case name."""
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases):
    """Class decorator: more names under which :func:`create` finds a class."""
    def reg(klass):
        for a in aliases:
            _REGISTRY[a.lower()] = klass
        return klass
    return reg


def create(init, **kwargs):
    """An Initializer from an instance, a class, or a name like ``'xavier'``."""
    if isinstance(init, Initializer):
        return init
    if isinstance(init, type) and issubclass(init, Initializer):
        return init(**kwargs)
    if isinstance(init, str):
        if init.startswith('['):                  # the dumps() format
            name, kw = json.loads(init)
            return create(name, **kw)
        klass = _REGISTRY.get(init.lower())
        if klass is None:
            raise ValueError(f'unknown initializer {init!r}; known names: '
                             f'{sorted(_REGISTRY)}')
        return klass(**kwargs)
    raise TypeError(f'an initializer must be an Initializer, its class or its '
                    f'name, got {type(init).__name__}')


class InitDesc(str):
    """A parameter's name (a ``str``) carrying ``attrs`` and the global initializer."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer:
    """Base class: subclasses override ``_init_weight(name, arr)``.

    ``__call__(desc, arr)`` fills NDArray ``arr`` in place.  If ``desc`` carries
    an ``'__init__'`` attribute (Gluon always sets it to the Parameter's chosen
    initializer) that initializer's ``_init_weight`` runs; otherwise the name
    decides, MXNet's way: ``*weight`` -> ``_init_weight``, ``*bias``/``*beta``/
    ``*running_mean`` -> 0, ``*gamma``/``*running_var`` -> 1.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Print a summary of every initialized array (``print_func(arr)``)."""
        self._verbose = verbose
        self._print_func = print_func or (
            lambda x: f'{float(np.linalg.norm(x.asnumpy()) / np.sqrt(max(x.size, 1))):.3g}')
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            print(f'Initialized {desc} as {init}: {self._print_func(arr)}')

    def dumps(self):
        """``'["name", {kwargs}]'``: what :func:`create` reads back."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __repr__(self):
        args = ', '.join(f'{k}={v!r}' for k, v in self._kwargs.items())
        return f'{type(self).__name__}({args})'

    def __eq__(self, other):
        # By value, as MXNet: a Parameter shared between two Blocks is looked
        # up with each Block's own (equal, not identical) init, which must agree.
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = None     # equal by value and mutable (set_verbosity): unhashable

    def __call__(self, desc, arr):
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get('__init__')
        if init:
            init = create(init)
            init._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        name = str(desc)
        for suffix, fill in self._by_suffix():
            if name.endswith(suffix):
                fill(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _by_suffix(self):
        # MXNet's order; the running_*/moving_* statistics of BatchNorm too.
        return (('weight', self._init_weight), ('bias', self._init_bias),
                ('gamma', self._init_gamma), ('beta', self._init_beta),
                ('running_mean', self._init_zero), ('moving_mean', self._init_zero),
                ('running_var', self._init_one), ('moving_var', self._init_one),
                ('min', self._init_zero), ('max', self._init_one))

    def _legacy_init(self, name, arr):
        """``init('fc1_weight', arr)``: a plain name, deprecated in MXNet too."""
        warnings.warn('Calling initializer with init(str, NDArray) has been '
                      'deprecated. please use init(mx.init.InitDesc(...), NDArray) '
                      'instead.', DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError(f'name must be a str, got {type(name).__name__}')
        if name.startswith('upsampling'):
            Bilinear()._init_weight(name, arr)
            return
        for suffix, fill in self._by_suffix():
            if name.endswith(suffix):
                fill(name, arr)
                return
        self._init_default(name, arr)

    # --- fillers subclasses may override -----------------------------------------
    def _init_weight(self, name, arr):
        raise NotImplementedError(
            f'{type(self).__name__} must override _init_weight(self, name, arr)')

    def _init_bias(self, name, arr):
        self._init_zero(name, arr)

    def _init_gamma(self, name, arr):
        self._init_one(name, arr)

    def _init_beta(self, name, arr):
        self._init_zero(name, arr)

    @staticmethod
    def _init_zero(_, arr):
        arr[:] = 0.0

    @staticmethod
    def _init_one(_, arr):
        arr[:] = 1.0

    def _init_default(self, name, arr):
        raise ValueError(
            f"don't know how to initialize {name!r}: names ending in 'weight', "
            f"'bias', 'gamma' or 'beta' have defaults; give the Parameter an init=")


def _fill(arr, sample):
    """Write ``sample`` (drawn on ``arr``'s context) into ``arr``."""
    arr[:] = sample


def _random():
    from .ndarray import random   # late: the ndarray package imports lots
    return random


@register
@alias('zeros')
class Zero(Initializer):
    """All zeros."""

    def _init_weight(self, _, arr):
        arr[:] = 0.0


@register
@alias('ones')
class One(Initializer):
    """All ones."""

    def _init_weight(self, _, arr):
        arr[:] = 1.0


@register
class Constant(Initializer):
    """Every element ``value`` (a number, or an array of ``arr``'s shape).

    ``dumps()`` writes an array value as nested lists (MXNet's format), and
    two Constants are equal when their values are.
    """

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _plain_value(self):
        v = self._kwargs['value']
        if np.isscalar(v) or isinstance(v, list):
            return v
        return v.tolist() if isinstance(v, np.ndarray) else v.asnumpy().tolist()

    def dumps(self):
        # MXNet stores the list form back into _kwargs: json needs no arrays.
        self._kwargs['value'] = self._plain_value()
        return super().dumps()

    def __eq__(self, other):
        if not isinstance(other, Constant):
            return NotImplemented
        a, b = self._plain_value(), other._plain_value()
        return type(self) is type(other) and np.array_equal(a, b) and \
            np.shape(a) == np.shape(b)

    __hash__ = None

    def _init_weight(self, _, arr):
        from .ndarray import NDArray, array
        v = self.value
        if not np.isscalar(v):
            v = v if isinstance(v, NDArray) else array(np.asarray(v), ctx=arr.context)
            if v.shape != arr.shape:
                raise ValueError(f'init.Constant: value of shape {v.shape} cannot '
                                 f'initialize a parameter of shape {arr.shape}')
        arr[:] = v


@register
class Uniform(Initializer):
    """Samples from U(-scale, scale)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _fill(arr, _random().uniform(-self.scale, self.scale, shape=arr.shape,
                                     ctx=arr.context, dtype=arr.dtype))


@register
class Normal(Initializer):
    """Samples from N(0, sigma^2)."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _fill(arr, _random().normal(0, self.sigma, shape=arr.shape,
                                    ctx=arr.context, dtype=arr.dtype))


def _fans(name, shape):
    if len(shape) < 2:
        raise ValueError(f'cannot apply Xavier-style initialization to {name!r} of '
                         f'shape {shape}: it needs at least 2 dimensions (give 1-D '
                         f'parameters their own init=, e.g. init.Zero())')
    hw = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
    return shape[1] * hw, shape[0] * hw


@register
class Xavier(Initializer):
    """Glorot/Xavier: scale = sqrt(magnitude / fan) with fan = avg/in/out.

    ``rnd_type='uniform'`` samples U(-scale, scale); ``'gaussian'`` N(0, scale^2).
    For a (out, in, kh, kw) weight, fan_in = in*kh*kw and fan_out = out*kh*kw.
    """

    def __init__(self, rnd_type='uniform', factor_type='avg', magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type,
                         magnitude=magnitude)
        if rnd_type not in ('uniform', 'gaussian'):
            raise ValueError(f"Xavier: rnd_type must be 'uniform' or 'gaussian', "
                             f"got {rnd_type!r}")
        if factor_type not in ('avg', 'in', 'out'):
            raise ValueError(f"Xavier: factor_type must be 'avg', 'in' or 'out', "
                             f"got {factor_type!r}")
        self.rnd_type, self.factor_type = rnd_type, factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        fan_in, fan_out = _fans(name, arr.shape)
        factor = {'avg': (fan_in + fan_out) / 2.0, 'in': fan_in,
                  'out': fan_out}[self.factor_type]
        scale = float(np.sqrt(self.magnitude / factor))
        rnd = _random()
        if self.rnd_type == 'uniform':
            s = rnd.uniform(-scale, scale, shape=arr.shape, ctx=arr.context,
                            dtype=arr.dtype)
        else:
            s = rnd.normal(0, scale, shape=arr.shape, ctx=arr.context, dtype=arr.dtype)
        _fill(arr, s)


@register
class MSRAPrelu(Xavier):
    """He/Kaiming initialization for (P)ReLU nets: gaussian, magnitude 2/(1+slope^2)."""

    def __init__(self, factor_type='avg', slope=0.25):
        super().__init__('gaussian', factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {'factor_type': factor_type, 'slope': slope}


@register
class Orthogonal(Initializer):
    """A (scaled) random orthogonal matrix, from the SVD of a random one."""

    def __init__(self, scale=1.414, rand_type='uniform'):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        rnd = _random()
        if self.rand_type == 'uniform':
            tmp = rnd.uniform(-1.0, 1.0, shape=(nout, nin), ctx=arr.context)
        else:
            tmp = rnd.normal(0.0, 1.0, shape=(nout, nin), ctx=arr.context)
        u, _, v = np.linalg.svd(tmp.asnumpy(), full_matrices=False)
        q = u if u.shape == (nout, nin) else v
        arr[:] = (self.scale * q).reshape(arr.shape)


@register
class Bilinear(Initializer):
    """The kernel of bilinear upsampling, for a ``Conv2DTranspose`` weight.

    Every (kh, kw) slice of the 4-D weight gets
    ``(1 - |x/f - c|) * (1 - |y/f - c|)`` with ``f = ceil(kw / 2)`` and
    ``c = (2f - 1 - f % 2) / (2f)``: a 4x4 kernel is the outer product of
    ``[1/4, 3/4, 3/4, 1/4]`` with itself (upsampling by 2).
    """

    def __init__(self):
        super().__init__()

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) != 4:
            raise ValueError(f'init.Bilinear: {name!r} has shape {shape}; it '
                             f'initializes 4-D (out, in, kh, kw) kernels')
        f = np.ceil(shape[3] / 2.)
        c = (2 * f - 1 - f % 2) / (2. * f)
        x = np.arange(shape[3])
        y = np.arange(shape[2])
        kernel = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c))
        arr[:] = np.broadcast_to(kernel.astype('float32'), shape)


@register
class LSTMBias(Initializer):
    """Zeros, except the forget gate's quarter (the 2nd of the four LSTM gates)
    set to ``forget_bias`` (Jozefowicz et al. 2015 recommend 1.0)."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        num_hidden = arr.shape[0] // 4
        values = np.zeros(arr.shape, dtype='float32')
        values[num_hidden:2 * num_hidden] = self.forget_bias
        arr[:] = values


class _Dispatcher(Initializer):
    """An initializer that chooses per parameter name (Mixed, Load).

    A Parameter's own ``init`` still wins; otherwise ``_init_weight`` sees
    every parameter, whatever its name.
    """

    # Their state (patterns, arrays) is not in _kwargs: equal only to themselves.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __call__(self, desc, arr):
        init = getattr(desc, 'attrs', {}).get('__init__')
        init = create(init) if init else self
        if init is self:
            self._init_weight(desc, arr)
        else:
            init._init_weight(desc, arr)


@register
class Mixed(_Dispatcher):
    """Pick the initializer by the first regex in ``patterns`` matching the name."""

    def __init__(self, patterns, initializers):
        super().__init__()
        import re
        if len(patterns) != len(initializers):
            raise ValueError('Mixed: patterns and initializers differ in length')
        self.map = [(re.compile(p), create(i)) for p, i in zip(patterns, initializers)]

    def _init_weight(self, name, arr):
        for prog, init in self.map:
            if prog.match(str(name)):
                init._init_weight(name, arr)
                return
        raise ValueError(f'Mixed: no pattern matches {str(name)!r}; add a ".*" '
                         f'pattern as a default')


@register
class Load(_Dispatcher):
    """Initialize from a dict name -> array (or an ``nd.save`` file)."""

    def __init__(self, param, default_init=None, verbose=False):
        super().__init__()
        if isinstance(param, str):
            from .ndarray import load
            param = load(param)
        self.param = {k[4:] if k.startswith(('arg:', 'aux:')) else k: v
                      for k, v in param.items()}
        self.default_init = default_init
        self._verbose = verbose

    def _init_weight(self, name, arr):
        name = str(name)
        if name in self.param:
            src = self.param[name]
            if tuple(src.shape) != tuple(arr.shape):
                raise ValueError(f'init.Load: {name!r} has shape {tuple(src.shape)} '
                                 f'in the source but {arr.shape} in the model')
            arr[:] = src
        elif self.default_init is not None:
            create(self.default_init)._init_weight(name, arr)
        else:
            raise ValueError(f'init.Load: {name!r} is not in the source and no '
                             f'default_init was given')
