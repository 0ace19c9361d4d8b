"""The fused update operators: MXNet's ``nd.sgd_update``, ``nd.adam_update``, ...

MXNet keeps them in ``src/operator/optimizer_op*``; :mod:`d2lmini.optimizer`
calls them (it imports from here, not the other way round).

Why one long file: one short kernel per update operator (17 of them),
side by side like a table, so that the rules can be compared line for line;
nothing in one depends on another.

Each is one op of the table (``differentiable = False``) whose ``kernel``
works on raw NumPy/CuPy arrays and rewrites the weight and the optimizer
states *in place*, as MXNet's kernels do: one pass, no temporaries pushed
through the engine.  The functions below are the ``nd`` forms::

    nd.sgd_mom_update(weight, grad, mom, lr=0.1, momentum=0.9, out=weight)

The states (``mom`` here) are always updated in place (MXNet's mutable
inputs); the new weight goes to ``out`` (a new array when ``out`` is None).
Each call is one push to the weight's device stream.

The ``mp_*`` forms keep a float32 master copy ``weight32`` of a float16
weight: the update runs in float32 on the master copy, and the weight gets
its rounded value, so steps below float16's resolution are not lost.

How the gradient enters: ``rescale_grad`` multiplies it first;
``clip_gradient`` (``< 0``: off) clips to ``[-c, c]``.  Where weight
decay enters is each op's own, as in MXNet: inside the clipped gradient
(Adam, RMSProp, FTML), added after clipping (SGD, NAG, Signum, LAMB), or
in the denominator (Ftrl).
"""
import numpy as np

from .. import backend
from .ndarray import NDArray, _write_inplace, empty
from .registry import Op, OPS, register

__all__ = ['sgd_update', 'sgd_mom_update', 'mp_sgd_update', 'mp_sgd_mom_update',
           'nag_mom_update', 'mp_nag_mom_update', 'adam_update',
           'signsgd_update', 'signum_update', 'rmsprop_update',
           'rmspropalex_update', 'ftml_update', 'ftrl_update',
           'lamb_update_phase1', 'lamb_update_phase2', 'mp_lamb_update_phase1',
           'mp_lamb_update_phase2', 'multi_sgd_update', 'multi_sgd_mom_update',
           'multi_mp_sgd_update', 'multi_mp_sgd_mom_update']


# === kernel helpers (raw arrays) ==============================================
def _own(a):
    """``a`` if it can be written in place, else a writable copy."""
    flags = getattr(a, 'flags', None)         # CuPy's flags have no 'writeable'
    if flags is None or not getattr(flags, 'writeable', True):
        return backend.xp_of(a).array(a, copy=True)
    return a


def _quiet(fn):
    """``fn`` with NumPy's floating-point warnings off, as MXNet's kernels
    never warn: a float16 step that overflows or divides by zero gives
    inf/nan in the weight, which the user sees there.  Warnings raised in
    the engine's worker would otherwise depend on the warning filters of
    whatever the main thread runs meanwhile (``simplefilter('error')``
    makes them errors).  Exceptions still propagate."""
    def run(*args, **attrs):
        with np.errstate(all='ignore'):          # per thread: set in the worker
            return fn(*args, **attrs)
    return run


def _clips(c):
    return c is not None and c >= 0


def _grad(g, rescale_grad, clip_gradient, wd=0.0, w=None, dtype=None):
    """A new array ``clip(rescale_grad * g [+ wd * w])`` (in ``dtype``)."""
    t = g.astype(dtype) if dtype is not None and g.dtype != dtype else g
    t = t * rescale_grad
    if wd and w is not None:
        t += wd * w
    if _clips(clip_gradient):
        backend.xp_of(t).clip(t, -clip_gradient, clip_gradient, out=t)
    return t


class _FusedOp(Op):
    """An optimizer kernel: ``kernel(*inputs, **attrs) -> (out, *mutated)``.

    ``mutate`` lists the inputs the kernel rewrites in place (the states);
    with ``out_is_weight`` the output is the updated input 0 (the kernel
    rewrites that buffer too), otherwise a new value (LAMB's phase 1).
    ``f32`` lists inputs that must be float32 (master copies and their
    states); ``out_f32``: the output is float32.
    """
    differentiable = False
    params = None
    mutate = ()
    out_is_weight = True
    f32 = ()
    out_f32 = False
    same_shape = None          # inputs that share the weight's shape (None: all)

    def infer(self, shapes, dtypes, **attrs):
        idx = range(len(shapes)) if self.same_shape is None else self.same_shape
        for i in idx:
            if shapes[i] != shapes[0]:
                raise ValueError(
                    f"operator '{self.name}': the weight, gradient and states "
                    f"must have one shape, got {shapes}")
        for i in self.f32:
            if np.dtype(dtypes[i]) != np.float32:
                raise TypeError(
                    f"operator '{self.name}': input {i} (a master copy or its "
                    f"state) must be float32, got {dtypes[i]}")
        return shapes[0], (np.dtype(np.float32) if self.out_f32 else dtypes[0])

    def forward(self, *inputs, **attrs):
        if self.out_is_weight:
            inputs = (backend.xp_of(inputs[0]).array(inputs[0], copy=True),) \
                + inputs[1:]
        return _quiet(self.kernel)(*inputs, **attrs)[0]

    def kernel(self, *inputs, **attrs):          # pragma: no cover - abstract
        raise NotImplementedError


# === SGD family ===============================================================
def _sgd(w, g, lr, wd, rescale_grad, clip_gradient, dtype=None):
    """``w = (1 - lr*wd) * w - lr * clip(rescale_grad * g)``, in place."""
    t = _grad(g, rescale_grad, clip_gradient, dtype=dtype)
    t *= -lr
    if wd:
        w *= 1.0 - lr * wd
    w += t


def _sgd_mom(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient, dtype=None):
    t = _grad(g, rescale_grad, clip_gradient, dtype=dtype)
    if wd:
        t += wd * w
    t *= -lr
    mom *= momentum
    mom += t
    w += mom


def _nag_mom(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient, dtype=None):
    # MXNet's kernel, written in place: the momentum's weight-decay term
    # reads the weight it has just updated (out aliases weight).
    t = _grad(g, rescale_grad, clip_gradient, dtype=dtype)
    mom *= momentum
    step = t + wd * w if wd else t.copy()
    step *= -lr
    step += mom
    step *= momentum + 1
    w -= mom
    w += step
    if wd:
        t += wd * w
    t *= lr
    mom -= t


@register
class SGDUpdateOp(_FusedOp):
    """``w = (1 - lr*wd) * w - lr * clip(rescale_grad * g)``."""
    name = 'sgd_update'

    def kernel(self, w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               lazy_update=True):
        w = _own(w)
        _sgd(w, g, lr, wd, rescale_grad, clip_gradient)
        return (w,)


@register
class SGDMomUpdateOp(_FusedOp):
    """``mom = momentum*mom - lr*wd*w - lr*clip(rescale_grad*g); w += mom``."""
    name = 'sgd_mom_update'
    mutate = (2,)

    def kernel(self, w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
               clip_gradient=-1.0, lazy_update=True):
        w, mom = _own(w), _own(mom)
        _sgd_mom(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient)
        return w, mom


@register
class MPSGDUpdateOp(_FusedOp):
    """``sgd_update`` on the float32 master copy ``weight32``; ``w`` = its rounding."""
    name = 'mp_sgd_update'
    mutate = (2,)
    f32 = (2,)

    def kernel(self, w, g, w32, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               lazy_update=True):
        w, w32 = _own(w), _own(w32)
        _sgd(w32, g, lr, wd, rescale_grad, clip_gradient, dtype=w32.dtype)
        w[...] = w32
        return w, w32


@register
class MPSGDMomUpdateOp(_FusedOp):
    """``sgd_mom_update`` in float32 on ``mom`` and ``weight32``."""
    name = 'mp_sgd_mom_update'
    mutate = (2, 3)
    f32 = (2, 3)

    def kernel(self, w, g, mom, w32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
               clip_gradient=-1.0, lazy_update=True):
        w, mom, w32 = _own(w), _own(mom), _own(w32)
        _sgd_mom(w32, g, mom, lr, momentum, wd, rescale_grad, clip_gradient,
                 dtype=w32.dtype)
        w[...] = w32
        return w, mom, w32


@register
class NAGMomUpdateOp(_FusedOp):
    """Nesterov momentum, MXNet's form::

        mom = momentum * mom
        w = w - mom + (momentum + 1) * (mom - lr * (clip(rescale_grad*g) + wd*w))
        mom = mom - lr * (clip(rescale_grad*g) + wd*w)

    The last line reads the *updated* ``w``, as MXNet's kernel does when
    ``out`` is the weight (the optimizer's case); with ``out=`` another
    array MXNet reads the old weight there, this op the updated one.
    """
    name = 'nag_mom_update'
    mutate = (2,)

    def kernel(self, w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
               clip_gradient=-1.0):
        w, mom = _own(w), _own(mom)
        _nag_mom(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient)
        return w, mom


@register
class MPNAGMomUpdateOp(_FusedOp):
    """``nag_mom_update`` in float32 on ``mom`` and ``weight32``."""
    name = 'mp_nag_mom_update'
    mutate = (2, 3)
    f32 = (2, 3)

    def kernel(self, w, g, mom, w32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
               clip_gradient=-1.0):
        w, mom, w32 = _own(w), _own(mom), _own(w32)
        _nag_mom(w32, g, mom, lr, momentum, wd, rescale_grad, clip_gradient,
                 dtype=w32.dtype)
        w[...] = w32
        return w, mom, w32


@register
class SignSGDUpdateOp(_FusedOp):
    """``w = (1 - lr*wd) * w - lr * sign(g)`` (rescaling and clipping keep the sign)."""
    name = 'signsgd_update'

    def kernel(self, w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
        w = _own(w)
        xp = backend.xp_of(w)
        if wd:
            w *= 1.0 - lr * wd
        w -= lr * xp.sign(g)
        return (w,)


@register
class SignumUpdateOp(_FusedOp):
    """``mom = momentum*mom - (1-momentum)*(wd*w + clip(rescale_grad*g))``;
    ``w = (1 - lr*wd_lh) * w + lr * sign(mom)``."""
    name = 'signum_update'
    mutate = (2,)

    def kernel(self, w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
               clip_gradient=-1.0, wd_lh=0.0):
        w, mom = _own(w), _own(mom)
        xp = backend.xp_of(w)
        t = _grad(g, rescale_grad, clip_gradient)
        if wd:
            t += wd * w
        t *= -(1.0 - momentum)
        mom *= momentum
        mom += t
        if wd_lh:
            w *= 1.0 - lr * wd_lh
        w += lr * xp.sign(mom)
        return w, mom


# === adaptive ================================================================
@register
class AdamUpdateOp(_FusedOp):
    """``g = clip(rescale_grad*grad + wd*w)``; moments; ``w -= lr*m/(sqrt(v)+eps)``.

    ``lr`` already carries the bias correction ``sqrt(1-beta2^t)/(1-beta1^t)``
    (the :class:`Adam` optimizer computes it on the front end, as MXNet does).
    """
    name = 'adam_update'
    mutate = (2, 3)

    def kernel(self, w, g, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8,
               wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True):
        w, mean, var = _own(w), _own(mean), _own(var)
        xp = backend.xp_of(w)
        t = _grad(g, rescale_grad, clip_gradient, wd, w)
        mean *= beta1
        mean += (1.0 - beta1) * t
        var *= beta2
        t *= t
        t *= 1.0 - beta2
        var += t
        d = xp.sqrt(var)
        d += epsilon
        xp.divide(mean, d, out=d)
        d *= lr
        w -= d
        return w, mean, var


def _clip_weights(xp, w, clip_weights):
    if _clips(clip_weights):
        xp.clip(w, -clip_weights, clip_weights, out=w)


@register
class RMSPropUpdateOp(_FusedOp):
    """Tieleman & Hinton: ``n = (1-g1)*g^2 + g1*n; w -= lr * g / sqrt(n + eps)``,
    ``g = clip(rescale_grad*grad + wd*w)``; then ``clip_weights`` if >= 0."""
    name = 'rmsprop_update'
    mutate = (2,)

    def kernel(self, w, g, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0,
               rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0):
        w, n = _own(w), _own(n)
        xp = backend.xp_of(w)
        t = _grad(g, rescale_grad, clip_gradient, wd, w)
        n *= gamma1
        n += (1.0 - gamma1) * t * t
        d = n + epsilon
        xp.sqrt(d, out=d)
        xp.divide(t, d, out=t)
        t *= lr
        w -= t
        _clip_weights(xp, w, clip_weights)
        return w, n


@register
class RMSPropAlexUpdateOp(_FusedOp):
    """Graves' centered RMSProp::

        n = (1-g1)*g^2 + g1*n;  gm = (1-g1)*g + g1*gm
        delta = g2*delta - lr * g / sqrt(n - gm^2 + eps);  w += delta
    """
    name = 'rmspropalex_update'
    mutate = (2, 3, 4)

    def kernel(self, w, g, n, gm, delta, lr, gamma1=0.95, gamma2=0.9,
               epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               clip_weights=-1.0):
        w, n, gm, delta = _own(w), _own(n), _own(gm), _own(delta)
        xp = backend.xp_of(w)
        t = _grad(g, rescale_grad, clip_gradient, wd, w)
        n *= gamma1
        n += (1.0 - gamma1) * t * t
        gm *= gamma1
        gm += (1.0 - gamma1) * t
        d = n - gm * gm
        d += epsilon
        xp.sqrt(d, out=d)
        xp.divide(t, d, out=t)
        t *= lr
        delta *= gamma2
        delta -= t
        w += delta
        _clip_weights(xp, w, clip_weights)
        return w, n, gm, delta


@register
class FTMLUpdateOp(_FusedOp):
    """Follow the Moving Leader (Zheng & Kwok), MXNet's form, step ``t``::

        g = clip(rescale_grad*grad + wd*w, clip_grad)
        v = beta2*v + (1-beta2)*g^2
        d_t = (1-beta1^t)/lr * (sqrt(v/(1-beta2^t)) + epsilon)
        z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*w;  d = d_t;  w = -z/d_t
    """
    name = 'ftml_update'
    mutate = (2, 3, 4)

    def kernel(self, w, g, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8,
               wd=0.0, rescale_grad=1.0, clip_grad=-1.0):
        w, d, v, z = _own(w), _own(d), _own(v), _own(z)
        xp = backend.xp_of(w)
        gr = _grad(g, rescale_grad, clip_grad, wd, w)
        v *= beta2
        v += (1.0 - beta2) * gr * gr
        d_t = xp.sqrt(v / (1.0 - beta2 ** t))
        d_t += epsilon
        d_t *= (1.0 - beta1 ** t) / lr
        z *= beta1
        z += (1.0 - beta1) * gr
        z -= (d_t - beta1 * d) * w
        d[...] = d_t
        xp.divide(z, d_t, out=w)
        xp.negative(w, out=w)
        return w, d, v, z


@register
class FtrlUpdateOp(_FusedOp):
    """FTRL-Proximal (McMahan et al.), MXNet's form::

        g = clip(rescale_grad*grad)
        z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr;  n += g^2
        w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1)
    """
    name = 'ftrl_update'
    mutate = (2, 3)

    def kernel(self, w, g, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0,
               rescale_grad=1.0, clip_gradient=-1.0):
        w, z, n = _own(w), _own(z), _own(n)
        xp = backend.xp_of(w)
        gr = _grad(g, rescale_grad, clip_gradient)
        g2 = gr * gr
        z += gr - (xp.sqrt(n + g2) - xp.sqrt(n)) * w / lr
        n += g2
        num = xp.sign(z) * lamda1 - z
        den = (beta + xp.sqrt(n)) / lr + wd
        w[...] = num / den * (xp.abs(z) > lamda1)
        return w, z, n


# === LAMB ====================================================================
def _lamb1(w, g, mean, var, beta1, beta2, epsilon, t, bias_correction, wd,
           rescale_grad, clip_gradient, dtype=None):
    xp = backend.xp_of(mean)
    gr = _grad(g, rescale_grad, clip_gradient, dtype=dtype)
    mean *= beta1
    mean += (1.0 - beta1) * gr
    var *= beta2
    var += (1.0 - beta2) * gr * gr
    if bias_correction:
        m = mean / (1.0 - beta1 ** t)
        v = var / (1.0 - beta2 ** t)
    else:
        m, v = mean, var
    d = xp.sqrt(v)
    d += epsilon
    out = m / d
    if wd:
        out += wd * w
    return out


def _trust_lr(lr, r1, r2, lower_bound, upper_bound, dtype):
    """LAMB's step size ``lr * r1/r2`` (``r1`` clipped to the bounds; ``lr``
    when either norm is 0), to multiply an array of ``dtype`` by.

    On the host a Python float; on a GPU the norms are not read back (that
    would wait for the device): the same arithmetic in float64 on 0-d device
    arrays, rounded to ``dtype`` as the float is when it meets the array.
    """
    if backend.is_gpu_array(r1):
        xp = backend.xp_of(r1)
        r1, r2 = r1.astype(np.float64), r2.astype(np.float64)
        if lower_bound is not None and lower_bound >= 0:
            r1 = xp.maximum(r1, lower_bound)
        if upper_bound is not None and upper_bound >= 0:
            r1 = xp.minimum(r1, upper_bound)
        zero = (r1 == 0.0) | (r2 == 0.0)
        return xp.where(zero, lr, lr * r1 / xp.where(zero, 1.0, r2)).astype(dtype)
    r1, r2 = float(r1), float(r2)
    if lower_bound is not None and lower_bound >= 0:
        r1 = max(r1, lower_bound)
    if upper_bound is not None and upper_bound >= 0:
        r1 = min(r1, upper_bound)
    return lr if r1 == 0.0 or r2 == 0.0 else lr * r1 / r2


@register
class LambUpdatePhase1Op(_FusedOp):
    """LAMB, phase 1: moments, and the step direction ``g`` (returned)::

        m = beta1*m + (1-beta1)*clip(rescale_grad*grad);  v likewise with g^2
        g = m_hat / (sqrt(v_hat) + epsilon) + wd * w   (hats: bias-corrected)
    """
    name = 'lamb_update_phase1'
    mutate = (2, 3)
    out_is_weight = False

    def kernel(self, w, g, mean, var, t, beta1=0.9, beta2=0.999, epsilon=1e-6,
               bias_correction=True, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
        mean, var = _own(mean), _own(var)
        out = _lamb1(w, g, mean, var, beta1, beta2, epsilon, t, bias_correction,
                     wd, rescale_grad, clip_gradient)
        return out.astype(w.dtype, copy=False), mean, var


@register
class MPLambUpdatePhase1Op(_FusedOp):
    """``lamb_update_phase1`` in float32, weight decay on ``weight32``."""
    name = 'mp_lamb_update_phase1'
    mutate = (2, 3)
    f32 = (2, 3, 4)
    out_is_weight = False
    out_f32 = True

    def kernel(self, w, g, mean, var, w32, t, beta1=0.9, beta2=0.999,
               epsilon=1e-6, bias_correction=True, wd=0.0, rescale_grad=1.0,
               clip_gradient=-1.0):
        mean, var = _own(mean), _own(var)
        out = _lamb1(w32, g, mean, var, beta1, beta2, epsilon, t,
                     bias_correction, wd, rescale_grad, clip_gradient,
                     dtype=w32.dtype)
        return out, mean, var


class _R12:
    same_shape = (0, 1)

    def infer(self, shapes, dtypes, **attrs):
        for i in (2, 3):
            if tuple(shapes[i]) not in ((1,), ()):
                raise ValueError(f"operator '{self.name}': r1 and r2 must be "
                                 f"norms of shape (1,), got {shapes[i]}")
        return _FusedOp.infer(self, shapes, dtypes, **attrs)


@register
class LambUpdatePhase2Op(_R12, _FusedOp):
    """LAMB, phase 2: ``w -= lr * r1/r2 * g`` (``r1`` clipped to the bounds;
    ratio 1 when either norm is 0)."""
    name = 'lamb_update_phase2'

    def kernel(self, w, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0):
        w = _own(w)
        w -= _trust_lr(lr, r1.reshape(-1)[0], r2.reshape(-1)[0], lower_bound,
                       upper_bound, g.dtype) * g
        return (w,)


@register
class MPLambUpdatePhase2Op(_R12, _FusedOp):
    """``lamb_update_phase2`` on the master copy ``weight32``, then rounded to ``w``.

    MXNet 1.9.1's kernel writes ``weight32 - lr*ratio*g`` to the weight but
    leaves ``weight32`` itself unchanged, so its float16 LAMB never
    accumulates; here the master copy takes the step, as it does in every
    other ``mp_*`` update (a deliberate difference).
    """
    name = 'mp_lamb_update_phase2'
    mutate = (4,)
    f32 = (1, 4)

    def kernel(self, w, g, r1, r2, w32, lr, lower_bound=-1.0, upper_bound=-1.0):
        w, w32 = _own(w), _own(w32)
        w32 -= _trust_lr(lr, r1.reshape(-1)[0], r2.reshape(-1)[0], lower_bound,
                         upper_bound, g.dtype) * g
        w[...] = w32
        return w, w32


# === pushing a kernel through the engine =====================================
def check_context(name, arrays):
    ctx = arrays[0]._ctx
    for a in arrays:
        if a._ctx != ctx:
            raise ValueError(
                f"optimizer update '{name}': weight, gradient and states must "
                f"be on one context, got "
                f"{', '.join(f'{x._ctx} {x._shape}' for x in arrays)}")


def push(name, fn, writes, reads):
    """Push ``fn(*writes, *reads)``, which rewrites ``writes`` in place.

    The one place optimizers touch the engine: ordering on the device stream
    comes for free; a pending cross-device read of a written array (say a
    KVStore copying the weight) is waited for first, as in ``x[:] = y``.
    """
    check_context(name, tuple(writes) + tuple(reads))
    _write_inplace(name, _quiet(fn), tuple(writes), tuple(reads))


_LAYOUTS = {}


def _layout(op, n, alias):
    """Where each of ``op``'s ``n`` inputs sits in the engine's argument list
    ``(out, *mutated, *reads)``; ``alias``: ``out`` is input 0 itself."""
    key = (op.name, n, alias)
    lay = _LAYOUTS.get(key)
    if lay is None:
        mut = tuple(op.mutate)
        reads = tuple(i for i in range(n) if i not in mut and not (alias and i == 0))
        pos = [0] * n
        for k, i in enumerate(mut):
            pos[i] = 1 + k
        for k, i in enumerate(reads):
            pos[i] = 1 + len(mut) + k
        lay = _LAYOUTS[key] = (mut, reads, tuple(pos))
    return lay


def kernel_fn(op, attrs, pos, alias):
    """Adapt ``op.kernel`` (inputs in MXNet's order) to the engine's layout:
    the engine calls ``fn(out, *mutated, *reads)``; ``pos`` (from
    :func:`_layout`) says where each input is."""
    kernel = op.kernel
    if op.out_is_weight and alias:            # the optimizers' case: in place
        def fn(*raw):
            res = kernel(*[raw[j] for j in pos], **attrs)
            return res[0] if len(res) == 1 else res
        return fn

    def fn(*raw):
        ins = [raw[j] for j in pos]
        o = _own(raw[0])
        if op.out_is_weight:                  # out= another array: copy, update
            o[...] = ins[0]
            ins[0] = o
            res = kernel(*ins, **attrs)
        else:                                 # the output is a new value
            res = kernel(*ins, **attrs)
            o[...] = res[0]
            res = (o,) + tuple(res[1:])
        return res[0] if len(res) == 1 else res
    return fn


def plan(op, args, attrs, out):
    """``(name, fn, writes, reads)`` of one call of ``op`` (see :func:`push`)."""
    alias = op.out_is_weight and out is args[0]
    mut, reads, pos = _layout(op, len(args), alias)
    return (op.name, kernel_fn(op, attrs, pos, alias),
            (out,) + tuple([args[i] for i in mut]), tuple([args[i] for i in reads]))


def multi_fn(chunk):
    """One kernel running many ``(fn, writes, reads)`` calls (``multi_*_update``)."""
    nw = [len(ws) for _, ws, _ in chunk]
    nr = [len(rs) for _, _, rs in chunk]
    fns = [fn for fn, _, _ in chunk]
    total_w = sum(nw)

    def fn(*raw):
        writes, reads = raw[:total_w], raw[total_w:]
        out, wi, ri = [], 0, 0
        for f, a, b in zip(fns, nw, nr):
            res = f(*writes[wi:wi + a], *reads[ri:ri + b])
            out.extend(res if isinstance(res, tuple) else (res,))
            wi, ri = wi + a, ri + b
        return out[0] if len(out) == 1 else out
    return fn


def call(name, args, attrs, out=None):
    """Run the fused op ``name`` on NDArrays ``args``; the result goes to ``out``."""
    op = OPS[name]
    for i, a in enumerate(args):
        if not isinstance(a, NDArray):
            raise TypeError(f"{name}: input {i} must be an NDArray, got "
                            f"{type(a).__name__}")
    check_context(name, args)
    shape, dtype = op.infer([a.shape for a in args], [a.dtype for a in args],
                            **attrs)
    if out is None:
        out = empty(shape, args[0].context, dtype)
    elif out.shape != shape:
        raise ValueError(f'{name}: out= has shape {out.shape}, the result has '
                         f'shape {shape}')
    push(*plan(op, args, attrs, out))
    return out


# === the nd functions (MXNet's signatures and defaults) ======================
def sgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               lazy_update=True, out=None, name=None):
    """MXNet's ``sgd_update``: ``w = (1-lr*wd)*w - lr*clip(rescale_grad*grad)``.

    >>> nd.sgd_update(w, g, lr=0.1, out=w)          # doctest: +SKIP
    """
    return call('sgd_update', (weight, grad),
                dict(lr=lr, wd=wd, rescale_grad=rescale_grad,
                     clip_gradient=clip_gradient), out)


def sgd_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, lazy_update=True, out=None, name=None):
    """MXNet's ``sgd_mom_update``; ``mom`` is updated in place."""
    return call('sgd_mom_update', (weight, grad, mom),
                dict(lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale_grad,
                     clip_gradient=clip_gradient), out)


def mp_sgd_update(weight, grad, weight32, lr, wd=0.0, rescale_grad=1.0,
                  clip_gradient=-1.0, lazy_update=True, out=None, name=None):
    """MXNet's ``mp_sgd_update``: SGD on the float32 master copy ``weight32``."""
    return call('mp_sgd_update', (weight, grad, weight32),
                dict(lr=lr, wd=wd, rescale_grad=rescale_grad,
                     clip_gradient=clip_gradient), out)


def mp_sgd_mom_update(weight, grad, mom, weight32, lr, momentum=0.0, wd=0.0,
                      rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True,
                      out=None, name=None):
    """MXNet's ``mp_sgd_mom_update``: ``mom`` and ``weight32`` are float32."""
    return call('mp_sgd_mom_update', (weight, grad, mom, weight32),
                dict(lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale_grad,
                     clip_gradient=clip_gradient), out)


def nag_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, out=None, name=None):
    """MXNet's ``nag_mom_update`` (Nesterov momentum); ``mom`` in place."""
    return call('nag_mom_update', (weight, grad, mom),
                dict(lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale_grad,
                     clip_gradient=clip_gradient), out)


def mp_nag_mom_update(weight, grad, mom, weight32, lr, momentum=0.0, wd=0.0,
                      rescale_grad=1.0, clip_gradient=-1.0, out=None, name=None):
    """MXNet's ``mp_nag_mom_update``: ``nag_mom_update`` on ``weight32``."""
    return call('mp_nag_mom_update', (weight, grad, mom, weight32),
                dict(lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale_grad,
                     clip_gradient=clip_gradient), out)


def adam_update(weight, grad, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8,
                wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True,
                out=None, name=None):
    """MXNet's ``adam_update`` (no bias correction: fold it into ``lr``)."""
    return call('adam_update', (weight, grad, mean, var),
                dict(lr=lr, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                     rescale_grad=rescale_grad, clip_gradient=clip_gradient), out)


def signsgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                   out=None, name=None):
    """MXNet's ``signsgd_update``: ``w = (1-lr*wd)*w - lr*sign(grad)``."""
    return call('signsgd_update', (weight, grad),
                dict(lr=lr, wd=wd, rescale_grad=rescale_grad,
                     clip_gradient=clip_gradient), out)


def signum_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                  clip_gradient=-1.0, wd_lh=0.0, out=None, name=None):
    """MXNet's ``signum_update``: the sign of a momentum; ``mom`` in place."""
    return call('signum_update', (weight, grad, mom),
                dict(lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale_grad,
                     clip_gradient=clip_gradient, wd_lh=wd_lh), out)


def rmsprop_update(weight, grad, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0,
                   rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0,
                   out=None, name=None):
    """MXNet's ``rmsprop_update`` (Tieleman & Hinton); ``n`` in place."""
    return call('rmsprop_update', (weight, grad, n),
                dict(lr=lr, gamma1=gamma1, epsilon=epsilon, wd=wd,
                     rescale_grad=rescale_grad, clip_gradient=clip_gradient,
                     clip_weights=clip_weights), out)


def rmspropalex_update(weight, grad, n, g, delta, lr, gamma1=0.95, gamma2=0.9,
                       epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                       clip_weights=-1.0, out=None, name=None):
    """MXNet's ``rmspropalex_update`` (Graves' centered RMSProp)."""
    return call('rmspropalex_update', (weight, grad, n, g, delta),
                dict(lr=lr, gamma1=gamma1, gamma2=gamma2, epsilon=epsilon, wd=wd,
                     rescale_grad=rescale_grad, clip_gradient=clip_gradient,
                     clip_weights=clip_weights), out)


def ftml_update(weight, grad, d, v, z, lr, t, beta1=0.6, beta2=0.999,
                epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_grad=-1.0, out=None,
                name=None):
    """MXNet's ``ftml_update`` at step ``t``; ``d``, ``v``, ``z`` in place."""
    return call('ftml_update', (weight, grad, d, v, z),
                dict(lr=lr, t=t, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                     rescale_grad=rescale_grad, clip_grad=clip_grad), out)


def ftrl_update(weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0,
                rescale_grad=1.0, clip_gradient=-1.0, out=None, name=None):
    """MXNet's ``ftrl_update``; ``z`` and ``n`` in place."""
    return call('ftrl_update', (weight, grad, z, n),
                dict(lr=lr, lamda1=lamda1, beta=beta, wd=wd,
                     rescale_grad=rescale_grad, clip_gradient=clip_gradient), out)


def lamb_update_phase1(weight, grad, mean, var, t, beta1=0.9, beta2=0.999,
                       epsilon=1e-6, bias_correction=True, wd=0.0,
                       rescale_grad=1.0, clip_gradient=-1.0, out=None, name=None):
    """MXNet's ``lamb_update_phase1``: returns the direction ``g``."""
    return call('lamb_update_phase1', (weight, grad, mean, var),
                dict(t=t, beta1=beta1, beta2=beta2, epsilon=epsilon,
                     bias_correction=bias_correction, wd=wd,
                     rescale_grad=rescale_grad, clip_gradient=clip_gradient), out)


def lamb_update_phase2(weight, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0,
                       out=None, name=None):
    """MXNet's ``lamb_update_phase2``: ``w -= lr * r1/r2 * g``."""
    return call('lamb_update_phase2', (weight, g, r1, r2),
                dict(lr=lr, lower_bound=lower_bound, upper_bound=upper_bound), out)


def mp_lamb_update_phase1(weight, grad, mean, var, weight32, t, beta1=0.9,
                          beta2=0.999, epsilon=1e-6, bias_correction=True, wd=0.0,
                          rescale_grad=1.0, clip_gradient=-1.0, out=None,
                          name=None):
    """MXNet's ``mp_lamb_update_phase1``: float32 moments, float32 ``g``."""
    return call('mp_lamb_update_phase1', (weight, grad, mean, var, weight32),
                dict(t=t, beta1=beta1, beta2=beta2, epsilon=epsilon,
                     bias_correction=bias_correction, wd=wd,
                     rescale_grad=rescale_grad, clip_gradient=clip_gradient), out)


def mp_lamb_update_phase2(weight, g, r1, r2, weight32, lr, lower_bound=-1.0,
                          upper_bound=-1.0, out=None, name=None):
    """MXNet's ``mp_lamb_update_phase2`` (``weight32`` takes the step too)."""
    return call('mp_lamb_update_phase2', (weight, g, r1, r2, weight32),
                dict(lr=lr, lower_bound=lower_bound, upper_bound=upper_bound), out)


# === many weights in one kernel (MXNet's multi_*_update) =====================
def _multi(name, per, data, lrs, wds, num_weights, out, attrs):
    n = int(num_weights)
    if len(data) != per * n:
        raise ValueError(f'multi_{name}: expected {per} arrays per weight for '
                         f'num_weights={n}, got {len(data)} arrays')
    if len(lrs) != n or len(wds) != n:
        raise ValueError(f'multi_{name}: lrs and wds need {n} values each, got '
                         f'{len(lrs)} and {len(wds)}')
    op = OPS[name]
    groups = [tuple(data[i * per:(i + 1) * per]) for i in range(n)]
    if out is None:
        outs = [empty(g[0].shape, g[0].context, g[0].dtype) for g in groups]
    else:
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != n:
        raise ValueError(f'multi_{name}: out= needs {n} arrays, got {len(outs)}')
    chunk = []
    for g, o, lr, wd in zip(groups, outs, lrs, wds):
        check_context(name, g)
        op.infer([a.shape for a in g], [a.dtype for a in g], **attrs)
        _, fn, writes, reads = plan(op, g, dict(attrs, lr=lr, wd=wd), o)
        chunk.append((fn, writes, reads))
    push('multi_' + name, multi_fn(chunk),
         [a for _, ws, _ in chunk for a in ws], [a for _, _, rs in chunk for a in rs])
    return outs


def multi_sgd_update(*data, lrs, wds, rescale_grad=1.0, clip_gradient=-1.0,
                     num_weights=1, out=None, name=None):
    """MXNet's ``multi_sgd_update``: ``data = [w0, g0, w1, g1, ...]``, one push."""
    return _multi('sgd_update', 2, data, lrs, wds, num_weights, out,
                  dict(rescale_grad=rescale_grad, clip_gradient=clip_gradient))


def multi_sgd_mom_update(*data, lrs, wds, momentum=0.0, rescale_grad=1.0,
                         clip_gradient=-1.0, num_weights=1, out=None, name=None):
    """MXNet's ``multi_sgd_mom_update``: ``data = [w0, g0, mom0, w1, ...]``."""
    return _multi('sgd_mom_update', 3, data, lrs, wds, num_weights, out,
                  dict(momentum=momentum, rescale_grad=rescale_grad,
                       clip_gradient=clip_gradient))


def multi_mp_sgd_update(*data, lrs, wds, rescale_grad=1.0, clip_gradient=-1.0,
                        num_weights=1, out=None, name=None):
    """MXNet's ``multi_mp_sgd_update``: ``data = [w0, g0, w32_0, w1, ...]``."""
    return _multi('mp_sgd_update', 3, data, lrs, wds, num_weights, out,
                  dict(rescale_grad=rescale_grad, clip_gradient=clip_gradient))


def multi_mp_sgd_mom_update(*data, lrs, wds, momentum=0.0, rescale_grad=1.0,
                            clip_gradient=-1.0, num_weights=1, out=None, name=None):
    """MXNet's ``multi_mp_sgd_mom_update``: ``[w0, g0, mom0, w32_0, w1, ...]``."""
    return _multi('mp_sgd_mom_update', 4, data, lrs, wds, num_weights, out,
                  dict(momentum=momentum, rescale_grad=rescale_grad,
                       clip_gradient=clip_gradient))
