"""The recurrent layers ``RNN``, ``LSTM`` and ``GRU``: a whole stack (layers,
directions) run over a sequence by ONE fused operator, ``F.RNN``
(:mod:`d2lmini.ndarray.nn.rnn`).

Each (layer, direction) keeps MXNet's four Parameters, ``l0_i2h_weight``,
``l0_h2h_weight``, ``l0_i2h_bias``, ``l0_h2h_bias`` (``r0_...`` for the
reverse direction); a call packs them into the operator's flat vector.
Saved files use MXNet's keys (``_unfused.0.i2h_weight``, the names of the
equivalent stack of cells), so ``.params`` files interchange with MXNet.

>>> layer = rnn.LSTM(8, num_layers=2)
>>> layer.initialize()
>>> out, state = layer(nd.ones((5, 3, 4)), layer.begin_state(3))
>>> out.shape, state[0].shape
((5, 3, 8), (2, 3, 8))
"""
import re

from ... import ndarray as nd
from ...ndarray import NDArray
from ...util import is_np_array
from ..block import HybridBlock

__all__ = ['RNN', 'LSTM', 'GRU']

_GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}
_KEY = re.compile(r'(l|r)(\d+)_(i2h|h2h)_(weight|bias)\Z')


class _RNNLayer(HybridBlock):
    """What the three layers share; ``mode`` picks the cell."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional,
                 input_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, mode, dtype,
                 projection_size=None, use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ('TNC', 'NTC'):
            raise ValueError(f"{type(self).__name__}: invalid layout {layout!r}; "
                             f"must be one of ['TNC' or 'NTC']")
        if projection_size or use_sequence_length:
            raise NotImplementedError(f'{type(self).__name__}: projection_size and '
                                      f'use_sequence_length are not supported')
        self._hidden_size, self._num_layers = int(hidden_size), int(num_layers)
        self._mode, self._layout, self._dropout = mode, layout, dropout
        self._dir = 2 if bidirectional else 1
        self._input_size, self._dtype = input_size, dtype
        self._gates = _GATES[mode]
        self.skip_states = None
        ng, ni, nh = self._gates, input_size, self._hidden_size
        for i in range(self._num_layers):
            for j in 'lr'[:self._dir]:
                for name, shape, init in (
                        ('i2h_weight', (ng * nh, ni), i2h_weight_initializer),
                        ('h2h_weight', (ng * nh, nh), h2h_weight_initializer),
                        ('i2h_bias', (ng * nh,), i2h_bias_initializer),
                        ('h2h_bias', (ng * nh,), h2h_bias_initializer)):
                    key = f'{j}{i}_{name}'
                    setattr(self, key, self.params.get(
                        key, shape=shape, init=init, allow_deferred_init=True,
                        dtype=dtype))
            ni = nh * self._dir

    def __repr__(self):
        shape = self.l0_i2h_weight.shape
        s = (f'{type(self).__name__}({shape[1] if shape[1] else None} -> '
             f'{shape[0] // self._gates}, {self._layout}')
        if self._num_layers != 1:
            s += f', num_layers={self._num_layers}'
        if self._dropout != 0:
            s += f', dropout={self._dropout}'
        if self._dir == 2:
            s += ', bidirectional'
        return s + ')'

    def _collect_params_with_prefix(self, prefix=''):
        """MXNet's file keys: those of the same stack built from cells."""
        if prefix:
            prefix += '.'
        bidir = self._dir == 2
        ret = {}
        for key, val in self._reg_params.items():
            d, layer, g, t = _KEY.match(key).groups()
            cell = f'{layer}.{d}_cell.' if bidir else f'{layer}.'
            ret[f'{prefix}_unfused.{cell}{g}_{t}'] = val
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size=0):
        """``[{'shape': (layers * directions, batch_size, hidden), ...}]``:
        one for ``h``, and one more for an LSTM's ``c``."""
        shape = (self._num_layers * self._dir, batch_size, self._hidden_size)
        info = {'shape': shape, '__layout__': 'LNC', 'dtype': self._dtype}
        return [info, dict(info)] if self._mode == 'lstm' else [info]

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """The initial states, ``func(shape=..., **kwargs)`` each (zeros of
        ``(num_layers * directions, batch_size, hidden_size)``); NumPy-mode
        arrays after ``npx.set_np()``."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info.update(kwargs)
            state = func(name=f'{self.prefix}h0_{i}', **info)
            if is_np_array() and hasattr(state, 'as_np_ndarray'):
                state = state.as_np_ndarray()
            states.append(state)
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        if sequence_length is not None:
            raise NotImplementedError(f'{type(self).__name__}: sequence_length is not '
                                      f'supported')
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, NDArray):
                batch = inputs.shape[self._layout.find('N')] if inputs.ndim == 3 else 0
                states = self.begin_state(batch, ctx=inputs.context, dtype=inputs.dtype)
            else:
                from ... import symbol
                states = self.begin_state(0, func=symbol.zeros)
        if not isinstance(states, (list, tuple)):
            states = [states]
        return super().__call__(inputs, list(states), **kwargs)

    def infer_shape(self, inputs, *args):
        if inputs.ndim != 3:
            raise ValueError(f'{type(self).__name__}: input must be 3-D '
                             f'({self._layout}), got shape {inputs.shape}')
        for j in 'lr'[:self._dir]:
            p = getattr(self, f'{j}0_i2h_weight')
            p.shape = (p.shape[0], inputs.shape[2])

    def hybrid_forward(self, F, inputs, states, **params):
        if isinstance(inputs, NDArray):
            if inputs.ndim != 3:
                raise ValueError(f'{type(self).__name__}: input must be 3-D '
                                 f'({self._layout}), got shape {inputs.shape}')
            batch = inputs.shape[self._layout.find('N')]
            infos = self.state_info(batch)
            if len(states) != len(infos):
                raise ValueError(f'{type(self).__name__}: expected {len(infos)} '
                                 f'state(s), got {len(states)}')
            for state, info in zip(states, infos):
                if state.shape != info['shape']:
                    raise ValueError(f"Invalid recurrent state shape. Expecting "
                                     f"{info['shape']}, got {state.shape}.")
        if self._layout == 'NTC':
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        flat = F.concat(*[params[f'{d}{i}_{g}_{t}'].reshape((-1,))
                          for t in ('weight', 'bias') for i in range(self._num_layers)
                          for d in 'lr'[:self._dir] for g in ('i2h', 'h2h')], dim=0)
        rnn = F.RNN(inputs, flat, *states, state_size=self._hidden_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode)
        outputs, states = rnn[0], list(rnn[1:])
        if self._layout == 'NTC':
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs if self.skip_states else (outputs, states)


class RNN(_RNNLayer):
    """A multi-layer Elman RNN, ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} +
    b_hh)`` with ``activation`` 'relu' (MXNet's default) or 'tanh'.

    Called as ``out = layer(x)`` or ``out, states = layer(x, states)``; ``x``
    is ``(T, N, C)`` (``layout='TNC'``) or ``(N, T, C)`` ('NTC'); ``out`` has
    ``hidden_size * directions`` features; ``states`` is ``[h]``, each
    ``(num_layers * directions, N, hidden_size)``.
    """

    def __init__(self, hidden_size, num_layers=1, activation='relu', layout='TNC',
                 dropout=0, bidirectional=False, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, dtype='float32',
                 **kwargs):
        if activation not in ('relu', 'tanh'):
            raise ValueError(f"RNN: activation must be 'relu' or 'tanh', got "
                             f"{activation!r}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional,
                         input_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer,
                         'rnn_' + activation, dtype, **kwargs)


class LSTM(_RNNLayer):
    """A multi-layer LSTM (gates i, f, g, o); ``states`` is ``[h, c]``.
    Otherwise as :class:`RNN`."""

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0,
                 bidirectional=False, input_size=0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', projection_size=None,
                 h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype='float32',
                 **kwargs):
        if state_clip_min is not None or state_clip_max is not None:
            raise NotImplementedError('LSTM: state clipping is not supported')
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional,
                         input_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, 'lstm', dtype,
                         projection_size=projection_size, **kwargs)


class GRU(_RNNLayer):
    """A multi-layer GRU (gates r, z, n; ``n = tanh(x_n + r * (W_hn h +
    b_hn))``, as cuDNN); ``states`` is ``[h]``.  Otherwise as :class:`RNN`."""

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0,
                 bidirectional=False, input_size=0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', dtype='float32', **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional,
                         input_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, 'gru', dtype,
                         **kwargs)
