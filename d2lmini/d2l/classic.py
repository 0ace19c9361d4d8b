"""The first edition's helpers: ``import d2lzh as d2l`` (the classic MXNet
book, in Chinese), with its names, signatures and printed output.

``tools/classic_chapters/run.py`` runs that book's chapters with this
module in place of ``d2lzh``.  Where the two editions give a name two
meanings, this module holds the first edition's and :mod:`d2lmini.d2l`
the course's:

* ``evaluate_accuracy(data_iter, net, ctx)`` splits each batch over the
  context(s) ``ctx`` (the course's is ``evaluate_accuracy(net, data_iter)``);
* ``show_images(imgs, num_rows, num_cols, scale)`` takes the scale fourth
  (the course's takes ``titles`` there).

Only the first edition has the training loops :func:`train_ch3` (on the
CPU), :func:`train_ch5` (on a device) and :func:`train` (on several
devices), the from-scratch reader :func:`data_iter`, ``_get_batch``,
:class:`Residual` and :func:`resnet18`, :func:`semilogy` and
:func:`show_fashion_mnist`; they mean one thing, so ``d2l.train_ch5`` and
the like reach them too.  The rest of d2lzh's names that d2lmini has
(``try_gpu``, ``load_data_fashion_mnist``, ``Benchmark``, ``sgd``, ...) are
the course's helpers, the same in both editions.
"""
import time

import numpy as np

from .. import autograd, context
from .. import ndarray as nd
from .data import get_fashion_mnist_labels, load_data_fashion_mnist
from .devices import try_all_gpus, try_gpu
from .plotting import _host, _in_notebook, _plt, set_figsize, use_svg_display
from .plotting import show_images as _show_images
from .timing import Benchmark
from .training import _correct, _progress, linreg, sgd, squared_loss

__all__ = ['Benchmark', 'Residual', 'data_iter', 'evaluate_accuracy',
           'get_fashion_mnist_labels', 'linreg', 'load_data_fashion_mnist',
           'plt', 'resnet18', 'semilogy', 'set_figsize', 'sgd',
           'show_fashion_mnist', 'show_images', 'squared_loss', 'train',
           'train_ch3', 'train_ch5', 'try_all_gpus', 'try_gpu',
           'use_svg_display']


def __getattr__(name):          # d2l.plt, d2l.Residual: made on first use
    if name == 'plt':
        return _plt()
    if name == 'Residual':
        if 'Residual' not in globals():
            globals()['Residual'] = _residual_class()
        return globals()['Residual']
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def show_images(imgs, num_rows, num_cols, scale=1.5):
    """Plot a list of images, ``num_rows`` by ``num_cols``, each ``scale``
    inches a side (the course's :func:`d2lmini.d2l.show_images`, without
    titles).
    """
    return _show_images(imgs, num_rows, num_cols, scale=scale)


def semilogy(x_vals, y_vals, x_label, y_label, x2_vals=None, y2_vals=None,
             legend=None, figsize=(3.5, 2.5)):
    """Plot ``y`` on a log scale against ``x`` (and a dotted second curve)."""
    plt = _plt()
    set_figsize(figsize)
    plt.xlabel(x_label)
    plt.ylabel(y_label)
    plt.semilogy(_host(x_vals), _host(y_vals))
    if x2_vals is not None and y2_vals is not None:
        plt.semilogy(_host(x2_vals), _host(y2_vals), linestyle=':')
        plt.legend(legend)
    if _in_notebook():
        plt.show()


def show_fashion_mnist(images, labels):
    """Plot Fashion-MNIST images in one row, with their text labels."""
    use_svg_display()
    _, figs = _plt().subplots(1, len(images), figsize=(12, 12))
    figs = np.atleast_1d(figs)
    for f, img, lbl in zip(figs, images, labels):
        f.imshow(np.asarray(_host(img)).reshape((28, 28)))
        f.set_title(lbl)
        f.axes.get_xaxis().set_visible(False)
        f.axes.get_yaxis().set_visible(False)
    return figs


def data_iter(batch_size, features, labels):
    """The classic book's from-scratch reader: random minibatches.

    Yields ``(features[j], labels[j])`` for shuffled index batches ``j``
    (Python's ``random``, as in the book); the last batch may be smaller.
    """
    import random
    num_examples = len(features)
    indices = list(range(num_examples))
    random.shuffle(indices)
    for i in range(0, num_examples, batch_size):
        j = nd.array(indices[i: min(i + batch_size, num_examples)])
        yield nd.take(features, j), nd.take(labels, j)


def _get_batch(batch, ctx):
    """Split a ``(features, labels)`` batch over ``ctx`` (a list).

    Labels take the features' dtype first, as in the classic book.
    Returns ``(features_list, labels_list, batch_size)``.
    """
    from ..gluon import utils
    features, labels = batch
    if labels.dtype != features.dtype:
        labels = labels.astype(features.dtype)
    return (utils.split_and_load(features, ctx),
            utils.split_and_load(labels, ctx), features.shape[0])


def evaluate_accuracy(data_iter, net, ctx=None):
    """Compute the accuracy for a model on a dataset, each batch split
    over ``ctx`` (a Context or a list; default ``[cpu()]``), the counts
    summed on cpu(0).

    One sync a batch (``wait_to_read``), as the book does, so memory stays
    bounded on long test sets.
    """
    if ctx is None:
        ctx = [context.cpu()]
    if isinstance(ctx, context.Context):
        ctx = [ctx]
    acc_sum, n = nd.array([0], ctx=context.cpu()), 0
    for batch in data_iter:
        features, labels, _ = _get_batch(batch, ctx)
        for X, y in zip(features, labels):
            y = y.astype('float32')
            acc_sum += (net(X).argmax(axis=1) == y).sum().copyto(context.cpu())
            n += y.size
        acc_sum.wait_to_read()
    return acc_sum.asscalar() / n


def train_ch3(net, train_iter, test_iter, loss, num_epochs, batch_size,
              params=None, lr=None, trainer=None):
    """Train and evaluate a model on the CPU (classic book, chapter 3).

    Updates with :func:`sgd` on ``params`` and ``lr``, or with
    ``trainer.step``; prints loss, train and test accuracy each epoch.
    """
    for epoch in range(num_epochs):
        train_l_sum, train_acc_sum, n = 0.0, 0.0, 0
        for X, y in train_iter:
            with autograd.record():
                y_hat = net(X)
                l = loss(y_hat, y).sum()
            l.backward()
            if trainer is None:
                sgd(params, lr, batch_size)
            else:
                trainer.step(batch_size)
            y = y.astype('float32')
            train_l_sum += l.asscalar()
            train_acc_sum += (y_hat.argmax(axis=1) == y).sum().asscalar()
            n += y.size
        test_acc = evaluate_accuracy(test_iter, net, context.cpu())
        print('epoch %d, loss %.4f, train acc %.3f, test acc %.3f'
              % (epoch + 1, train_l_sum / n, train_acc_sum / n, test_acc))


def train_ch5(net, train_iter, test_iter, batch_size, trainer, ctx,
              num_epochs):
    """Train and evaluate a model on ``ctx`` (classic book, chapter 5).

    Softmax cross-entropy; prints ``training on ctx``, then per epoch the
    loss, train and test accuracy and the epoch's time.  On a terminal a
    progress bar shows the batches of the running epoch.
    """
    from ..gluon import loss as gloss
    print('training on', ctx)
    loss = gloss.SoftmaxCrossEntropyLoss()
    for epoch in range(num_epochs):
        train_l_sum, train_acc_sum, n, start = 0.0, 0.0, 0, time.time()
        progress = _progress(len(train_iter))
        for X, y in train_iter:
            X, y = X.as_in_context(ctx), y.as_in_context(ctx)
            with autograd.record():
                y_hat = net(X)
                l = loss(y_hat, y).sum()
            l.backward()
            trainer.step(batch_size)
            y = y.astype('float32')
            train_l_sum += l.asscalar()
            train_acc_sum += (y_hat.argmax(axis=1) == y).sum().asscalar()
            n += y.size
            if progress is not None:
                progress.update(1)
        if progress is not None:
            progress.close()
        test_acc = evaluate_accuracy(test_iter, net, ctx)
        print('epoch %d, loss %.4f, train acc %.3f, test acc %.3f, '
              'time %.1f sec'
              % (epoch + 1, train_l_sum / n, train_acc_sum / n, test_acc,
                 time.time() - start))


def train(train_iter, test_iter, net, loss, trainer, ctx, num_epochs):
    """Train on one or several contexts (classic book, image augmentation).

    Each batch is split over ``ctx`` with :func:`_get_batch`.  The sums of
    the loss and of the correct predictions stay on each device and are
    read once an epoch (the book reads them every batch), so the front end
    does not wait for the devices between batches and they keep computing
    side by side.
    """
    print('training on', ctx)
    if isinstance(ctx, context.Context):
        ctx = [ctx]
    for epoch in range(num_epochs):
        sums, n, m, start = None, 0, 0, time.time()
        progress = _progress(len(train_iter))
        for batch in train_iter:
            Xs, ys, batch_size = _get_batch(batch, ctx)
            with autograd.record():
                y_hats = [net(X) for X in Xs]
                ls = [loss(y_hat, y) for y_hat, y in zip(y_hats, ys)]
            for l in ls:
                l.backward()
            trainer.step(batch_size)
            # per device: [loss sum, correct count], float64 on the device
            new = [[l.sum().astype('float64'),
                    _correct(y_hat, y).astype('float64')]
                   for l, y_hat, y in zip(ls, y_hats, ys)]
            sums = new if sums is None else [[a + c, b + d] for (a, b), (c, d)
                                             in zip(sums, new)]
            n += sum(l.size for l in ls)
            m += sum(y.size for y in ys)
            if progress is not None:
                progress.update(1)
        if progress is not None:
            progress.close()
        train_l_sum = sum(s[0].asscalar() for s in sums) if sums else 0.0
        train_acc_sum = sum(s[1].asscalar() for s in sums) if sums else 0.0
        n, m = max(n, 1), max(m, 1)
        test_acc = evaluate_accuracy(test_iter, net, ctx)
        print('epoch %d, loss %.4f, train acc %.3f, test acc %.3f, '
              'time %.1f sec'
              % (epoch + 1, train_l_sum / n, train_acc_sum / m, test_acc,
                 time.time() - start))


def _residual_class():
    # Built on first use: gluon is heavy, and this module stays cheap to import.
    from ..gluon import nn

    class Residual(nn.Block):
        """The residual block: two 3x3 convolutions with batch norm, plus
        the input (through a 1x1 convolution when ``use_1x1conv``)."""

        def __init__(self, num_channels, use_1x1conv=False, strides=1,
                     **kwargs):
            super().__init__(**kwargs)
            self.conv1 = nn.Conv2D(num_channels, kernel_size=3, padding=1,
                                   strides=strides)
            self.conv2 = nn.Conv2D(num_channels, kernel_size=3, padding=1)
            self.conv3 = (nn.Conv2D(num_channels, kernel_size=1,
                                    strides=strides) if use_1x1conv else None)
            self.bn1 = nn.BatchNorm()
            self.bn2 = nn.BatchNorm()

        def forward(self, X):
            """``relu(bn2(conv2(relu(bn1(conv1(X))))) + X)``, ``X`` through
            ``conv3`` first when there is one."""
            Y = nd.relu(self.bn1(self.conv1(X)))
            Y = self.bn2(self.conv2(Y))
            if self.conv3:
                X = self.conv3(X)
            return nd.relu(Y + X)

    Residual.__module__ = __name__
    Residual.__qualname__ = 'Residual'
    return Residual


def resnet18(num_classes):
    """ResNet-18 for small images (classic book): a 3x3 first convolution,
    stride 1, no max pooling."""
    from ..gluon import nn
    Residual = __getattr__('Residual')

    def resnet_block(num_channels, num_residuals, first_block=False):
        blk = nn.Sequential()
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.add(Residual(num_channels, use_1x1conv=True, strides=2))
            else:
                blk.add(Residual(num_channels))
        return blk

    net = nn.Sequential()
    net.add(nn.Conv2D(64, kernel_size=3, strides=1, padding=1),
            nn.BatchNorm(), nn.Activation('relu'))
    net.add(resnet_block(64, 2, first_block=True),
            resnet_block(128, 2),
            resnet_block(256, 2),
            resnet_block(512, 2))
    net.add(nn.GlobalAvgPool2D(), nn.Dense(num_classes))
    return net
