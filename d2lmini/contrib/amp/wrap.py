"""What ``amp.init()`` does to the operators (MXNet's ``_wrap_symbol_functions``).

Each listed function of ``nd`` and ``mx.sym`` is replaced by one that casts
its inputs first, so a network written for float32 runs in mixed precision
unchanged, imperatively and hybridized alike (a Block looks its operators up
in ``F``, one of these two modules, at every call):

* ``nd``: an NDArray input of the wrong AMP type (float16 or float32) goes
  through ``nd.amp_cast``, which autograd records: a float32 weight read by
  a float16 ``FullyConnected`` gets a float32 gradient.  A widest-type
  operator casts its float16 inputs to float32 if one input is float32.
* ``mx.sym``: the node made gets an ``amp_cast`` node before each input (not
  before auxiliary states), or, for a widest-type operator, one
  ``amp_multicast`` before all of them.
* a loss head (``SoftmaxOutput``) multiplies its ``grad_scale`` by the loss
  scale, as its gradient does not pass through ``amp.scale_loss``.

MXNet casts NDArrays to float16 on GPUs only; d2lmini casts on every
context, so the CPU shows what AMP does (and what float16 costs there).
Operators called as NDArray methods or Python operators (``x.exp()``,
``a + b``) are not wrapped; ``a + b`` promotes float16 to float32 itself.
"""
import functools
import logging

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym
from ...ndarray import NDArray
from ...ndarray.nn.amp_cast import amp_cast as _nd_amp_cast
from ...symbol import Symbol
from ...symbol.symbol import AUX_INPUTS

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32))
_WRAPPED = []          # (module, name, original function), to undo (tests)


def _cast_nd(x, dtype):
    if isinstance(x, NDArray) and x.dtype != dtype and np.dtype(x.dtype) in _FLOATS:
        return _nd_amp_cast(x, dtype=dtype)
    return x


def _cond_holds(kwargs, cond):
    return cond is None or (cond[0] in kwargs and str(kwargs[cond[0]]) in cond[1])


def _nd_casting(f, dtype, cond=None):
    def new(*args, **kwargs):
        if _cond_holds(kwargs, cond):
            args = [_cast_nd(a, dtype) for a in args]
            kwargs = {k: _cast_nd(v, dtype) for k, v in kwargs.items()}
        return f(*args, **kwargs)
    return new


def _sym_casting(f, dtype, cond=None):
    name = np.dtype(dtype).name

    def new(*args, **kwargs):
        out = f(*args, **kwargs)
        if _cond_holds(kwargs, cond):
            node = out._outputs[0][0]
            aux = AUX_INPUTS.get(node.op, ())
            node.inputs = [e if nm in aux else
                           _ORIGINAL['amp_cast'](Symbol([e]), dtype=name)._outputs[0]
                           for e, nm in zip(node.inputs, node.input_names)]
        return out
    return new


def _nd_widest(f, target):
    def new(*args, **kwargs):
        arrays = [a for a in list(args) + list(kwargs.values())
                  if isinstance(a, NDArray)]
        if any(a.dtype == np.float32 for a in arrays):
            args = [_cast_nd(a, np.float32) if _is(a, target) else a for a in args]
            kwargs = {k: _cast_nd(v, np.float32) if _is(v, target) else v
                      for k, v in kwargs.items()}
        return f(*args, **kwargs)
    return new


def _is(a, dtype):
    return isinstance(a, NDArray) and a.dtype == dtype


def _sym_widest(f):
    def new(*args, **kwargs):
        places = [('a', i) for i, a in enumerate(args) if isinstance(a, Symbol)]
        places += [('k', k) for k, v in kwargs.items() if isinstance(v, Symbol)]
        if places:
            args, kwargs = list(args), dict(kwargs)
            where = {'a': args, 'k': kwargs}
            cast = _ORIGINAL['amp_multicast'](*[where[w][i] for w, i in places],
                                              num_outputs=len(places))
            for (w, i), s in zip(places, list(cast) if len(places) > 1 else [cast]):
                where[w][i] = s
        return f(*args, **kwargs)
    return new


def _nd_loss_scaling(f, scaler):
    def new(*args, **kwargs):
        kwargs['grad_scale'] = kwargs.get('grad_scale', 1.0) * scaler.loss_scale
        return f(*args, **kwargs)
    return new


def _sym_loss_warning(f):
    def new(*args, **kwargs):
        logging.warning('%s does not support dynamic loss scaling in symbolic and '
                        'hybridized execution.', f.__name__)
        return f(*args, **kwargs)
    return new


_ORIGINAL = {'amp_cast': sym.amp_cast, 'amp_multicast': sym.amp_multicast}


def _replace(module, name, make):
    f = getattr(module, name, None)
    if f is None:            # an operator with no function (``_rdiv_scalar``)
        return
    new = functools.update_wrapper(make(f), f)     # its name, doc, __wrapped__
    setattr(module, name, new)
    _WRAPPED.append((module, name, f))


def wrap_all(target, lp16_ops, fp32_ops, conditional_fp32_ops, widest_ops,
             loss_outputs, scaler):
    """Replace the listed functions of ``nd`` and ``mx.sym`` (see above)."""
    for module, casting in ((nd, _nd_casting), (sym, _sym_casting)):
        for name in lp16_ops:
            _replace(module, name, lambda f: casting(f, target))
        for name in fp32_ops:
            _replace(module, name, lambda f: casting(f, np.float32))
        for name, attr, values in conditional_fp32_ops:
            _replace(module, name,
                     lambda f: casting(f, np.float32, (attr, [str(v) for v in values])))
    for name in widest_ops:
        _replace(nd, name, lambda f: _nd_widest(f, target))
        _replace(sym, name, _sym_widest)
    for name in loss_outputs:
        _replace(nd, name, lambda f: _nd_loss_scaling(f, scaler))
        _replace(sym, name, _sym_loss_warning)


def unwrap_all():
    """Put every original function back (in reverse order)."""
    while _WRAPPED:
        module, name, f = _WRAPPED.pop()
        setattr(module, name, f)
