"""Basic layers: containers, Dense, Dropout, BatchNorm, activations, ...

Each layer is a HybridBlock; most call one ``nd`` operator with MXNet's
keyword arguments (``F.FullyConnected(x, weight, bias, num_hidden=...)``),
so a layer computes exactly what the raw operator does with the same
weights.  Input sizes may be left out: the weights' shapes
are then inferred on the first call (``infer_shape``).

Examples
--------
>>> net = nn.Sequential()
>>> net.add(nn.Dense(256, activation='relu'), nn.Dropout(0.5), nn.Dense(10))
>>> net.initialize(init.Xavier())
>>> net(nd.ones((4, 784))).shape
(4, 10)
"""
import warnings

import numpy as np

from ... import initializer
from ... import ndarray as nd
from ...ndarray import NDArray, invoke
from ...ndarray.registry import OPS
from ...util import is_np_array
from ..block import Block, HybridBlock

__all__ = ['Sequential', 'HybridSequential', 'Concurrent', 'HybridConcurrent',
           'Identity', 'Dense', 'Dropout', 'Embedding',
           'BatchNorm', 'LayerNorm', 'Flatten', 'Lambda', 'HybridLambda',
           'Activation', 'LeakyReLU', 'PReLU', 'ELU', 'SELU', 'Swish']


# === containers ===============================================================
class _SequentialMixin:
    """What Sequential and HybridSequential share: add, indexing, repr."""

    def add(self, *blocks):
        """Append ``blocks`` in order (returns None, as in MXNet)."""
        for block in blocks:
            self.register_child(block)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if isinstance(layers, list):            # a slice: a new container
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self):
        return len(self._children)

    def __iter__(self):
        return iter(list(self._children.values()))

    def __repr__(self):
        from ..block import _indent
        mods = '\n'.join(f'  ({key}): {_indent(repr(block), 2)}'
                         for key, block in self._children.items())
        return f'{type(self).__name__}(\n{mods}\n)'

    def _run_children(self, x, *args):
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):    # a block may pass several outputs on
                args = tuple(x[1:])
                x = x[0]
        if args:
            x = (x,) + args
        return x


class Sequential(_SequentialMixin, Block):
    """Stacks Blocks: ``forward`` runs the children in the order they were added.

    >>> net = nn.Sequential(); net.add(nn.Dense(3), nn.Dense(1)); len(net)
    2
    """

    def forward(self, x, *args):
        return self._run_children(x, *args)

    def hybridize(self, active=True, **kwargs):
        """Hybridize the HybridBlock children (warns if all of them are)."""
        if self._children and all(isinstance(c, HybridBlock)
                                  for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' "
                          f"are HybridBlocks. Consider using HybridSequential for "
                          f"the best performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_SequentialMixin, HybridBlock):
    """Sequential for HybridBlocks (``hybridize()`` is accepted)."""

    def hybrid_forward(self, F, x, *args):
        return self._run_children(x, *args)


class Concurrent(Sequential):
    """Runs every child on the same input and concatenates their outputs
    along ``axis``: the branches of an Inception module, the fire module's
    two expansions, DenseNet's ``[x, new features]``.  (MXNet 1.9.1 has it in
    ``gluon.contrib.nn``.)

    >>> net = nn.Concurrent(axis=1); net.add(nn.Dense(3), nn.Dense(2))
    >>> net.initialize(); net(nd.ones((4, 5))).shape
    (4, 5)
    """

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return nd.concat(*[block(x) for block in self._children.values()],
                         dim=self.axis)


class HybridConcurrent(HybridSequential):
    """:class:`Concurrent` for HybridBlocks."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()],
                        dim=self.axis)


class Identity(HybridBlock):
    """Returns its input: the branch of a :class:`HybridConcurrent` that
    passes ``x`` on unchanged."""

    def hybrid_forward(self, F, x):
        return x

    def __repr__(self):
        return f'{type(self).__name__}()'


# === layers with weights ======================================================
class Dense(HybridBlock):
    """A fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    Parameters
    ----------
    units : int
        Output size.
    activation : str, optional
        'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'.
    use_bias : bool
    flatten : bool
        Flatten all but the first input axis (default); if False the layer
        acts on the last axis only.
    in_units : int
        Input size; 0 (default) infers it from the first input.

    ``weight`` has shape (units, in_units) and ``bias`` (units,).
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True,
                 dtype='float32', weight_initializer=None, bias_initializer='zeros',
                 in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = int(units)
            self._in_units = in_units
            self.weight = self.params.get('weight', shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get('bias', shape=(units,),
                                            init=bias_initializer, dtype=dtype,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + '_')
            else:
                self.act = None

    def infer_shape(self, x, *args):
        n = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self.weight.shape[0], n)

    def hybrid_forward(self, F, x, weight, bias=None):
        # one fused op, unless mx.contrib.amp wrapped FullyConnected (to cast)
        if self.act is not None and isinstance(x, NDArray) and \
                not hasattr(F.FullyConnected, '__wrapped__'):
            args = (x, weight) if bias is None else (x, weight, bias)
            return invoke(OPS['_fc_act'], args, {
                'act_type': self.act._act_type, 'num_hidden': self._units,
                'flatten': self._flatten})
        out = F.FullyConnected(x, weight, bias, num_hidden=self._units, name='fwd',
                               no_bias=bias is None, flatten=self._flatten)
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        unknown = -1 if is_np_array() else None     # as MXNet prints each mode
        return (f'{type(self).__name__}({shape[1] if shape[1] else unknown} -> '
                f'{shape[0]}, {self.act if self.act else "linear"})')


class Embedding(HybridBlock):
    """Maps integer indices to rows of a (input_dim, output_dim) weight."""

    def __init__(self, input_dim, output_dim, dtype='float32',
                 weight_initializer=None, sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._input_dim, self._output_dim = input_dim, output_dim
        self.weight = self.params.get('weight', shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True)

    def hybrid_forward(self, F, x, weight):
        return F.take(weight, x, axis=0)

    def __repr__(self):
        return f'{type(self).__name__}({self._input_dim} -> {self._output_dim}, ' \
               f'{np.dtype(self.weight.dtype).name})'


def _gamma_beta(block, n, center, scale, beta_init, gamma_init, deferred=True,
                mark_constant=False):
    """A normalization layer's learned ``* gamma + beta``, ``n`` of each (0:
    known at the first input, when ``deferred``).  The one switched off keeps
    ``grad_req='null'`` (and, with ``mark_constant``, is not differentiable)."""
    kw = {'allow_deferred_init': True} if deferred else {}
    block.gamma = block.params.get(
        'gamma', grad_req='write' if scale else 'null', shape=(n,), init=gamma_init,
        **kw, **({'differentiable': scale} if mark_constant else {}))
    block.beta = block.params.get(
        'beta', grad_req='write' if center else 'null', shape=(n,), init=beta_init,
        **kw, **({'differentiable': center} if mark_constant else {}))


def _channels_from_input(block, x, *args):
    """``infer_shape`` of a layer with one gamma and beta per channel of ``axis``."""
    c = x.shape[block._axis]
    block.gamma.shape = (c,)
    block.beta.shape = (c,)


class BatchNorm(HybridBlock):
    """Batch normalization (Ioffe & Szegedy, 2015) over axis ``axis``.

    In training (``autograd.record()``) it normalizes with the batch's mean
    and variance and updates ``running_mean``/``running_var``
    (``running = momentum * running + (1 - momentum) * batch``); in
    prediction it uses the running statistics.  ``gamma``/``beta`` learn a
    scale and shift; the running statistics are Parameters with
    ``grad_req='null'`` (saved with the model, never trained).
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer='zeros',
                 gamma_initializer='ones', running_mean_initializer='zeros',
                 running_variance_initializer='ones', in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'axis': axis, 'eps': epsilon, 'momentum': momentum,
                        'fix_gamma': not scale, 'use_global_stats': use_global_stats}
        if in_channels != 0:
            self.in_channels = in_channels
        _gamma_beta(self, in_channels, center, scale, beta_initializer,
                    gamma_initializer, mark_constant=True)
        self.running_mean = self.params.get('running_mean', grad_req='null',
                                            shape=(in_channels,),
                                            init=running_mean_initializer,
                                            allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get('running_var', grad_req='null',
                                           shape=(in_channels,),
                                           init=running_variance_initializer,
                                           allow_deferred_init=True,
                                           differentiable=False)

    def infer_shape(self, x, *args):
        c = x.shape[self._kwargs['axis']]
        for p in (self.gamma, self.beta, self.running_mean, self.running_var):
            p.shape = (c,)

    def cast(self, dtype):
        if np.dtype(dtype).name == 'float16':   # statistics stay in float32
            dtype = 'float32'
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name='fwd',
                           **self._kwargs)

    def __repr__(self):
        parts = []
        for k, v in self._kwargs.items():
            parts.append(f'scale={not v!r}' if k == 'fix_gamma' else f'{k}={v!r}')
        c = self.gamma.shape[0]
        return f'{type(self).__name__}({", ".join(parts)}, in_channels={c or None})'


class LayerNorm(HybridBlock):
    """Layer normalization over ``axis`` (default: the last), per sample."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones', in_channels=0,
                 **kwargs):
        super().__init__(**kwargs)
        self._axis, self._epsilon = axis, epsilon
        self._center, self._scale = center, scale
        _gamma_beta(self, in_channels, center, scale, beta_initializer,
                    gamma_initializer)

    infer_shape = _channels_from_input

    def hybrid_forward(self, F, x, gamma, beta):
        axis = self._axis % x.ndim
        mean = F.mean(x, axis=axis, keepdims=True)
        xc = x - mean
        var = F.mean(xc * xc, axis=axis, keepdims=True)
        out = xc / F.sqrt(var + self._epsilon)
        bshape = tuple(x.shape[i] if i == axis else 1 for i in range(x.ndim))
        if self._scale:
            out = out * gamma.reshape(bshape)
        if self._center:
            out = out + beta.reshape(bshape)
        return out

    def __repr__(self):
        return (f'{type(self).__name__}(axis={self._axis}, eps={self._epsilon}, '
                f'in_channels={self.gamma.shape[0] or None})')


# === layers without weights ===================================================
class Dropout(HybridBlock):
    """Zeroes each element with probability ``rate`` in training (scaling the
    rest by 1/(1-rate)); the identity in prediction."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise ValueError(f'Dropout rate must be in [0, 1], got {rate}')
        self._rate = rate
        self._axes = tuple(axes)

    def hybrid_forward(self, F, x):
        if self._rate == 0:
            return x
        if self._axes:
            return F.Dropout(x, p=self._rate, axes=self._axes, name='fwd')
        return F.Dropout(x, p=self._rate, name='fwd')

    def __repr__(self):
        return f'{type(self).__name__}(p = {self._rate}, axes={self._axes})'


class Flatten(HybridBlock):
    """Reshapes (N, d1, d2, ...) to (N, d1*d2*...)."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return type(self).__name__


_ACTIVATIONS = ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign')


class Activation(HybridBlock):
    """An elementwise activation: 'relu', 'sigmoid', 'tanh', 'softrelu' or
    'softsign' (``F.Activation(x, act_type=...)``)."""

    def __init__(self, activation, **kwargs):
        if activation not in _ACTIVATIONS:
            raise ValueError(f'unknown activation {activation!r}; choose one of '
                             f'{_ACTIVATIONS} (or use nn.LeakyReLU, nn.ELU, ...)')
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name='fwd')

    def __repr__(self):
        return f'{type(self).__name__}({self._act_type})'


class LeakyReLU(HybridBlock):
    """``x`` for x > 0, ``alpha * x`` otherwise."""

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise ValueError(f'LeakyReLU: alpha must be >= 0, got {alpha}')
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='leaky', slope=self._alpha, name='fwd')

    def __repr__(self):
        return f'{type(self).__name__}({self._alpha})'


class PReLU(HybridBlock):
    """LeakyReLU with a learned slope per channel (axis 1), or one shared."""

    def __init__(self, alpha_initializer=initializer.Constant(0.25), in_channels=1,
                 **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get('alpha', shape=(in_channels,),
                                         init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, alpha, act_type='prelu', name='fwd')


class ELU(HybridBlock):
    """``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='elu', slope=self._alpha, name='fwd')


class SELU(HybridBlock):
    """Scaled ELU with the self-normalizing constants."""

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='selu', name='fwd')


class Swish(HybridBlock):
    """``x * sigmoid(beta * x)``."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x)


class Lambda(Block):
    """Wraps a function (or the name of an ``nd`` function) as a Block.

    >>> nn.Lambda('tanh')(nd.zeros(2))                  # doctest: +SKIP
    """

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise ValueError(f'nd has no function {function!r}')
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise TypeError(f'Lambda needs a function or the name of one, got '
                            f'{type(function).__name__}')
        self._func_name = getattr(function, '__name__', str(function))

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return f'{type(self).__name__}({self._func_name})'


class HybridLambda(HybridBlock):
    """Wraps ``function(F, x, *args)`` (or an ``nd`` function's name)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise ValueError(f'nd has no function {function!r}')
            self._func = lambda F, *args: getattr(F, function)(*args)
        elif callable(function):
            self._func = function
        else:
            raise TypeError(f'HybridLambda needs a function or the name of one, got '
                            f'{type(function).__name__}')
        self._func_name = getattr(function, '__name__', str(function))

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f'{type(self).__name__}({self._func_name})'

