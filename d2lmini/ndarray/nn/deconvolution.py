"""``Deconvolution``: the transposed convolution (gluon's ``Conv*DTranspose``).

A convolution maps ``x (N, C, H, W)`` to ``y (N, F, OH, OW)``; its data
gradient maps a ``(N, F, OH, OW)`` array back to ``(N, C, H, W)``.  That
gradient, used as a forward pass, is the *deconvolution*: each input pixel
spreads a kernel-sized patch onto a larger output (upsampling).  So the op
reuses the convolution's machinery: ``Deconvolution(x, w)`` is
``_conv_grads(dy=x, w=w)``, for a convolution whose input would have the
deconvolution's output shape.  Its own gradients are a convolution (data)
and a convolution weight gradient (weight).

MXNet's arguments: ``weight (C_in, num_filter/num_group, *kernel)``;
output size ``(in - 1)*stride - 2*pad + dilate*(kernel - 1) + 1 + adj``,
with ``adj < stride``; a ``target_shape`` sets ``pad`` and ``adj`` instead
(MXNet's rule: ``total = stride*(in - 1) + dilate*(kernel - 1) + 1 - target``,
``adj = total % 2``, ``pad = (total + 1) // 2``).  ``no_bias`` defaults to
True, as in MXNet.
"""
from ...base import _check_kwargs
from ..ndarray import invoke, zeros_like
from ..matrix import concat
from ..registry import OPS, Case, Op, register
from ._common import (_channels_first, _channels_last, _float_dtype, _lift, _needs_grad,
                      _result, _spatial, _tuple)
from .convolution import (_CONV_IGNORED, _check_out_grad, _conv_attrs, _conv_geom,
                          _conv_grads, _lift_attrs)
from .pad import pad as _pad

__all__ = ['Deconvolution']


def _out_size(n, k, s, d, p, a):
    return (n - 1) * s - 2 * p + d * (k - 1) + 1 + a


@register
class DeconvolutionOp(Op):
    """2-D transposed convolution, NCHW: ``data (N, C, H, W)``, ``weight (C,
    num_filter/num_group, KH, KW)``, optional ``bias (num_filter,)``."""
    name = 'Deconvolution'
    cases = (Case((2, 3, 3, 3), (3, 4, 3, 3), (4,), kernel=(3, 3), num_filter=4),
             Case((2, 4, 3, 3), (4, 2, 3, 2), kernel=(3, 2), stride=(2, 3), pad=(1, 0),
                  adj=(1, 2), num_group=2, num_filter=4),
             Case((1, 2, 3, 4), (2, 3, 2, 2), (3,), kernel=(2, 2), dilate=(2, 1),
                  stride=(2, 2), pad=(1, 1), num_filter=3))

    @staticmethod
    def _geom(name, dshape, wshape, kernel, stride, dilate, pad, adj, num_group):
        if len(dshape) != 4 or len(wshape) != 4:
            raise ValueError(f"operator '{name}': data and weight must be 4-D, got "
                             f"shapes {tuple(dshape)} and {tuple(wshape)}")
        if any(a >= s for a, s in zip(adj, stride)) or min(adj) < 0:
            raise ValueError(f"operator '{name}': adj {adj} must be >= 0 and smaller "
                             f"than stride {stride}")
        n, c, h, w = dshape
        f = wshape[1] * num_group
        oshape = (n, f) + tuple(_out_size(*a) for a in zip((h, w), kernel, stride,
                                                            dilate, pad, adj))
        if min(oshape[2:]) < 1:
            raise ValueError(f"operator '{name}': output shape {oshape} for data "
                             f"shape {tuple(dshape)}: pad {pad} is too large")
        # the convolution this is the data gradient of
        g = _conv_geom(name, oshape, tuple(wshape), kernel, stride, dilate, pad,
                       num_group)
        _check_out_grad(name, tuple(dshape), g, wshape[0])
        return g, oshape

    def infer(self, shapes, dtypes, kernel=None, stride=(1, 1), dilate=(1, 1),
              pad=(0, 0), adj=(0, 0), num_filter=None, num_group=1):
        g, oshape = self._geom(self.name, tuple(shapes[0]), tuple(shapes[1]), kernel,
                               stride, dilate, pad, adj, num_group)
        if num_filter is not None and num_filter != oshape[1]:
            raise ValueError(f"operator 'Deconvolution': num_filter={num_filter} but "
                             f"weight shape {tuple(shapes[1])} with num_group="
                             f"{num_group} gives {oshape[1]} output channels")
        if len(shapes) == 3 and tuple(shapes[2]) != (oshape[1],):
            raise ValueError(f"operator 'Deconvolution': bias shape {tuple(shapes[2])} "
                             f"!= ({oshape[1]},)")
        return oshape, _float_dtype(self.name, dtypes)

    def forward(self, x, w, b=None, kernel=None, stride=(1, 1), dilate=(1, 1),
                pad=(0, 0), adj=(0, 0), num_filter=None, num_group=1):
        g, _ = self._geom(self.name, x.shape, w.shape, kernel, stride, dilate, pad,
                          adj, num_group)
        y = _conv_grads(x, g, num_group, w=w)[0]
        if b is not None:
            y += b.reshape(1, -1, 1, 1).astype(y.dtype, copy=False)
        return y

    def backward(self, gy, inputs, out, kernel=None, stride=(1, 1), dilate=(1, 1),
                 pad=(0, 0), adj=(0, 0), num_filter=None, num_group=1):
        x, w = inputs[0], inputs[1]
        geom = {'kernel': kernel, 'stride': stride, 'dilate': dilate, 'pad': pad,
                'num_group': num_group}
        grads = [None, None]
        if _needs_grad(x):          # the adjoint of a data gradient: a convolution
            grads[0] = invoke(OPS['Convolution'], (gy, w), geom)
        if _needs_grad(w):          # the weight gradient of that convolution
            grads[1] = invoke(OPS['_conv_weight_grad'], (x, gy),
                              dict(geom, weight_shape=w.shape))
        if len(inputs) == 3:
            grads.append(gy.sum(axis=(0, 2, 3)) if _needs_grad(inputs[2]) else None)
        return grads


def _target_pad(n, shape, attrs, target_shape):
    """MXNet's InferPad: ``pad`` and ``adj`` that give ``target_shape``."""
    target = _tuple('Deconvolution', 'target_shape', target_shape, n)
    pad, adj = [], []
    for size, k, s, d, t in zip(shape, attrs['kernel'], attrs['stride'],
                                attrs['dilate'], target):
        total = s * (size - 1) + d * (k - 1) + 1 - t
        if total < 0:
            raise ValueError(f"operator 'Deconvolution': target_shape {target} is too "
                             f"big for data shape {shape} (largest: no padding)")
        adj.append(total % 2)
        pad.append((total + 1) // 2)
    return tuple(pad), tuple(adj)


def Deconvolution(data, weight, bias=None, kernel=None, stride=None, dilate=None,
                  pad=None, adj=None, target_shape=None, num_filter=None, num_group=1,
                  no_bias=True, layout=None, out=None, name=None, **kwargs):
    """Transposed convolution, 1-D, 2-D or 3-D (MXNet's ``Deconvolution``).

    ``weight``: ``(C_in, num_filter/num_group, *kernel)`` (channels-last
    layouts: ``(C_in, *kernel, num_filter/num_group)``).  Output size per
    axis: ``(in - 1)*stride - 2*pad + dilate*(kernel - 1) + 1 + adj``, or
    ``target_shape``.  Note MXNet's default ``no_bias=True``.

    >>> nd.Deconvolution(nd.ones((1, 2, 3, 3)), nd.ones((2, 4, 2, 2)), kernel=2,
    ...                  stride=2, num_filter=4).shape
    (1, 4, 6, 6)
    """
    _check_kwargs(Deconvolution, kwargs, _CONV_IGNORED)
    if kernel is None or num_filter is None:
        raise TypeError("Deconvolution() needs the keywords 'kernel' and 'num_filter'")
    n, last = _spatial('Deconvolution', data, layout)
    if last:
        data, weight = _channels_first(data), _channels_first(weight)
    if weight.ndim != n + 2:
        raise ValueError(f"operator 'Deconvolution': {n}-D weight must be {n + 2}-D "
                         f"(C_in, num_filter/num_group, *kernel), got shape "
                         f"{weight.shape}")
    attrs = _conv_attrs('Deconvolution', n, kernel, stride, dilate, pad)
    attrs['adj'] = _tuple('Deconvolution', 'adj', 0 if adj is None else adj, n)
    if target_shape is not None and any(_tuple('Deconvolution', 'target_shape',
                                               target_shape, n)):
        attrs['pad'], attrs['adj'] = _target_pad(n, data.shape[2:], attrs, target_shape)
    attrs.update(num_filter=int(num_filter), num_group=int(num_group))
    bias = None if no_bias else bias
    if n == 3:
        res = _deconv3d(data, weight, bias, attrs)
    else:
        if n == 1:
            attrs = _lift_attrs(attrs)
            data, weight = _lift(data), _lift(weight)
        args = (data, weight) if bias is None else (data, weight, bias)
        res = invoke(OPS['Deconvolution'], args, attrs)
        if n == 1:
            res = res.reshape((res.shape[0], res.shape[1], res.shape[3]))
    return _result(_channels_last(res) if last else res, out)


def _deconv3d(data, weight, bias, attrs):
    """A 3-D deconvolution from 2-D ones, one per depth tap ``t`` of the kernel.

    Input depth ``i`` lands on output depth ``i*sd + t*dd - pd``: each tap is
    one 2-D deconvolution with the depths folded into the batch, spread
    ``sd`` apart (zeros between), shifted by ``t*dd`` and summed; the result
    is then cropped by ``pd`` (and grown by ``adj``).  All recorded ops.
    """
    (kd, kh, kw), (sd, sh, sw) = attrs['kernel'], attrs['stride']
    (dd, dh, dw), (pd, ph, pw) = attrs['dilate'], attrs['pad']
    (ad, ah, aw), g = attrs['adj'], attrs['num_group']
    n, c, d, h, w = data.shape
    if weight.shape[0] != c or weight.shape[2] != kd:
        raise ValueError(f"operator 'Deconvolution': weight shape {weight.shape} does "
                         f"not match data shape {data.shape} and kernel "
                         f"{attrs['kernel']}")
    if ad >= sd:
        raise ValueError(f"operator 'Deconvolution': adj {attrs['adj']} must be smaller "
                         f"than stride {attrs['stride']}")
    plane = {'kernel': (kh, kw), 'stride': (sh, sw), 'dilate': (dh, dw),
             'pad': (ph, pw), 'adj': (ah, aw), 'num_filter': attrs['num_filter'],
             'num_group': g}
    xs = data.transpose((0, 2, 1, 3, 4)).reshape((n * d, c, h, w))
    full = (d - 1) * sd + dd * (kd - 1) + 1          # output depth before cropping
    span = (d - 1) * sd + 1
    total = None
    for t in range(kd):
        u = invoke(OPS['Deconvolution'], (xs, weight[:, :, t]), plane)
        u = u.reshape((n, d) + u.shape[1:]).transpose((0, 2, 1, 3, 4))
        if sd > 1:                                   # zeros between the depths
            z = zeros_like(u).expand_dims(3)
            u = concat(*([u.expand_dims(3)] + [z] * (sd - 1)), dim=3)
            u = u.reshape(u.shape[:2] + (d * sd,) + u.shape[4:])[:, :, :span]
        before = t * dd
        u = _pad(u, mode='constant',
                 pad_width=(0, 0, 0, 0, before, full - span - before, 0, 0, 0, 0))
        total = u if total is None else total + u
    od = full - 2 * pd + ad
    if od < 1:
        raise ValueError(f"operator 'Deconvolution': pad {attrs['pad']} is too large "
                         f"for data shape {data.shape}")
    if pd + od > full:
        total = _pad(total, mode='constant',
                     pad_width=(0, 0, 0, 0, 0, pd + od - full, 0, 0, 0, 0))
    out = total[:, :, pd:pd + od]
    if bias is not None:
        out = out + bias.reshape((1, -1, 1, 1, 1))
    return out
