"""Training: the from-scratch pieces (:func:`linreg`, :func:`squared_loss`,
:func:`sgd`), counting correct predictions (:func:`accuracy`,
:func:`evaluate_accuracy`, :func:`evaluate_accuracy_gpu`), and the
course's training loop :func:`train_ch6` (chapter 5), which plots as it
goes and reads the devices only a few times an epoch.
"""
import sys

from .. import autograd
from .. import ndarray as nd
from .devices import try_gpu
from .plotting import Animator, _in_notebook
from .timing import Accumulator, Timer


def linreg(X, w, b):
    """The linear regression model."""
    return nd.dot(X, w) + b


def squared_loss(y_hat, y):
    """Squared loss."""
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params, lr, batch_size):
    """Minibatch stochastic gradient descent."""
    for param in params:
        param[:] = param - lr * param.grad / batch_size


def size(a):
    """The number of elements of ``a``.

    >>> size(nd.zeros((2, 3)))
    6
    """
    return a.size


def _correct(y_hat, y):
    """The number of correct predictions, as an NDArray (no sync), on
    ``y_hat``'s device: the labels are moved there if they are elsewhere (a
    DataLoader gives host labels; the network's output may be on a GPU)."""
    y = y.as_in_context(y_hat.context)
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.astype(y.dtype) == y
    return cmp.astype(y.dtype).sum()


def accuracy(y_hat, y):
    """Compute the number of correct predictions."""
    return float(_correct(y_hat, y).asscalar())


def evaluate_accuracy(net, data_iter):
    """Compute the accuracy for a model on a dataset: ``net`` is called on
    the ``X`` of each ``(X, y)`` of ``data_iter``.

    The first edition's ``evaluate_accuracy(data_iter, net, ctx)``, which
    splits each batch over ``ctx``, is
    :func:`d2lmini.d2l.classic.evaluate_accuracy`.

    >>> d2l.evaluate_accuracy(net, test_iter)            # doctest: +SKIP
    0.8125
    """
    if not callable(net):
        raise TypeError(f'evaluate_accuracy(net, data_iter): net is a '
                        f'{type(net).__name__}, which cannot be called; the '
                        "first edition's evaluate_accuracy(data_iter, net, "
                        'ctx) is d2lmini.d2l.classic.evaluate_accuracy')
    metric = Accumulator(2)  # No. of correct predictions, no. of predictions
    for X, y in data_iter:
        metric.add(accuracy(net(X), y), y.size)
    return metric[0] / metric[1]


def _first_context(net):
    return list(net.collect_params().values())[0].list_ctx()[0]


def evaluate_accuracy_gpu(net, data_iter, device=None):
    """Compute the accuracy for a model on a dataset using a GPU.

    The counts stay on the device until the end: one sync, not one a batch.
    """
    if not device:      # Query the first device where the first parameter is on
        device = _first_context(net)
    correct, total = None, 0
    for X, y in data_iter:
        X, y = X.as_in_context(device), y.as_in_context(device)
        c = _correct(net(X), y).astype('float64')
        correct = c if correct is None else correct + c
        total += y.size
    return float(correct.asscalar()) / total if total else 0.0


def train_ch6(net, train_iter, test_iter, num_epochs, lr, device=None):
    """Train a model with a GPU (defined in Chapter 6).

    Initializes ``net`` with Xavier on ``device``, trains it with SGD and
    softmax cross-entropy, plots train loss / train acc / test acc with an
    :class:`Animator`, and prints the final metrics and the throughput.
    Losses and counts are summed on the device and read five times an
    epoch, so the engine can run ahead of Python between those points.
    """
    from .. import gluon, init
    if device is None:
        device = try_gpu()
    net.initialize(force_reinit=True, ctx=device, init=init.Xavier())
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr})
    animator = Animator(xlabel='epoch', xlim=[1, num_epochs],
                        legend=['train loss', 'train acc', 'test acc'])
    timer, num_batches = Timer(), len(train_iter)
    every = max(1, num_batches // 5)
    progress = _progress(num_epochs * num_batches)
    train_l = train_acc = test_acc = float('nan')
    for epoch in range(num_epochs):
        # Sum of training loss, sum of training accuracy, no. of examples
        metric = Accumulator(3)
        l_sum = acc_sum = None
        n = 0
        timer.start()
        for i, (X, y) in enumerate(train_iter):
            X, y = X.as_in_context(device), y.as_in_context(device)
            with autograd.record():
                y_hat = net(X)
                l = loss(y_hat, y)
            l.backward()
            trainer.step(X.shape[0])
            s, c = l.sum().astype('float64'), _correct(y_hat, y).astype('float64')
            l_sum = s if l_sum is None else l_sum + s
            acc_sum = c if acc_sum is None else acc_sum + c
            n += X.shape[0]
            if (i + 1) % every == 0 or i == num_batches - 1:
                metric.add(l_sum.asscalar(), acc_sum.asscalar(), n)
                l_sum = acc_sum = None
                n = 0
                train_l = metric[0] / metric[2]
                train_acc = metric[1] / metric[2]
                animator.add(epoch + (i + 1) / num_batches,
                             (train_l, train_acc, None))
            if progress is not None:
                progress.update(1)
        timer.stop()
        test_acc = evaluate_accuracy_gpu(net, test_iter, device)
        animator.add(epoch + 1, (None, None, test_acc))
        if progress is not None:
            progress.set_postfix(loss=f'{train_l:.3f}', train_acc=f'{train_acc:.3f}',
                                 test_acc=f'{test_acc:.3f}')
    if progress is not None:
        progress.close()
    print(f'loss {train_l:.3f}, train acc {train_acc:.3f}, '
          f'test acc {test_acc:.3f}')
    print(f'{metric[2] * num_epochs / timer.sum():.1f} examples/sec '
          f'on {str(device)}')


def _progress(total):
    """A tqdm bar for scripts on a terminal (notebooks have the Animator)."""
    if _in_notebook() or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit='batch', leave=False, file=sys.stderr)
