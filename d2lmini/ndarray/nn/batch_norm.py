"""``BatchNorm`` with MXNet 1.x semantics (aux states updated in place)."""
from ... import autograd as _ag
from ...base import _check_kwargs
from ..ndarray import invoke
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import _float_dtype, _needs_grad, _result

__all__ = ['BatchNorm']


def _bn_axes(ndim, axis):
    ax = axis % ndim
    return ax, tuple(i for i in range(ndim) if i != ax), \
        tuple(-1 if i == ax else 1 for i in range(ndim))


@register
class BatchNormOp(Op):
    """Batch normalization over ``axis`` (the channels; MXNet default 1).

    Outputs ``(out, mean, var)`` like MXNet's op (the front end returns
    ``out`` unless ``output_mean_var``).  With ``training`` the statistics
    are the batch's (``var`` biased, as MXNet); otherwise ``moving_mean`` and
    ``moving_var``.  ``fix_gamma`` (MXNet's default!) uses ``gamma = 1`` and
    gives gamma a zero gradient.  The moving statistics are *aux states*:
    never differentiated, and updated in place by the :func:`BatchNorm`
    front end, not here, so this op stays a pure function.
    """
    name = 'BatchNorm'
    nout = 3

    @staticmethod
    def _inputs(shape, c, var_low=0.5):
        return [lambda r: r.uniform(-1, 1, shape), lambda r: r.uniform(0.5, 1.5, c),
                lambda r: r.uniform(-1, 1, c), lambda r: r.uniform(-1, 1, c),
                lambda r: r.uniform(var_low, 1.5, c)]

    cases = (Case(inputs=_inputs((4, 3, 2, 2), 3), grad=[0, 1, 2], training=True,
                  fix_gamma=False),
             Case(inputs=_inputs((5, 3), 3), grad=[0, 1, 2], training=True),
             Case(inputs=_inputs((3, 2, 4), 4), grad=[0, 1, 2], training=True,
                  axis=-1, fix_gamma=False, eps=1e-3),
             Case(inputs=_inputs((4, 3, 2, 2), 3), grad=[0, 1, 2], training=False,
                  fix_gamma=False))

    def infer(self, shapes, dtypes, eps=1e-3, momentum=0.9, fix_gamma=True,
              use_global_stats=False, axis=1, training=False):
        x = tuple(shapes[0])
        if not -len(x) <= axis < len(x):
            raise ValueError(f"operator 'BatchNorm': axis {axis} out of range for data "
                             f"shape {x}")
        c = x[axis % len(x)]
        _float_dtype(self.name, dtypes[:1])
        for d in dtypes[1:]:           # statistics may be wider (fp16 data)
            _float_dtype(self.name, [d])
        names = ('gamma', 'beta', 'moving_mean', 'moving_var')
        for nm, s in zip(names, shapes[1:]):
            if tuple(s) != (c,):
                raise ValueError(f"operator 'BatchNorm': {nm} shape {tuple(s)} != "
                                 f"({c},), the channels of data shape {x} on axis "
                                 f"{axis}")
        return [(x, dtypes[0]), ((c,), dtypes[3]), ((c,), dtypes[4])]

    def forward(self, x, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
                fix_gamma=True, use_global_stats=False, axis=1, training=False):
        xp = _xp(x)
        ax, red, bshape = _bn_axes(x.ndim, axis)
        if training and not use_global_stats:
            mean = x.mean(axis=red)
            xc = x - mean.reshape(bshape)
            var = (xc * xc).mean(axis=red)
        else:
            mean, var = moving_mean.copy(), moving_var.copy()
            xc = x - mean.reshape(bshape).astype(x.dtype, copy=False)
        scale = 1 / xp.sqrt(var + eps)
        if not fix_gamma:
            scale = scale * gamma
        xc *= scale.reshape(bshape).astype(x.dtype, copy=False)
        xc += beta.reshape(bshape).astype(x.dtype, copy=False)
        return [xc, mean.astype(moving_mean.dtype, copy=False),
                var.astype(moving_var.dtype, copy=False)]

    def backward(self, ograds, inputs, outputs, eps=1e-3, momentum=0.9, fix_gamma=True,
                 use_global_stats=False, axis=1, training=False):
        g, gmean, gvar = ograds
        x, gamma = inputs[0], inputs[1]
        ax, red, bshape = _bn_axes(x.ndim, axis)
        m = x.size // x.shape[ax]
        mean = outputs[1].reshape(bshape)
        invstd = invoke(OPS['rsqrt'], (outputs[2].reshape(bshape) + eps,))
        scale = invstd if fix_gamma else invstd * gamma.reshape(bshape)
        xhat = (x - mean) * invstd
        gsum = g.sum(axis=red, keepdims=True)
        gxhat = (g * xhat).sum(axis=red, keepdims=True)
        if training and not use_global_stats:
            # d/dx of out, mean and var, folded into per-channel coefficients:
            # dx = g*scale + xhat*a + b
            a = gvar.reshape(bshape) * (2.0 / m) / invstd - scale * gxhat / m
            b = gmean.reshape(bshape) / m - scale * gsum / m
            dx = g * scale + xhat * a + b
        else:                          # the statistics are constants here
            dx = g * scale
        dgamma = None
        if _needs_grad(gamma):
            dgamma = gamma * 0 if fix_gamma else gxhat.reshape(gamma.shape)
        return [dx, dgamma, gsum.reshape(inputs[2].shape), None, None]


def BatchNorm(data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
              fix_gamma=True, use_global_stats=False, output_mean_var=False, axis=1,
              cudnn_off=False, out=None, name=None, **kwargs):
    """Batch normalization, MXNet 1.x semantics (note ``fix_gamma=True`` and
    ``eps=1e-3`` are MXNet's defaults; Gluon's layer passes its own).

    In training (``autograd.record()``) it normalizes with the batch's
    statistics and updates ``moving_mean``/``moving_var`` IN PLACE:
    ``moving = momentum * moving + (1 - momentum) * batch``.  Otherwise (or
    with ``use_global_stats``) it uses the moving statistics.
    """
    _check_kwargs(BatchNorm, kwargs, ('min_calib_range', 'max_calib_range',
                                        'act_type'))
    training = _ag.is_training() and not use_global_stats
    attrs = {'eps': float(eps), 'momentum': float(momentum),
             'fix_gamma': bool(fix_gamma), 'use_global_stats': bool(use_global_stats),
             'axis': int(axis), 'training': training}
    res, mean, var = invoke(OPS['BatchNorm'],
                            (data, gamma, beta, moving_mean, moving_var), attrs)
    if training:
        # The aux states: ordinary in-place writes, so the engine orders them
        # after every pending read of the old values.
        with _ag.pause(train_mode=True):
            for aux, batch in ((moving_mean, mean), (moving_var, var)):
                aux[:] = aux * momentum + batch * (1 - momentum)
    if output_mean_var:
        return [res, mean, var]
    return _result(res, out)
