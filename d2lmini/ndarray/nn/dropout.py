"""``Dropout``: a mask drawn on the device's stream, then a product."""
import numpy as np

from ... import autograd as _ag
from ...base import _check_kwargs
from ..ndarray import invoke
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from .. import random as _random
from ._common import _float_dtype, _result

__all__ = ['Dropout']


@register
class DropoutMaskOp(Op):
    """Draws Dropout's mask: 0 with probability ``p``, else ``1 / (1 - p)``.

    The draw runs inside the kernel, on the device's stream, from the
    context's generator (``rng``), so a seed reproduces it in any engine mode.
    """
    name = '_dropout_mask'
    differentiable = False

    def infer(self, shapes, dtypes, p, axes, rng):
        shape = tuple(1 if i in axes else s for i, s in enumerate(shapes[0]))
        return shape, _float_dtype(self.name, dtypes)

    def forward(self, a, p, axes, rng):
        shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
        dt = a.dtype if a.dtype in (np.float32, np.float64) else np.float32
        # on a's device (a no-op where the generator draws there already,
        # as CuPy's does; random._sample_scalar does the same)
        keep = _xp(a).asarray(rng.random(shape, dtype=dt)) >= p
        return (keep * a.dtype.type(1.0 / (1.0 - p))).astype(a.dtype, copy=False)


@register
class DropoutOp(Op):
    """``data * mask`` (the mask broadcast over ``axes``)."""
    name = 'Dropout'
    cases = (Case(inputs=[lambda r: r.uniform(-1, 1, (4, 5)),
                          lambda r: (r.uniform(size=(4, 5)) > 0.5) * 2.0], grad=[0]),
             Case(inputs=[lambda r: r.uniform(-1, 1, (2, 3, 4)),
                          lambda r: (r.uniform(size=(2, 3, 1)) > 0.3) / 0.7], grad=[0]))

    def infer(self, shapes, dtypes):
        return shapes[0], _float_dtype(self.name, dtypes)

    def forward(self, a, mask):
        return a * mask

    def backward(self, g, inputs, out):
        return [g * inputs[1], None]


def Dropout(data, p=0.5, mode='training', axes=(), cudnn_off=False, out=None,
            name=None, **kwargs):
    """Zero each element with probability ``p``, scale the rest by ``1/(1-p)``.

    Active in training (``autograd.record()`` or ``train_mode()``), or always
    with ``mode='always'``; otherwise the identity.  ``axes`` share one mask
    value along them (variational dropout).
    """
    _check_kwargs(Dropout, kwargs)
    if mode not in ('training', 'always'):
        raise ValueError(f"Dropout: mode={mode!r} is not 'training' or 'always'")
    if not 0 <= p <= 1:
        raise ValueError(f'Dropout: p={p} is not a probability in [0, 1]')
    if p == 0 or not (mode == 'always' or _ag.is_training()):
        return _result(data, out)
    if p == 1:
        return _result(data * 0, out)
    axes = tuple(a % data.ndim for a in ((axes,) if isinstance(axes, int) else axes))
    mask = invoke(OPS['_dropout_mask'], (data,),
                  {'p': float(p), 'axes': axes, 'rng': _random.generator(data.context)})
    return _result(invoke(OPS['Dropout'], (data, mask)), out)
