"""``FullyConnected``: the dense layer as one GEMM."""
import math

from ..ndarray import invoke
from ..registry import OPS, Case, Op, register
from ._common import _check_kwargs, _float_dtype, _needs_grad, _result

__all__ = ['FullyConnected']


@register
class FullyConnected(Op):
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
        g2 = g.reshape((-1, w.shape[0]))
        grads = [None, None]
        if _needs_grad(x):
            grads[0] = invoke(OPS['dot'], (g2, w)).reshape(x.shape)
        if _needs_grad(w):
            x2 = x.reshape((g2.shape[0], w.shape[1]))
            grads[1] = invoke(OPS['dot'], (g2, x2), {'transpose_a': True})
        if len(inputs) == 3:
            grads.append(g2.sum(axis=0) if _needs_grad(inputs[2]) else None)
        return grads


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
