"""One symbol bound on several devices: data parallelism for a Module.

A batch of ``batch_size`` examples is cut along its batch axis into one
slice per device (``work_load_list`` weighs the slices); each device runs
its own executor on its slice with its own copy of the parameters.  The
group loads a batch into the executors, runs them, and gathers what comes
out (outputs concatenated back along the batch axis).  Summing the
gradients of the devices and updating the weights is the Module's part
(through a KVStore or one updater per device)::

    group = DataParallelExecutorGroup(sym, [mx.cpu(0), mx.cpu(1)], [1, 1],
                                      [DataDesc('data', (8, 10))], None,
                                      param_names, for_training=True,
                                      inputs_need_grad=False)
    group.forward(batch)            # 4 examples on each device
    group.get_outputs()[0].shape    # (8, ...)
"""
import logging
from collections import OrderedDict

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..context import cpu
from ..io import DataDesc

__all__ = ['DataParallelExecutorGroup', 'split_input_slice']


def split_input_slice(batch_size, work_load_list):
    """``[slice(0, 3), slice(3, 8)]``: where each device's part of a batch
    lies, in proportion to ``work_load_list`` (each part at least one
    example)."""
    total = float(sum(work_load_list))
    if batch_size < len(work_load_list):
        raise ValueError(f'a batch of {batch_size} examples cannot be split over '
                         f'{len(work_load_list)} devices: use a batch of at least '
                         f'{len(work_load_list)} (or fewer devices)')
    sizes = [int(round(w * batch_size / total)) for w in work_load_list]
    sizes[-1] = batch_size - sum(sizes[:-1])   # rounding: the last takes the rest
    slices, start = [], 0
    for size in sizes:
        if size < 1:
            raise ValueError(f'work_load_list {work_load_list} gives a device no '
                             f'example of a batch of {batch_size}')
        slices.append(slice(start, start + size))
        start += size
    return slices


def _desc(x):
    """A DataDesc from a DataDesc or a ``(name, shape)`` pair."""
    return x if isinstance(x, DataDesc) else DataDesc(*x)


def _batch_axis(desc):
    return DataDesc.get_batch_axis(getattr(desc, 'layout', None))


def _output_layout(symbol, i):
    """The batch axis of output ``i`` (its ``__layout__`` attribute; 0 if none)."""
    try:
        layout = symbol[i].attr('__layout__')
    except (IndexError, KeyError, TypeError, AttributeError, ValueError):
        layout = None
    return DataDesc.get_batch_axis(layout)


def _take(src, sl, axis):
    """The part ``sl`` of ``src`` along ``axis`` (``src`` itself if whole)."""
    if axis < 0 or (sl.start == 0 and sl.stop == src.shape[axis]):
        return src
    if axis == 0:
        return src[sl.start:sl.stop]
    return nd.slice_axis(src, axis=axis, begin=sl.start, end=sl.stop)


def _load(sources, targets, axes):
    """Copy each source array's slices into the executors' input arrays.

    ``targets[i]`` is ``[(slice, array on device k)]`` for input ``i``; a
    source given as a list is already cut, one array per device.
    """
    for src, dsts, axis in zip(sources, targets, axes):
        if isinstance(src, (list, tuple)):
            for part, (_, dst) in zip(src, dsts):
                part.copyto(dst)
            continue
        if not isinstance(src, nd.NDArray):        # a NumPy batch
            src = nd.array(src, dtype=dsts[0][1].dtype)
        for sl, dst in dsts:
            part = _take(src, sl, axis)
            if part.shape != dst.shape:
                raise ValueError(f'an input of shape {src.shape} does not fit the bound '
                                 f'input of shape {dst.shape} (slice {sl.start}:{sl.stop})')
            part.copyto(dst)


def _merge(per_device, axes):
    """One array per output: the devices' parts concatenated along the batch
    axis; an output without a batch axis is taken from the first device."""
    merged = []
    for parts, axis in zip(per_device, axes):
        if axis < 0 or len(parts) == 1:
            merged.append(parts[0])
        else:
            ctx = parts[0].context
            merged.append(nd.concat(*[p.as_in_context(ctx) for p in parts], dim=axis))
    return merged


def _grad_req_dict(grad_req, arg_names, param_names, fixed, data_names, inputs_need_grad):
    """``{argument: 'write' | 'add' | 'null'}``: parameters get ``grad_req``
    (fixed ones 'null'), data only when ``inputs_need_grad``, labels never."""
    def default(name, req):
        if name in param_names:
            return 'null' if name in fixed else req
        if name in data_names:
            return req if inputs_need_grad else 'null'
        return 'null'
    if isinstance(grad_req, str):
        return {k: default(k, grad_req) for k in arg_names}
    if isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise ValueError(f'grad_req has {len(grad_req)} entries, the symbol has '
                             f'{len(arg_names)} arguments {arg_names}')
        return dict(zip(arg_names, grad_req))
    if isinstance(grad_req, dict):
        unknown = sorted(set(grad_req) - set(arg_names))
        if unknown:
            raise ValueError(f'grad_req names {unknown}, which are not arguments of '
                             f'the symbol {arg_names}')
        reqs = {k: default(k, 'write') for k in arg_names}
        reqs.update(grad_req)
        return reqs
    raise TypeError(f"grad_req must be 'write', 'add' or 'null', a list or a dict, "
                    f'got {type(grad_req).__name__}')


class DataParallelExecutorGroup:
    """The executors of one symbol on ``contexts``, fed slices of each batch.

    Attributes the Module uses, each a list over inputs (or parameters) of
    lists over devices: ``data_arrays``/``label_arrays`` (``(slice, array)``
    pairs), ``param_arrays``, ``grad_arrays`` (None unless
    ``for_training``), ``aux_arrays``, ``input_grad_arrays``.
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req='write', state_names=None,
                 group2ctxs=None):
        if shared_group is not None or group2ctxs is not None:
            raise NotImplementedError(
                'DataParallelExecutorGroup: shared_group (bucketing) and group2ctxs '
                '(model parallelism) are not supported by d2lmini')
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self._total_exec_bytes = 0

        data_shapes = [_desc(x) for x in data_shapes]
        if label_shapes is not None:
            label_shapes = [_desc(x) for x in label_shapes]
        self.grad_req = _grad_req_dict(grad_req if for_training else 'null', self.arg_names,
                                       self.param_names, self.fixed_param_names,
                                       [x.name for x in data_shapes], inputs_need_grad)

        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [_output_layout(symbol, i) for i in range(self.num_outputs)]
        self.execs = []
        self._default_execs = None
        self.batch_size = None
        self.slices = None
        self.bind_exec(data_shapes, label_shapes)

    # -- binding --------------------------------------------------------------------
    def decide_slices(self, data_shapes):
        """Set ``batch_size`` and the devices' ``slices``; the batch axes."""
        axes = [_batch_axis(x) for x in data_shapes]
        for desc, axis in zip(data_shapes, axes):
            if axis < 0:
                continue
            size = desc.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
            elif size != self.batch_size:
                raise ValueError(f'all inputs must have the same batch size: '
                                 f'batch_size is {self.batch_size}, but {desc.name!r} '
                                 f'has shape {desc.shape}')
        return axes

    def _sliced(self, shapes, k, axes):
        """The shapes device ``k`` sees: the batch axis cut to its slice."""
        out = []
        for desc, axis in zip(shapes, axes):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[k].stop - self.slices[k].start
            out.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return out

    def _bind_ith_exec(self, k, data_shapes, label_shapes):
        shapes = {d.name: d.shape for d in data_shapes + label_shapes}
        if k == 0 and self.symbol.infer_shape(**shapes)[0] is None:
            inferred = self.symbol.infer_shape_partial(**shapes)[0]
            unknown = [n for n, s in zip(self.arg_names, inferred) if not s or not all(s)]
            raise MXNetError(
                f'Module.bind: the shapes of {unknown} cannot be inferred from the '
                f'data and label shapes {shapes}: give those variables a shape '
                f"(mx.sym.var(name, shape=...)), or make them inputs (data_names / "
                f'label_names) and bind with their shapes')
        types = {d.name: np.dtype(d.dtype) for d in data_shapes + label_shapes}
        return self.symbol.simple_bind(ctx=self.contexts[k], grad_req=self.grad_req,
                                       type_dict=types, **shapes)

    def _reshape_ith_exec(self, k, descs):
        shapes = {d.name: d.shape for d in descs}
        # inputs not given (the labels, when predicting) follow the data; the
        # parameters must keep their shapes (the executor checks that)
        inferred = dict(zip(self.arg_names, self.symbol.infer_shape_partial(**shapes)[0]))
        shapes.update((n, tuple(s)) for n, s in inferred.items()
                      if n not in shapes and n not in self.param_names and s and all(s))
        held = self._default_execs[k].arg_dict
        for name in self.param_names:
            new = tuple(inferred.get(name) or ())
            if new and all(new) and new != held[name].shape:
                raise ValueError(
                    f'inputs of shapes {shapes} would change the parameter {name!r} '
                    f'from {held[name].shape} to {new}; a module keeps its parameters\' '
                    f'shapes: check the batch (the module was bound for '
                    f'{[(d.name, d.shape) for d in self.data_shapes]})')
        return self._default_execs[k].reshape(allow_up_sizing=True, **shapes)

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Bind (or, with ``reshape``, reshape) one executor per device."""
        del shared_group
        before = self.batch_size, self.slices
        self.batch_size = None
        try:
            data_axes = self.decide_slices(data_shapes)
            label_axes = self.decide_slices(label_shapes) if label_shapes is not None else []
            execs = []
            for k in range(len(self.contexts)):
                dshapes = self._sliced(data_shapes, k, data_axes)
                lshapes = self._sliced(label_shapes, k, label_axes) if label_shapes else []
                if reshape:
                    execs.append(self._reshape_ith_exec(k, dshapes + lshapes))
                else:
                    execs.append(self._bind_ith_exec(k, dshapes, lshapes))
        except BaseException:
            self.batch_size, self.slices = before     # the group stays as it was
            raise
        # bound everywhere: now change the group
        self.execs = execs
        self.data_shapes, self.label_shapes = data_shapes, label_shapes
        self.data_layouts, self.label_layouts = data_axes, label_axes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes else []
        self._collect_arrays()

    def _collect_arrays(self):
        execs = self.execs
        slices = self.slices or [slice(k, k + 1) for k in range(len(execs))]
        self.data_arrays = [[(slices[k], e.arg_dict[name]) for k, e in enumerate(execs)]
                            for name in self.data_names]
        self.label_arrays = None
        if self.label_shapes is not None:
            self.label_arrays = [[(slices[k], e.arg_dict[name]) for k, e in enumerate(execs)]
                                 for name in self.label_names]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        self.param_arrays = [[e.arg_dict[name] for e in execs] for name in self.param_names]
        self.grad_arrays = None
        if self.for_training:
            self.grad_arrays = [[e.grad_dict.get(name) for e in execs]
                                for name in self.param_names]
        self.input_grad_arrays = None
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_dict[name] for e in execs]
                                      for name in self.data_names if name in self.arg_names]
        self.aux_arrays = [[e.aux_dict[name] for e in execs] for name in self.aux_names]

    def reshape(self, data_shapes, label_shapes):
        """Rebind for new input shapes; memory is shared with the first binding."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # -- parameters -------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copy the values into every device's executor."""
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Write the devices' mean of every parameter into the given CPU arrays."""
        for names, blocks, dest in ((self.param_names, self.param_arrays, arg_params),
                                    (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                if len(block) == 1:
                    value = block[0]
                else:
                    value = sum(w.as_in_context(cpu()) for w in block) / len(block)
                dest[name][:] = value

    # -- running ----------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Load ``data_batch`` (a DataBatch, or a list of them, one per
        device) into the executors and run them."""
        if isinstance(data_batch, list):
            data = [[b.data[i] for b in data_batch] for i in range(len(self.data_arrays))]
            labels = data_batch[0].label and \
                [[b.label[i] for b in data_batch] for i in range(len(self.label_names))]
        else:
            data, labels = data_batch.data, getattr(data_batch, 'label', None)
        if len(data) != len(self.data_arrays):
            raise ValueError(f'the batch holds {len(data)} data arrays, the module was '
                             f'bound for {len(self.data_arrays)}: {self.data_names}')
        _load(data, self.data_arrays, self.data_layouts)
        if self.label_arrays is not None and labels:
            _load(labels, self.label_arrays, self.label_layouts)
        if is_train is None:
            is_train = self.for_training
        for e in self.execs:
            e.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Run the executors backward; ``out_grads`` (whole-batch arrays) are
        cut into the devices' slices."""
        if not self.for_training:
            raise RuntimeError('backward: the module is bound with for_training=False; '
                               'bind(..., for_training=True, force_rebind=True) to train')
        if out_grads is None:
            out_grads = []
        elif not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        for k, e in enumerate(self.execs):
            sl = self.slices[k] if self.slices else slice(None)
            mine = [_take(g, sl, axis).as_in_context(self.contexts[k]) if axis >= 0
                    else g.as_in_context(self.contexts[k])
                    for g, axis in zip(out_grads, self.output_layouts)]
            e.backward(out_grads=mine or None)

    def get_output_shapes(self):
        """``[(name, shape)]`` of the outputs, for the whole batch."""
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs,
                                   self.output_layouts):
            shape = list(out.shape)
            if axis >= 0 and self.batch_size is not None:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        end = self.num_outputs if end is None else end
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        return _merge(outputs, self.output_layouts[begin:end]) if merge_multi_context \
            else outputs

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise RuntimeError('get_input_grads: bind with inputs_need_grad=True first')
        return _merge(self.input_grad_arrays, self.data_layouts) if merge_multi_context \
            else self.input_grad_arrays

    def get_states(self, merge_multi_context=True):
        if merge_multi_context:
            raise NotImplementedError('get_states: merge_multi_context=True is not '
                                      'supported (as in MXNet); pass False')
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Set the state inputs from ``states`` (per state, per device) or to
        the scalar ``value``: exactly one of the two."""
        if (states is None) == (value is None):
            raise ValueError('set_states: give exactly one of states and value')
        if states is not None:
            _load(states, [[(None, a) for a in arrs] for arrs in self.state_arrays],
                  [0] * len(states))
        else:
            for arrs in self.state_arrays:
                for a in arrs:
                    a[:] = value

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Feed each device's outputs and its part of ``labels`` to the metric."""
        labels = labels or []
        for k, e in enumerate(self.execs):
            if pre_sliced:
                mine = labels[k]
            else:
                sl = self.slices[k] if self.slices else slice(None)
                axes = self.label_layouts or [0] * len(labels)
                mine = [_take(lab, sl, axis) if axis >= 0 else lab
                        for lab, axis in zip(labels, axes)]
            eval_metric.update_dict(OrderedDict(zip(self.label_names, mine)),
                                    OrderedDict(zip(self.output_names, e.outputs)))

    def install_monitor(self, mon):
        for e in self.execs:
            mon.install(e)
