"""``FullyConnected``: the dense layer as one GEMM."""
import math

from ...base import _check_kwargs
from ..ndarray import invoke
from ..registry import OPS, Case, Op, register
from ._common import _float_dtype, _needs_grad, _result
from .activation import _FROM_OUTPUT, activate_

__all__ = ['FullyConnected']


@register
class FullyConnectedOp(Op):
    """``out = data @ weight.T + bias``: one GEMM.

    ``flatten=True`` (MXNet's default) treats ``data`` as ``(N, -1)``;
    ``flatten=False`` applies the layer to the last axis.
    """
    name = 'FullyConnected'
    cases = (Case((3, 4), (5, 4), (5,), num_hidden=5),
             Case((2, 3, 2), (4, 6), num_hidden=4),
             Case((2, 3, 4), (5, 4), (5,), num_hidden=5, flatten=False))

    def infer(self, shapes, dtypes, num_hidden=None, flatten=True):
        x, w = shapes[0], shapes[1]
        if not x:
            raise ValueError("operator 'FullyConnected': data must have at least "
                             "one axis, got a scalar")
        d = math.prod(x[1:]) if flatten else x[-1]
        nh = w[0] if num_hidden is None and w else num_hidden
        if tuple(w) != (nh, d):
            raise ValueError(f"operator 'FullyConnected': weight shape {w} does not "
                             f"match data shape {x} (flatten={flatten}) and "
                             f"num_hidden={nh}: expected {(nh, d)}")
        if len(shapes) == 3 and tuple(shapes[2]) != (nh,):
            raise ValueError(f"operator 'FullyConnected': bias shape {shapes[2]} "
                             f"!= ({nh},)")
        out = (x[0], nh) if flatten else tuple(x[:-1]) + (nh,)
        return out, _float_dtype(self.name, dtypes)

    def forward(self, x, w, b=None, num_hidden=None, flatten=True):
        if x.ndim == 2:
            x2 = x
        else:
            x2 = x.reshape(x.shape[0], -1) if flatten else x.reshape(-1, x.shape[-1])
        y = x2 @ w.T
        if y.dtype != x.dtype:
            y = y.astype(x.dtype)
        if b is not None:
            y += b
        return y if flatten else y.reshape(x.shape[:-1] + (w.shape[0],))

    def backward(self, g, inputs, out, num_hidden=None, flatten=True):
        x, w = inputs[0], inputs[1]
        g2 = _as_shape(g, (g.size // w.shape[0], w.shape[0]))
        grads = [None, None]
        if _needs_grad(x):
            grads[0] = _as_shape(invoke(OPS['dot'], (g2, w)), x.shape)
        if _needs_grad(w):
            x2 = _as_shape(x, (g2.shape[0], w.shape[1]))
            grads[1] = invoke(OPS['dot'], (g2, x2), {'transpose_a': True})
        if len(inputs) == 3:
            grads.append(g2.sum(axis=0) if _needs_grad(inputs[2]) else None)
        return grads


@register
class FullyConnectedActOp(Op):
    """``Activation(FullyConnected(x, w, b), act_type)`` as ONE op: the
    activation runs in place on the GEMM's fresh output, and the backward
    pass takes its derivative from the output alone.  What gluon's
    ``Dense(..., activation=...)`` runs imperatively (a hybridized graph
    keeps MXNet's two nodes)."""
    name = '_fc_act'
    cases = tuple(Case((3, 4), (5, 4), (5,), num_hidden=5, act_type=a)
                  for a in ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign'))

    def infer(self, shapes, dtypes, act_type='relu', **fc):
        if act_type not in _FROM_OUTPUT:
            raise ValueError(f"operator '{self.name}': act_type={act_type!r} is not "
                             f"one of {sorted(_FROM_OUTPUT)}")
        return type(OPS['FullyConnected']).infer(self, shapes, dtypes, **fc)

    def forward(self, x, w, b=None, act_type='relu', **fc):
        y = OPS['FullyConnected'].forward(x, w, b, **fc)
        return activate_(y, act_type)

    def backward(self, dy, inputs, out, act_type='relu', **fc):
        dz = _FROM_OUTPUT[act_type](dy, None, out)
        return OPS['FullyConnected'].backward(dz, inputs, out, **fc)


def _as_shape(a, shape):
    """``a.reshape(shape)``, or ``a`` itself when it has that shape already
    (a reshape is an engine op; the common 2-D case needs none)."""
    return a if a.shape == tuple(shape) else a.reshape(shape)


def FullyConnected(data, weight, bias=None, num_hidden=None, no_bias=False,
                   flatten=True, out=None, name=None, **kwargs):
    """``data @ weight.T + bias`` (``weight``: ``(num_hidden, in_units)``).

    >>> nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), nd.zeros(4),
    ...                   num_hidden=4).shape
    (2, 4)
    """
    _check_kwargs(FullyConnected, kwargs)
    if num_hidden is None:
        raise TypeError("FullyConnected() missing required keyword 'num_hidden'")
    args = (data, weight) if no_bias or bias is None else (data, weight, bias)
    res = invoke(OPS['FullyConnected'], args,
                 {'num_hidden': int(num_hidden), 'flatten': bool(flatten)})
    return _result(res, out)
