"""A small net and joined batch shared by train.py (on N ranks) and the
test (one process on the joined batch: the oracle)."""
import numpy as np

BATCH = 12                      # the joined batch; 12 splits over 2, 3, 4
STEPS = 4
OPTIMIZERS = {'sgd': {'learning_rate': 0.1, 'momentum': 0.9},
              'adam': {'learning_rate': 0.01}}


def make_net(seed=0):
    import d2lmini as mx
    from d2lmini import gluon, nd
    mx.random.seed(seed)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(8, activation='relu'), gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net(nd.zeros((1, 5)))
    return net


def batches():
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((BATCH, 5)).astype(np.float32),
             rng.integers(0, 3, BATCH)) for _ in range(STEPS)]


def train(net, step_fn, part=slice(None)):
    """``STEPS`` steps on this process's ``part`` of each joined batch;
    ``step_fn(local_batch_size)`` applies the update."""
    from d2lmini import autograd, gluon, nd
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    for X, y in batches():
        X, y = nd.array(X[part]), nd.array(y[part])
        with autograd.record():
            l_ = loss(net(X), y)
        l_.backward()
        step_fn(X.shape[0])
    return [v.data().asnumpy() for v in net.collect_params().values()]
