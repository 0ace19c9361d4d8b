"""Recurrent cells: one time step each, written with ordinary operators
(``FullyConnected``, ``SliceChannel``, elementwise), as MXNet's are; and
``unroll`` to run one over a sequence step by step.

The cells compute what the fused layers of :mod:`.rnn_layer` compute, with
the same four Parameters (``i2h_weight``, ``h2h_weight``, ``i2h_bias``,
``h2h_bias``): a learner can read a step here, and run it fast there.
Stacks and wrappers: ``SequentialRNNCell``, ``HybridSequentialRNNCell``,
``BidirectionalCell`` (unroll only), ``DropoutCell``, ``ResidualCell``,
``ZoneoutCell``.

>>> cell = rnn.LSTMCell(8)
>>> cell.initialize()
>>> outs, states = cell.unroll(5, nd.ones((3, 5, 4)), merge_outputs=True)
>>> outs.shape, [s.shape for s in states]
((3, 5, 8), [(3, 8), (3, 8)])
"""
from ... import ndarray as nd
from ... import symbol
from ...ndarray import NDArray
from ..block import Block, HybridBlock, _indent

__all__ = ['RecurrentCell', 'HybridRecurrentCell', 'RNNCell', 'LSTMCell', 'GRUCell',
           'SequentialRNNCell', 'HybridSequentialRNNCell', 'DropoutCell',
           'ModifierCell', 'ZoneoutCell', 'ResidualCell', 'BidirectionalCell']


def _module(x):
    """``nd`` or ``symbol``: the namespace that computes on ``x``."""
    return symbol if isinstance(x, symbol.Symbol) else nd


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """``inputs`` (one tensor, or a list of per-step ones) as a list of
    steps (``merge=False``), one tensor in ``layout`` (True) or either
    (None).  Returns ``(inputs, time_axis, F, batch_size)``."""
    if inputs is None:
        raise ValueError('unroll(inputs=None) is not supported: pass the inputs')
    axis, batch_axis = layout.find('T'), layout.find('N')
    in_axis = in_layout.find('T') if in_layout is not None else axis
    batch = 0
    if isinstance(inputs, (NDArray, symbol.Symbol)):
        F = _module(inputs)
        if F is nd:
            if inputs.ndim < 2:
                raise ValueError(f'unroll: inputs must have a time and a batch '
                                 f'axis ({layout}), got shape {inputs.shape}')
            batch = inputs.shape[batch_axis]
            if length is not None and inputs.shape[in_axis] != length:
                raise ValueError(f'unroll: length={length} but the inputs have '
                                 f'{inputs.shape[in_axis]} steps on axis {in_axis} '
                                 f'(layout {layout}), shape {inputs.shape}')
        if merge is False:
            n = inputs.shape[in_axis] if F is nd else length
            steps = F.split(inputs, axis=in_axis, num_outputs=n, squeeze_axis=True)
            inputs = list(steps) if isinstance(steps, (list, tuple)) else [steps]
    else:
        if length is not None and len(inputs) != length:
            raise ValueError(f'unroll: length={length} but {len(inputs)} inputs')
        F = _module(inputs[0])
        if F is nd:
            batch = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if not isinstance(inputs, list) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch


def _mask(F, steps, valid_length):
    """Zero each step ``t`` of the sequences shorter than ``t + 1``."""
    return [F.broadcast_mul(s, F.expand_dims(valid_length > t, axis=1))
            for t, s in enumerate(steps)]


def _last(F, per_step, valid_length):
    """Each sequence's value at its last valid step (MXNet's SequenceLast)."""
    return sum(F.broadcast_mul(s, F.expand_dims(valid_length == t + 1, axis=1))
               for t, s in enumerate(per_step))


def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    if begin_state is not None:
        return begin_state
    if F is nd:
        ctx = inputs.context if isinstance(inputs, NDArray) else inputs[0].context
        dtype = inputs.dtype if isinstance(inputs, NDArray) else inputs[0].dtype
        with ctx:
            return cell.begin_state(func=nd.zeros, batch_size=batch_size, dtype=dtype)
    return cell.begin_state(func=symbol.zeros, batch_size=batch_size)


class RecurrentCell(Block):
    """Base class of the cells: ``output, states = cell(x, states)`` is one
    step; :meth:`unroll` runs a sequence."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters before reusing the cell on a new sequence."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """The states' shapes and layouts: ``[{'shape': ..., '__layout__': 'NC'}]``."""
        raise NotImplementedError

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """The initial states: ``func(shape=..., **kwargs)`` for each."""
        if self._modified:
            raise RuntimeError('After applying modifier cells (e.g. ZoneoutCell) the '
                               'base cell cannot be called directly. Call the '
                               'modifier cell instead.')
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info or {}, **kwargs)
            state = func(name=f'{self._prefix}begin_state_{self._init_counter}', **info)
            states.append(_as_np(state))
        return states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        """Run ``length`` steps over ``inputs`` (one ``layout`` tensor or a
        list of ``(N, C)`` steps).  Returns ``(outputs, states)``: outputs
        as a list of steps, or one tensor if ``merge_outputs`` (None: as the
        cell finds them).  ``valid_length`` ``(N,)``: outputs past each
        sequence's end are zero, ``states`` are those at its end."""
        self.reset()
        inputs, axis, F, batch = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [_last(F, s, valid_length) for s in zip(*all_states)]
            outputs = _mask(F, outputs, valid_length)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        func = {'tanh': F.tanh, 'relu': F.relu, 'sigmoid': F.sigmoid}.get(activation)
        if func:
            return func(inputs, **kwargs)
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One step: ``(output, new_states)``."""
        self._counter += 1
        return super().forward(inputs, states)


def _as_np(state):
    from ...util import is_np_array
    if is_np_array() and hasattr(state, 'as_np_ndarray'):
        return state.as_np_ndarray()
    return state


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A cell whose step is ``hybrid_forward(F, x, states, **params)``."""

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _GatedCell(HybridRecurrentCell):
    """The four Parameters of a cell with ``gates`` gates, and its repr."""
    gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = int(hidden_size), input_size
        gh = self.gates * self._hidden_size
        for name, shape, init in (
                ('i2h_weight', (gh, input_size), i2h_weight_initializer),
                ('h2h_weight', (gh, self._hidden_size), h2h_weight_initializer),
                ('i2h_bias', (gh,), i2h_bias_initializer),
                ('h2h_bias', (gh,), h2h_bias_initializer)):
            setattr(self, name, self.params.get(name, shape=shape, init=init,
                                                allow_deferred_init=True))

    def state_info(self, batch_size=0):
        n = 2 if isinstance(self, LSTMCell) else 1
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}
                for _ in range(n)]

    def infer_shape(self, inputs, *args):
        self.i2h_weight.shape = (self.i2h_weight.shape[0], inputs.shape[-1])

    def __repr__(self):
        shape = self.i2h_weight.shape
        act = f', {self._activation}' if isinstance(self, RNNCell) else ''
        return (f'{type(self).__name__}({shape[1] if shape[1] else None} -> '
                f'{shape[0]}{act})')

    def _projections(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                     h2h_bias):
        prefix = f't{self._counter}_'
        gh = self.gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias,
                               num_hidden=gh, name=prefix + 'i2h')
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=gh, name=prefix + 'h2h')
        return prefix, i2h, h2h


class RNNCell(_GatedCell):
    """Elman cell: ``h' = act(W_ih x + b_ih + W_hh h + b_hh)`` (``activation``
    'tanh' by default, or any ``Activation`` act_type or callable)."""

    def __init__(self, hidden_size, activation='tanh', i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size,
                         prefix, params)
        self._activation = activation

    def _alias(self):
        return 'rnn'

    def hybrid_forward(self, F, inputs, states, **params):
        prefix, i2h, h2h = self._projections(F, inputs, states, **params)
        out = self._get_activation(F, F.elemwise_add(i2h, h2h), self._activation,
                                   name=prefix + 'out')
        return out, [out]


class LSTMCell(_GatedCell):
    """LSTM cell (gates i, f, g, o): ``c' = f*c + i*g``, ``h' = o*tanh(c')``;
    states ``[h, c]``."""
    gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, prefix=None, params=None,
                 activation='tanh', recurrent_activation='sigmoid'):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size,
                         prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def _alias(self):
        return 'lstm'

    def hybrid_forward(self, F, inputs, states, **params):
        prefix, i2h, h2h = self._projections(F, inputs, states, **params)
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h), num_outputs=4,
                               name=prefix + 'slice')
        act, ract = self._activation, self._recurrent_activation
        i = self._get_activation(F, gates[0], ract, name=prefix + 'i')
        f = self._get_activation(F, gates[1], ract, name=prefix + 'f')
        g = self._get_activation(F, gates[2], act, name=prefix + 'c')
        o = self._get_activation(F, gates[3], ract, name=prefix + 'o')
        c = F.elemwise_add(F.elemwise_mul(f, states[1]), F.elemwise_mul(i, g),
                           name=prefix + 'state')
        h = F.elemwise_mul(o, self._get_activation(F, c, act), name=prefix + 'out')
        return h, [h, c]


class GRUCell(_GatedCell):
    """GRU cell (gates r, z, n): ``n = tanh(x_n + r * (W_hn h + b_hn))``,
    ``h' = (1 - z) * n + z * h``, as cuDNN and the fused ``GRU`` layer."""
    gates = 3

    def _alias(self):
        return 'gru'

    def hybrid_forward(self, F, inputs, states, **params):
        prefix, i2h, h2h = self._projections(F, inputs, states, **params)
        i_r, i_z, i_n = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice')
        h_r, h_z, h_n = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice')
        r = F.sigmoid(F.elemwise_add(i_r, h_r), name=prefix + 'r_act')
        z = F.sigmoid(F.elemwise_add(i_z, h_z), name=prefix + 'z_act')
        n = F.tanh(F.elemwise_add(i_n, F.elemwise_mul(r, h_n)), name=prefix + 'h_act')
        h = F.elemwise_add(F.elemwise_mul(F.elemwise_sub(F.ones_like(z), z), n),
                           F.elemwise_mul(z, states[0]), name=prefix + 'out')
        return h, [h]


class _StackMixin:
    """What the two sequential stacks share."""

    def __repr__(self):
        mods = '\n'.join(f'({i}): {_indent(repr(m), 2)}'
                         for i, m in self._children.items())
        return f'{type(self).__name__}(\n{mods}\n)'

    def add(self, cell):
        """Append ``cell`` to the stack."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        """The states of all the cells, in order (their lists joined)."""
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        """The initial states of all the cells, in order (as ``state_info``)."""
        if self._modified:
            raise RuntimeError('After applying modifier cells (e.g. ZoneoutCell) the '
                               'base cell cannot be called directly.')
        return _cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, p = [], 0
        for cell in self._children.values():
            if isinstance(cell, BidirectionalCell):
                raise ValueError(f'{type(self).__name__}: a BidirectionalCell cannot '
                                 f'be stepped; use unroll')
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states += state
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        """Unroll each cell over the whole sequence in turn (a layer at a
        time, as the fused layers do), not step by step."""
        self.reset()
        inputs, _, F, batch = _format_sequence(length, inputs, layout, None)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch)
        p, next_states, last = 0, [], len(self._children) - 1
        for i, cell in enumerate(self._children.values()):
            n = len(cell.state_info())
            inputs, states = cell.unroll(
                length, inputs=inputs, begin_state=begin_state[p:p + n], layout=layout,
                merge_outputs=None if i < last else merge_outputs,
                valid_length=valid_length)
            p += n
            next_states += states
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_StackMixin, RecurrentCell):
    """Cells stacked: each step runs them in order (states concatenated)."""

    def hybrid_forward(self, *args, **kwargs):
        """Not a hybrid cell: a step is ``__call__``."""
        raise NotImplementedError


class HybridSequentialRNNCell(_StackMixin, HybridRecurrentCell):
    """:class:`SequentialRNNCell` of hybrid cells."""

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs (``rate``; ``axes`` share a mask); no state."""

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, (int, float)):
            raise TypeError(f'DropoutCell: rate must be a number, got {rate!r}')
        self._rate, self._axes = rate, axes

    def __repr__(self):
        return f'{type(self).__name__}(rate={self._rate}, axes={self._axes})'

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return 'dropout'

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name=f't{self._counter}_fwd')
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if not isinstance(inputs, list):        # the whole sequence at once
            return self.hybrid_forward(F, inputs, begin_state or [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """A cell wrapped around ``base_cell`` (which must then not be called
    alone): shares its Parameters and states."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise ValueError(f'Cell {base_cell.name} is already modified. One cell '
                             f'cannot be modified twice')
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=nd.zeros, **kwargs):
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return f'{type(self).__name__}({self.base_cell})'


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each output and state unit keeps its previous
    value with probability ``zoneout_outputs`` / ``zoneout_states``."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise ValueError("BidirectionalCell doesn't support zoneout since it "
                             "doesn't support step. Please add ZoneoutCell to the "
                             "cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self._prev_output = None

    def __repr__(self):
        return (f'{type(self).__name__}(p_out={self.zoneout_outputs}, '
                f'p_state={self.zoneout_states}, {self.base_cell})')

    def _alias(self):
        return 'zoneout'

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        p_out, p_st = self.zoneout_outputs, self.zoneout_states
        next_output, next_states = self.base_cell(inputs, states)

        def mask(p, like):
            return F.Dropout(F.ones_like(like), p=p)
        prev = self._prev_output
        if prev is None:
            prev = F.zeros_like(next_output)
        output = (F.where(mask(p_out, next_output), next_output, prev)
                  if p_out != 0. else next_output)
        states = ([F.where(mask(p_st, new), new, old)
                   for new, old in zip(next_states, states)]
                  if p_st != 0. else next_states)
        self._prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (Wu et al., 2016)."""

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f't{self._counter}_fwd'), states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length, inputs=inputs, begin_state=begin_state, layout=layout,
                merge_outputs=merge_outputs, valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = not isinstance(outputs, list)
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            steps = inputs
            if merge_outputs:
                steps, _, _, _ = _format_sequence(length, inputs, layout, False)
            inputs = _mask(F, steps, valid_length)
            if merge_outputs:
                inputs, _, _, _ = _format_sequence(length, inputs, layout, True)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """``l_cell`` runs forward in time, ``r_cell`` backward; outputs are
    concatenated on the feature axis.  Only :meth:`unroll` (no step)."""

    def __init__(self, l_cell, r_cell, output_prefix='bi_'):
        super().__init__(prefix='', params=None)
        self.register_child(l_cell, 'l_cell')
        self.register_child(r_cell, 'r_cell')
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError('Bidirectional cannot be stepped. Please use unroll')

    def __repr__(self):
        return (f"{type(self).__name__}(forward={self._children['l_cell']}, "
                f"backward={self._children['r_cell']})")

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, axis, F, batch = _format_sequence(length, inputs, layout, False)
        rev = _reverse(F, inputs, valid_length)
        states = _get_begin_state(self, F, begin_state, inputs, batch)
        l_cell, r_cell = self._children.values()
        n = len(l_cell.state_info(batch))
        l_out, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n],
                                        layout=layout, merge_outputs=merge_outputs,
                                        valid_length=valid_length)
        r_out, r_states = r_cell.unroll(length, inputs=rev, begin_state=states[n:],
                                        layout=layout, merge_outputs=False,
                                        valid_length=valid_length)
        r_out = _reverse(F, r_out, valid_length)
        if merge_outputs is None:
            merge_outputs = not isinstance(l_out, list)
            l_out, _, _, _ = _format_sequence(None, l_out, layout, merge_outputs)
        if merge_outputs:
            r_out = F.stack(*r_out, axis=axis)
            outputs = F.concat(l_out, r_out, dim=2, name=f'{self._output_prefix}out')
        else:
            outputs = [F.concat(lo, ro, dim=1, name=f'{self._output_prefix}t{i}')
                       for i, (lo, ro) in enumerate(zip(l_out, r_out))]
        return outputs, l_states + r_states


def _reverse(F, steps, valid_length):
    """The steps in reverse order; with ``valid_length``, each sequence's
    valid steps reversed in place and its padding left where it is."""
    if valid_length is None:
        return list(reversed(steps))
    T = len(steps)
    out = []
    for t in range(T):
        # step t takes step valid_length - 1 - t where t is valid
        acc = None
        for s in range(T):
            pick = F.expand_dims((valid_length - 1 - t) == s, axis=1)
            term = F.broadcast_mul(steps[s], pick)
            acc = term if acc is None else acc + term
        keep = F.expand_dims(valid_length <= t, axis=1)
        out.append(acc + F.broadcast_mul(steps[t], keep))
    return out
