"""gluon.rnn: the fused layers against PyTorch's (same weights, outputs and
gradients), the cells against the layers, MXNet's names, unroll, errors.
(The operator's own gradient check is in test_grad_registry.)"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd
from d2lmini.gluon import rnn

torch = pytest.importorskip('torch')

T, N, I, H = 5, 3, 4, 6
TORCH = {'lstm': torch.nn.LSTM, 'gru': torch.nn.GRU, 'rnn_tanh': torch.nn.RNN,
         'rnn_relu': torch.nn.RNN}


def _layer(mode, **kw):
    if mode == 'lstm':
        return rnn.LSTM(H, **kw)
    if mode == 'gru':
        return rnn.GRU(H, **kw)
    return rnn.RNN(H, activation=mode[4:], **kw)


def _copy_to_torch(layer, mode, L, D):
    kw = {'nonlinearity': mode[4:]} if mode.startswith('rnn') else {}
    net = TORCH[mode](I, H, num_layers=L, bidirectional=D == 2, **kw).double()
    with torch.no_grad():
        for l in range(L):
            for d in range(D):
                sfx = f'_l{l}' + ('_reverse' if d else '')
                for g in ('ih', 'hh'):
                    for t in ('weight', 'bias'):
                        p = getattr(layer, f"{'lr'[d]}{l}_{'i2h' if g == 'ih' else 'h2h'}_{t}")
                        getattr(net, f'{t}_{g}{sfx}').copy_(
                            torch.tensor(p.data().asnumpy()))
    return net


@pytest.mark.parametrize('mode,L,D,layout', [
    ('lstm', 2, 2, 'TNC'), ('gru', 2, 1, 'NTC'), ('rnn_tanh', 1, 2, 'NTC'),
    ('rnn_relu', 2, 1, 'TNC'), ('lstm', 1, 1, 'NTC'), ('gru', 1, 2, 'TNC')])
def test_layer_matches_torch(mode, L, D, layout):
    layer = _layer(mode, num_layers=L, bidirectional=D == 2, layout=layout,
                   dtype='float64')
    layer.initialize(mx.init.Uniform(0.5))
    rng = np.random.default_rng(0)
    shape = (T, N, I) if layout == 'TNC' else (N, T, I)
    x = rng.standard_normal(shape)
    states = [rng.standard_normal((L * D, N, H)) for _ in layer.state_info(N)]
    xs = nd.array(x, dtype='float64')
    ss = [nd.array(s, dtype='float64') for s in states]
    for a in [xs] + ss:
        a.attach_grad()
    wo = rng.standard_normal((T, N, D * H) if layout == 'TNC' else (N, T, D * H))
    with autograd.record():
        out, new = layer(xs, ss)            # deferred init: input size from x
        loss = (out * nd.array(wo, dtype='float64')).sum() + \
            sum((s * (k + 2)).sum() for k, s in enumerate(new))
    loss.backward()

    net = _copy_to_torch(layer, mode, L, D)
    tx = torch.tensor(x if layout == 'TNC' else x.transpose(1, 0, 2),
                      requires_grad=True)
    ts = [torch.tensor(s, requires_grad=True) for s in states]
    tout, tnew = net(tx, tuple(ts) if mode == 'lstm' else ts[0])
    tnew = list(tnew) if mode == 'lstm' else [tnew]
    if layout == 'NTC':
        tout = tout.transpose(0, 1)
    tloss = (tout * torch.tensor(wo)).sum() + \
        sum((s * (k + 2)).sum() for k, s in enumerate(tnew))
    tloss.backward()
    tol = dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.asnumpy(), tout.detach().numpy(), **tol)
    for a, b in zip(new, tnew):
        np.testing.assert_allclose(a.asnumpy(), b.detach().numpy(), **tol)
    gx = xs.grad.asnumpy()
    np.testing.assert_allclose(gx, tx.grad.numpy() if layout == 'TNC' else
                               tx.grad.numpy().transpose(1, 0, 2), **tol)
    for a, b in zip(ss, ts):
        np.testing.assert_allclose(a.grad.asnumpy(), b.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.l0_h2h_weight.grad().asnumpy(),
                               net.weight_hh_l0.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.l0_i2h_bias.grad().asnumpy(),
                               net.bias_ih_l0.grad.numpy(), **tol)


def test_names_shapes_and_file_keys_are_mxnets(tmp_path):
    layer = rnn.LSTM(H, num_layers=2, bidirectional=True, input_size=I)
    names = list(layer.collect_params().keys())
    p = layer.prefix
    assert names[:5] == [p + 'l0_i2h_weight', p + 'l0_h2h_weight', p + 'l0_i2h_bias',
                         p + 'l0_h2h_bias', p + 'r0_i2h_weight']
    assert layer.l0_i2h_weight.shape == (4 * H, I)
    assert layer.l1_i2h_weight.shape == (4 * H, 2 * H)
    keys = list(layer._collect_params_with_prefix())
    assert keys[0] == '_unfused.0.l_cell.i2h_weight'
    assert keys[-1] == '_unfused.1.r_cell.h2h_bias'
    assert list(rnn.GRU(H, input_size=I)._collect_params_with_prefix())[0] == \
        '_unfused.0.i2h_weight'
    layer.initialize()
    f = str(tmp_path / 'lstm.params')
    layer.save_parameters(f)
    other = rnn.LSTM(H, num_layers=2, bidirectional=True)
    other.load_parameters(f)
    np.testing.assert_array_equal(other.r1_h2h_bias.data().asnumpy(),
                                  layer.r1_h2h_bias.data().asnumpy())
    assert repr(layer) == f'LSTM({I} -> {H}, TNC, num_layers=2, bidirectional)'


@pytest.mark.parametrize('mode,cell_cls', [('lstm', rnn.LSTMCell),
                                           ('gru', rnn.GRUCell),
                                           ('rnn_tanh', rnn.RNNCell)])
def test_cells_unrolled_equal_the_layer(mode, cell_cls):
    layer = _layer(mode, num_layers=1, layout='NTC', input_size=I)
    layer.initialize(mx.init.Uniform(0.5))
    cell = cell_cls(H, input_size=I)
    cell.initialize()
    for name in ('i2h_weight', 'h2h_weight', 'i2h_bias', 'h2h_bias'):
        getattr(cell, name).set_data(getattr(layer, 'l0_' + name).data())
    x = nd.random.uniform(-1, 1, shape=(N, T, I))
    out, states = layer(x, layer.begin_state(N))
    couts, cstates = cell.unroll(T, x, layout='NTC', merge_outputs=True)
    np.testing.assert_allclose(couts.asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(cstates, states):
        np.testing.assert_allclose(a.asnumpy(), b[0].asnumpy(), rtol=1e-5, atol=1e-6)
    steps, _ = cell.unroll(T, x, layout='NTC', merge_outputs=False)
    assert len(steps) == T and steps[0].shape == (N, H)


def test_bidirectional_and_sequential_cells_unroll():
    bi = rnn.BidirectionalCell(rnn.LSTMCell(H), rnn.GRUCell(H))
    bi.initialize()
    x = nd.random.uniform(shape=(T, N, I))
    out, states = bi.unroll(T, x, layout='TNC', merge_outputs=True)
    assert out.shape == (T, N, 2 * H)
    assert [s.shape for s in states] == [(N, H)] * 3
    # the backward half of step 0 is r_cell's output after the whole reversed run
    _, r_states = bi._children['r_cell'].unroll(
        T, list(reversed([x[t] for t in range(T)])), merge_outputs=False)
    np.testing.assert_allclose(out[0, :, H:].asnumpy(), r_states[0].asnumpy(),
                               rtol=1e-5, atol=1e-6)
    stack = rnn.HybridSequentialRNNCell()
    stack.add(rnn.LSTMCell(H))
    stack.add(rnn.DropoutCell(0.5))
    stack.add(rnn.ResidualCell(rnn.GRUCell(H)))
    stack.initialize()
    outs, states = stack.unroll(T, x, layout='TNC', merge_outputs=False)
    assert len(outs) == T and len(states) == 3
    out1, st1 = stack(x[0], stack.begin_state(batch_size=N))
    assert out1.shape == (N, H) and len(st1) == 3


def test_valid_length_masks_outputs_and_picks_last_states():
    cell = rnn.GRUCell(H)
    cell.initialize()
    x = nd.random.uniform(shape=(N, T, I))
    vl = nd.array([5, 2, 3])
    outs, states = cell.unroll(T, x, merge_outputs=True, valid_length=vl)
    full, _ = cell.unroll(T, x, merge_outputs=True)
    o, f = outs.asnumpy(), full.asnumpy()
    assert np.all(o[1, 2:] == 0) and np.allclose(o[1, :2], f[1, :2])
    np.testing.assert_allclose(states[0].asnumpy()[2], f[2, 2], rtol=1e-6)


def test_layer_state_in_out_and_errors():
    layer = rnn.GRU(H, num_layers=2)
    layer.initialize()
    x = nd.random.uniform(shape=(T, N, I))
    assert isinstance(layer(x), nd.NDArray)
    out, st = layer(x, layer.begin_state(N))
    out2, _ = layer(x, st)                  # states carry over
    assert out2.shape == (T, N, H) and not np.allclose(out.asnumpy(), out2.asnumpy())
    with pytest.raises(ValueError, match='state shape'):
        layer(x, [nd.zeros((2, N + 1, H))])
    with pytest.raises(ValueError, match='3-D'):
        layer(nd.ones((T, I)))
    with pytest.raises(ValueError, match='layout'):
        rnn.LSTM(H, layout='NCT')
    with pytest.raises(ValueError, match='parameters shape'):
        nd.RNN(x, nd.ones(3), nd.zeros((1, N, H)), state_size=H, num_layers=1,
               mode='gru')
    with pytest.raises(ValueError, match='state_cell'):
        nd.RNN(x, nd.ones(3), nd.zeros((1, N, H)), state_size=H, num_layers=1,
               mode='lstm')


def test_dropout_between_layers_only_in_training():
    layer = rnn.LSTM(H, num_layers=2, dropout=0.5, input_size=I)
    layer.initialize()
    x = nd.random.uniform(shape=(T, N, I))
    a, b = layer(x).asnumpy(), layer(x).asnumpy()
    np.testing.assert_array_equal(a, b)               # predicting: no dropout
    with autograd.record():
        y = layer(x)
    y.backward()
    assert not np.allclose(y.asnumpy(), a)
    assert layer.l0_i2h_weight.grad().abs().sum().asscalar() > 0


def test_hybridized_layer_and_sym_rnn():
    layer = rnn.LSTM(H, layout='NTC', input_size=I)
    layer.initialize()
    x = nd.random.uniform(shape=(N, T, I))
    want = layer(x).asnumpy()
    layer.hybridize()
    layer(x)
    np.testing.assert_allclose(layer(x).asnumpy(), want, rtol=1e-6)
    s = mx.sym.RNN(mx.sym.var('x'), mx.sym.var('p'), mx.sym.var('h'),
                   state_size=H, num_layers=1, mode='gru', state_outputs=True)
    assert len(s.list_outputs()) == 2


def test_numpy_mode_gives_np_arrays():
    npx = pytest.importorskip('d2lmini.numpy_extension')
    mnp = pytest.importorskip('d2lmini.numpy')
    npx.set_np()
    try:
        layer = rnn.GRU(H)
        layer.initialize()
        state = layer.begin_state(batch_size=N)
        assert isinstance(state[0], mnp.ndarray)
        out, st = layer(mnp.ones((T, N, I)), state)
        assert isinstance(out, mnp.ndarray) and isinstance(st[0], mnp.ndarray)
    finally:
        npx.reset_np()
