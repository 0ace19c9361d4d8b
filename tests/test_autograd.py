"""autograd: scopes, variables, backward, grad (higher order), Function.

Oracles: analytic derivatives, NumPy, and PyTorch when it is installed.
Most tests run under both engines (``engine_kind``): backward goes through
the asynchronous engine exactly like the forward pass does.
"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd

from oracles import torch


def close(a, b, rtol=1e-5, atol=1e-6):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else np.asarray(a)
    np.testing.assert_allclose(a, np.asarray(b), rtol=rtol, atol=atol)


def rnd(*shape, seed=0, low=-1.0, high=1.0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


# --- scopes ----------------------------------------------------------------------
def test_scopes_and_flags():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.pause(train_mode=True):
            assert not autograd.is_recording() and autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
        assert autograd.is_recording() and autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert not autograd.is_recording() and autograd.is_training()
    assert not autograd.is_recording() and not autograd.is_training()
    try:
        assert autograd.set_recording(True) is False
        assert autograd.is_recording()
        assert autograd.set_training(True) is False
        assert autograd.is_training()
        assert autograd.set_recording(False) is True
        assert autograd.set_training(False) is True
    finally:
        autograd.set_recording(False)
        autograd.set_training(False)
    assert not autograd.is_recording() and not autograd.is_training()


def test_scope_restored_after_exception():
    with pytest.raises(KeyError):
        with autograd.record():
            raise KeyError
    assert not autograd.is_recording() and not autograd.is_training()


# --- backward basics ------------------------------------------------------------------
def test_simple_gradient(ctx, engine_kind):
    a = rnd(3, 4)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    assert x.grad.shape == x.shape
    close(x.grad, np.zeros((3, 4)))
    with autograd.record():
        y = (x * x * 3 + nd.exp(x)).sum()
    y.backward()
    close(x.grad, 6 * a + np.exp(a))
    assert x.grad.context == ctx and x.grad.dtype is np.float64


def test_grad_of_float32_variable(ctx):
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = 2 * nd.dot(x, x)
    y.backward()
    assert x.grad.dtype is np.float32
    close(x.grad, [4, 8, 12])


def test_non_scalar_head_uses_ones(ctx, engine_kind):
    a = rnd(2, 3)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = x * x                       # not a scalar: head gradient is ones
    y.backward()
    close(x.grad, 2 * a)


def test_out_grad(ctx, engine_kind):
    a, w = rnd(2, 3), rnd(2, 3, seed=1)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = nd.sin(x)
    y.backward(out_grad=nd.array(w, dtype='float64'))
    close(x.grad, w * np.cos(a))


def test_second_backward_needs_retain_graph(ctx, engine_kind):
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    close(x.grad, [2, 4])
    y.backward()                        # allowed: the graph was retained
    close(x.grad, [2, 4])               # 'write' overwrites, not accumulates
    with pytest.raises(RuntimeError, match='retain_graph'):
        y.backward()


def test_backward_outside_record_is_a_clear_error(ctx):
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    y = (x * 2).sum()
    with pytest.raises(ValueError, match='record'):
        y.backward()
    z = nd.array([1.0])                  # no attach_grad: nothing to differentiate
    with autograd.record():
        w = z * 2
    with pytest.raises(ValueError, match='attach_grad'):
        w.backward()


def test_pause_stops_recording(ctx):
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 2
        with autograd.pause():
            c = x * 100                  # a constant for autograd
        z = (y * c.detach()).sum() + (c * 0).sum()
    z.backward()
    close(x.grad, 2 * 100 * np.array([1.0, 2.0]))


def test_detach_cuts_the_graph(ctx):
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = x * x
        z = (y.detach() * x).sum()       # d/dx = x^2 (y is a constant)
    z.backward()
    close(x.grad, [1, 4, 9])


def test_variable_used_twice_accumulates_in_graph(ctx, engine_kind):
    a = rnd(4)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = x * 3
        z = (y * x + y + nd.tanh(x)).sum()
    z.backward()
    close(x.grad, 6 * a + 3 + 1 - np.tanh(a) ** 2)


def test_gradient_through_indexing_and_shapes(ctx):
    a = rnd(4, 5)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = (x[1:3] * 2).sum() + x[[0, 0, 3]].sum() + x.reshape((5, 4)).T.sum()
    y.backward()
    g = np.ones((4, 5))
    g[1:3] += 2
    g[0] += 2
    g[3] += 1
    close(x.grad, g)


# --- grad_req and in-place grads ---------------------------------------------------------
def test_grad_req_add_accumulates_write_overwrites(ctx, engine_kind):
    a = rnd(3)
    x = nd.array(a, dtype='float64')
    x.attach_grad(grad_req='add')
    g = x.grad
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    assert x.grad is g                    # accumulated in place
    close(g, 3 * 2 * a)
    x.attach_grad()                       # 'write'
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    close(x.grad, 2 * a)


def test_grad_req_null(ctx):
    x = nd.array([1.0, 2.0])
    w = nd.array([3.0, 4.0])
    x.attach_grad(grad_req='null')
    w.attach_grad()
    with autograd.record():
        y = (x * w).sum()
    y.backward()
    close(w.grad, [1, 2])
    close(x.grad, [0, 0])


def test_grad_updated_in_place(ctx, engine_kind):
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    g = x.grad                            # a Trainer holds this reference
    for k in [2.0, 5.0]:
        with autograd.record():
            y = (x * k).sum()
        y.backward()
        assert x.grad is g
        close(g, [k, k])


def test_mark_variables(ctx):
    x = nd.array([1.0, 2.0, 3.0])
    gx = nd.zeros((3,))
    autograd.mark_variables([x], [gx])
    with autograd.record():
        y = (x ** 3).sum()
    y.backward()
    close(gx, 3 * np.array([1.0, 2.0, 3.0]) ** 2)
    assert x.grad is gx
    acc = nd.ones((3,))
    autograd.mark_variables(x, acc, 'add')
    for _ in range(2):
        with autograd.record():
            y = (2 * x).sum()
        y.backward()
    close(acc, [5, 5, 5])


# --- autograd.backward / autograd.grad --------------------------------------------------
def test_backward_multiple_heads(ctx, engine_kind):
    a = rnd(3)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y1 = x * 2
        y2 = nd.exp(x)
    hg = rnd(3, seed=4)
    autograd.backward([y1, y2], [None, nd.array(hg, dtype='float64')])
    close(x.grad, 2 + hg * np.exp(a))
    with autograd.record():
        y1 = x * 2
        y2 = (x * x).sum()
    autograd.backward([y1, y2])
    close(x.grad, 2 + 2 * a)


def test_grad_returns_without_touching_grad(ctx, engine_kind):
    a = rnd(3)
    x = nd.array(a, dtype='float64')
    w = nd.array(rnd(3, seed=1), dtype='float64')
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        y = (x * w + x).sum()
    gx, gw = autograd.grad(y, [x, w])
    close(gx, w.asnumpy() + 1)
    close(gw, a)
    close(x.grad, np.zeros(3))           # grad() returns, it does not store
    with autograd.record():
        y = nd.sin(x)
    g = autograd.grad(y, x, head_grads=nd.array([1.0, 2.0, 3.0], dtype='float64'))
    close(g, np.cos(a) * [1, 2, 3])


HIGHER = [
    ('sin', nd.sin, lambda a: np.cos(a), lambda a: -np.sin(a), lambda a: -np.cos(a)),
    ('exp', nd.exp, np.exp, np.exp, np.exp),
    ('cube', lambda x: x ** 3, lambda a: 3 * a ** 2, lambda a: 6 * a, lambda a: 6 + 0 * a),
    ('tanh', nd.tanh, lambda a: 1 - np.tanh(a) ** 2,
     lambda a: -2 * np.tanh(a) * (1 - np.tanh(a) ** 2),
     lambda a: (6 * np.tanh(a) ** 2 - 2) * (1 - np.tanh(a) ** 2)),
    ('sigmoid', nd.sigmoid, lambda a: (s := 1 / (1 + np.exp(-a))) * (1 - s),
     lambda a: (s := 1 / (1 + np.exp(-a))) * (1 - s) * (1 - 2 * s), None),
    ('log', nd.log, lambda a: 1 / a, lambda a: -1 / a ** 2, lambda a: 2 / a ** 3),
    ('x*x*x', lambda x: x * x * x, lambda a: 3 * a ** 2, lambda a: 6 * a,
     lambda a: 6 + 0 * a),
    ('cos', nd.cos, lambda a: -np.sin(a), lambda a: -np.cos(a), np.sin),
    ('sqrt', nd.sqrt, lambda a: 0.5 / np.sqrt(a), lambda a: -0.25 * a ** -1.5,
     lambda a: 0.375 * a ** -2.5),
]


@pytest.mark.parametrize('name,f,d1,d2,d3', HIGHER, ids=[h[0] for h in HIGHER])
def test_higher_order_gradients(ctx, engine_kind, name, f, d1, d2, d3):
    a = rnd(5, low=0.3, high=2.0)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = f(x)
        g1 = autograd.grad(y, x, create_graph=True)
        g2 = autograd.grad(g1, x, create_graph=True)
    close(g1, d1(a))
    close(g2, d2(a))
    if d3 is not None:
        g3 = autograd.grad(g2, x)
        close(g3, d3(a), rtol=1e-5, atol=1e-5)
    # and the second derivative lands in x.grad through backward
    with autograd.record():
        g1 = autograd.grad(f(x), x, create_graph=True)
        z = g1.sum()
    z.backward()
    close(x.grad, d2(a))


def test_grad_of_gradient_norm(ctx):
    """d/dx ||d/dx f||^2 for f = sum(x^3): 2 * 3x^2 * 6x = 36 x^3."""
    a = rnd(4, low=0.5, high=1.5)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        g = autograd.grad((x ** 3).sum(), [x], create_graph=True)[0]
        pen = (g * g).sum()
    pen.backward()
    close(x.grad, 36 * a ** 3)


# --- custom Function ---------------------------------------------------------------------
class Sigmoid(autograd.Function):
    def forward(self, x):
        y = 1 / (1 + nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        y, = self.saved_tensors
        return dy * y * (1 - y)


class MulAdd(autograd.Function):
    """Two inputs, two outputs: (a*b, a+b); a deliberately odd backward (x10)."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b, a + b

    def backward(self, d_prod, d_sum):
        a, b = self.saved_tensors
        return 10 * (d_prod * b + d_sum), 10 * (d_prod * a + d_sum)


def test_custom_function(ctx, engine_kind):
    a = rnd(4)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = Sigmoid()(x)
        z = (y * 2).sum()
    close(y, 1 / (1 + np.exp(-a)))
    z.backward()
    s = 1 / (1 + np.exp(-a))
    close(x.grad, 2 * s * (1 - s))


def test_custom_function_multi_io(ctx, engine_kind):
    a, b = rnd(3), rnd(3, seed=1)
    x, y = nd.array(a, dtype='float64'), nd.array(b, dtype='float64')
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        p, s = MulAdd()(x, y)
        loss = (p + 2 * s).sum()
    close(p, a * b)
    close(s, a + b)
    loss.backward()
    close(x.grad, 10 * (b + 2))        # the custom backward is used, not derived
    close(y.grad, 10 * (a + 2))


def test_function_outside_record_just_computes(ctx):
    close(Sigmoid()(nd.array([0.0])), [0.5])


# --- across devices -----------------------------------------------------------------------
def test_gradient_flows_back_through_copies(ctx, engine_kind):
    a = rnd(3)
    x = nd.array(a, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = x.copyto(mx.cpu(1))
        assert y.context == mx.cpu(1)
        z = (y * y).sum()                # computed on cpu(1)
        w = z.as_in_context(ctx) + (x * 3).sum()
    w.backward()
    assert x.grad.context == ctx
    close(x.grad, 2 * a + 3)


def test_two_device_model_parallel_grad(engine_kind):
    a, b = rnd(2, 3), rnd(3, 4, seed=1)
    x = nd.array(a, dtype='float64')
    w = nd.array(b, ctx=mx.cpu(1), dtype='float64')
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        h = nd.dot(x.as_in_context(mx.cpu(1)), w)
        loss = nd.tanh(h).sum()
    loss.backward()
    dh = 1 - np.tanh(a @ b) ** 2
    close(w.grad, a.T @ dh)
    close(x.grad, dh @ b.T)
    assert w.grad.context == mx.cpu(1) and x.grad.context == x.context


# --- an MLP against PyTorch ------------------------------------------------------------------
@pytest.mark.skipif(torch is None, reason='PyTorch not installed')
def test_mlp_against_torch(ctx, engine_kind):
    X, W1, b1 = rnd(5, 4, seed=1), rnd(4, 8, seed=2), rnd(8, seed=3)
    W2, y = rnd(8, 3, seed=4), np.array([0, 2, 1, 1, 0])
    ps = [nd.array(p, dtype='float64') for p in (W1, b1, W2)]
    for p in ps:
        p.attach_grad()
    with autograd.record():
        h = nd.relu(nd.dot(nd.array(X, dtype='float64'), ps[0]) + ps[1])
        o = nd.dot(h, ps[2])
        o = o - o.max(axis=1, keepdims=True)
        logp = o - nd.log(nd.exp(o).sum(axis=1, keepdims=True))
        loss = -nd.pick(logp, nd.array(y)).mean()
    loss.backward()
    tp = [torch.tensor(p, requires_grad=True) for p in (W1, b1, W2)]
    th = torch.relu(torch.tensor(X) @ tp[0] + tp[1]) @ tp[2]
    tl = torch.nn.functional.cross_entropy(th, torch.tensor(y))
    tl.backward()
    close(loss, tl.item())
    for p, t in zip(ps, tp):
        close(p.grad, t.grad.numpy())


def test_fresh_grad_flag():
    """MXNet's _fresh_grad: set by a backward that writes the gradient."""
    x, y = nd.ones((2, 2)), nd.ones((2, 2))
    dx, dy = nd.zeros((2, 2)), nd.zeros((2, 2))
    autograd.mark_variables([x, y], [dx, dy])
    assert x._fresh_grad is False and y._fresh_grad is False
    with autograd.record():
        (x + 2 + y).backward()
    assert x._fresh_grad and y._fresh_grad
    x._fresh_grad = y._fresh_grad = False
    dx[:] = 0
    with autograd.record():
        (((x + 2).detach()) + y).backward()     # x is cut from the graph
    assert (dx.asnumpy() == 0).all()
    assert y._fresh_grad and not x._fresh_grad
    z = nd.ones((2,))
    assert z._fresh_grad is False               # not a variable
    with pytest.raises(ValueError, match='attach_grad'):
        z._fresh_grad = True
    z.attach_grad()
    assert z._fresh_grad is False               # a new variable starts clean


def test_star_import_has_ndarray():
    """`from mxnet.autograd import *` brings NDArray along, as MXNet's does."""
    ns = {}
    exec('from d2lmini.autograd import *', ns)
    assert ns['NDArray'] is nd.NDArray
    assert ns['record'] is autograd.record and ns['mark_variables']


def _grads_by_mark_variables(func, *args):
    """Upstream's grad_and_loss: mark_variables, record, backward."""
    grads = [nd.zeros_like(x) for x in args]
    autograd.mark_variables(list(args), grads)
    with autograd.record():
        out = func(*args)
    autograd.backward([out])
    return grads, out


@pytest.mark.parametrize('func,expected', [
    (lambda x: nd.exp(x), lambda x: [nd.exp(x)]),
    (lambda x: x / 2, lambda x: [nd.ones(x.shape) * 0.5]),
    (lambda x: x ** 2, lambda x: [2 * x]),
    (lambda x, y: x + y, lambda x, y: [nd.ones(x.shape), nd.ones(y.shape)]),
    (lambda x, y: x * y, lambda x, y: [y, x]),
    (lambda x, y: x + x * y, lambda x, y: [nd.ones(x.shape) + y, x]),
], ids=['exp', 'half', 'square', 'add', 'mul', 'compose'])
def test_dense_gradients_are_exact(func, expected):
    """The dense part of upstream test_unary_func/test_binary_func: equal bits."""
    rng = np.random.default_rng(0)
    nargs = func.__code__.co_argcount
    args = [nd.array(rng.uniform(size=(4, 5))) for _ in range(nargs)]
    grads, out = _grads_by_mark_variables(func, *args)
    assert np.array_equal(out.asnumpy(), func(*args).asnumpy())
    for g, e in zip(grads, expected(*args)):
        assert np.array_equal(g.asnumpy(), e.asnumpy())


def test_attach_grad_and_out_grad_keyword():
    """The dense part of upstream test_attach_grad."""
    x = nd.zeros((10, 10))
    assert x.grad is None
    x.attach_grad()
    with autograd.record():
        y = x * 2
        assert y.grad is None
        y.backward(out_grad=nd.ones_like(y))
    assert (x.grad.asnumpy() == 2).all()
