"""Executor: a Symbol bound to a context and to arrays, ready to run.

``sym.simple_bind(ctx, data=(32, 784))`` infers every shape, allocates the
arguments, their gradients and the auxiliary states, and returns an
Executor; ``sym.bind(ctx, args, args_grad)`` uses arrays you made.  Then::

    ex.forward(is_train=True, data=batch)   # ex.outputs
    ex.backward()                           # ex.grad_dict['fc1_weight'], ...

The graph is lowered once per mode (training or not) to a
:class:`~d2lmini.symbol.graph.Plan`: its shapes, the operators' argument
checks and the memory plan are all settled at bind time, and a forward
pass is one engine operation.  The arguments are autograd variables, so
``backward`` is the imperative backward pass over the nodes the plan put on
the tape: the gradients are the imperative ones.
"""
import numpy as np

from . import autograd
from .base import MXNetError
from .context import Context
from .ndarray import ndarray as _nd
from .symbol.graph import lower
from .symbol.infer import propagate

__all__ = ['Executor']

_REQS = ('write', 'add', 'null')


def _as_list(name, values, names, required):
    """``values`` (list in ``names`` order, or dict) as a list; checks names."""
    if values is None:
        values = {}
    if isinstance(values, dict):
        unknown = set(values) - set(names)
        if unknown:
            raise ValueError(f'{name}: unknown name(s) {sorted(unknown)}; expected '
                             f'names from {names}')
        out = [values.get(n) for n in names]
    else:
        values = list(values)
        if len(values) != len(names):
            raise ValueError(f'{name}: {len(values)} arrays given for {len(names)} '
                             f'names {names}')
        out = values
    if required:
        missing = [n for n, v in zip(names, out) if v is None]
        if missing:
            raise ValueError(f'{name}: no array for {missing}')
    for n, v in zip(names, out):
        if v is not None and not isinstance(v, _nd.NDArray):
            raise TypeError(f"{name}: '{n}' must be an NDArray, got {type(v).__name__}")
    return out


def _view(a, shape):
    """The first ``prod(shape)`` elements of ``a``'s memory, shaped ``shape``
    (a view that knows its base, so the engine orders reads of ``a`` after
    writes through it)."""
    return a._view((-1,))[:int(np.prod(shape))]._view(tuple(shape))


class Executor:
    """A bound Symbol: arrays for every input, a plan per mode, outputs."""

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req='write',
                 aux_states=None):
        if not isinstance(ctx, Context):
            raise TypeError(f'bind: ctx must be a Context, got {type(ctx).__name__}')
        self._symbol = symbol
        self._ctx = ctx
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self.arg_arrays = _as_list('bind args', args, self._arg_names, True)
        self.aux_arrays = _as_list('bind aux_states', aux_states, self._aux_names,
                                   True)
        self.grad_arrays = _as_list('bind args_grad', args_grad, self._arg_names,
                                    False)
        self._grad_req = self._reqs(grad_req)
        for n, g in zip(self._arg_names, self.grad_arrays):
            if g is None:
                self._grad_req[n] = 'null'        # MXNet: no buffer, no gradient
        for n, a in zip(self._arg_names + self._aux_names,
                        self.arg_arrays + self.aux_arrays):
            if a._ctx != ctx:
                raise ValueError(f"bind: '{n}' is on {a._ctx}, but the executor is "
                                 f"bound to {ctx}")
        # Check every shape now: a wrong one fails at bind, naming the node.
        self._inputs = [n for n in symbol._nodes() if n.is_variable]
        arrays = dict(zip(self._arg_names, self.arg_arrays))
        arrays.update(zip(self._aux_names, self.aux_arrays))
        self._input_arrays = [arrays[n.name] for n in self._inputs]
        info, _ = propagate(symbol, {n: a.shape for n, a in arrays.items()},
                            {n: a.dtype for n, a in arrays.items()},
                            zero_unknown=False)
        self._out_info = [info[(id(n), i)] for n, i in symbol._outputs]
        self._plans = {}
        self._mark_variables()
        self.outputs = [_nd.zeros(s, ctx=ctx, dtype=d) for s, d in self._out_info]
        self._heads = None
        self._forwarded = False
        self._monitor = None

    @classmethod
    def _simple(cls, symbol, ctx, grad_req, type_dict, shared_exec, shapes):
        arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
        if arg_shapes is None:
            partial = symbol.infer_shape_partial(**shapes)[0]
            missing = [n for n, s in zip(symbol.list_arguments(), partial) if s == ()]
            raise MXNetError(f'simple_bind: cannot infer the shapes of {missing} from '
                             f'{shapes}; give them as keyword arguments')
        type_dict = dict(type_dict or {})
        arg_types, _, aux_types = symbol.infer_type(**type_dict)
        names = symbol.list_arguments()
        shared = shared_exec.arg_dict if shared_exec is not None else {}
        args = []
        for n, s, t in zip(names, arg_shapes, arg_types):
            old = shared.get(n)
            if old is not None and old.shape == tuple(s) and old.dtype == np.dtype(t):
                args.append(old)
            else:
                args.append(_nd.zeros(s, ctx=ctx, dtype=t))
        reqs = cls._reqs_of(grad_req, names)
        grads = [None if reqs[n] == 'null' else _nd.zeros(s, ctx=ctx, dtype=t)
                 for n, s, t in zip(names, arg_shapes, arg_types)]
        aux = [_nd.zeros(s, ctx=ctx, dtype=t) for s, t in zip(aux_shapes, aux_types)]
        return cls(symbol, ctx, args, grads, reqs, aux)

    @staticmethod
    def _reqs_of(grad_req, names):
        if isinstance(grad_req, str):
            reqs = dict.fromkeys(names, grad_req)
        elif isinstance(grad_req, dict):
            unknown = set(grad_req) - set(names)
            if unknown:
                raise ValueError(f'grad_req: unknown argument(s) {sorted(unknown)}')
            reqs = {n: grad_req.get(n, 'null') for n in names}
        else:
            grad_req = list(grad_req)
            if len(grad_req) != len(names):
                raise ValueError(f'grad_req: {len(grad_req)} values for '
                                 f'{len(names)} arguments')
            reqs = dict(zip(names, grad_req))
        for n, r in reqs.items():
            if r not in _REQS:
                raise ValueError(f"grad_req for '{n}' must be one of {_REQS}, got {r!r}")
        return reqs

    def _reqs(self, grad_req):
        return self._reqs_of(grad_req, self._arg_names)

    def _mark_variables(self):
        vs, gs, rs = [], [], []
        for n, a, g in zip(self._arg_names, self.arg_arrays, self.grad_arrays):
            if self._grad_req[n] != 'null' and g is not None:
                vs.append(a)
                gs.append(g)
                rs.append(self._grad_req[n])
        if vs:
            autograd.mark_variables(vs, gs, rs)
        self._need_grad = bool(vs)

    # -- dictionaries ------------------------------------------------------------
    @property
    def arg_dict(self):
        return dict(zip(self._arg_names, self.arg_arrays))

    @property
    def grad_dict(self):
        return dict(zip(self._arg_names, self.grad_arrays))

    @property
    def aux_dict(self):
        return dict(zip(self._aux_names, self.aux_arrays))

    @property
    def output_dict(self):
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    # -- running -----------------------------------------------------------------------
    def _plan(self, is_train):
        plan = self._plans.get(is_train)
        if plan is None:
            plan = self._plans[is_train] = lower(
                self._symbol._nodes(), self._inputs, self._symbol._outputs,
                [a.shape for a in self._input_arrays],
                [a.dtype for a in self._input_arrays], self._ctx, is_train)
        return plan

    def forward(self, is_train=False, **kwargs):
        """Run the graph; ``kwargs`` are copied into the arguments first.

        >>> ex = (mx.sym.var('x') * 2).bind(mx.cpu(), {'x': nd.ones(2)})
        >>> ex.forward()[0].asnumpy().tolist()
        [2.0, 2.0]
        """
        args = self.arg_dict
        for k, v in kwargs.items():
            if k not in args:
                raise ValueError(f"forward: unknown argument '{k}'; the arguments "
                                 f"are {self._arg_names}")
            dst = args[k]
            if tuple(v.shape) != dst.shape:
                raise ValueError(f"forward: '{k}' has shape {tuple(v.shape)}, but the "
                                 f"executor was bound with {dst.shape}; use reshape()")
            dst[:] = v
        plan = self._plan(bool(is_train))
        if is_train and self._need_grad and self._flow(plan)[1]:
            with autograd.record(train_mode=True):
                heads = plan.launch(self._input_arrays, record=True)
        else:
            with autograd.train_mode() if is_train else autograd.predict_mode():
                heads = plan.launch(self._input_arrays, record=False)
        self._heads = heads if is_train else None
        self._heads_plan = plan
        self._forwarded = True
        for dst, src in zip(self.outputs, heads):
            dst[:] = src
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Gradients of the outputs into ``grad_arrays`` (per ``grad_req``).

        Loss heads (SoftmaxOutput, ...) need no ``out_grads``; for other
        outputs the default head gradient is ones.
        """
        if not self._forwarded:
            raise MXNetError('backward: call forward(is_train=True) first')
        if not self._need_grad:
            return
        if self._heads is None:
            # The last forward was for inference (nothing recorded); MXNet
            # still differentiates it: run it again, recording, in predict mode.
            self._heads_plan = self._plan(False)
            with autograd.record(train_mode=False):
                self._heads = self._heads_plan.launch(self._input_arrays,
                                                      record=self._flow(
                                                          self._heads_plan)[1])
        # 'write' gradients that no path from the outputs reaches are zeros,
        # as MXNet's gradient graph writes them (comparisons, BlockGrad).
        for name in self._flow(self._heads_plan)[0]:
            self.grad_dict[name][:] = 0
        if out_grads is not None:
            if isinstance(out_grads, _nd.NDArray):
                out_grads = [out_grads]
            out_grads = list(out_grads)
            if len(out_grads) != len(self._heads):
                raise ValueError(f'backward: {len(out_grads)} out_grads for '
                                 f'{len(self._heads)} outputs')
        heads, grads = [], []
        for i, h in enumerate(self._heads):
            if h._node is not None:
                heads.append(h)
                grads.append(None if out_grads is None else out_grads[i])
        if heads:
            autograd.backward(heads, None if out_grads is None else grads,
                              train_mode=is_train)
        self._heads = None

    def _flow(self, plan):
        """Where gradients flow in ``plan``: (names of the 'write' arguments
        no gradient reaches, whether any argument with a gradient is reached).

        Found once per plan by walking its steps back from the outputs over
        differentiable operators.  When nothing is reached (the outputs are
        comparisons, or behind BlockGrad), forward need not record at all:
        MXNet's "zero propagation".
        """
        cache = self.__dict__.setdefault('_flow_of', {})
        res = cache.get(id(plan))
        if res is None:
            live = set(plan.heads)
            for st in reversed(plan.steps):
                if st.op is not None and st.op.differentiable and \
                        any(o in live for o in st.outs):
                    live.update(st.ins)
            grads = self.grad_dict
            has_grad = [(k, n.name) for k, n in enumerate(self._inputs)
                        if self._grad_req.get(n.name, 'null') != 'null'
                        and grads.get(n.name) is not None]
            res = cache[id(plan)] = (
                [n for k, n in has_grad if k not in live
                 and self._grad_req[n] == 'write'],
                any(k in live for k, _ in has_grad))
        return res

    # -- parameters and shapes ------------------------------------------------------
    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy arrays (by name) into this executor's arguments and aux states."""
        for params, target, what in ((arg_params, self.arg_dict, 'argument'),
                                     (aux_params or {}, self.aux_dict, 'aux state')):
            for name, v in params.items():
                if name in target:
                    dst = target[name]
                    if tuple(v.shape) != dst.shape:
                        raise ValueError(f"copy_params_from: '{name}' has shape "
                                         f"{tuple(v.shape)}, the executor's {what} "
                                         f"{dst.shape}")
                    dst[:] = v.as_in_context(dst.context) if \
                        isinstance(v, _nd.NDArray) else v
                elif not allow_extra_params:
                    raise ValueError(f"copy_params_from: '{name}' is not an {what} of "
                                     f"this executor (allow_extra_params=True to skip)")

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes, sharing memory with this one.

        Arrays that keep their shape are the same arrays (the parameters);
        arrays that shrink are views of the start of this executor's
        buffers, as MXNet shares them; arrays that grow need
        ``allow_up_sizing=True`` and get new memory.
        """
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise MXNetError(f'reshape: cannot infer every shape from {kwargs}')

        def fit(name, a, s):
            s = tuple(s)
            if a is None or a.shape == s:
                return a
            if np.prod(s) > np.prod(a.shape):
                if not allow_up_sizing:
                    raise MXNetError(f"reshape: '{name}' grows from {a.shape} to {s}; "
                                     f"pass allow_up_sizing=True to allocate new "
                                     f"memory")
                return _nd.zeros(s, ctx=self._ctx, dtype=a.dtype)
            return _view(a, s)
        for n, a, s in zip(self._arg_names, self.arg_arrays, arg_shapes):
            if a.shape != tuple(s) and n not in kwargs and not partial_shaping:
                raise MXNetError(f"reshape: the shape of '{n}' changes from {a.shape} "
                                 f"to {tuple(s)}; pass partial_shaping=True to allow it")
        args = [fit(n, a, s) for n, a, s in zip(self._arg_names, self.arg_arrays,
                                                arg_shapes)]
        grads = [fit(n, g, s) for n, g, s in zip(self._arg_names, self.grad_arrays,
                                                 arg_shapes)]
        aux = [fit(n, a, s) for n, a, s in zip(self._aux_names, self.aux_arrays,
                                               aux_shapes)]
        new = Executor(self._symbol, self._ctx, args, grads, dict(self._grad_req), aux)
        new.outputs = [_view(old, o.shape) if o.dtype == old.dtype and
                       o.size <= old.size else o
                       for o, old in zip(new.outputs, self.outputs)]
        return new

    def set_monitor_callback(self, callback, monitor_all=False):
        raise NotImplementedError('set_monitor_callback: executor monitors are not '
                                  'implemented in d2lmini')

    def debug_str(self):
        """The plan of the training graph: steps, slots and the memory plan,
        with the memory its intermediate values and outputs take at peak
        (all of them, kept for backward, when forward records; else the
        most alive at once, as the plan frees each after its last use)."""
        plan = self._plan(True)
        keep = self._need_grad and self._flow(plan)[1]
        size = [int(np.prod(s)) * np.dtype(d).itemsize
                for s, d in zip(plan.shapes, plan.dtypes)]
        if keep:
            peak = sum(size[i] for i in plan.produced)
        else:
            alive = peak = 0
            for k, st in enumerate(plan.steps):
                # an in-place step's output is its input's buffer, freed below
                alive += sum(size[o] for o in st.outs if o in plan.produced)
                peak = max(peak, alive)
                alive -= sum(size[i] for i in plan.free[k])
        return (plan.describe() +
                f'\nTotal {int(round(peak / 2 ** 20))} MB allocated '
                f'({"kept for backward" if keep else "peak, freed as it goes"})')

    def __repr__(self):
        return (f'<Executor {self._symbol.name or self._symbol.list_outputs()} on '
                f'{self._ctx}>')
