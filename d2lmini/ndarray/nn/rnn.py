"""``RNN``: MXNet's fused recurrent operator (Elman RNN, LSTM, GRU) and its
backward pass, back-propagation through time written out.

One op runs every layer and direction of a stack, as cuDNN does.  Its
weights come as ONE flat vector, in MXNet's packing (``rnn-inl.h``): all
weights first, layer by layer, direction by direction (left, then right),
``i2h`` then ``h2h``, each ``(G*H, in)`` row-major; then all biases in the
same order.  Gates, ``G`` of them: LSTM ``i, f, g, o``; GRU ``r, z, n``
(PyTorch's order and formulas too: ``n = tanh(x_n + r * (W_hn h + b_hn))``).

Forward, per layer and direction, one GEMM projects the input of every time
step at once, ``(T*N, I) @ W_ih.T``; then each step adds ``h @ W_hh.T`` and
applies the gates.  Backward walks time in reverse, collecting each step's
pre-activation gradient ``dA[t]``; the weight gradients are then one GEMM
each over all the steps.  What the backward pass needs from the forward
one (gates, hidden and cell states) is the op's last output, a flat
*reserve* (cuDNN's "reserve space"): ``internal_outputs = 1`` tells autograd
users and the gradient check that it is no result.

Dropout between layers (``p``) is drawn by the front end: in training it
runs the layers one op each, with ``nd.Dropout`` in between.
"""
import numpy as np

from ... import autograd as _ag
from ...base import _check_kwargs
from ..cpu_kernels import maximum0
from ..ndarray import invoke, zeros_like
from ..op_utils import _xp
from ..registry import OPS, Case, Op, register
from ._common import _float_dtype
from .dropout import Dropout

__all__ = ['RNN']

_GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}


def param_size(mode, input_size, hidden, layers, dirs):
    """Length of the flat parameter vector of this stack."""
    gh, size = _GATES[mode] * hidden, 0
    for layer in range(layers):
        ni = input_size if layer == 0 else hidden * dirs
        size += dirs * (gh * ni + gh * hidden + 2 * gh)
    return size


def unpack(params, mode, input_size, hidden, layers, dirs):
    """``[(w_ih, w_hh, b_ih, b_hh)]`` per (layer, direction): views of the
    flat vector ``params`` (writable if it is, as the gradient's are)."""
    gh, off, ws = _GATES[mode] * hidden, 0, []
    for layer in range(layers):
        ni = input_size if layer == 0 else hidden * dirs
        for _ in range(dirs):
            w_ih = params[off:off + gh * ni].reshape(gh, ni)
            off += gh * ni
            ws.append([w_ih, params[off:off + gh * hidden].reshape(gh, hidden)])
            off += gh * hidden
    for w in ws:
        w += [params[off:off + gh], params[off + gh:off + 2 * gh]]
        off += 2 * gh
    return ws


def _reserve(res, mode, T, N, H, layers, dirs):
    """The reserve's parts, as views of the flat ``res``: per (layer,
    direction) a dict of ``A`` (post-activation gates, by time), ``hs`` and
    ``cs`` (states, in processing order, ``T + 1`` of them), ``hn`` (GRU's
    ``W_hn h + b_hn``); and the output of each layer but the last.
    Called on ``None``, it returns the size instead."""
    gh, off = _GATES[mode] * H, 0
    shapes = {'A': (T, N, gh), 'hs': (T + 1, N, H)}
    if mode == 'lstm':
        shapes['cs'] = (T + 1, N, H)
    if mode == 'gru':
        shapes['hn'] = (T, N, H)
    parts, ys = [], []
    for _ in range(layers * dirs):
        part = {}
        for k, s in shapes.items():
            n = int(np.prod(s))
            part[k] = None if res is None else res[off:off + n].reshape(s)
            off += n
        parts.append(part)
    for _ in range(layers - 1):
        n = T * N * H * dirs
        ys.append(None if res is None else res[off:off + n].reshape(T, N, H * dirs))
        off += n
    return off if res is None else (parts, ys)


def _sigmoid_(a, xp):
    xp.negative(a, out=a)
    xp.exp(a, out=a)
    a += 1
    xp.reciprocal(a, out=a)


def _direction_forward(xp, x, w, h0, c0, mode, rev, part, y):
    """One layer, one direction: fills ``part`` (the reserve's) and ``y``."""
    w_ih, w_hh, b_ih, b_hh = w
    T, N, _ = x.shape
    H = h0.shape[-1]
    A, hs, cs, hn = part['A'], part['hs'], part.get('cs'), part.get('hn')
    xp.matmul(x.reshape(T * N, -1), w_ih.T, out=A.reshape(T * N, -1))
    A += b_ih
    if mode != 'gru':
        A += b_hh
    hs[0] = h0
    if cs is not None:
        cs[0] = c0
    for k in range(T):
        t = T - 1 - k if rev else k
        a, h = A[t], hs[k]
        if mode == 'gru':
            hh = h @ w_hh.T
            hh += b_hh
            a[:, :2 * H] += hh[:, :2 * H]
            _sigmoid_(a[:, :2 * H], xp)
            hn[t] = hh[:, 2 * H:]
            n = a[:, 2 * H:]
            n += a[:, :H] * hn[t]
            xp.tanh(n, out=n)
            z = a[:, H:2 * H]
            xp.multiply(z, h - n, out=hs[k + 1])       # h' = n + z * (h - n)
            hs[k + 1] += n
        else:
            a += h @ w_hh.T
            if mode == 'lstm':             # tanh(x) = 2 sigmoid(2x) - 1: one pass
                g = a[:, 2 * H:3 * H]
                g *= 2
                _sigmoid_(a, xp)
                g *= 2
                g -= 1
                c = cs[k + 1]
                xp.multiply(a[:, H:2 * H], cs[k], out=c)
                c += a[:, :H] * g
                xp.multiply(a[:, 3 * H:], xp.tanh(c), out=hs[k + 1])
            elif mode == 'rnn_tanh':
                xp.tanh(a, out=hs[k + 1])
            else:
                maximum0(a, out=hs[k + 1])
        y[t] = hs[k + 1]


def _direction_backward(xp, x, w, mode, rev, part, dy, dh, dc, grads, dx):
    """BPTT through one layer and direction.  ``dy``: the gradient of this
    direction's outputs ``(T, N, H)``; ``dh``/``dc``: of its last states
    (updated in place into those of its first ones); adds the weight
    gradients into ``grads`` (views of the flat gradient) and the input's
    into ``dx``."""
    w_ih, w_hh = w[0], w[1]
    A, hs, cs, hn = part['A'], part['hs'], part.get('cs'), part.get('hn')
    T, N, gh = A.shape
    H = hs.shape[-1]
    dA = xp.empty_like(A)
    dAh = xp.empty_like(A) if mode == 'gru' else dA
    for k in range(T - 1, -1, -1):
        t = T - 1 - k if rev else k
        dh += dy[t]
        a, da = A[t], dA[t]
        if mode == 'lstm':
            i, f, g, o = (a[:, j * H:(j + 1) * H] for j in range(4))
            tc = xp.tanh(cs[k + 1])
            xp.multiply(dh, tc, out=da[:, 3 * H:])          # d o
            da[:, 3 * H:] *= o * (1 - o)
            dc += dh * o * (1 - tc * tc)
            xp.multiply(dc, g * i * (1 - i), out=da[:, :H])
            xp.multiply(dc, cs[k] * f * (1 - f), out=da[:, H:2 * H])
            xp.multiply(dc, i * (1 - g * g), out=da[:, 2 * H:3 * H])
            dc *= f
            xp.matmul(da, w_hh, out=dh)
        elif mode == 'gru':
            r, z, n = a[:, :H], a[:, H:2 * H], a[:, 2 * H:]
            dah = dAh[t]
            xp.multiply(dh * (1 - z), 1 - n * n, out=da[:, 2 * H:])     # d a_n
            xp.multiply(da[:, 2 * H:], r, out=dah[:, 2 * H:])
            xp.multiply(da[:, 2 * H:] * hn[t], r * (1 - r), out=da[:, :H])
            xp.multiply(dh * (hs[k] - n), z * (1 - z), out=da[:, H:2 * H])
            dah[:, :2 * H] = da[:, :2 * H]
            dh *= z
            dh += dah @ w_hh
        else:
            h = hs[k + 1]
            if mode == 'rnn_tanh':
                xp.multiply(dh, 1 - h * h, out=da)
            else:
                xp.multiply(dh, h > 0, out=da)
            xp.matmul(da, w_hh, out=dh)
    hprev = hs[:T][::-1] if rev else hs[:T]
    dA2, dAh2 = dA.reshape(T * N, gh), dAh.reshape(T * N, gh)
    grads[0] += dA2.T @ x.reshape(T * N, -1)
    grads[1] += dAh2.T @ xp.ascontiguousarray(hprev).reshape(T * N, H)
    grads[2] += dA2.sum(axis=0)
    grads[3] += dAh2.sum(axis=0)
    dx += (dA2 @ w_ih).reshape(dx.shape)


def _check_mode(name, mode):
    if mode not in _GATES:
        raise ValueError(f"operator '{name}': mode={mode!r} is not one of "
                         f"{sorted(_GATES)}")


@register
class RNNOp(Op):
    """Outputs ``[out (T, N, D*H), hy (L*D, N, H), cy (L*D, N, H) for an
    LSTM else (0,), reserve]``; inputs ``data, parameters, state[,
    state_cell]`` (the cell state for an LSTM only)."""
    name = 'RNN'
    nout = 4
    internal_outputs = 1
    none_ograds = True

    @staticmethod
    def _case(mode, T, N, I, H, L, D):
        p = param_size(mode, I, H, L, D)
        ins = [(T, N, I), (p,), (L * D, N, H)] + [(L * D, N, H)] * (mode == 'lstm')
        return Case(*ins, low=-0.8, high=0.8, mode=mode, state_size=H,
                    num_layers=L, bidirectional=D == 2)

    cases = (_case('rnn_tanh', 3, 2, 3, 2, 1, 1), _case('rnn_relu', 3, 2, 2, 3, 2, 1),
             _case('lstm', 3, 2, 3, 2, 1, 1), _case('lstm', 2, 2, 2, 2, 2, 2),
             _case('gru', 3, 2, 3, 2, 1, 1), _case('gru', 2, 2, 2, 2, 2, 2),
             _case('rnn_tanh', 2, 1, 2, 2, 1, 2))

    def infer(self, shapes, dtypes, mode, state_size, num_layers=1,
              bidirectional=False):
        _check_mode(self.name, mode)
        dt = _float_dtype(self.name, dtypes)
        x = tuple(shapes[0])
        if len(x) != 3:
            raise ValueError(f"operator 'RNN': data must be 3-D (T, N, C) (layout "
                             f"TNC), got shape {x}")
        T, N, I = x
        H, L, D = state_size, num_layers, 2 if bidirectional else 1
        want = param_size(mode, I, H, L, D)
        if tuple(shapes[1]) != (want,):
            raise ValueError(f"operator 'RNN': parameters shape {tuple(shapes[1])} "
                             f"!= ({want},), the size of a {L}-layer {mode} with "
                             f"input size {I}, hidden size {H} and {D} direction(s)")
        nstate = 2 if mode == 'lstm' else 1
        if len(shapes) != 2 + nstate:
            raise ValueError(f"operator 'RNN': mode {mode!r} takes {nstate} state(s) "
                             f"(state{', state_cell' * (nstate == 2)}), got "
                             f"{len(shapes) - 2}")
        for nm, s in zip(('state', 'state_cell'), shapes[2:]):
            if tuple(s) != (L * D, N, H):
                raise ValueError(f"operator 'RNN': {nm} shape {tuple(s)} != "
                                 f"{(L * D, N, H)} (layers * directions, batch, "
                                 f"hidden)")
        res = _reserve(None, mode, T, N, H, L, D)
        cy = (L * D, N, H) if mode == 'lstm' else (0,)
        return [((T, N, D * H), dt), ((L * D, N, H), dt), (cy, dt), ((res,), dt)]

    def forward(self, x, params, h0, c0=None, mode='lstm', state_size=1,
                num_layers=1, bidirectional=False):
        xp = _xp(x)
        T, N, I = x.shape
        H, L, D = state_size, num_layers, 2 if bidirectional else 1
        ws = unpack(params, mode, I, H, L, D)
        res = xp.empty(_reserve(None, mode, T, N, H, L, D), x.dtype)
        parts, ys = _reserve(res, mode, T, N, H, L, D)
        out = xp.empty((T, N, D * H), x.dtype)
        hy = xp.empty((L * D, N, H), x.dtype)
        cy = xp.empty((L * D, N, H) if mode == 'lstm' else (0,), x.dtype)
        inp = x
        for layer in range(L):
            y = ys[layer] if layer < L - 1 else out
            for d in range(D):
                k = layer * D + d
                part = parts[k]
                _direction_forward(xp, inp, ws[k], h0[k],
                                   None if c0 is None else c0[k], mode, d == 1, part,
                                   y[:, :, d * H:(d + 1) * H])
                hy[k] = part['hs'][T]
                if mode == 'lstm':
                    cy[k] = part['cs'][T]
            inp = y
        return [out, hy, cy, res]

    def backward(self, ograds, inputs, outputs, **attrs):
        # (an output nobody used has no gradient: zeros, made here)
        args = list(inputs) + [outputs[3]] + [
            zeros_like(o) if g is None else g for g, o in zip(ograds[:3], outputs)]
        return invoke(OPS['_backward_RNN'], args, attrs)[:len(inputs)]


@register
class RNNBackwardOp(Op):
    """The gradients of ``RNN``'s inputs ``[d data, d parameters, d state,
    d state_cell]`` from its inputs, its reserve and its outputs' gradients."""
    name = '_backward_RNN'
    nout = 4
    differentiable = False

    def infer(self, shapes, dtypes, mode, **attrs):
        n = 4 if mode == 'lstm' else 3
        return [(tuple(s), dtypes[0]) for s in shapes[:n]] + \
            [((0,), dtypes[0])] * (4 - n)

    def forward(self, *arrays, mode='lstm', state_size=1, num_layers=1,
                bidirectional=False):
        n = 4 if mode == 'lstm' else 3
        x, params, h0 = arrays[:3]
        res, g_out, g_hy, g_cy = arrays[n:]
        xp = _xp(x)
        T, N, I = x.shape
        H, L, D = state_size, num_layers, 2 if bidirectional else 1
        ws = unpack(params, mode, I, H, L, D)
        dparams = xp.zeros_like(params)
        dws = unpack(dparams, mode, I, H, L, D)
        parts, ys = _reserve(res, mode, T, N, H, L, D)
        dh0 = g_hy.copy()
        dc0 = g_cy.copy() if mode == 'lstm' else xp.empty((0,), x.dtype)
        dy = g_out
        for layer in range(L - 1, -1, -1):
            inp = x if layer == 0 else ys[layer - 1]
            dx = xp.zeros(inp.shape, x.dtype)
            for d in range(D):
                k = layer * D + d
                _direction_backward(xp, inp, ws[k], mode, d == 1, parts[k],
                                    dy[:, :, d * H:(d + 1) * H], dh0[k],
                                    dc0[k] if mode == 'lstm' else None, dws[k], dx)
            dy = dx
        return [dy, dparams, dh0, dc0 if mode == 'lstm' else xp.empty((0,), x.dtype)]


def RNN(data=None, parameters=None, state=None, state_cell=None,
        sequence_length=None, state_size=None, num_layers=None, bidirectional=False,
        mode=None, p=0.0, state_outputs=False, projection_size=None,
        lstm_state_clip_min=None, lstm_state_clip_max=None,
        lstm_state_clip_nan=False, use_sequence_length=False, out=None, name=None,
        **kwargs):
    """A stack of recurrent layers over a ``(T, N, C)`` sequence, one op.

    ``parameters`` is the flat vector of all weights then all biases (see
    the module's docstring); ``state`` (and ``state_cell`` for an LSTM) are
    ``(num_layers * directions, N, state_size)``.  Returns ``out``, or
    ``[out, hy]`` (``[out, hy, cy]`` for an LSTM) with ``state_outputs``.

    >>> x, h = nd.ones((5, 2, 3)), nd.zeros((1, 2, 4))
    >>> w = nd.ones(4 * 3 + 4 * 4 + 2 * 4) * 0.1
    >>> nd.RNN(x, w, h, state_size=4, num_layers=1, mode='rnn_tanh').shape
    (5, 2, 4)
    """
    _check_kwargs(RNN, kwargs)
    if state_size is None or num_layers is None or mode is None:
        raise TypeError('RNN() needs the keywords state_size, num_layers and mode')
    _check_mode('RNN', mode)
    for key, val in (('projection_size', projection_size),
                     ('lstm_state_clip_min', lstm_state_clip_min),
                     ('lstm_state_clip_max', lstm_state_clip_max),
                     ('sequence_length', sequence_length)):
        if val is not None or (key == 'sequence_length' and use_sequence_length):
            raise NotImplementedError(f'RNN: {key} is not supported by d2lmini')
    if (mode == 'lstm') != (state_cell is not None):
        raise ValueError(f"RNN: mode={mode!r} {'needs' if mode == 'lstm' else 'takes no'}"
                         f" state_cell")
    L, D = int(num_layers), 2 if bidirectional else 1
    attrs = {'mode': mode, 'state_size': int(state_size), 'num_layers': L,
             'bidirectional': bool(bidirectional)}
    states = [state] + ([state_cell] if mode == 'lstm' else [])
    if p and L > 1 and _ag.is_training():
        res = _layer_by_layer(data, parameters, states, p, attrs)
    else:
        res = invoke(OPS['RNN'], [data, parameters] + states, attrs)[:3]
    if out is not None:
        out[:] = res[0]
        res[0] = out
    if not state_outputs:
        return res[0]
    return res[:3] if mode == 'lstm' else res[:2]


def _layer_by_layer(data, parameters, states, p, attrs):
    """The stack run one layer per op, with dropout on the inputs of all
    layers but the first (MXNet's placement)."""
    mode, H, L = attrs['mode'], attrs['state_size'], attrs['num_layers']
    D = 2 if attrs['bidirectional'] else 1
    I = data.shape[2]
    sizes = [(I if k < D else H * D) for k in range(L * D)]
    gh = _GATES[mode] * H
    w_end = sum(gh * (ni + H) for ni in sizes)
    w_off, x, hys, cys = 0, data, [], []
    one = dict(attrs, num_layers=1)
    for layer in range(L):
        ni = sizes[layer * D]
        nw, nb = D * gh * (ni + H), D * 2 * gh
        b_off = w_end + layer * nb
        w = parameters[w_off:w_off + nw]
        b = parameters[b_off:b_off + nb]
        w_off += nw
        flat = invoke(OPS['concat'], (w, b), {'dim': 0})
        if layer > 0:
            x = Dropout(x, p=p)
        st = [s[layer * D:(layer + 1) * D] for s in states]
        x, hy, cy = invoke(OPS['RNN'], [x, flat] + st, one)[:3]
        hys.append(hy)
        cys.append(cy)
    def cat(a):
        return invoke(OPS['concat'], tuple(a), {'dim': 0})
    return [x, cat(hys), cat(cys) if mode == 'lstm' else cys[0]]
