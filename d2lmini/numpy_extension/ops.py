"""npx's neural-network operators: MXNet's ``mxnet.numpy_extension`` names
(``npx.relu``, ``npx.convolution``, ``npx.sequence_mask``, ...) over the
``nd`` operators.

Nothing here has a kernel of its own: each function calls the ``nd``
operator of the same meaning (``npx.fully_connected`` is
``nd.FullyConnected``), or composes a few of them, so the op table's
gradient checks cover every one.  What is npx's own is the keyword names
(MXNet 1.9.1's) and the result type: ``mx.np.ndarray`` always, as in MXNet.

>>> npx.relu(np.array([-1., 2.]))
array([0., 2.])
"""
import numpy as _onp

from .. import ndarray as nd
from ..ndarray.ndarray import NDArray

__all__ = ['relu', 'sigmoid', 'activation', 'leaky_relu', 'softmax', 'log_softmax',
           'masked_softmax', 'fully_connected', 'convolution', 'deconvolution',
           'pooling', 'batch_norm', 'layer_norm', 'group_norm', 'instance_norm',
           'dropout', 'embedding', 'one_hot', 'pick', 'topk', 'batch_dot',
           'batch_flatten', 'sequence_mask', 'reshape', 'reshape_like',
           'arange_like', 'gather_nd', 'smooth_l1', 'erf', 'erfinv', 'sign',
           'cast', 'slice', 'shape_array', 'nonzero']


def _np(out):
    """An operator's fresh output (or list of them) as ``mx.np`` arrays."""
    from ..numpy.multiarray import ndarray
    if isinstance(out, (list, tuple)):
        return [_np(o) for o in out]
    if isinstance(out, NDArray) and out.__class__ is not ndarray:
        out.__class__ = ndarray          # same layout: a pointer change
    return out


def _check(fn, **arrays):
    for k, v in arrays.items():
        if v is not None and not isinstance(v, NDArray):
            raise TypeError(f'npx.{fn}: {k} must be an mx.np.ndarray, got '
                            f'{type(v).__name__} (make one with np.array(...))')


# --- activations ---------------------------------------------------------------------
def relu(data, out=None, name=None):
    """``max(data, 0)`` elementwise."""
    return _np(nd.relu(data, out=out))


def sigmoid(data, out=None, name=None):
    """``1 / (1 + exp(-data))`` elementwise."""
    return _np(nd.sigmoid(data, out=out))


def activation(data, act_type='relu', out=None, name=None, **kwargs):
    """``act_type`` of ``relu``, ``sigmoid``, ``tanh``, ``softrelu``, ``softsign``."""
    return _np(nd.Activation(data, act_type=act_type, out=out))


def leaky_relu(data, gamma=None, act_type='leaky', slope=0.25, lower_bound=0.125,
               upper_bound=0.334, out=None, name=None, **kwargs):
    """Leaky ReLU and its kin (``prelu``, ``elu``, ``selu``, ``gelu``, ``rrelu``)."""
    return _np(nd.LeakyReLU(data, gamma=gamma, act_type=act_type, slope=slope,
                            lower_bound=lower_bound, upper_bound=upper_bound, out=out))


def _length_mask(data, length, axis):
    """A boolean-valued mask, ``data``'s shape: position along ``axis`` is
    below ``length`` (one length per entry of the other axes)."""
    axis = axis % data.ndim
    steps = nd.arange(data.shape[axis], ctx=data.context)
    steps = steps.reshape(tuple(-1 if i == axis else 1 for i in range(data.ndim)))
    lens = nd.expand_dims(length.astype(data.dtype), axis)
    return nd.broadcast_lesser(steps, lens)


def softmax(data, length=None, axis=-1, temperature=None, dtype=None,
            use_length=False, out=None, name=None, **kwargs):
    """Softmax along ``axis``; with ``use_length`` only the first ``length``
    entries of each row count, the rest are 0 (MXNet's masked softmax)."""
    if not use_length:
        return _np(nd.softmax(data, axis=axis, temperature=temperature, out=out))
    _check('softmax', length=length)
    if not _onp.issubdtype(length.dtype, _onp.integer):
        raise TypeError(f'npx.softmax: length must be an integer array, got '
                        f'{length.dtype}')
    mask = _length_mask(data, length, axis)
    filled = nd.where(mask, data, nd.full(data.shape, -1e30, ctx=data.context,
                                          dtype=data.dtype))
    prob = nd.softmax(filled, axis=axis, temperature=temperature)
    return _np(nd.where(mask, prob, nd.zeros_like(prob), out=out))


def masked_softmax(data, mask, axis=-1, temperature=1.0, normalize=True, out=None,
                   name=None):
    """Softmax over the entries where ``mask`` is true; the others are 0."""
    _check('masked_softmax', mask=mask)
    mask = nd.broadcast_to(mask.astype(data.dtype), data.shape) if \
        mask.shape != data.shape else mask.astype(data.dtype)
    filled = nd.where(mask, data, nd.full(data.shape, -1e30, ctx=data.context,
                                          dtype=data.dtype))
    prob = nd.softmax(filled, axis=axis, temperature=temperature)
    return _np(nd.where(mask, prob, nd.zeros_like(prob), out=out))


def log_softmax(data, axis=-1, temperature=None, dtype=None, use_length=False,
                out=None, name=None, **kwargs):
    """``log(softmax(data))`` along ``axis``, computed stably."""
    if use_length:
        raise NotImplementedError('npx.log_softmax: use_length is not supported')
    return _np(nd.log_softmax(data, axis=axis, temperature=temperature, out=out))


# --- layers ------------------------------------------------------------------------
def fully_connected(data, weight, bias=None, num_hidden=None, no_bias=False,
                    flatten=True, out=None, name=None, **kwargs):
    """``data @ weight.T + bias`` (``flatten``: ``data`` as 2-D first)."""
    return _np(nd.FullyConnected(data, weight, bias, num_hidden=num_hidden,
                                 no_bias=no_bias or bias is None, flatten=flatten,
                                 out=out))


def convolution(data, weight, bias=None, kernel=None, stride=None, dilate=None,
                pad=None, num_filter=None, num_group=1, workspace=1024, no_bias=False,
                cudnn_tune=None, cudnn_off=False, layout=None, out=None, name=None,
                **kwargs):
    """N-d convolution (1, 2 or 3 spatial axes), MXNet's ``Convolution``."""
    return _np(nd.Convolution(data, weight, bias, kernel=kernel, stride=stride,
                              dilate=dilate, pad=pad, num_filter=num_filter,
                              num_group=num_group, no_bias=no_bias or bias is None,
                              layout=layout, out=out))


def deconvolution(data, weight, bias=None, kernel=None, stride=None, dilate=None,
                  pad=None, adj=None, target_shape=None, num_filter=None, num_group=1,
                  workspace=512, no_bias=True, cudnn_tune=None, cudnn_off=False,
                  layout=None, out=None, name=None, **kwargs):
    """Transposed convolution, MXNet's ``Deconvolution``."""
    return _np(nd.Deconvolution(data, weight, bias, kernel=kernel, stride=stride,
                                dilate=dilate, pad=pad, adj=adj,
                                target_shape=target_shape, num_filter=num_filter,
                                num_group=num_group, no_bias=no_bias or bias is None,
                                layout=layout, out=out))


def pooling(data, kernel=None, pool_type='max', global_pool=False, cudnn_off=False,
            pooling_convention='valid', stride=None, pad=None, p_value=None,
            count_include_pad=True, layout=None, out=None, name=None, **kwargs):
    """Max, average or sum pooling (``global_pool``: over all spatial axes)."""
    if p_value is not None or pool_type == 'lp':
        raise NotImplementedError("npx.pooling: pool_type='lp' is not supported")
    return _np(nd.Pooling(data, kernel=kernel, pool_type=pool_type,
                          global_pool=global_pool, stride=stride, pad=pad,
                          pooling_convention=pooling_convention,
                          count_include_pad=count_include_pad, layout=layout, out=out))


def batch_norm(data, gamma, beta, running_mean, running_var, eps=1e-3, momentum=0.9,
               fix_gamma=True, use_global_stats=False, output_mean_var=False, axis=1,
               cudnn_off=False, min_calib_range=None, max_calib_range=None, out=None,
               name=None, **kwargs):
    """Batch normalization over ``axis``, MXNet's ``BatchNorm`` (updates the
    running statistics in training mode)."""
    return _np(nd.BatchNorm(data, gamma, beta, running_mean, running_var, eps=eps,
                            momentum=momentum, fix_gamma=fix_gamma,
                            use_global_stats=use_global_stats,
                            output_mean_var=output_mean_var, axis=axis, out=out))


def layer_norm(data, gamma, beta, axis=-1, eps=1e-5, output_mean_var=False, out=None,
               name=None):
    """Normalize each sample along ``axis``, then scale by ``gamma`` and shift
    by ``beta`` (both of length ``data.shape[axis]``)."""
    if output_mean_var:
        raise NotImplementedError('npx.layer_norm: output_mean_var is not supported')
    axis = axis % data.ndim
    mean = nd.mean(data, axis=axis, keepdims=True)
    xc = data - mean
    var = nd.mean(xc * xc, axis=axis, keepdims=True)
    bshape = tuple(data.shape[i] if i == axis else 1 for i in range(data.ndim))
    y = xc / nd.sqrt(var + eps) * gamma.reshape(bshape) + beta.reshape(bshape)
    return _np(y if out is None else y.copyto(out))


def group_norm(data, gamma, beta, num_groups=1, eps=1e-5, output_mean_var=False,
               out=None, name=None):
    """Group normalization (channels in ``num_groups`` groups), ``GroupNorm``."""
    return _np(nd.GroupNorm(data, gamma, beta, num_groups=num_groups, eps=eps,
                            output_mean_var=output_mean_var, out=out))


def instance_norm(data, gamma, beta, eps=1e-3, out=None, name=None):
    """Per-sample, per-channel normalization, ``InstanceNorm``."""
    return _np(nd.InstanceNorm(data, gamma, beta, eps=eps, out=out))


def dropout(data, p=0.5, mode='training', axes=(), cudnn_off=False, out=None,
            name=None, **kwargs):
    """Zero each entry with probability ``p`` (and scale the rest by
    ``1/(1-p)``) when training; the identity otherwise."""
    return _np(nd.Dropout(data, p=p, mode=mode, axes=axes, out=out))


def embedding(data, weight, input_dim=None, output_dim=None, dtype='float32',
              sparse_grad=False, out=None, name=None, **kwargs):
    """The rows of ``weight`` (``input_dim x output_dim``) that ``data`` indexes."""
    _check('embedding', data=data, weight=weight)
    if input_dim is not None and weight.shape[0] != input_dim or \
            output_dim is not None and weight.shape[-1] != output_dim:
        raise ValueError(f'npx.embedding: weight has shape {weight.shape}, not '
                         f'(input_dim, output_dim) = ({input_dim}, {output_dim})')
    return _np(nd.take(weight, data, axis=0, out=out))


# --- tensor helpers -------------------------------------------------------------------
def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype='float32', out=None,
            name=None):
    """``indices`` as one-hot vectors of length ``depth``."""
    return _np(nd.one_hot(indices, depth, on_value=on_value, off_value=off_value,
                          dtype=dtype, out=out))


def pick(data, index, axis=-1, mode='clip', keepdims=False, out=None, name=None):
    """``data``'s entries at ``index`` along ``axis``."""
    return _np(nd.pick(data, index, axis=axis, mode=mode, keepdims=keepdims, out=out))


def topk(data, axis=-1, k=1, ret_typ='indices', is_ascend=False, dtype='float32',
         out=None, name=None):
    """The ``k`` largest (or smallest) entries along ``axis``: their indices,
    values, both (a list) or a mask."""
    return _np(nd.topk(data, axis=axis, k=k, ret_typ=ret_typ, is_ascend=is_ascend,
                       dtype=dtype, out=out))


def batch_dot(a, b, transpose_a=False, transpose_b=False, forward_stype=None,
              out=None, name=None):
    """Matrix products of ``a[i]`` and ``b[i]`` over the leading axis."""
    return _np(nd.batch_dot(a, b, transpose_a=transpose_a, transpose_b=transpose_b,
                            out=out))


def batch_flatten(data, out=None, name=None):
    """``data`` as ``(data.shape[0], -1)``."""
    return _np(nd.flatten(data, out=out))


def sequence_mask(data, sequence_length=None, use_sequence_length=False, value=0.0,
                  axis=0, out=None, name=None):
    """Entries past each sequence's length (along ``axis``, 0 or 1) set to
    ``value``; ``sequence_length`` has one length per batch entry."""
    if not use_sequence_length:
        return _np(data.copy() if out is None else data.copyto(out))
    _check('sequence_mask', sequence_length=sequence_length)
    if axis not in (0, 1):
        raise ValueError(f'npx.sequence_mask: axis must be 0 or 1, got {axis}')
    batch_axis = 1 - axis
    if sequence_length.shape != (data.shape[batch_axis],):
        raise ValueError(f'npx.sequence_mask: sequence_length has shape '
                         f'{sequence_length.shape}, expected ({data.shape[batch_axis]},) '
                         f'for data of shape {data.shape} and axis={axis}')
    shape2 = (-1, 1) if axis == 0 else (1, -1)
    steps = nd.arange(data.shape[axis], ctx=data.context).reshape(shape2)
    lens = sequence_length.astype(data.dtype).reshape(shape2[::-1])
    mask = nd.broadcast_lesser(steps, lens)
    mask = mask.reshape(mask.shape + (1,) * (data.ndim - 2))
    fill = nd.full(data.shape, value, ctx=data.context, dtype=data.dtype)
    return _np(nd.where(nd.broadcast_to(mask, data.shape), data, fill, out=out))


def _npx_shape(shape, newshape, reverse):
    """The target shape of ``npx.reshape``: its codes -1 (infer), -2 (copy
    this axis), -3 (drop this axis, of size 1), -4 (copy the remaining
    axes), -5 (merge two axes), -6 (split one axis into the next two)."""
    src = list(shape[::-1] if reverse else shape)
    codes = list(newshape)
    if reverse:
        codes = codes[::-1]
        # -6's two sizes follow it; reversed they precede it
        for i, c in enumerate(codes):
            if c == -6:
                codes[i - 2], codes[i - 1], codes[i] = -6, codes[i - 1], codes[i - 2]
    out, i, k, infer = [], 0, 0, None
    while k < len(codes):
        c = codes[k]
        if c >= 0:
            out.append(c); i += 1
        elif c == -1:
            if infer is not None:
                raise ValueError(f'npx.reshape: more than one -1 in {newshape}')
            infer = len(out); out.append(1); i += 1
        elif c == -2:
            out.append(src[i]); i += 1
        elif c == -3:
            if src[i] != 1:
                raise ValueError(f'npx.reshape: -3 drops an axis of size 1, but axis '
                                 f'{i} of {tuple(shape)} has size {src[i]}')
            i += 1
        elif c == -4:
            out.extend(src[i:]); i = len(src)
        elif c == -5:
            out.append(src[i] * src[i + 1]); i += 2
        elif c == -6:
            d1, d2 = codes[k + 1], codes[k + 2]
            if d1 == -1:
                d1 = src[i] // d2
            if d2 == -1:
                d2 = src[i] // d1
            out.extend([d1, d2]); i += 1; k += 2
        else:
            raise ValueError(f'npx.reshape: unknown code {c} in {newshape}')
        k += 1
    size = int(_onp.prod(shape))
    if infer is not None:
        rest = int(_onp.prod(out))
        if rest == 0 or size % rest:
            raise ValueError(f'npx.reshape: cannot reshape {tuple(shape)} into '
                             f'{tuple(newshape)}')
        out[infer] = size // rest
    if int(_onp.prod(out)) != size:
        raise ValueError(f'npx.reshape: cannot reshape {tuple(shape)} (size {size}) '
                         f'into {tuple(newshape)} -> {tuple(out)}')
    return tuple(out[::-1] if reverse else out)


def reshape(a, newshape, reverse=False, order='C'):
    """``a`` reshaped with npx's codes (see :func:`_npx_shape`):
    ``npx.reshape(x, (-2, -1))`` keeps axis 0 and flattens the rest."""
    if order != 'C':
        raise NotImplementedError("npx.reshape: only order='C'")
    if isinstance(newshape, int):
        newshape = (newshape,)
    return _np(nd.reshape(a, _npx_shape(a.shape, newshape, reverse)))


def reshape_like(lhs, rhs, out=None, name=None):
    """``lhs`` with ``rhs``'s shape."""
    return _np(nd.reshape_like(lhs, rhs, out=out))


def arange_like(data, start=0.0, step=1.0, repeat=1, ctx=None, axis=None, out=None,
                name=None):
    """``start, start + step, ...`` (each ``repeat`` times) in ``data``'s shape,
    or along its ``axis`` only."""
    shape = data.shape if axis is None else (data.shape[axis],)
    n = int(_onp.prod(shape))
    vals = start + step * (_onp.arange(n) // repeat)
    return _np(nd.array(vals.reshape(shape), ctx=ctx or data.context, dtype=data.dtype))


def gather_nd(data, indices, out=None, name=None):
    """``data[indices[0], indices[1], ...]``: the first axis of ``indices``
    indexes the leading ``indices.shape[0]`` axes of ``data``."""
    _check('gather_nd', indices=indices)
    m = indices.shape[0]
    if m > data.ndim:
        raise ValueError(f'npx.gather_nd: indices of shape {indices.shape} index '
                         f'{m} axes of data with {data.ndim}')
    strides = _onp.cumprod((data.shape[1:m] + (1,))[::-1])[::-1]
    idx = indices.astype('int64')
    flat = sum(idx[j] * int(strides[j]) for j in range(m))
    lead = int(_onp.prod(data.shape[:m]))
    return _np(nd.take(data.reshape((lead,) + data.shape[m:]), flat, axis=0, out=out))


def smooth_l1(data, scalar=1.0, out=None, name=None):
    """``0.5 (s x)^2`` where ``|x| < 1/s^2``, else ``|x| - 0.5/s^2``."""
    s2 = float(scalar) ** 2
    a = nd.abs(data)
    y = nd.where(a < 1.0 / s2, 0.5 * s2 * data * data, a - 0.5 / s2)
    return _np(y if out is None else y.copyto(out))


def erf(data, out=None, name=None):
    """The error function, elementwise."""
    return _np(nd.erf(data, out=out))


def erfinv(data, out=None, name=None):
    """The inverse error function, elementwise."""
    return _np(nd.erfinv(data, out=out))


def sign(data, out=None, name=None):
    """-1, 0 or 1, elementwise."""
    return _np(nd.sign(data, out=out))


def cast(data, dtype, out=None, name=None):
    """``data`` as ``dtype``."""
    return _np(nd.cast(data, dtype, out=out))


def slice(data, begin, end, step=(), out=None, name=None):   # noqa: A001 - MXNet's name
    """``data[begin:end:step]`` per axis (``None`` for the whole axis)."""
    return _np(nd.slice(data, begin, end, step=step, out=out))


def shape_array(data, out=None, name=None):
    """``data``'s shape as an int64 array."""
    return _np(nd.shape_array(data, out=out))


def nonzero(a):
    """The indices of the non-zero entries, one row each (``(N, a.ndim)``)."""
    return _np(nd.array(_onp.argwhere(a.asnumpy()), ctx=a.context, dtype='int64'))
