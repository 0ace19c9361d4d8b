"""Parameters: named arrays a Block learns, with one copy per context.

(A Block's parameters by name, ``ParameterDict``, are in parameter_dict.py.)

A :class:`Parameter` holds its data on one or more contexts (``initialize(
ctx=[cpu(0), cpu(1)])`` puts the same initial values on both) and, unless
``grad_req='null'``, a gradient buffer beside each copy.  Every copy is an
autograd leaf whose gradient goes into that buffer, so after
``loss.backward()`` a Trainer (or a hand-written SGD) reads
``param.list_grad()``.

Shapes may be partly unknown (0 dims): with ``allow_deferred_init=True`` the
Parameter waits, after ``initialize()``, until the first forward pass tells
its Block the input shape (*deferred initialization*).

Examples
--------
>>> w = gluon.Parameter('w', shape=(2, 3))
>>> w.initialize(init.One(), ctx=[mx.cpu(0), mx.cpu(1)])
>>> w.data(mx.cpu(1)).sum().asscalar()
6.0
"""
import warnings

import numpy as np

from .. import autograd
from .. import initializer
from .. import ndarray as nd
from ..context import Context, cpu, current_context
from ..engine import MXNetError
from ..ndarray import NDArray
from ..util import is_np_array

__all__ = ['DeferredInitializationError', 'Parameter', 'Constant', 'ParameterDict',
           'tensor_types']

tensor_types = (nd.NDArray,)


class DeferredInitializationError(MXNetError):
    """A Parameter's shape is still unknown: its data waits for the first forward."""


def _brief(names, limit=10):
    names = [str(n) for n in names]
    if len(names) > limit:
        return ', '.join(repr(n) for n in names[:limit // 2]) + ', ..., ' + \
            ', '.join(repr(n) for n in names[-limit // 2:])
    return ', '.join(repr(n) for n in names)


def _shape_known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _in_mode(arrays):
    """Fresh arrays (copies made for a Parameter) as the class the current
    mode makes: ``mx.np`` arrays after ``npx.set_np()``, ``nd`` ones after
    ``npx.reset_np()``.  As in MXNet, the mode when the data is made
    (initialize, load, reset_ctx) decides."""
    cls = _np_ndarray() if is_np_array() else NDArray
    for a in arrays:
        a.__class__ = cls            # same layout: a pointer change
    return arrays


def _np_ndarray():
    from ..numpy.multiarray import ndarray
    return ndarray


def _ctx_list(ctx):
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    ctx = list(ctx)
    for c in ctx:
        if not isinstance(c, Context):
            raise TypeError(f'ctx must be a Context or a list of Contexts, got {c!r}')
    if not ctx:
        raise ValueError('ctx is an empty list: name at least one context, '
                         'e.g. ctx=mx.cpu() or ctx=[mx.cpu(0), mx.cpu(1)]')
    if len(set(ctx)) != len(ctx):
        raise ValueError(f'ctx lists a context twice: {ctx}')
    return ctx


class Parameter:
    """A learnable array: ``Parameter(name, grad_req='write', shape=None, ...)``.

    Parameters
    ----------
    name : str
    grad_req : {'write', 'add', 'null'}
        How ``backward`` updates the gradient (overwrite, accumulate, none).
    shape : tuple of int, 0 for dimensions not known yet.
    dtype : str or numpy dtype
    lr_mult, wd_mult : float
        Multipliers of the learning rate and weight decay (read by Trainer).
    init : Initializer or str
        This parameter's own initializer; it wins over the global one.
    allow_deferred_init : bool
        Allow ``initialize`` before the shape is known.
    differentiable : bool
        False for state such as BatchNorm's running mean (grad_req forced 'null').
    """

    def __init__(self, name, grad_req='write', shape=None, dtype='float32',
                 lr_mult=1.0, wd_mult=1.0, init=None, allow_deferred_init=False,
                 differentiable=True, stype='default', grad_stype='default'):
        for arg, st in (('stype', stype), ('grad_stype', grad_stype)):
            # MXNet asserts the name is a storage type, then d2lmini has dense only.
            if st not in ('default', 'row_sparse', 'csr'):
                raise AssertionError(f"Parameter {name!r}: {arg}={st!r} is not a "
                                     f"storage type ('default', 'row_sparse', 'csr')")
        if stype != 'default' or grad_stype != 'default':
            raise ValueError(f'Parameter {name!r}: only dense storage '
                             f"(stype='default') is supported")
        self._data = None           # list of NDArrays, one per context
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None        # Context -> index into _data
        self._trainer = None
        self._deferred_init = ()    # (init, ctx_list, default_init, data)
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        self._shape = None if shape is None else tuple(int(d) for d in shape)
        self.name = name
        self._dtype = np.dtype(dtype).type
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        self._stype = stype

    def __repr__(self):
        return (f'Parameter {self.name} (shape={self.shape}, '
                f'dtype={np.dtype(self.dtype).name})')

    # --- attributes -------------------------------------------------------------------
    @property
    def grad_req(self):
        """``'write'``, ``'add'`` or ``'null'``; setting it reallocates (or
        drops) the gradients."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ('write', 'add', 'null'):
            raise ValueError(f"Parameter {self.name!r}: grad_req must be 'write', "
                             f"'add' or 'null', got {req!r}")
        if not self._differentiable:
            req = 'null'
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == 'null' and self._grad is not None:
            self._grad = None
            self._data = [d.detach() for d in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        """The data's dtype; setting it casts the data (see :meth:`cast`)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        """The shape, 0 for sizes not known until the first forward; setting
        it fills in those zeros."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(int(d) for d in new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or not all(
                old in (0, -1, new) for new, old in zip(new_shape, self._shape)):
            raise ValueError(f'Parameter {self.name!r}: shape {new_shape} is '
                             f'incompatible with its declared shape {self._shape}')
        self._shape = new_shape

    @property
    def stype(self):
        """The storage type, ``'default'`` (dense)."""
        return self._stype

    # --- data access ------------------------------------------------------------------
    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            idx = self._ctx_map.get(ctx)
            if idx is not None:
                return arr_list[idx]
            raise RuntimeError(
                f'Parameter {self.name!r} was not initialized on {ctx}; it is on '
                f'{self._ctx_list}. Initialize it there (net.initialize(ctx=...), '
                f'or collect_params().reset_ctx(...)) or move your data with '
                f'x.as_in_context({self._ctx_list[0]}).')
        if self._deferred_init:
            raise DeferredInitializationError(
                f'Parameter {self.name!r} (shape {self.shape}) has not been '
                f'initialized yet because its initialization was deferred: its shape '
                f'is known only when the first batch of data has passed through '
                f'the network. Call net(X) once before reading it, or give the '
                f'layer its input size (in_units=..., in_channels=...).')
        raise RuntimeError(
            f'Parameter {self.name!r} has not been initialized. Call '
            f'net.initialize() (or net.collect_params().initialize()) first; '
            f'note that block.params holds only the block\'s own parameters, '
            f'while collect_params() includes those of its children.')

    def data(self, ctx=None):
        """This parameter's array on ``ctx`` (the only copy if there is one)."""
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        """The arrays on every context, in ``list_ctx()`` order."""
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None):
        """The gradient buffer on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Parameter {self.name!r} has no gradient because "
                               f"grad_req='null'")
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        """The gradient on each context, a list in :meth:`list_ctx`'s order."""
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Parameter {self.name!r} has no gradient because "
                               f"grad_req='null'")
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The contexts the data lives on (or will, after deferred init)."""
        if self._data is None:
            if self._deferred_init:
                return list(self._deferred_init[1])
            raise RuntimeError(f'Parameter {self.name!r} has not been initialized')
        return list(self._ctx_list)

    def zero_grad(self):
        """Set every gradient buffer to 0."""
        if self._grad is None:
            return
        for g in self._grad:
            g[:] = 0

    def set_data(self, data):
        """Write ``data`` into every copy (or keep it for the deferred init)."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise RuntimeError(f'Parameter {self.name!r} has not been '
                                   f'initialized; call initialize() first')
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        for arr in self._data:
            arr[:] = data
        t = self._trainer
        if t is not None and getattr(t, '_kv_initialized', False) and \
                getattr(t, '_update_on_kvstore', False) and \
                self not in getattr(t, '_params_to_init', ()):
            t._reset_kvstore()   # the store's copy of the weight is stale now

    # --- initialization ------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(),
                   force_reinit=False):
        """Create the data on ``ctx`` (a Context or a list) using ``init``.

        ``init`` falls back to the parameter's own ``init``, then to
        ``default_init``.  Already initialized parameters are left alone (with
        a warning) unless ``force_reinit=True``.
        """
        if self._data is not None and not force_reinit:
            warnings.warn(f'Parameter {self.name!r} is already initialized, '
                          f'ignoring. Set force_reinit=True to re-initialize.',
                          stacklevel=2)
            return
        self._data = self._grad = None
        ctx = _ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not _shape_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError(f'cannot initialize Parameter {self.name!r}: its shape '
                             f'{self.shape} is not fully known')
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        """Initialize now that the shape is known (called on the first forward)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        if not _shape_known(self.shape):
            raise MXNetError(
                f'cannot infer the shape of Parameter {self.name!r}: it is still '
                f'{self.shape}. Give it a full shape, or make its Block infer it '
                f'from the input (override HybridBlock.infer_shape(self, x, ...)).')
        self._deferred_init = ()
        with autograd.pause():
            if data is None:
                # One draw on the first context, copied to the others: every
                # device starts from the same values.
                data = nd.zeros(self.shape, ctx=ctx[0], dtype=self.dtype)
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {'__init__': init}), data)
            self._init_impl(data, ctx)

    def _init_impl(self, data, ctx_list):
        self._ctx_list = list(ctx_list)
        self._ctx_map = {c: i for i, c in enumerate(self._ctx_list)}
        with autograd.pause():      # a fresh buffer per context, never an alias
            self._data = _in_mode([data.copyto(c).astype(self.dtype, copy=False)
                                   for c in self._ctx_list])
        self._init_grad()

    def _init_grad(self):
        if self.grad_req == 'null':
            self._grad = None
            return
        self._grad = [nd.zeros(d.shape, ctx=d.context, dtype=d.dtype)
                      for d in self._data]
        for g, d in zip(self._grad, self._data):
            g.__class__ = d.__class__       # np data, np gradients
        autograd.mark_variables(self._data, self._grad, self.grad_req)

    def _reduce(self, ctx=cpu(0)):
        """One array on ``ctx`` holding the average over the contexts.  For
        saving it is on ``cpu(0)``, as MXNet's: a file records each array's
        context, and MXNet writes host arrays whatever the parameter's
        devices.  ``ctx=None``: on the first copy's context."""
        data = self.list_data()
        c0 = data[0].context if ctx is None else ctx
        if len(data) == 1:
            return data[0].as_in_context(c0)
        total = data[0].as_in_context(c0).astype('float64')
        for d in data[1:]:
            total = total + d.as_in_context(c0).astype('float64')
        return (total / len(data)).astype(self.dtype)

    def _load_init(self, data, ctx, cast_dtype=False):
        """Take ``data`` (from a file) as this parameter's value."""
        self.shape = data.shape     # checks it against the declared shape
        if np.dtype(data.dtype) != np.dtype(self.dtype):
            if not cast_dtype:
                raise ValueError(f'Parameter {self.name!r}: the file holds '
                                 f'{np.dtype(data.dtype).name} but the parameter is '
                                 f'{np.dtype(self.dtype).name}; pass cast_dtype=True')
            data = data.astype(self.dtype)
        if ctx is not None:
            ctx = _ctx_list(ctx)
        if self._data is None:
            if self._deferred_init:
                if ctx is not None and set(ctx) != set(self._deferred_init[1]):
                    raise ValueError(f'cannot load Parameter {self.name!r} on {ctx}: '
                                     f'it was initialized on {self._deferred_init[1]}')
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [current_context()]
            self._init_impl(data, ctx)
        else:
            if ctx is not None and set(ctx) != set(self.list_ctx()):
                raise ValueError(f'cannot load Parameter {self.name!r} on {ctx}: it '
                                 f'was initialized on {self.list_ctx()}')
            self.set_data(data)
        self._deferred_init = ()

    def reset_ctx(self, ctx):
        """Move the data (keeping its values) to ``ctx`` (a Context or a list)."""
        ctx = _ctx_list(ctx)
        if self._trainer is not None and hasattr(self._trainer, '_reset_kvstore'):
            self._trainer._reset_kvstore()      # its per-device state is stale now
        if self._data:
            data = self._reduce(None)
            self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError(f'cannot reset the context of Parameter {self.name!r}: '
                             f'it has not been initialized')

    def cast(self, dtype):
        """Convert data and gradients to ``dtype``."""
        self._dtype = np.dtype(dtype).type
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(dtype) for d in self._data]
        self._init_grad()

    def _set_trainer(self, trainer):
        self._trainer = trainer

    def var(self):
        """This parameter as a symbol variable (``mx.sym.var(self.name)``), with
        its shape (if known), dtype and learning-rate/weight-decay multipliers."""
        v = self.__dict__.get('_var')
        if v is None:
            from ..symbol import Variable
            shape = self.shape if self.shape and all(d > 0 for d in self.shape) \
                else None
            v = self._var = Variable(self.name, shape=shape, dtype=self.dtype,
                                     lr_mult=self.lr_mult, wd_mult=self.wd_mult)
        return v


class Constant(Parameter):
    """A Parameter that never learns (``grad_req='null'``), holding ``value``.

    >>> c = gluon.Constant('c', nd.ones((2, 2)))        # doctest: +SKIP
    """

    def __init__(self, name, value):
        if not isinstance(value, nd.NDArray):
            value = nd.array(np.asarray(value))
        self.value = value
        super().__init__(name, grad_req='null', shape=value.shape,
                         dtype=value.dtype, init=initializer.Constant(value))

    def __repr__(self):
        return (f'Constant {self.name} (shape={self.shape}, '
                f'dtype={np.dtype(self.dtype).name})')

    @property
    def grad_req(self):
        """Always ``'null'``: setting another value warns and is ignored."""
        return 'null'

    @grad_req.setter
    def grad_req(self, req):
        if req != 'null':
            warnings.warn(f'Constant {self.name!r} does not support '
                          f'grad_req={req!r}; it stays "null"', stacklevel=2)
        self._grad_req = 'null'


def __getattr__(name):
    """MXNet's path ``gluon.parameter.ParameterDict`` (and ``load_checked``):
    they live in parameter_dict.py, which imports this module."""
    if name in ('ParameterDict', 'load_checked'):
        from . import parameter_dict
        return getattr(parameter_dict, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
