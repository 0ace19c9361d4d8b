"""Helpers for data-parallel training: split a batch over devices, clip
gradients; and where MXNet's published files (pretrained weights, its
copies of MNIST and CIFAR) are downloaded from.

Examples
--------
>>> X = nd.arange(12).reshape((6, 2))
>>> [x.shape for x in gluon.utils.split_and_load(X, [mx.cpu(0), mx.cpu(1)])]
[(3, 2), (3, 2)]
"""
import math
import os
import warnings

import numpy as np

from .. import ndarray as nd
from ..context import Context

__all__ = ['split_data', 'split_and_load', 'clip_global_norm']

_APACHE_REPO = 'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/'


def _get_repo_url():
    """MXNet's repository of published files, ending in ``/``:
    ``$MXNET_GLUON_REPO`` (a mirror; ``file:///some/folder/`` works too),
    else Apache's bucket."""
    url = os.environ.get('MXNET_GLUON_REPO') or _APACHE_REPO
    return url if url.endswith('/') else url + '/'


def _get_repo_file_url(namespace, filename):
    """The URL of the data file ``filename`` of ``namespace`` (``'mnist'``,
    ``'cifar10'``) in MXNet's repository."""
    return f'{_get_repo_url()}gluon/dataset/{namespace}/{filename}'


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Split ``data`` into ``num_slice`` slices along ``batch_axis``.

    With ``even_split=False`` the first ``size % num_slice`` slices get one
    extra sample; with ``even_split=True`` an uneven batch is an error.
    """
    if not isinstance(data, nd.NDArray):
        raise TypeError(f'split_data expects an NDArray, got {type(data).__name__}')
    if not isinstance(num_slice, int) or num_slice < 1:
        raise ValueError(f'num_slice must be a positive int, got {num_slice!r}')
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f'data with shape {data.shape} cannot be evenly split into {num_slice} '
            f'slices along axis {batch_axis}. Use a batch size that is a multiple '
            f'of {num_slice} or set even_split=False.')
    if size < num_slice:
        raise ValueError(f'cannot split {size} samples (axis {batch_axis} of shape '
                         f'{data.shape}) into {num_slice} non-empty slices')
    if num_slice == 1:
        return [data]
    each, extras = divmod(size, num_slice)
    bounds = np.cumsum([0] + [each + 1] * extras + [each] * (num_slice - extras))
    if batch_axis == 0:
        return [data[int(bounds[i]):int(bounds[i + 1])] for i in range(num_slice)]
    return [nd.slice_axis(data, batch_axis, int(bounds[i]), int(bounds[i + 1]))
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` along ``batch_axis`` and put slice i on ``ctx_list[i]``.

    ``data`` may be an NDArray or anything ``nd.array`` accepts.
    """
    if isinstance(ctx_list, Context):
        ctx_list = [ctx_list]
    ctx_list = list(ctx_list)
    if not ctx_list:
        raise ValueError('split_and_load needs at least one context')
    if not isinstance(data, nd.NDArray):
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(c) for s, c in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescale ``arrays`` in place so that their joint L2 norm is <= ``max_norm``.

    Returns the norm before clipping (a float; an NDArray on the first
    array's context if ``check_isfinite=False``, which avoids waiting).
    """
    if not arrays:
        raise ValueError('clip_global_norm needs at least one array')
    ctx = arrays[0].context
    total = None
    for arr in arrays:
        sq = nd.sum(nd.square(arr.astype('float32', copy=False))).as_in_context(ctx)
        total = sq if total is None else total + sq
    total_norm = nd.sqrt(total)
    if check_isfinite:
        norm = float(total_norm.asscalar())
        if not math.isfinite(norm):
            warnings.warn('nan or inf is detected; clipping results will be '
                          'undefined', UserWarning, stacklevel=2)
    scale = nd.minimum(max_norm / (total_norm + 1e-8), 1.0)
    for arr in arrays:
        # in place even under autograd.record() (where *= would rebind)
        arr[:] = arr * scale.as_in_context(arr.context).astype(arr.dtype, copy=False)
    return norm if check_isfinite else total_norm
