"""``InstanceNorm`` and ``GroupNorm``: normalization per sample (MXNet 1.x).

Both normalize each sample on its own, over a group of axes, then scale and
shift by learned ``gamma``/``beta``:

* ``InstanceNorm(data, gamma, beta)``: each (sample, channel) over the
  spatial axes; ``gamma``/``beta`` have one value per channel.
* ``GroupNorm(data, gamma, beta, num_groups)``: the channels split into
  ``num_groups`` groups; each (sample, group) over its channels and the
  spatial axes.  As in MXNet 1.x, ``gamma``/``beta`` have one value per
  *group*, shape ``(num_groups,)`` (not one per channel, as in the paper).

The variance is the biased one (divided by the count), as in MXNet.  One
forward and one backward serve both ops: the data is viewed as ``(N, G, M)``
(G = channels for InstanceNorm, groups for GroupNorm) and normalized over M.
"""
from ...base import _check_kwargs
from ..ndarray import invoke
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import _float_dtype, _needs_grad, _result

__all__ = ['InstanceNorm', 'GroupNorm']


def _grouped(shape, groups):
    """``(N, G, M)``: the view both ops normalize over its last axis."""
    return (shape[0], groups, -1)


def _forward(x, gamma, beta, groups, eps):
    xp = _xp(x)
    xg = x.reshape(_grouped(x.shape, groups))
    mean = xg.mean(axis=2, keepdims=True)
    xc = xg - mean
    var = (xc * xc).mean(axis=2, keepdims=True)
    xc *= 1 / xp.sqrt(var + eps)
    xc *= gamma.reshape(1, -1, 1).astype(x.dtype, copy=False)
    xc += beta.reshape(1, -1, 1).astype(x.dtype, copy=False)
    return xc.reshape(x.shape)


def _backward(g, x, gamma, beta, groups, eps):
    """``[dx, dgamma, dbeta]`` in NDArray ops (so they can be recorded)."""
    shape = _grouped(x.shape, groups)
    xg, gg = x.reshape(shape), g.reshape(shape)
    mean = xg.mean(axis=2, keepdims=True)
    xc = xg - mean
    invstd = invoke(OPS['rsqrt'], ((xc * xc).mean(axis=2, keepdims=True) + eps,))
    xhat = xc * invstd
    grads = [None, None, None]
    if _needs_grad(x):
        dxhat = gg * gamma.reshape((1, -1, 1))
        dx = invstd * (dxhat - dxhat.mean(axis=2, keepdims=True)
                       - xhat * (dxhat * xhat).mean(axis=2, keepdims=True))
        grads[0] = dx.reshape(x.shape)
    if _needs_grad(gamma):
        grads[1] = (gg * xhat).sum(axis=(0, 2))
    if _needs_grad(beta):
        grads[2] = gg.sum(axis=(0, 2))
    return grads


def _check(name, shapes, dtypes, groups, what):
    x = tuple(shapes[0])
    if len(x) < 3:
        raise ValueError(f"operator '{name}': data must have at least 3 axes (N, C, "
                         f"...), got shape {x}")
    if x[1] % groups:
        raise ValueError(f"operator '{name}': {x[1]} channels (data shape {x}) are "
                         f"not divisible by num_groups={groups}")
    for nm, s in zip(('gamma', 'beta'), shapes[1:]):
        if tuple(s) != (groups,):
            raise ValueError(f"operator '{name}': {nm} shape {tuple(s)} != "
                             f"({groups},), one value per {what} of data shape {x}")
    return x, _float_dtype(name, dtypes)


def _inputs(shape, params):
    return [lambda r: r.uniform(-1, 1, shape), lambda r: r.uniform(0.5, 1.5, params),
            lambda r: r.uniform(-1, 1, params)]


@register
class InstanceNormOp(Op):
    """Normalizes each (sample, channel) over the spatial axes."""
    name = 'InstanceNorm'
    cases = (Case(inputs=_inputs((2, 3, 4), 3), eps=1e-3),
             Case(inputs=_inputs((2, 2, 3, 2), 2), eps=1e-5))

    def infer(self, shapes, dtypes, eps=1e-3):
        return _check(self.name, shapes, dtypes, shapes[0][1] if len(shapes[0]) > 1
                      else 1, 'channel')

    def forward(self, x, gamma, beta, eps=1e-3):
        return _forward(x, gamma, beta, x.shape[1], eps)

    def backward(self, g, inputs, out, eps=1e-3):
        x, gamma, beta = inputs
        return _backward(g, x, gamma, beta, x.shape[1], eps)


@register
class GroupNormOp(Op):
    """Normalizes each (sample, group of channels) over the group's channels
    and the spatial axes."""
    name = 'GroupNorm'
    cases = (Case(inputs=_inputs((2, 4, 3), 2), num_groups=2),
             Case(inputs=_inputs((2, 6, 2, 2), 3), num_groups=3, eps=1e-3),
             Case(inputs=_inputs((3, 2, 3), 1), num_groups=1))

    def infer(self, shapes, dtypes, num_groups=1, eps=1e-5):
        return _check(self.name, shapes, dtypes, num_groups, 'group')

    def forward(self, x, gamma, beta, num_groups=1, eps=1e-5):
        return _forward(x, gamma, beta, num_groups, eps)

    def backward(self, g, inputs, out, num_groups=1, eps=1e-5):
        x, gamma, beta = inputs
        return _backward(g, x, gamma, beta, num_groups, eps)


def InstanceNorm(data, gamma, beta, eps=1e-3, out=None, name=None, **kwargs):
    """Instance normalization (Ulyanov et al., 2016): each (sample, channel)
    of ``data (N, C, ...)`` over its spatial axes, then ``* gamma + beta``
    (shapes ``(C,)``).

    >>> x = nd.array([[[1., 2., 3.]]])
    >>> nd.InstanceNorm(x, nd.ones(1), nd.zeros(1)).shape
    (1, 1, 3)
    """
    _check_kwargs(InstanceNorm, kwargs)
    return _result(invoke(OPS['InstanceNorm'], (data, gamma, beta),
                          {'eps': float(eps)}), out)


def GroupNorm(data, gamma, beta, num_groups=1, eps=1e-5, output_mean_var=False,
              out=None, name=None, **kwargs):
    """Group normalization (Wu & He, 2018): the channels of ``data (N, C,
    ...)`` in ``num_groups`` groups, each (sample, group) normalized, then
    ``* gamma + beta`` with one value per group (MXNet 1.x: shape
    ``(num_groups,)``).  ``output_mean_var`` also returns the mean and the
    standard deviation, shape ``(N, num_groups)``.

    >>> x = nd.arange(24).reshape((2, 3, 4))
    >>> nd.GroupNorm(x, nd.ones(1), nd.zeros(1)).shape
    (2, 3, 4)
    """
    _check_kwargs(GroupNorm, kwargs)
    res = invoke(OPS['GroupNorm'], (data, gamma, beta),
                 {'num_groups': int(num_groups), 'eps': float(eps)})
    if output_mean_var:
        xg = data.reshape((data.shape[0], int(num_groups), -1))
        mean = xg.mean(axis=2)
        xc = xg - mean.expand_dims(2)
        std = invoke(OPS['sqrt'], ((xc * xc).mean(axis=2) + eps,))
        return [res, mean, std]
    return _result(res, out)
