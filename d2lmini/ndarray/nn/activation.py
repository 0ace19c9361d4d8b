"""Elementwise activations: ``Activation`` and the ``LeakyReLU`` family."""
import math

import numpy as np

from ... import backend
from ...base import _check_kwargs
from .. import cpu_kernels
from ..ndarray import invoke
from ..elemwise import _sigmoid, _softrelu
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import _float_dtype, _needs_grad, _result

__all__ = ['Activation', 'LeakyReLU']


def _away_from_zero(shape):
    """Random inputs with |x| in [0.1, 1]: kinks at 0 stay out of the check."""
    return lambda r: r.uniform(0.1, 1.0, shape) * r.choice([-1.0, 1.0], shape)


def _softsign(a):
    if cpu_kernels.large(a):
        return cpu_kernels.apply(cpu_kernels.softsign, a)
    return a / (1 + abs(a))


def _relu(a):
    if cpu_kernels.large(a):
        return cpu_kernels.apply(cpu_kernels.relu, a, chunk=None)
    return cpu_kernels.maximum0(a)


def _tanh(a):
    if cpu_kernels.large(a):
        return cpu_kernels.apply(cpu_kernels.tanh, a, chunk=None)
    return _xp(a).tanh(a)


# act_type: (forward on raw arrays, backward g, x, y -> dx in NDArray ops)
_ACTIVATIONS = {
    'relu': (_relu, lambda g, x, y: invoke(OPS['_relu_backward'], (g, y))),
    'sigmoid': (_sigmoid, lambda g, x, y: invoke(OPS['_sigmoid_backward'], (g, y))),
    'tanh': (_tanh, lambda g, x, y: invoke(OPS['_tanh_backward'], (g, y))),
    'softrelu': (_softrelu, lambda g, x, y: g * invoke(OPS['sigmoid'], (x,))),
    'softsign': (_softsign, lambda g, x, y: g / invoke(OPS['square'], (1 + abs(x),))),
}


_KERNELS = {'relu': cpu_kernels.relu, 'sigmoid': cpu_kernels.sigmoid,
            'tanh': cpu_kernels.tanh, 'softrelu': cpu_kernels.softrelu,
            'softsign': cpu_kernels.softsign}


def activate_(a, act_type):
    """``a = act_type(a)`` in place: a fused op's fresh output.  Returns
    ``a`` (a new array for non-float ``a``)."""
    if a.dtype.kind != 'f':
        return _ACTIVATIONS[act_type][0](a)
    if a.__class__ is not np.ndarray:      # a device array: cpu_kernels is NumPy's
        a[...] = _ACTIVATIONS[act_type][0](a)
        return a
    return cpu_kernels.run(_KERNELS[act_type], a, a)


# The derivative of each activation from its OUTPUT y alone, as MXNet's
# fused kernels compute it: a fused op (convolution or dense layer plus its
# activation) keeps only y.  softrelu: sigmoid(x) = 1 - exp(-y);
# softsign: 1 / (1 + |x|)^2 = (1 - |y|)^2.
_FROM_OUTPUT = {
    'relu': _ACTIVATIONS['relu'][1],
    'sigmoid': _ACTIVATIONS['sigmoid'][1],
    'tanh': _ACTIVATIONS['tanh'][1],
    'softrelu': lambda g, x, y: g * -invoke(OPS['expm1'], (-y,)),
    'softsign': lambda g, x, y: g * invoke(OPS['square'], (1 - abs(y),)),
}


class _FromOutputBackwardOp(Op):
    """``g * f'(x)`` computed from the activation's output ``y``, as one
    threaded in-cache pass (``cpu_kernels``) instead of three NDArray ops
    and two temporaries.  Same arithmetic in the same order as the
    expression it replaces, so the same bits."""
    differentiable = True

    def infer(self, shapes, dtypes):
        if tuple(shapes[0]) != tuple(shapes[1]):
            raise ValueError(f"operator '{self.name}': gradient shape {shapes[0]} != "
                             f"output shape {shapes[1]}")
        return shapes[0], dtypes[0]

    def forward(self, g, y):
        if g.__class__ is not np.ndarray:  # a device array: the plain expression
            return self.expression(g, y).astype(g.dtype, copy=False)
        out = np.empty_like(g, dtype=np.result_type(g.dtype, y.dtype))
        cpu_kernels.run(self.kernel, out, g, y)
        return out.astype(g.dtype, copy=False)      # the head gradient's dtype


@register
class ReluBackwardOp(_FromOutputBackwardOp):
    """``g * relu_grad(y)`` from relu's output ``y``: MXNet's rule, 1 where
    ``y > 0``, 0 where ``y == 0`` and NaN where ``y`` is NaN, so a NaN input
    never gets a silent zero gradient.  ``nd.relu``, ``Activation('relu')``
    and the fused convolution + relu all use it.

    Computed as ``g * (y > 0)`` (a 1-byte mask: the cheap pass LeNet's
    backward needs), plus a NaN fix-up only when ``max(y)`` says there is one.
    Linear in ``g``; its gradient is itself.
    """
    name = '_relu_backward'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (3, 4)),
                          lambda r: np.maximum(r.uniform(-1, 1, (3, 4)), 0)], grad=[0]),)

    kernel = staticmethod(cpu_kernels.relu_backward)
    expression = staticmethod(lambda g, y: g * (y > 0))

    def forward(self, g, y):
        r = super().forward(g, y)
        if g.__class__ is not np.ndarray:         # on a GPU: no host sync to ask
            if r.dtype.kind != 'f' or y.dtype.kind != 'f':    # max(y) first,
                return r                                      # always fix up
            xp = _xp(g)
            return xp.where(xp.isnan(y), xp.asarray(np.nan, dtype=r.dtype), r)
        if y.size and np.isnan(y.max()):          # NaN in max: some y is NaN
            r = np.where(np.isnan(y), np.asarray(np.nan, dtype=r.dtype), r)
        return r.astype(g.dtype, copy=False)

    def backward(self, gg, inputs, out):
        return [invoke(OPS['_relu_backward'], (gg, inputs[1])), None]


@register
class SigmoidBackwardOp(_FromOutputBackwardOp):
    """``g * y * (1 - y)``, sigmoid's gradient from its output ``y``."""
    name = '_sigmoid_backward'
    kernel = staticmethod(cpu_kernels.sigmoid_backward)
    expression = staticmethod(lambda g, y: g * y * (1 - y))
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (3, 4)),
                          lambda r: r.uniform(0.1, 0.9, (3, 4))]),)

    def backward(self, gg, inputs, out):
        g, y = inputs                    # d/dg = y(1-y); d/dy = g(1-2y)
        return [invoke(OPS['_sigmoid_backward'], (gg, y)), gg * g * (1 - 2 * y)]


@register
class TanhBackwardOp(_FromOutputBackwardOp):
    """``g * (1 - y * y)``, tanh's gradient from its output ``y``."""
    name = '_tanh_backward'
    kernel = staticmethod(cpu_kernels.tanh_backward)
    expression = staticmethod(lambda g, y: g * (1 - y * y))
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (3, 4)),
                          lambda r: r.uniform(-0.9, 0.9, (3, 4))]),)

    def backward(self, gg, inputs, out):
        g, y = inputs                    # d/dg = 1 - y^2; d/dy = -2gy
        return [invoke(OPS['_tanh_backward'], (gg, y)), gg * g * y * -2]


@register
class ActivationOp(Op):
    """Elementwise ``relu``, ``sigmoid``, ``tanh``, ``softrelu`` or ``softsign``."""
    name = 'Activation'
    cases = (Case(inputs=[_away_from_zero((3, 4))], act_type='relu'),
             Case((3, 4), act_type='sigmoid'), Case((3, 4), act_type='tanh'),
             Case((3, 4), act_type='softrelu'), Case((3, 4), act_type='softsign'))

    def infer(self, shapes, dtypes, act_type):
        if act_type not in _ACTIVATIONS:
            raise ValueError(f"operator 'Activation': act_type={act_type!r} is not one "
                             f"of {sorted(_ACTIVATIONS)}")
        return shapes[0], _float_dtype(self.name, dtypes)

    def forward(self, a, act_type):
        return _ACTIVATIONS[act_type][0](a)

    def backward(self, g, inputs, out, act_type):
        return [_ACTIVATIONS[act_type][1](g, inputs[0], out)]


_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _erf(a):
    """The error function, elementwise, to double precision.

    NumPy has none (and SciPy is not a dependency): C's ``erf`` through
    ``math.erf``, as MXNet's kernel calls it.  About 50 ns an element.
    """
    xp = _xp(a)
    # a host computation on purpose: NumPy and CuPy's core have no erf, so a
    # GPU array makes one explicit round trip (math.erf per element)
    host = a if xp is np else backend.to_numpy(a)
    res = _ERF(host).astype(a.dtype, copy=False)
    return res if xp is np else xp.asarray(res)


@register
class GeluGradOp(Op):
    """``d gelu(x) / dx = Phi(x) + x * phi(x)``: the factor GELU's backward
    multiplies the head gradient by (MXNet's ``gelu_grad``)."""
    name = '_gelu_grad'
    differentiable = False

    def infer(self, shapes, dtypes):
        return shapes[0], dtypes[0]

    def forward(self, x):
        xp = _xp(x)
        cdf = 0.5 * (1 + _erf(x * x.dtype.type(_SQRT_HALF)))
        return (cdf + x * xp.exp(-0.5 * x * x) * _INV_SQRT_2PI).astype(x.dtype,
                                                                     copy=False)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@register
class LeakyReLUOp(Op):
    """MXNet's LeakyReLU family: ``leaky``, ``elu``, ``selu``, ``gelu``, ``prelu``.

    ``leaky``: ``x if x > 0 else slope * x``; ``elu``: ``slope * (exp(x) - 1)``
    for ``x <= 0``; ``selu``: the fixed-point scaled ELU; ``gelu``:
    ``x * Phi(x)`` with the exact normal CDF ``Phi`` (erf, not the tanh
    approximation); ``prelu`` takes the slopes as a second input ``gamma``
    (one per channel, axis 1, or one).
    """
    name = 'LeakyReLU'
    cases = (Case(inputs=[_away_from_zero((3, 4))], act_type='leaky', slope=0.1),
             Case(inputs=[_away_from_zero((3, 4))], act_type='elu', slope=0.7),
             Case(inputs=[_away_from_zero((3, 4))], act_type='selu'),
             Case((3, 4), low=-3.0, high=3.0, act_type='gelu'),
             Case(inputs=[_away_from_zero((2, 3, 2)),
                          lambda r: r.uniform(0.1, 0.5, (3,))], act_type='prelu'))
    TYPES = ('leaky', 'elu', 'selu', 'gelu', 'prelu')

    def infer(self, shapes, dtypes, act_type='leaky', slope=0.25, lower_bound=0.125,
              upper_bound=0.334):
        if act_type not in self.TYPES:
            raise ValueError(f"operator 'LeakyReLU': act_type={act_type!r} is not one "
                             f"of {self.TYPES}")
        if (act_type == 'prelu') != (len(shapes) == 2):
            raise ValueError("operator 'LeakyReLU': act_type='prelu' takes (data, "
                             "gamma), the other types data only")
        if act_type == 'prelu':
            x, gm = shapes
            if len(gm) != 1 or (gm[0] != 1 and (len(x) < 2 or gm[0] != x[1])):
                raise ValueError(f"operator 'LeakyReLU': prelu gamma shape {gm} must "
                                 f"be (1,) or (channels,) for data shape {x}")
        return shapes[0], _float_dtype(self.name, dtypes)

    @staticmethod
    def _gamma_shape(x_ndim, gamma):
        # one slope per channel (axis 1), broadcast over the other axes
        return (1, -1) + (1,) * (x_ndim - 2) if x_ndim >= 2 and gamma.shape[0] > 1 \
            else (1,) * x_ndim

    def forward(self, x, gamma=None, act_type='leaky', slope=0.25, lower_bound=0.125,
                upper_bound=0.334):
        xp = _xp(x)
        if act_type == 'leaky':
            return xp.where(x > 0, x, x * slope)
        if act_type == 'prelu':
            gm = gamma.reshape(self._gamma_shape(x.ndim, gamma))
            return xp.where(x > 0, x, x * gm).astype(x.dtype, copy=False)
        if act_type == 'gelu':
            cdf = 0.5 * (1 + _erf(x * x.dtype.type(_SQRT_HALF)))
            return (x * cdf).astype(x.dtype, copy=False)
        neg = xp.expm1(xp.minimum(x, 0))           # exp of x <= 0 only: no overflow
        if act_type == 'elu':
            return xp.where(x > 0, x, neg * slope)
        return xp.where(x > 0, x, neg * _SELU_ALPHA) * x.dtype.type(_SELU_SCALE)

    def backward(self, g, inputs, out, act_type='leaky', slope=0.25, **unused):
        x = inputs[0]
        if act_type == 'gelu':
            return [g * invoke(OPS['_gelu_grad'], (x,))]
        pos = x > 0
        if act_type == 'leaky':
            return [g * (pos * (1 - slope) + slope)]
        if act_type == 'elu':               # d/dx slope*(e^x - 1) = y + slope
            return [g * (pos + (1 - pos) * (out + slope))]
        if act_type == 'selu':
            return [g * (pos * _SELU_SCALE + (1 - pos) * (out + _SELU_SCALE * _SELU_ALPHA))]
        gamma = inputs[1]
        gm = gamma.reshape(self._gamma_shape(x.ndim, gamma))
        dx = g * (pos + (1 - pos) * gm)
        dgamma = None
        if _needs_grad(gamma):
            t = g * x * (1 - pos)
            axes = tuple(i for i in range(x.ndim) if i != 1 or gamma.shape[0] == 1)
            dgamma = t.sum(axis=axes).reshape(gamma.shape)
        return [dx, dgamma]


def Activation(data, act_type, out=None, name=None, **kwargs):
    """``act_type``: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""
    _check_kwargs(Activation, kwargs)
    return _result(invoke(OPS['Activation'], (data,), {'act_type': act_type}), out)


def LeakyReLU(data, gamma=None, act_type='leaky', slope=0.25, lower_bound=0.125,
              upper_bound=0.334, out=None, name=None, **kwargs):
    """'leaky' (``slope``), 'elu', 'selu', 'gelu', or 'prelu' (slopes in
    ``gamma``)."""
    _check_kwargs(LeakyReLU, kwargs)
    args = (data,) if gamma is None else (data, gamma)
    res = invoke(OPS['LeakyReLU'], args, {'act_type': act_type, 'slope': float(slope)})
    return _result(res, out)
