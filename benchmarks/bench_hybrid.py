"""Imperative vs symbolic execution: hybridize, the executor and the Module API.

Rows (every ratio = ours / reference, higher is better, all measured in one
run, in alternating blocks, best block of several):

* d2l's hybridize benchmark: an MLP 512 -> 256 -> 128 -> 2 applied 1000 times
  to one ``(1, 512)`` input, hybridized vs imperative (target >= 2x), and
  the same network declared with ``mx.sym`` and run by a ``simple_bind``
  executor vs imperative;
* the multi-GPU chapter's LeNet, batch 256: a training step (forward,
  backward, SGD update) with the network AND the loss hybridized vs
  imperative (target >= 1.1x), and inference;
* ``Module.fit`` on the symbolic LeNet (``SoftmaxOutput``, ``NDArrayIter``)
  vs a Gluon (imperative) loop doing the same work on the same iterator:
  forward, backward, SGD update and the accuracy metric (target >= 0.9x).
"""
import logging
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import d2lmini as mx                                    # noqa: E402
from d2lmini import autograd, gluon, nd, init, d2l      # noqa: E402
from d2lmini.gluon import nn                            # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _timing                                          # noqa: E402

BATCH = 256
CALLS = 1000
FIT_BATCHES = 8                # batches in one timed Module.fit / Gluon epoch


def best_alternating(fns, rounds=5, number=1, pause=0.2):
    """Best seconds per call of each of ``fns``, in alternating blocks of
    ``number`` calls (``_timing``)."""
    return _timing.best_alternating(fns, rounds=rounds, number=number, pause=pause)


# --- d2l's hybridize benchmark -----------------------------------------------------
def mlp_net(hidden=(256, 128), out=2):
    """d2l's ``get_net()``: HybridSequential of Dense layers with relu."""
    net = nn.HybridSequential()
    for h in hidden:
        net.add(nn.Dense(h, activation='relu'))
    net.add(nn.Dense(out))
    net.initialize()
    return net


def mlp_sym(hidden=(256, 128), out=2):
    """The same MLP declared with ``mx.sym``."""
    h = mx.sym.var('data')
    for k, n in enumerate(hidden):
        h = mx.sym.FullyConnected(h, num_hidden=n, name=f'fc{k + 1}')
        h = mx.sym.Activation(h, act_type='relu', name=f'relu{k + 1}')
    return mx.sym.FullyConnected(h, num_hidden=out, name=f'fc{len(hidden) + 1}')


def mlp_closures(in_dim=512, hidden=(256, 128), out=2, calls=1000):
    """Three functions, each applying the MLP ``calls`` times to one input:
    imperative, hybridized, and a symbolic executor with the imperative
    network's weights.  Also returns their last outputs, for a check."""
    mx.random.seed(0)
    x = nd.random.normal(shape=(1, in_dim))
    imp = mlp_net(hidden, out)
    hyb = mlp_net(hidden, out)
    _copy_params(imp, hyb, x)
    hyb.hybridize()
    ex = mlp_sym(hidden, out).simple_bind(
        mx.current_context(), grad_req='null', data=(1, in_dim))
    dense = [b for b in imp]
    for k, layer in enumerate(dense):
        ex.arg_dict[f'fc{k + 1}_weight'][:] = layer.weight.data()
        ex.arg_dict[f'fc{k + 1}_bias'][:] = layer.bias.data()
    ex.arg_dict['data'][:] = x
    last = {}

    def run_block(net, key):
        def fn():
            for _ in range(calls):
                y = net(x)
            y.wait_to_read()
            last[key] = y
        return fn

    def run_exec():
        for _ in range(calls):
            y = ex.forward()[0]
        y.wait_to_read()
        last['symbolic'] = y
    return run_block(imp, 'imperative'), run_block(hyb, 'hybridized'), run_exec, last


# --- LeNet ---------------------------------------------------------------------------
def lenet(hybrid):
    """The multi-GPU chapter's LeNet as a HybridSequential, with its loss."""
    mx.random.seed(0)
    net = d2l.lenet_multigpu(hybrid=True)
    net.initialize(init.Normal(0.01))
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    if hybrid:
        net.hybridize()
        loss.hybridize()
    return net, loss


def lenet_sym():
    """The same LeNet declared with ``mx.sym``, ending in SoftmaxOutput."""
    h = mx.sym.var('data')
    h = mx.sym.Convolution(h, kernel=(3, 3), num_filter=20, name='conv1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='avg', name='pool1')
    h = mx.sym.Convolution(h, kernel=(5, 5), num_filter=50, name='conv2')
    h = mx.sym.Activation(h, act_type='relu', name='relu2')
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='avg', name='pool2')
    h = mx.sym.FullyConnected(h, num_hidden=128, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu3')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def _copy_params(src, dst, x):
    """Give ``dst`` the parameters of ``src`` (both shaped by a call on ``x``)."""
    src(x)
    dst(x)
    for a, b in zip(src.collect_params().values(), dst.collect_params().values()):
        b.set_data(a.data())


def lenet_closures(X_np, y_np, lr=0.1):
    """Training step and inference, imperative and hybridized, from the same
    initial weights (each step returns its loss, each inference its output)."""
    batch = min(BATCH, len(X_np))
    batches = [(nd.array(X_np[i:i + batch]), nd.array(y_np[i:i + batch]))
               for i in range(0, len(X_np) - batch + 1, batch)]
    X = batches[0][0]
    fns = {}
    nets = {'imperative': lenet(False), 'hybridized': lenet(True)}
    _copy_params(nets['imperative'][0], nets['hybridized'][0], X)
    for mode, (net, loss) in nets.items():
        trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr})

        def step(net=net, loss=loss, trainer=trainer, k=[0]):
            X, y = batches[k[0] % len(batches)]      # the batches in turn
            k[0] += 1
            with autograd.record():
                l = loss(net(X), y)
            l.backward()
            trainer.step(batch)
            nd.waitall()
            return l

        def infer(net=net):
            out = net(X)
            out.wait_to_read()
            return out
        fns[mode] = (step, infer)
    return fns


def fit_closures(X_np, y_np, batch=256, lr=0.1):
    """One epoch over the same NDArrayIter: ``Module.fit`` on the symbolic
    LeNet, and the Gluon loop doing the same work (imperative net, loss,
    backward, Trainer.step, accuracy), both on the current context (the
    iterator's batches are host arrays: the Gluon loop moves each one there,
    as Module does)."""
    ctx = mx.current_context()
    it = mx.io.NDArrayIter(X_np, y_np, batch, label_name='softmax_label')
    mod = mx.mod.Module(lenet_sym(), context=ctx)
    mx.random.seed(0)
    fit_args = dict(num_epoch=1, optimizer='sgd', initializer=mx.init.Normal(0.01),
                    optimizer_params={'learning_rate': lr})

    def module_epoch():
        it.reset()
        # After the first call fit finds the module bound and initialized,
        # and says so; that is expected here.
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                mod.fit(it, **fit_args)
        finally:
            root.setLevel(level)
        nd.waitall()
        return mod

    net, loss = lenet(hybrid=False)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr})
    acc = mx.metric.Accuracy()

    def gluon_epoch():
        it.reset()
        acc.reset()
        for b in it:
            X, y = b.data[0].as_in_context(ctx), b.label[0].as_in_context(ctx)
            with autograd.record():
                out = net(X)
                l = loss(out, y)
            l.backward()
            trainer.step(X.shape[0])
            acc.update([y], [out])
        nd.waitall()
        return acc
    return module_epoch, gluon_epoch


def data(n, seed=0, real=True):
    """``n`` Fashion-MNIST training images and labels (random ones of the
    same shape if the files cannot be found, or with ``real=False``).

    Real images matter for timing training: on random images with random
    labels the weights drift until the arithmetic meets denormal numbers,
    which slows both sides unevenly.
    """
    if real:
        try:
            mx.random.seed(seed)
            train_iter, _ = d2l.load_data_fashion_mnist(BATCH)
            xs, ys, got = [], [], 0
            for X, y in train_iter:
                xs.append(X.asnumpy())
                ys.append(y.asnumpy().astype(np.float32))
                got += len(xs[-1])
                if got >= n:
                    break
            return np.concatenate(xs)[:n], np.concatenate(ys)[:n]
        except (OSError, RuntimeError, ValueError) as e:
            print(f'bench_hybrid: no Fashion-MNIST ({e}); random images instead',
                  file=sys.stderr)
    rng = np.random.default_rng(seed)
    return (rng.random((n, 1, 28, 28), dtype=np.float32),
            rng.integers(0, 10, n).astype(np.float32))


def run(rounds=5):
    rows = []

    def row(name, ours_s, ref_s, work, unit, target):
        ours, ref = work / ours_s, work / ref_s
        rows.append({'bench': 'hybrid', 'name': name, 'ours': round(ours, 1),
                     'reference': round(ref, 1), 'ratio': round(ours / ref, 3),
                     'unit': f'{unit} (ratio = speed-up; {target})'})

    imp, hyb, sym, last = mlp_closures(calls=CALLS)
    t_imp, t_hyb, t_sym = best_alternating([imp, hyb, sym], rounds=rounds)
    assert np.allclose(last['hybridized'].asnumpy(), last['imperative'].asnumpy(),
                       rtol=1e-5, atol=1e-6)
    assert np.allclose(last['symbolic'].asnumpy(), last['imperative'].asnumpy(),
                       rtol=1e-5, atol=1e-6)
    unit = 'calls/s (ref: imperative Gluon)'
    row(f'MLP 512-256-128-2 x{CALLS} on (1, 512): hybridized', t_hyb, t_imp, CALLS,
        unit, 'target >= 2')
    row(f'MLP 512-256-128-2 x{CALLS} on (1, 512): sym + simple_bind executor', t_sym,
        t_imp, CALLS, unit, 'no target')

    X, y = data(BATCH * 8)
    fns = lenet_closures(X, y)
    t_imp, t_hyb = best_alternating([fns['imperative'][0], fns['hybridized'][0]],
                                    rounds=rounds + 3, number=4)
    unit = 'images/s (ref: imperative Gluon)'
    row(f'LeNet train step, batch {BATCH}: net + loss hybridized', t_hyb, t_imp,
        BATCH, unit, 'target >= 1.1')
    t_imp, t_hyb = best_alternating([fns['imperative'][1], fns['hybridized'][1]],
                                    rounds=rounds, number=5)
    row(f'LeNet inference, batch {BATCH}: hybridized', t_hyb, t_imp, BATCH, unit,
        'no target')

    X, y = data(BATCH * FIT_BATCHES, seed=1)
    module_epoch, gluon_epoch = fit_closures(X, y, batch=BATCH)
    t_mod, t_glu = best_alternating([module_epoch, gluon_epoch], rounds=rounds)
    row(f'LeNet Module.fit, {FIT_BATCHES} batches of {BATCH}', t_mod, t_glu,
        len(X), 'images/s (ref: imperative Gluon loop, same iterator, same work)',
        'target >= 0.9')
    return rows


if __name__ == '__main__':
    for r in run():
        print(r)
