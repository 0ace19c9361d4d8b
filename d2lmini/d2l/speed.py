"""Speed (chapter 5): :func:`images_per_sec` of training steps that take
turns, :func:`median_time` of a call, and the same network in PyTorch to
compare with (:func:`torch_twin`, :func:`torch_steps`).
"""
import time

import numpy as np

from .. import ndarray as nd
from .timing import Timer


def images_per_sec(steps, batch_size, num_rounds=5, num_repeats=3):
    """Images per second of each function in ``steps`` (each handles one
    minibatch of ``batch_size`` and returns when its work is done): the best
    of ``num_rounds`` rounds of ``num_repeats`` calls, the functions taking
    turns in every round, so that all of them see the same machine.

    >>> images_per_sec([train_step, predict], 256)     # doctest: +SKIP
    [3660.2, 11481.0]
    """
    for step in steps:
        step()                          # warm-up: the first call allocates
    best = [0.0] * len(steps)
    for _ in range(num_rounds):
        for k, step in enumerate(steps):
            timer = Timer()
            for _ in range(num_repeats):
                step()
            best[k] = max(best[k], batch_size * num_repeats / timer.stop())
    return best


def median_time(fn, reps):
    """The median of ``reps`` timings of ``fn()``, in seconds, each
    waiting for the engine to finish what ``fn`` pushed (``nd.waitall()``);
    one untimed call first, to warm up.  The median, unlike the best, is
    what a typical call costs.

    >>> median_time(lambda: nd.dot(a, a), 10)         # doctest: +SKIP
    0.00213
    """
    fn()
    nd.waitall()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        nd.waitall()
        times.append(time.perf_counter() - start)
    return sorted(times)[reps // 2]


_TORCH_ACT = {'relu': 'ReLU', 'sigmoid': 'Sigmoid', 'tanh': 'Tanh'}


def torch_twin(net, X):
    """The Gluon ``net`` (a ``Sequential`` of ``Conv2D``, ``AvgPool2D`` /
    ``MaxPool2D`` and ``Dense`` layers, with their activations) rebuilt in
    PyTorch with ``net``'s weights, or ``None`` when PyTorch is not installed.

    It checks that the two compute the same outputs on the minibatch ``X``
    (to float32 rounding: ``atol=1e-4``), so a speed comparison compares
    the same computation.  The layouts of the weights are the same (NCHW,
    and ``(out, in)`` for a dense layer)."""
    try:
        import torch
    except ImportError:
        return None
    ours = net(X).asnumpy()             # (and the layers know their sizes)
    layers = []
    for block in net:
        kind = type(block).__name__
        if kind == 'Conv2D':
            w, kw = block.weight.data().asnumpy(), block._kwargs
            layer = torch.nn.Conv2d(w.shape[1], w.shape[0], w.shape[2:],
                                    stride=kw['stride'], padding=kw['pad'])
        elif kind in ('AvgPool2D', 'MaxPool2D'):
            kw = block._kwargs
            pool = torch.nn.AvgPool2d if kind == 'AvgPool2D' else torch.nn.MaxPool2d
            layers.append(pool(kw['kernel'], kw['stride'], kw['pad']))
            continue
        elif kind == 'Dense':
            w = block.weight.data().asnumpy()
            if not any(isinstance(m, torch.nn.Flatten) for m in layers):
                layers.append(torch.nn.Flatten())
            layer = torch.nn.Linear(w.shape[1], w.shape[0])
        else:
            raise ValueError(f'torch_twin: no PyTorch twin for a {kind} layer')
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(w))
            layer.bias.copy_(torch.from_numpy(block.bias.data().asnumpy()))
        layers.append(layer)
        if block.act is not None:
            layers.append(getattr(torch.nn, _TORCH_ACT[block.act._act_type])())
    twin = torch.nn.Sequential(*layers)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(X.asnumpy())).numpy()
    if not np.allclose(theirs, ours, atol=1e-4):
        raise AssertionError('torch_twin: the PyTorch network computes '
                             'something else than the Gluon one')
    return twin


def torch_steps(twin, X, y, lr):
    """``(train_step, predict)`` for the PyTorch network ``twin`` on the
    minibatch ``X, y``: a step of SGD with learning rate ``lr`` on the
    softmax cross-entropy, and a forward pass without gradients."""
    import torch
    tX = torch.from_numpy(X.asnumpy())
    ty = torch.from_numpy(y.asnumpy()).long()
    optimizer = torch.optim.SGD(twin.parameters(), lr=lr)
    loss = torch.nn.CrossEntropyLoss()

    def train_step():
        optimizer.zero_grad()
        loss(twin(tX), ty).backward()
        optimizer.step()

    def predict():
        with torch.no_grad():
            twin(tX)
    return train_step, predict
