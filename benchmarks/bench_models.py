"""The book's small models, training and inference, vs PyTorch CPU.

Rows (issue 11), each d2lmini against PyTorch CPU measured in the same run,
in images/s, ratio = ours / PyTorch (higher is better; the issue's target
for every row is >= 1.0):

* classic LeNet of chapter 5 (``d2l.lenet_classic()``: sigmoid, 6/16
  channels, padding 2, dense 120/84/10, average pooling), Xavier init, SGD
  lr 0.9, batch 256: training step and inference;
* MLP 784-256-10 (``Dense(256, activation='relu')``, ``Dense(10)``), SGD
  lr 0.1, batch 256: training step and inference;
* the multi-GPU chapter's LeNet (``d2l.lenet_multigpu()``: relu, 20/50
  channels), SGD lr 0.1, at batch 16, 64, 256 and 1024: training step and
  inference at each.

After each row comes the figure the row would reach if the framework
around the kernels (Python, autograd, the engine) cost nothing: the row
divided by the share of a step spent in the operators' own NumPy/BLAS work
(:func:`kernel_share`).  It splits a gap in two: where that figure is still
below PyTorch's, the kernels themselves are the gap (NumPy's ``exp``, BLAS
on skinny matrices), not the framework.

A training step is forward, backward, SGD update and ``nd.waitall()``;
inference is a forward pass and ``wait_to_read()``.  Our side is plain
imperative Gluon as a new user writes it (no hybridize); PyTorch runs the
same layers from the same initializer, on the same batches: a few distinct
real Fashion-MNIST batches in turn (random data, the fallback when the
files cannot be found, lets the weights drift into denormal numbers).
"""
import itertools
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import d2lmini as mx                                    # noqa: E402
from d2lmini import autograd, gluon, nd, d2l, init      # noqa: E402
from d2lmini import engine                              # noqa: E402
from d2lmini.gluon import nn                            # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_hybrid import data   # noqa: E402  (real Fashion-MNIST images, or random)
from _timing import best_alternating   # noqa: E402  (blocks of ~0.25 s, 5 rounds)

# (model, batch size) of each pair of rows, in table order.
SPECS = [('classic', 256), ('mlp', 256),
         ('lenet', 16), ('lenet', 64), ('lenet', 256), ('lenet', 1024)]
LR = {'classic': 0.9, 'mlp': 0.1, 'lenet': 0.1}
LABEL = {'classic': 'classic LeNet (ch. 5: sigmoid, 6/16 channels)',
         'mlp': 'MLP 784-256-10',
         'lenet': 'LeNet (multi-GPU ch.: relu, 20/50 channels)'}
N_BATCHES = 8          # distinct batches each side cycles through


def _torch():
    """PyTorch, with one thread per usable core, or None if not installed."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(engine._cores())
    return torch


# --- the models -----------------------------------------------------------------
def our_net(kind):
    """Our network of ``kind`` ('classic', 'mlp' or 'lenet'), initialized
    (its parameter shapes are known after the first call)."""
    mx.random.seed(0)
    if kind == 'classic':
        net = d2l.lenet_classic()
        net.initialize(init.Xavier())
    elif kind == 'mlp':
        net = nn.Sequential()
        net.add(nn.Dense(256, activation='relu'), nn.Dense(10))
        net.initialize(init.Normal(0.01))
    elif kind == 'lenet':
        net = d2l.lenet_multigpu()
        net.initialize(init.Normal(0.01))
    else:
        raise ValueError(f"bench_models: kind must be 'classic', 'mlp' or "
                         f"'lenet', got {kind!r}")
    return net


def torch_net(kind):
    """PyTorch's twin of ``our_net(kind)``: the same layers in the same
    order, weights from the same distribution, zero biases (as ours)."""
    torch = _torch()
    from torch import nn as tnn
    torch.manual_seed(0)
    if kind == 'classic':
        net = tnn.Sequential(
            tnn.Conv2d(1, 6, 5, padding=2), tnn.Sigmoid(), tnn.AvgPool2d(2, 2),
            tnn.Conv2d(6, 16, 5), tnn.Sigmoid(), tnn.AvgPool2d(2, 2),
            tnn.Flatten(), tnn.Linear(400, 120), tnn.Sigmoid(),
            tnn.Linear(120, 84), tnn.Sigmoid(), tnn.Linear(84, 10))
    elif kind == 'mlp':
        net = tnn.Sequential(tnn.Flatten(), tnn.Linear(784, 256), tnn.ReLU(),
                             tnn.Linear(256, 10))
    elif kind == 'lenet':
        net = tnn.Sequential(
            tnn.Conv2d(1, 20, 3), tnn.ReLU(), tnn.AvgPool2d(2, 2),
            tnn.Conv2d(20, 50, 5), tnn.ReLU(), tnn.AvgPool2d(2, 2),
            tnn.Flatten(), tnn.Linear(800, 128), tnn.ReLU(), tnn.Linear(128, 10))
    else:
        raise ValueError(f"bench_models: kind must be 'classic', 'mlp' or "
                         f"'lenet', got {kind!r}")
    with torch.no_grad():
        for name, p in net.named_parameters():
            if name.endswith('bias'):
                p.zero_()
            elif kind == 'classic':
                # MXNet's Xavier() (uniform, avg fan, magnitude 3) is
                # Glorot's uniform: bound sqrt(6 / (fan_in + fan_out)).
                tnn.init.xavier_uniform_(p)
            else:
                tnn.init.normal_(p, 0, 0.01)
    return net


def copy_to_torch(net, tnet):
    """Give the torch twin our parameters (ours must have been called once)."""
    torch = _torch()
    with torch.no_grad():
        for ours, theirs in zip(net.collect_params().values(), tnet.parameters()):
            theirs.copy_(torch.from_numpy(ours.data().asnumpy()))


def _cycle(items):
    """A function returning ``items`` in turn, round and round."""
    it = itertools.cycle(items)
    return lambda: next(it)


def closures(kind, batch, X, y):
    """``(our_step, our_infer, torch_step, torch_infer)`` for model ``kind``
    on batches of ``batch`` cut from ``X``, ``y`` (at most N_BATCHES of them,
    taken in turn; the same ones for both sides).  Each step returns its
    loss, each inference its output.  The torch pair is None without
    PyTorch."""
    k = max(1, min(N_BATCHES, len(X) // batch))
    cuts = [(X[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch])
            for i in range(k)]
    lr = LR[kind]

    batches = [(nd.array(a), nd.array(b)) for a, b in cuts]
    step_batch, infer_batch = _cycle(batches), _cycle(batches)
    net = our_net(kind)
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr})

    def our_step():
        X, y = step_batch()
        with autograd.record():
            l = loss(net(X), y)
        l.backward()
        trainer.step(batch)
        nd.waitall()
        return l

    def our_infer():
        X, _ = infer_batch()
        out = net(X)
        out.wait_to_read()
        return out

    torch = _torch()
    if torch is None:
        return our_step, our_infer, None, None
    tbatches = [(torch.from_numpy(a), torch.from_numpy(b).long()) for a, b in cuts]
    tstep_batch, tinfer_batch = _cycle(tbatches), _cycle(tbatches)
    tnet = torch_net(kind)
    opt = torch.optim.SGD(tnet.parameters(), lr=lr)
    tloss = torch.nn.CrossEntropyLoss()

    def torch_step():
        X, y = tstep_batch()
        opt.zero_grad()
        l = tloss(tnet(X), y)
        l.backward()
        opt.step()
        return l

    def torch_infer():
        X, _ = tinfer_batch()
        with torch.no_grad():
            return tnet(X)
    return our_step, our_infer, torch_step, torch_infer


# --- the rows -------------------------------------------------------------------
def row_names(specs=SPECS):
    """The rows' names, in order: train step then inference per spec."""
    return [f'{LABEL[kind]} {what}, batch {batch}'
            for kind, batch in specs for what in ('train step', 'inference')]


def _unit(torch):
    blas = engine.blas_threads()
    blas = f'OpenBLAS {blas} threads' if blas else 'BLAS threads unknown (not OpenBLAS)'
    ref = f'torch {torch.get_num_threads()} threads' if torch else 'no PyTorch'
    return (f'images/s (ratio = ours / PyTorch CPU, same run; {blas}, {ref}, '
            f'{engine._cores()} cores)')


KERNEL_STEPS = 20


def kernel_share(fn, steps=KERNEL_STEPS):
    """The share of a call of ``fn`` spent inside its operators' own NumPy
    and BLAS work: the engine trace's spans summed over the call's wall
    time, with the synchronous (naive) engine so that no two operators
    overlap; the median of ``steps`` calls.  Both numbers come from the same
    call, so a busy machine slows them together and the share holds."""
    shares = []
    with engine.engine_mode('naive'):
        fn()
        for _ in range(steps):
            with engine.Trace() as tr:
                t = time.perf_counter()
                fn()
                wall = time.perf_counter() - t
            shares.append(sum(end - start for _, _, start, end in tr.spans()) / wall)
    return float(np.median(shares))


KERNELS_ALONE = ": the ops' own compute alone"


def run(specs=SPECS, timer=best_alternating, real=True, kernel_timer=kernel_share):
    """Each row of ``row_names(specs)``, and after it the row's figure if
    the framework around the kernels cost nothing: the row divided by
    :func:`kernel_share`.  Where that is still below PyTorch's, no saving
    in Python, autograd or the engine can bring the row to 1."""
    torch = _torch()
    X, y = data(max(b for _, b in specs) * N_BATCHES, real=real)
    names = iter(row_names(specs))
    rows = []
    for kind, batch in specs:
        our_step, our_infer, torch_step, torch_infer = closures(kind, batch, X, y)
        for ours_fn, ref_fn in ((our_step, torch_step), (our_infer, torch_infer)):
            ours_s, ref_s = timer([ours_fn, ref_fn])
            ref = None if ref_s is None else batch / ref_s
            name = next(names)
            share = kernel_timer(ours_fn)
            for what, ours, unit in (('', batch / ours_s, _unit(torch)),
                                     (KERNELS_ALONE, batch / ours_s / share,
                                      _kernel_unit(share))):
                rows.append({'bench': 'models', 'name': name + what,
                             'ours': round(ours),
                             'reference': None if ref is None else round(ref),
                             'ratio': None if ref is None else round(ours / ref, 3),
                             'unit': unit})
                print(f"   {rows[-1]['name']}: {rows[-1]['ours']} vs "
                      f"{rows[-1]['reference']} images/s", flush=True)
    return rows


def _kernel_unit(share):
    return (f"images/s if Python, autograd and the engine cost nothing: the row "
            f"above / {share:.2f}, the share of a synchronous step spent in the "
            f"ops' own NumPy/BLAS work (engine trace, median of {KERNEL_STEPS} steps)")


if __name__ == '__main__':
    for r in run():
        print(r)
