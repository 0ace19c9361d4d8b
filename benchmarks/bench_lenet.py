"""LeNet (the multi-GPU chapter's) training and inference speed vs PyTorch CPU.

Rows: training step images/s at batch 256 (forward, backward, SGD update),
inference images/s, and a full Fashion-MNIST epoch with data loading against
the pure compute time of the same steps (loading must hide behind compute).
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import d2lmini as mx                                    # noqa: E402
from d2lmini import autograd, gluon, nd, d2l, init      # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _timing                                          # noqa: E402

BATCH = 256


def ours(X_np, y_np):
    """Our training step and inference, as closures, plus what the epoch
    test needs."""
    mx.random.seed(0)
    net = d2l.lenet_multigpu()
    net.initialize(init.Normal(0.01))
    X, y = nd.array(X_np), nd.array(y_np)
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})

    def step():
        with autograd.record():
            l = loss(net(X), y)
        l.backward()
        trainer.step(BATCH)
        l.wait_to_read()
        mx.nd.waitall()

    def infer():
        net(X).wait_to_read()
    return step, infer, net, loss, trainer


def torch_ref(X_np, y_np):
    import torch
    from torch import nn
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 20, 3), nn.ReLU(), nn.AvgPool2d(2, 2),
                        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.AvgPool2d(2, 2),
                        nn.Flatten(), nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, 10))
    X, y = torch.from_numpy(X_np), torch.from_numpy(y_np).long()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    lossf = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        lossf(net(X), y).backward()
        opt.step()

    def infer():
        with torch.no_grad():
            net(X)
    return step, infer


def epoch_vs_compute(net, loss, trainer):
    """One epoch through the DataLoader vs the same steps on ready batches."""
    train_iter, _ = d2l.load_data_fashion_mnist(BATCH)
    batches = [(X, y) for X, y in train_iter]          # materialized: pure compute
    nd.waitall()

    def steps(it):
        for X, y in it:
            with autograd.record():
                l = loss(net(X), y)
            l.backward()
            trainer.step(X.shape[0])
        nd.waitall()
    t = time.perf_counter(); steps(batches); compute = time.perf_counter() - t
    t = time.perf_counter(); steps(train_iter); full = time.perf_counter() - t
    return compute, full


def run():
    rng = np.random.default_rng(0)
    X = rng.random((BATCH, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, BATCH).astype(np.float32)
    step, infer, net, loss, trainer = ours(X, y)
    try:
        import torch
        torch.set_num_threads(os.cpu_count())
        tstep, tinfer = torch_ref(X, y)
    except ImportError:
        tstep = tinfer = None
    step, tstep = _timing.best_alternating([step, tstep], rounds=6, number=10,
                                           pause=0.3)
    inf, tinf = _timing.best_alternating([infer, tinfer], rounds=6, number=10,
                                           pause=0.3)
    rows = []

    def row(name, ours_s, ref_s):
        ours_ips = BATCH / ours_s
        ref_ips = None if ref_s is None else BATCH / ref_s
        return {'bench': 'lenet', 'name': name, 'ours': round(ours_ips),
                'reference': None if ref_ips is None else round(ref_ips),
                'ratio': None if ref_ips is None else round(ours_ips / ref_ips, 3),
                'unit': 'images/s (ratio = ours / PyTorch CPU; higher is better)'}
    rows.append(row('LeNet train step, batch 256', step, tstep))
    rows.append(row('LeNet inference, batch 256', inf, tinf))
    try:
        compute, full = epoch_vs_compute(net, loss, trainer)
        rows.append({'bench': 'lenet', 'name': 'Fashion-MNIST epoch: with loading / '
                     'pure compute', 'ours': round(full, 2), 'reference': round(compute, 2),
                     'ratio': round(full / compute, 3),
                     'unit': 's (ratio must be <= 1.1)'})
    except Exception as e:                               # data files absent
        print(f'bench_lenet: epoch test skipped: {e}', file=sys.stderr)
    return rows


if __name__ == '__main__':
    for r in run():
        print(r)
