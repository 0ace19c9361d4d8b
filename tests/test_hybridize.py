"""hybridize(): a traced graph must compute what imperative code computes -
values, gradients, several SGD steps, BatchNorm's running statistics - on
every context; export / SymbolBlock.imports round trips; blocks that cannot
be traced fall back to imperative execution with a warning."""
import warnings

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, gluon, nd
from d2lmini.gluon import loss as gloss
from d2lmini.gluon import nn

CTXS = [mx.cpu(0), mx.cpu(1)]


# --- networks ------------------------------------------------------------------
def mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation='relu'), nn.Dense(8, activation='tanh'),
            nn.Dense(3))
    return net


def lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, kernel_size=3, padding=1), nn.BatchNorm(),
            nn.Activation('relu'), nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(6, kernel_size=3, activation='relu'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(10, activation='sigmoid'), nn.Dropout(0.0), nn.Dense(3))
    return net


class Scaled(nn.HybridBlock):
    """A custom block: its own Parameter and F arithmetic with scalars."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = nn.Dense(units)
            self.scale = self.params.get('scale', shape=(1, units), init='ones')

    def hybrid_forward(self, F, x, scale):
        h = self.dense(x)
        return F.broadcast_mul(F.tanh(h), scale) * 2 - F.sigmoid(h) / 3 + 1


class Nested(nn.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.body = nn.HybridSequential()
            self.body.add(Scaled(8), nn.BatchNorm(), nn.Dense(5, activation='relu'))
            self.head = nn.Dense(3)

    def hybrid_forward(self, F, x):
        # symbols do not broadcast with +, as in MXNet: broadcast_add
        return F.broadcast_add(self.head(self.body(x)),
                               F.relu(x).sum(axis=1, keepdims=True))


class TwoInTwoOut(nn.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.a = nn.Dense(4)
            self.b = nn.Dense(4)

    def hybrid_forward(self, F, x, y):
        h = F.relu(self.a(x) + self.b(y))
        return h, F.concat(h, x, dim=1).mean(axis=1)


def _pair(make, inputs, ctx):
    """Two copies of one network with equal parameters: (imperative, hybridized)."""
    mx.random.seed(7)
    plain, hyb = make(), make()
    for net in (plain, hyb):
        net.initialize(mx.init.Xavier(), ctx=ctx)
        with autograd.predict_mode():
            net(*inputs)                       # deferred initialization
    for p, q in zip(plain.collect_params().values(), hyb.collect_params().values()):
        q.set_data(p.data(ctx))
    hyb.hybridize()
    return plain, hyb


def _outputs(out):
    return [o.asnumpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def check_hybrid(make, shapes, ctx, steps=3, label=None, lr=0.1, rtol=1e-5):
    """SGD ``steps`` on both copies: equal outputs, gradients and parameters."""
    rng = np.random.RandomState(3)
    inputs = [nd.array(rng.uniform(-1, 1, s), ctx=ctx) for s in shapes]
    plain, hyb = _pair(make, inputs, ctx)
    trainers = [gluon.Trainer(n.collect_params(), 'sgd', {'learning_rate': lr})
                for n in (plain, hyb)]
    loss_fn = gloss.SoftmaxCrossEntropyLoss()
    for step in range(steps):
        xs = [nd.array(rng.uniform(-1, 1, s), ctx=ctx) for s in shapes]
        y = nd.array(rng.randint(0, 3, shapes[0][0]), ctx=ctx)
        got = []
        for net, trainer in zip((plain, hyb), trainers):
            with autograd.record():
                out = net(*xs)
                first = out[0] if isinstance(out, (list, tuple)) else out
                loss = loss_fn(first, y) if label else first.sum()
                if isinstance(out, (list, tuple)):
                    loss = loss + out[1].sum() * 0.5
            loss.backward()
            assert first.context == ctx
            grads = {k: p.grad(ctx).asnumpy()
                     for k, p in enumerate(net.collect_params().values())
                     if p.grad_req != 'null'}
            got.append((_outputs(out), grads))
            trainer.step(shapes[0][0])
        (outs_p, grads_p), (outs_h, grads_h) = got
        for a, b in zip(outs_p, outs_h):
            np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-6,
                                       err_msg=f'outputs at step {step}')
        assert grads_p.keys() == grads_h.keys()
        for k in grads_p:
            np.testing.assert_allclose(grads_h[k], grads_p[k], rtol=rtol, atol=1e-6,
                                       err_msg=f'gradient {k} at step {step}')
        assert any(np.abs(g).sum() > 0 for g in grads_p.values())
    for p, q in zip(plain.collect_params().values(), hyb.collect_params().values()):
        np.testing.assert_allclose(q.data(ctx).asnumpy(), p.data(ctx).asnumpy(),
                                   rtol=rtol, atol=1e-6, err_msg=p.name)
    # predict mode: BatchNorm on the running statistics both moved the same
    with autograd.predict_mode():
        for a, b in zip(_outputs(plain(*inputs)), _outputs(hyb(*inputs))):
            np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-6)
    assert hyb._cached_graph, 'the hybridized copy never ran as a graph'
    return plain, hyb


@pytest.mark.parametrize('ctx', CTXS, ids=str)
@pytest.mark.parametrize('case', ['mlp', 'lenet', 'nested', 'custom', 'two_in_out'])
def test_hybridized_training_equals_imperative(case, ctx):
    make, shapes, label = {
        'mlp': (mlp, [(4, 6)], True),
        'lenet': (lenet, [(4, 1, 8, 8)], True),
        'nested': (Nested, [(4, 6)], True),
        'custom': (lambda: Scaled(3), [(4, 6)], True),
        'two_in_out': (TwoInTwoOut, [(4, 3), (4, 5)], False),
    }[case]
    check_hybrid(make, shapes, ctx, label=label)


def test_batchnorm_running_statistics_move_alike():
    plain, hyb = check_hybrid(lenet, [(4, 1, 8, 8)], mx.cpu(0), steps=2, label=True)
    stats = [p for p in hyb.collect_params().values() if 'running' in p.name]
    assert len(stats) == 2
    for p, q in zip(plain.collect_params().values(), hyb.collect_params().values()):
        if 'running' in p.name:
            assert not np.allclose(q.data().asnumpy(), 0 if 'mean' in p.name else 1)
            np.testing.assert_allclose(q.data().asnumpy(), p.data().asnumpy(),
                                       rtol=1e-5, atol=1e-7)


def test_hybridized_loss_equals_imperative():
    pred = nd.array(np.random.RandomState(0).randn(5, 4))
    label = nd.array([0, 3, 1, 1, 2])
    for make in (gloss.SoftmaxCrossEntropyLoss, gloss.L2Loss, gloss.L1Loss):
        plain, hyb = make(), make()
        hyb.hybridize()
        lab = label if make is gloss.SoftmaxCrossEntropyLoss else nd.ones((5, 4))
        outs = []
        for f in (plain, hyb, hyb):
            p = pred.copy()
            p.attach_grad()
            with autograd.record():
                loss = f(p, lab)
            loss.backward()
            outs.append((loss.asnumpy(), p.grad.asnumpy()))
        assert hyb._cached_graph, make.__name__
        for got in outs[1:]:
            np.testing.assert_allclose(got[0], outs[0][0], rtol=1e-5)
            np.testing.assert_allclose(got[1], outs[0][1], rtol=1e-5)


class Counting(nn.HybridBlock):
    """Counts how often hybrid_forward runs, and with which F."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = []
        with self.name_scope():
            self.dense = nn.Dense(2, in_units=3)

    def hybrid_forward(self, F, x):
        self.calls.append(F.__name__.split('.')[-1])
        return self.dense(x) * 2


def test_graph_is_traced_once_replayed_and_hybridize_false_goes_back():
    net = Counting()
    net.initialize()
    x = nd.ones((2, 3))
    want = net(x).asnumpy()
    assert net.calls == ['ndarray']
    net.calls.clear()
    net.hybridize()
    for _ in range(3):
        np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-6)
    assert net.calls == ['symbol']      # as MXNet: the first call only traces
    net.calls.clear()
    # a new input shape re-plans the same graph: no new trace
    out = net(nd.ones((5, 3)))
    assert out.shape == (5, 2) and net.calls == []
    np.testing.assert_allclose(out.asnumpy()[:2], want, rtol=1e-6)
    net.hybridize(False)
    net(x)
    net(x)
    assert net.calls == ['ndarray', 'ndarray']


def test_block_reading_a_shape_warns_and_runs_imperatively():
    class Flat(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.reshape((x.shape[0], -1)) * 2
    net = Flat()
    net.hybridize()
    x = nd.array(np.arange(8).reshape(2, 2, 2))
    with pytest.warns(UserWarning, match='could not trace.*imperatively'):
        out = net(x)
    with warnings.catch_warnings():
        warnings.simplefilter('error')               # warned once, not per call
        again = net(x)
    want = np.arange(8).reshape(2, 4) * 2
    np.testing.assert_array_equal(out.asnumpy(), want)
    np.testing.assert_array_equal(again.asnumpy(), want)


@pytest.mark.parametrize('make, shape', [(lenet, (2, 1, 8, 8)), (Nested, (3, 6))])
def test_export_and_symbolblock_imports_give_the_same_outputs(tmp_path, make, shape):
    net = make()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = nd.array(np.random.RandomState(0).randn(*shape))
    with autograd.record():                  # move BatchNorm's running stats
        net(x)
    with pytest.raises(RuntimeError, match='hybridize'):
        make().export(str(tmp_path / 'never'))
    want = net(x).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / 'model'), epoch=3)
    assert sym_file.endswith('model-symbol.json')
    assert params_file.endswith('model-0003.params')
    saved = nd.load(params_file)
    assert all(k.startswith(('arg:', 'aux:')) for k in saved)
    assert any(k.startswith('aux:') for k in saved)       # BatchNorm's statistics
    back = gluon.SymbolBlock.imports(sym_file, ['data'], params_file)
    np.testing.assert_allclose(back(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    # the imported block trains: it has gradients for its arguments
    with autograd.record():
        back(x).sum().backward()
    grads = [p.grad().asnumpy() for p in back.collect_params().values()
             if p.grad_req != 'null']
    assert grads and all(np.isfinite(g).all() for g in grads)


def test_symbolblock_from_internals_has_one_output_per_internal():
    model = mlp()
    model.initialize()
    data = mx.sym.var('data')
    internals = model(data).get_internals()
    block = gluon.SymbolBlock(internals, data, params=model.collect_params())
    outs = block(nd.ones((2, 4)))
    assert len(outs) == len(internals.list_outputs())
    np.testing.assert_allclose(outs[-1].asnumpy(), model(nd.ones((2, 4))).asnumpy(),
                               rtol=1e-6)


def test_mixing_symbols_and_ndarrays_is_a_value_error():
    net = TwoInTwoOut()
    net.initialize()
    with pytest.raises(ValueError, match='mix Symbols and NDArrays'):
        net(mx.sym.var('a'), nd.ones((2, 5)))
    out = net(mx.sym.var('a'), mx.sym.var('b'))          # symbols only: a graph
    assert isinstance(out[0], mx.sym.Symbol)
    assert {'a', 'b'} <= set(out[0].list_arguments())
