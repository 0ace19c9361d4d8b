"""The d2l book's helpers, both MXNet editions: ``from d2lmini import d2l``.

Why one long file: ``from d2lmini import d2l`` is the book's convention
(d2l's own ``d2l/mxnet.py`` is one module too), so that a chapter names
``d2l.train_ch6`` and a learner finds it in one place; the helpers are
grouped by what they do and by the chapters that use them, under
``# ===`` headings.

One module serves two books' code:

* the course's chapters and the second edition's MXNet helpers
  (``evaluate_accuracy(net, data_iter)``, ``train_ch6``, ...);
* the classic first edition (``import d2lzh as d2l``, the Chinese book):
  ``evaluate_accuracy(data_iter, net, ctx)``, ``train_ch3``, ``train_ch5``,
  ``_get_batch``, ``data_iter``, ``Residual``, ``resnet18``, ... with its
  names, signatures and printed output.  Where the two editions share a
  name, the call form tells them apart (see :func:`evaluate_accuracy`,
  :class:`Benchmark`).

What is here:

* timing and bookkeeping: :class:`Timer`, :class:`Accumulator`,
  :class:`Benchmark`; results as tables: :func:`table`;
* plotting (matplotlib, inline SVG in notebooks): :data:`plt`,
  :func:`use_svg_display`, :func:`set_figsize`, :func:`set_axes`,
  :func:`plot`, :func:`semilogy`, :class:`Animator`, :func:`show_images`,
  :func:`show_trace` (an engine trace),
  :func:`show_fashion_mnist`;
* devices: :func:`try_gpu`, :func:`try_all_gpus` (fall back to the CPU
  when allocating on a GPU raises ``MXNetError``, as in the book);
* data: :func:`synthetic_data`, :func:`load_array`, :func:`data_iter`,
  :func:`load_data_fashion_mnist`, :func:`get_fashion_mnist_labels`,
  :func:`_get_batch`;
* training: :func:`linreg`, :func:`squared_loss`, :func:`sgd`,
  :func:`accuracy`, :func:`evaluate_accuracy`,
  :func:`evaluate_accuracy_gpu`, :func:`train_ch3`, :func:`train_ch5`,
  :func:`train`, :func:`train_ch6`;
* exercises: ``d2l.check.<chapter>.<name>(solution)`` checks a coding
  exercise (:mod:`d2lmini.check`);
* speed: :func:`images_per_sec`, :func:`median_time`, and the same network in PyTorch,
  :func:`torch_twin` and :func:`torch_steps` (chapter 5);
* networks: :func:`lenet_classic` (chapter 6), the multi-GPU chapter's
  :func:`get_lenet_params` / :func:`lenet` (from raw operators) and
  :func:`lenet_multigpu` (Gluon), :class:`Residual` and :func:`resnet18`.

matplotlib is imported on first use (``d2l.plt`` too), so importing this
module stays cheap.  In a script (no Jupyter kernel) :class:`Animator`
draws on its figure without displaying anything, so it runs headless.
"""
import os
import re
import sys
import time

import numpy as np

from .. import autograd, check, context
from .. import ndarray as nd

__all__ = ['Timer', 'Accumulator', 'Animator', 'Benchmark', 'table', 'Table',
           'use_svg_display',
           'set_figsize', 'set_axes', 'plot', 'semilogy', 'plt', 'try_gpu',
           'try_all_gpus', 'synthetic_data', 'load_array', 'data_iter',
           'get_dataloader_workers', 'load_data_fashion_mnist',
           'get_fashion_mnist_labels', 'show_images', 'show_fashion_mnist',
           'linreg', 'squared_loss', 'sgd', 'size', 'accuracy',
           'evaluate_accuracy', 'evaluate_accuracy_gpu', 'train_ch3',
           'train_ch5', 'train', 'train_ch6', 'lenet_classic',
           'get_lenet_params', 'get_params', 'lenet', 'lenet_multigpu',
           'split_batch', 'Residual', 'resnet18', 'images_per_sec', 'median_time', 'show_trace',
           'torch_twin', 'torch_steps']


def __getattr__(name):          # d2l.plt, d2l.Residual: built on first use
    if name == 'plt':
        from matplotlib import pyplot
        return pyplot
    if name == 'Residual':
        if 'Residual' not in globals():
            globals()['Residual'] = _residual_class()
        return globals()['Residual']
    raise AttributeError(f"module 'd2lmini.d2l' has no attribute {name!r}")


def _plt():
    from matplotlib import pyplot
    return pyplot


def _in_notebook():
    """True inside a Jupyter kernel (where figures can be displayed)."""
    ipython = sys.modules.get('IPython')
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and getattr(shell, 'kernel', None) is not None


# === timing and bookkeeping ====================================================
class Timer:
    """Record multiple running times.

    >>> timer = Timer(); ...; timer.stop()           # seconds since start
    """

    def __init__(self):
        self.times = []
        self.start()

    def start(self):
        """Start the timer."""
        self.tik = time.time()

    def stop(self):
        """Stop the timer and record the time in a list."""
        self.times.append(time.time() - self.tik)
        return self.times[-1]

    def avg(self):
        """Return the average time."""
        return sum(self.times) / len(self.times)

    def sum(self):
        """Return the sum of time."""
        return sum(self.times)

    def cumsum(self):
        """Return the accumulated time."""
        return np.array(self.times).cumsum().tolist()


class Accumulator:
    """For accumulating sums over ``n`` variables.

    >>> metric = Accumulator(2); metric.add(3, 10); metric[0] / metric[1]
    0.3
    """

    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        """Add ``args[i]`` to the ``i``-th sum."""
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self):
        """Set every sum back to 0."""
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


class Benchmark:
    """Time a ``with`` block and print how long it took.

    The classic book's form (``d2lzh``), by position or ``prefix=``::

        with Benchmark('Run on CPU.'): ...      # Run on CPU. time: 0.1234 sec
        with Benchmark(): ...                   # time: 0.1234 sec

    The second edition's form, by keyword ``description=``::

        with Benchmark(description='mlp'): ...  # mlp: 0.1234 sec

    ``quiet=True`` prints nothing; either way the seconds are kept in
    ``.time`` once the block is over::

        with Benchmark(quiet=True) as t: ...
        t.time                                  # 0.1234
    """

    def __init__(self, prefix=None, *, description=None, quiet=False):
        if description is not None:
            self._label = f'{description}: '
        else:
            self._label = f'{prefix} time: ' if prefix else 'time: '
        self.quiet = quiet
        self.time = None

    def __enter__(self):
        self.timer = Timer()
        return self

    def __exit__(self, *args):
        self.time = self.timer.stop()
        if not self.quiet:
            print(f'{self._label}{self.time:.4f} sec')


# === tables ===================================================================
_NUMBER = re.compile(r'[-+]?(\d|\.\d)')     # a cell that starts with a number


class Table:
    """Rows of results, shown as a table: HTML in a notebook and on the
    book's site, aligned plain text elsewhere (``print``, a terminal).

    Made by :func:`table`.  A column whose cells all start with a number
    (``'0.215'``, ``'5,004'``, ``'1.30x'``, ``'82 ms'``) is right-aligned,
    the others left-aligned, unless ``align`` says otherwise.
    """

    def __init__(self, header, rows, align=None):
        self.header = [str(h) for h in header]
        self.rows = [[str(c) for c in row] for row in rows]
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f'table: a row has {len(row)} cells, the '
                                 f'header {len(self.header)}: {row}')
        if align is None:
            align = ''.join(
                'r' if self.rows and all(_NUMBER.match(r[i]) or not r[i]
                                         for r in self.rows) else 'l'
                for i in range(len(self.header)))
        if len(align) != len(self.header) or set(align) - set('lr'):
            raise ValueError(f"table: align={align!r} needs one 'l' or 'r' "
                             f"per column ({len(self.header)})")
        self.align = align

    def __repr__(self):
        cells = [self.header, *self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.header))]

        def line(row):
            return '  '.join(c.rjust(w) if a == 'r' else c.ljust(w)
                             for c, w, a in zip(row, widths, self.align)).rstrip()
        return '\n'.join(line(r) for r in cells)

    def _repr_html_(self):
        import html

        def cells(row, tag):
            return ''.join(
                f'<{tag}' + (' style="text-align: right"' if a == 'r' else '')
                + f'>{html.escape(c)}</{tag}>' for c, a in zip(row, self.align))
        head = f'<thead><tr>{cells(self.header, "th")}</tr></thead>'
        body = ''.join(f'<tr>{cells(r, "td")}</tr>' for r in self.rows)
        return f'<table class="table">{head}<tbody>{body}</tbody></table>'


def table(header, rows, align=None):
    """A table of results for a notebook: ``header`` names the columns,
    each of ``rows`` gives one cell per column (anything; shown with
    ``str``).  Numbers are right-aligned.

    >>> table(['devices', 'images/s'], [('cpu(0)', '4,543'), ('cpu(0)+cpu(1)', '5,889')])
    devices        images/s
    cpu(0)            4,543
    cpu(0)+cpu(1)     5,889
    """
    return Table(header, rows, align)


# === plotting ======================================================================
def use_svg_display():
    """Use the svg format to display a plot in Jupyter."""
    if not _in_notebook():
        return
    try:
        from matplotlib_inline import backend_inline
    except ImportError:                      # older IPython
        from IPython.display import set_matplotlib_formats as fmt
    else:
        fmt = backend_inline.set_matplotlib_formats
    fmt('svg')


def set_figsize(figsize=(3.5, 2.5)):
    """Set the figure size for matplotlib."""
    use_svg_display()
    _plt().rcParams['figure.figsize'] = figsize


def set_axes(axes, xlabel, ylabel, xlim, ylim, xscale, yscale, legend):
    """Set the axes for matplotlib."""
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_xscale(xscale)
    axes.set_yscale(yscale)
    if not (xlim and xlim[0] == xlim[1]):     # one epoch: xlim [1, 1]
        axes.set_xlim(xlim)
    axes.set_ylim(ylim)
    if legend:
        axes.legend(legend)
    axes.grid()


def _host(x):
    return x.asnumpy() if hasattr(x, 'asnumpy') else x


def plot(X, Y=None, xlabel=None, ylabel=None, legend=None, xlim=None, ylim=None,
         xscale='linear', yscale='linear', fmts=('-', 'm--', 'g-.', 'r:'),
         figsize=(3.5, 2.5), axes=None):
    """Plot data points (one curve per row of ``Y``, or ``X`` alone)."""
    if legend is None:
        legend = []
    set_figsize(figsize)
    axes = axes if axes else _plt().gca()

    def has_one_axis(X):             # True if X (array or list) has 1 axis
        return (hasattr(X, 'ndim') and X.ndim == 1 or isinstance(X, list)
                and not hasattr(X[0], '__len__'))

    X, Y = _host(X), _host(Y)
    if has_one_axis(X):
        X = [X]
    if Y is None:
        X, Y = [[]] * len(X), X
    elif has_one_axis(Y):
        Y = [Y]
    if len(X) != len(Y):
        X = X * len(Y)
    axes.cla()
    for x, y, fmt in zip(X, Y, fmts):
        if len(x):
            axes.plot(_host(x), _host(y), fmt)
        else:
            axes.plot(_host(y), fmt)
    set_axes(axes, xlabel, ylabel, xlim, ylim, xscale, yscale, legend)


class Animator:
    """For plotting data in animation: a live plot in Jupyter.

    Each :meth:`add` appends points and redraws; in a notebook the figure
    is shown again in place (``display`` + ``clear_output(wait=True)``) and
    the last state stays in the cell's output.  Elsewhere nothing is shown:
    the figure is ``animator.fig``.

    >>> animator = Animator(xlabel='epoch', legend=['train loss'])
    >>> for epoch in range(3):
    ...     animator.add(epoch + 1, 1.0 / (epoch + 1))
    """

    def __init__(self, xlabel=None, ylabel=None, legend=None, xlim=None, ylim=None,
                 xscale='linear', yscale='linear',
                 fmts=('-', 'm--', 'g-.', 'r:'), nrows=1, ncols=1,
                 figsize=(3.5, 2.5)):
        if legend is None:
            legend = []
        use_svg_display()
        self.fig, self.axes = _plt().subplots(nrows, ncols, figsize=figsize)
        if nrows * ncols == 1:
            self.axes = [self.axes, ]
        self.config_axes = lambda: set_axes(
            self.axes[0], xlabel, ylabel, xlim, ylim, xscale, yscale, legend)
        self.X, self.Y, self.fmts = None, None, fmts

    def add(self, x, y):
        """Add one point per curve: ``y`` a number or a list (None skips)."""
        if not hasattr(y, '__len__'):
            y = [y]
        n = len(y)
        if not hasattr(x, '__len__'):
            x = [x] * n
        if not self.X:
            self.X = [[] for _ in range(n)]
        if not self.Y:
            self.Y = [[] for _ in range(n)]
        for i, (a, b) in enumerate(zip(x, y)):
            if a is not None and b is not None:
                self.X[i].append(a)
                self.Y[i].append(b)
        self.axes[0].cla()
        for x, y, fmt in zip(self.X, self.Y, self.fmts):
            self.axes[0].plot(x, y, fmt)
        self.config_axes()
        if _in_notebook():
            from IPython import display
            display.display(self.fig)
            display.clear_output(wait=True)


def show_trace(trace, outline=True, ax=None):
    """Draw an engine trace (:class:`d2lmini.engine.Trace`): one row per
    device, one bar per operation, the legend beside the plot instead of
    over the bars.  ``outline=True`` draws a thin white line around each
    bar, so that short operations in a row stay apart.  Returns the axes.

    >>> with mx.engine.Trace() as trace:                  # doctest: +SKIP
    ...     nd.dot(a, a)
    >>> d2l.show_trace(trace)                             # doctest: +SKIP
    """
    ax = trace.plot(ax=ax)
    for bars in ax.collections:
        bars.set_edgecolor('white' if outline else 'face')
    legend = ax.get_legend()
    if legend is not None:
        ax.legend(legend.legend_handles, [t.get_text() for t in legend.texts],
                  loc='center left', bbox_to_anchor=(1, 0.5), fontsize='small')
    return ax


def show_images(imgs, num_rows, num_cols, titles=None, scale=1.5):
    """Plot a list of images (NDArrays or arrays; ``(H, W, 1)`` is fine too).

    The classic book's ``show_images(imgs, num_rows, num_cols, scale)``
    passes the scale fourth: a number there is taken as ``scale``.
    """
    if isinstance(titles, (int, float)):
        titles, scale = None, titles
    figsize = (num_cols * scale, num_rows * scale)
    _, axes = _plt().subplots(num_rows, num_cols, figsize=figsize)
    axes = np.asarray(axes).flatten()
    imgs = _host(imgs)
    for i, (ax, img) in enumerate(zip(axes, imgs)):
        img = np.asarray(_host(img))
        if img.ndim == 3 and img.shape[-1] == 1:
            img = img[..., 0]
        ax.imshow(img)
        ax.axes.get_xaxis().set_visible(False)
        ax.axes.get_yaxis().set_visible(False)
        if titles:
            ax.set_title(titles[i])
    return axes


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


# === devices ===========================================================================
def _gpu_works(i):
    """Whether an array can be allocated on ``gpu(i)`` (MXNetError if not)."""
    from ..base import MXNetError
    try:
        nd.zeros((1,), ctx=context.gpu(i)).wait_to_read()
    except MXNetError:
        return False
    return True


def try_gpu(i=0):
    """Return gpu(i) if exists, otherwise return cpu().

    As in the book, it tries to allocate on ``gpu(i)`` and falls back to
    ``cpu()`` when that raises ``MXNetError``.
    """
    return context.gpu(i) if _gpu_works(i) else context.cpu()


def try_all_gpus():
    """Return all available GPUs, or [cpu()] if there is no GPU."""
    devices = []
    for i in range(16):             # the book looks at gpu(0) .. gpu(15)
        if not _gpu_works(i):
            break
        devices.append(context.gpu(i))
    return devices if devices else [context.cpu()]


# === data ================================================================================
def synthetic_data(w, b, num_examples):
    """Generate y = Xw + b + noise."""
    X = nd.random.normal(0, 1, (num_examples, len(w)))
    y = nd.dot(X, w) + b
    y += nd.random.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def load_array(data_arrays, batch_size, is_train=True):
    """Construct a Gluon data iterator."""
    from ..gluon import data as gdata
    dataset = gdata.ArrayDataset(*data_arrays)
    return gdata.DataLoader(dataset, batch_size, shuffle=is_train)


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


def get_dataloader_workers():
    """Use 4 threads to read the data (fewer on a machine with fewer cores)."""
    return 0 if sys.platform.startswith('win') else min(4, os.cpu_count() or 1)


def load_data_fashion_mnist(batch_size, resize=None, root=None,
                            num_parts=1, part_index=0):
    """Download the Fashion-MNIST dataset and then load it into memory.

    Returns ``(train_iter, test_iter)``: DataLoaders of ``(X, y)`` with
    ``X`` float32 ``(batch, 1, 28, 28)`` (or ``resize`` x ``resize``) in
    [0, 1] and ``y`` int32.  ``root`` is a folder to look in first.

    For distributed training each worker passes ``num_parts=kv.num_workers,
    part_index=kv.rank``: its ``train_iter`` then reads only its own
    contiguous part of the training set (``60000 // num_parts`` images, in a
    new order each epoch), so that the workers together see every image
    once per epoch and all run the same number of batches, as ``dist_sync``
    needs.  The last ``60000 % num_parts`` images are left out (none for 2,
    3, 4, 5 or 6 workers).  ``test_iter`` is the whole test set for
    everyone.

    >>> train_iter, test_iter = d2l.load_data_fashion_mnist(
    ...     256, num_parts=kv.num_workers, part_index=kv.rank)
    """
    from ..gluon.data import DataLoader, SplitSampler
    from ..gluon.data.vision import FashionMNIST, transforms
    trans = [transforms.ToTensor()]
    if resize:
        trans.insert(0, transforms.Resize(resize))
    trans = transforms.Compose(trans)
    mnist_train = FashionMNIST(root=root, train=True).transform_first(trans)
    mnist_test = FashionMNIST(root=root, train=False).transform_first(trans)
    if num_parts == 1 and part_index == 0:
        shuffle, sampler = True, None
    else:
        shuffle, sampler = False, SplitSampler(
            len(mnist_train), num_parts, part_index, shuffle=True, even=True)
    return (DataLoader(mnist_train, batch_size, shuffle=shuffle,
                       sampler=sampler, num_workers=get_dataloader_workers()),
            DataLoader(mnist_test, batch_size, shuffle=False,
                       num_workers=get_dataloader_workers()))


def get_fashion_mnist_labels(labels):
    """Return text labels for the Fashion-MNIST dataset."""
    from ..gluon.data.vision.fashion_mnist_files import TEXT_LABELS
    labels = np.asarray(_host(labels)).reshape(-1)
    return [TEXT_LABELS[int(i)] for i in labels]


# === training ============================================================================
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


def evaluate_accuracy(*args, **kwargs):
    """Compute the accuracy for a model on a dataset.

    Both editions' call forms:

    * ``evaluate_accuracy(net, data_iter)`` (second edition);
    * ``evaluate_accuracy(data_iter, net, ctx=[mx.cpu()])`` (the classic
      book): each batch is split over the context(s) in ``ctx``.

    The form is told by which argument is callable: a network is, a data
    iterator (``DataLoader``, list, generator) is not.
    """
    names = ('net', 'data_iter')
    if 'ctx' in kwargs or len(args) > 2:
        classic = True
    elif len(args) == 2:
        classic = not callable(args[0]) and callable(args[1])
    elif args:                          # one positional: is it the net?
        classic = not callable(args[0])
    else:
        classic = False
    if classic:
        names = ('data_iter', 'net', 'ctx')
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in bound or k not in names + ('ctx',):
            raise TypeError(f'evaluate_accuracy() got an unexpected or '
                            f'repeated argument {k!r}')
        bound[k] = v
    missing = [n for n in ('net', 'data_iter') if n not in bound]
    if missing:
        raise TypeError(f'evaluate_accuracy() missing argument(s) {missing}: '
                        f'call it as evaluate_accuracy(net, data_iter) or '
                        f'evaluate_accuracy(data_iter, net, ctx)')
    if classic:
        return _evaluate_accuracy_classic(bound['data_iter'], bound['net'],
                                          bound.get('ctx'))
    metric = Accumulator(2)  # No. of correct predictions, no. of predictions
    for X, y in bound['data_iter']:
        metric.add(accuracy(bound['net'](X), y), y.size)
    return metric[0] / metric[1]


def _evaluate_accuracy_classic(data_iter, net, ctx=None):
    """The classic book's evaluate_accuracy: counts summed on cpu(0).

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


# === speed: images per second, against PyTorch (chapter 5) ========================
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


# === LeNet ===============================================================================
def lenet_classic():
    """LeNet-5 as in chapter 6 (sigmoid activations, average pooling)."""
    from ..gluon import nn
    net = nn.Sequential()
    net.add(nn.Conv2D(channels=6, kernel_size=5, padding=2, activation='sigmoid'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(channels=16, kernel_size=5, activation='sigmoid'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation='sigmoid'),
            nn.Dense(84, activation='sigmoid'),
            nn.Dense(10))
    return net


def get_lenet_params(ctx=None, scale=0.01):
    """The multi-GPU chapter's LeNet parameters on ``ctx``, with gradients.

    ``[W1, b1, W2, b2, W3, b3, W4, b4]``: weights ~ N(0, scale^2), zero
    biases.  For several devices, make them once and copy them with
    :func:`get_params`, so every device starts from the same values.
    """
    ctx = ctx or context.current_context()
    shapes = [(20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,),
              (128, 10), (10,)]
    params = []
    for shape in shapes:
        if len(shape) == 1:
            params.append(nd.zeros(shape, ctx=ctx))
        else:
            params.append(nd.random.normal(0, scale, shape=shape, ctx=ctx))
    for p in params:
        p.attach_grad()
    return params


def get_params(params, device):
    """Copy ``params`` to ``device`` and attach gradients."""
    new_params = [p.copyto(device) for p in params]
    for p in new_params:
        p.attach_grad()
    return new_params


def lenet(X, params):
    """The multi-GPU chapter's LeNet, from raw operators."""
    h1_conv = nd.Convolution(data=X, weight=params[0], bias=params[1],
                             kernel=(3, 3), num_filter=20)
    h1_activation = nd.relu(h1_conv)
    h1 = nd.Pooling(data=h1_activation, pool_type='avg', kernel=(2, 2),
                    stride=(2, 2))
    h2_conv = nd.Convolution(data=h1, weight=params[2], bias=params[3],
                             kernel=(5, 5), num_filter=50)
    h2_activation = nd.relu(h2_conv)
    h2 = nd.Pooling(data=h2_activation, pool_type='avg', kernel=(2, 2),
                    stride=(2, 2))
    h2 = h2.reshape((h2.shape[0], -1))
    h3_linear = nd.dot(h2, params[4]) + params[5]
    h3 = nd.relu(h3_linear)
    y_hat = nd.dot(h3, params[6]) + params[7]
    return y_hat


def lenet_multigpu(hybrid=False):
    """The multi-GPU chapter's LeNet as a Gluon network (same layers);
    ``hybrid=True``: a HybridSequential, which ``hybridize()`` traces whole."""
    from ..gluon import nn
    net = nn.HybridSequential() if hybrid else nn.Sequential()
    net.add(nn.Conv2D(channels=20, kernel_size=3, activation='relu'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(channels=50, kernel_size=5, activation='relu'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(128, activation='relu'),
            nn.Dense(10))
    return net


def split_batch(X, y, devices):
    """Split ``X`` and ``y`` into multiple devices.

    Raises ``ValueError`` if ``X`` and ``y`` hold different numbers of
    examples (or, from ``split_and_load``, if there are fewer examples than
    devices or they do not divide evenly).
    """
    from ..gluon import utils
    if X.shape[0] != y.shape[0]:
        raise ValueError(f'split_batch: X has {X.shape[0]} examples (shape '
                         f'{X.shape}) but y has {y.shape[0]} (shape {y.shape}); '
                         f'pass the features and labels of one minibatch')
    return (utils.split_and_load(X, devices), utils.split_and_load(y, devices))


# === ResNet (classic book) ==============================================================
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


# === chapters 9-14 helpers ======================================================
# What the multi-device and distributed chapters use but do not teach: the
# plots of their timelines and diagrams, and the code that starts a job's
# processes, waits for them and always stops them.
_PASS_COLORS = {'forward': 'tab:orange', 'backward': 'tab:blue',
                'copy': 'tab:red'}


def trace_passes(trace, ctx):
    """``(name, start, end, kind)`` of each operation ``trace`` holds on
    ``ctx``: ``'copy'`` for a copy between devices (``copyto``),
    ``'backward'`` for an operation that autograd's backward pass pushed
    (``trace.spans(ctx, backward=True)``), ``'forward'`` for any other, which
    in a trace of forward and backward passes is the forward pass.

    Examples
    --------
    >>> with mx.engine.Trace() as tr:
    ...     with autograd.record():
    ...         l = net(X).sum()
    ...     l.backward()
    >>> [k for _, _, _, k in d2l.trace_passes(tr, mx.cpu(0))]
    ['forward', 'forward', 'backward', ...]
    """
    return [(name, start, end, 'copy' if name == 'copyto' else
             'backward' if backward else 'forward')
            for _, name, start, end, backward in trace.spans(ctx, backward=True)]


def plot_passes(trace, devices, ax=None, title=None, legend=True):
    """A timeline of an engine trace: one row per device, one bar per
    operation, coloured by :func:`trace_passes` (forward, backward, copy).

    Examples
    --------
    >>> with mx.engine.Trace() as tr:
    ...     forward_backward(net, X, y)
    >>> d2l.plot_passes(tr, [mx.cpu(0), mx.cpu(1)], title='one step')
    """
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.65 * len(devices) + 0.4))
    for row, dev in enumerate(devices):
        bars = {}
        for _, start, end, kind in trace_passes(trace, dev):
            bars.setdefault(kind, []).append((start * 1e3, (end - start) * 1e3))
        for kind, spans in bars.items():
            ax.broken_barh(spans, (row - 0.4, 0.8), color=_PASS_COLORS[kind],
                           label=kind)
    ax.set_yticks(range(len(devices)), [str(d) for d in devices])
    ax.set_xlabel('time (ms)')
    if legend:
        handles = [plt.Rectangle((0, 0), 1, 1, color=c)
                   for c in _PASS_COLORS.values()]
        ax.legend(handles, list(_PASS_COLORS), loc='center left',
                  bbox_to_anchor=(1, 0.5), fontsize='small')
    if title:
        ax.set_title(title, fontsize='medium', loc='left')
    return ax


def draw_cluster(num_workers=4, num_servers=2):
    """The processes of a parameter-server job (chapter 11): workers, which
    push gradients to and pull weights from every server (solid lines), and
    the scheduler, which sees only control messages (dotted).

    Examples
    --------
    >>> fig = d2l.draw_cluster(num_workers=4, num_servers=2)
    """
    fig, ax = _plt().subplots(figsize=(6, 2.6))

    def box(x, y, text, color):
        ax.text(x, y, text, ha='center', va='center', fontsize=8,
                bbox=dict(boxstyle='round', fc=color, ec='gray'))
    xs_w = np.linspace(0.1, 0.9, num_workers)
    xs_s = np.linspace(0.3, 0.7, num_servers)
    for xw in xs_w:
        for xs in xs_s:                           # data: push and pull
            ax.plot([xw, xs], [0.15, 0.55], color='tab:blue', lw=1)
        ax.plot([xw, 0.93], [0.15, 0.9], ':', color='gray', lw=0.8)
    for xs in xs_s:                               # control only
        ax.plot([xs, 0.93], [0.55, 0.9], ':', color='gray', lw=0.8)
    for i, xw in enumerate(xs_w):
        box(xw, 0.15, f'worker {i}\ndata, gradients', '#e8f0fe')
    for j, xs in enumerate(xs_s):
        box(xs, 0.55, f'server {j}\nits keys', '#fde8e8')
    box(0.93, 0.9, 'scheduler', '#eeeeee')
    ax.text(0.05, 0.42, 'push gradients\npull weights', fontsize=8,
            color='tab:blue')
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1)
    ax.axis('off')
    return fig


def draw_ring(history, n):
    """The steps of a ring allreduce on ``n`` ranks, one panel each
    (chapter 13).  ``history`` is a list of ``(phase, moves, holds)``:
    the phase's name, the ``(sender, receiver, chunk)`` messages of the
    step, and, after it, ``holds[rank][chunk]``, the set of ranks whose
    contributions that chunk of that rank holds.  Each rank is a row of
    ``n`` squares, one per chunk, darker and numbered by how many ranks
    it holds; each message an arrow in its chunk's colour.

    Examples
    --------
    >>> _, history = simulate_ring(arrays)     # chapter 13's simulation
    >>> fig = d2l.draw_ring(history, 4)
    """
    plt = _plt()
    colors = plt.cm.tab10(np.arange(n))
    fig, axes = plt.subplots(2, n, figsize=(2.2 * n, 4.6))
    angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
    pos = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    w = 0.26                                     # side of one chunk
    steps = {'reduce-scatter': 0, 'all-gather': 0}
    for ax in axes.flat:
        ax.set_xlim(-1.7, 1.7)
        ax.set_ylim(-1.6, 1.5)
        ax.set_aspect('equal')
        ax.axis('off')
    for ax, (phase, moves, holds) in zip(axes.flat, history):
        if phase in steps:
            steps[phase] += 1
            phase = f'{phase}, step {steps[phase]}'
        ax.set_title(phase, fontsize=9)
        for src, dst, c in moves:
            p, q = pos[src], pos[dst]
            ax.annotate('', xy=p + 0.72 * (q - p), xytext=p + 0.28 * (q - p),
                        arrowprops=dict(arrowstyle='-|>', color=colors[c],
                                        lw=2))
        for r, (x, y) in enumerate(pos):
            for c in range(n):
                k = len(holds[r][c])
                x0 = x - n * w / 2 + c * w
                ax.add_patch(plt.Rectangle((x0, y - w / 2), w, w,
                                           fc=colors[c], ec='black', lw=0.5,
                                           alpha=0.15 + 0.85 * k / n))
                ax.text(x0 + w / 2, y, str(k), ha='center', va='center',
                        fontsize=7, fontweight='bold' if k == n else None)
            ax.text(x, y - w / 2 - 0.05, f'rank {r}', ha='center', va='top',
                    fontsize=8)
    axes[1, n - 1].text(0, 0, 'number in a chunk:\nranks summed in it\n\n'
                        'arrow: a message,\nin the colour of\nits chunk',
                        ha='center', va='center', fontsize=8)
    fig.tight_layout()
    return fig


def plot_collectives(traces, num_steps, step):
    """Horovod timelines (chapter 13): a row of two plots per trace.

    ``traces`` maps a title to ``{rank: events}``, the complete (``'X'``)
    events of each rank's ``HOROVOD_TIMELINE`` file.  On the left the whole
    run, a bar per broadcast (grey) and allreduce (blue), each at least
    1.5 ms wide so that it shows; on the right the allreduces of step
    ``step`` (from 1) of the ``num_steps`` the run took, magnified.

    Examples
    --------
    >>> fig = d2l.plot_collectives({'fused': events}, num_steps=10, step=5)
    """
    def bars(ax, events, cat, zero, color, label=None, least=0.0, **kw):
        for rank, evs in events.items():
            spans = [((e['ts'] - zero) / 1e3, max(e['dur'] / 1e3, least))
                     for e in evs if e['cat'] == cat]
            ax.broken_barh(spans, (rank - 0.35, 0.7), color=color,
                           label=label if rank == 0 else None, **kw)

    fig, axes = _plt().subplots(len(traces), 2, figsize=(9, 1.8 * len(traces)),
                                gridspec_kw={'width_ratios': [2, 1]},
                                squeeze=False)
    for row, (title, events) in zip(axes, traces.items()):
        reduces = {r: [e for e in evs if e['cat'] == 'allreduce']
                   for r, evs in events.items()}
        zero = min(r[0]['ts'] for r in reduces.values())
        bars(row[0], events, 'broadcast', zero, 'tab:gray', 'broadcast', 1.5)
        bars(row[0], events, 'allreduce', zero, 'tab:blue', 'allreduce', 1.5)
        row[0].set_title(f'{title}: {num_steps} steps', fontsize=9)
        per_step = len(reduces[0]) // num_steps     # allreduces per step
        one = {r: evs[(step - 1) * per_step:step * per_step]
               for r, evs in reduces.items()}
        begin = min(e['ts'] for evs in one.values() for e in evs)
        end = max(e['ts'] + e['dur'] for evs in one.values() for e in evs)
        bars(row[1], one, 'allreduce', begin, 'tab:blue', edgecolor='black',
             linewidth=0.5)
        row[1].set_xlim(-0.05 * (end - begin) / 1e3, 1.05 * (end - begin) / 1e3)
        row[1].set_title(f'step {step}: {per_step} allreduce(s)', fontsize=9)
        for ax in row:
            ax.set_yticks(sorted(events))
            ax.set_yticklabels([f'rank {r}' for r in sorted(events)])
    axes[-1, 0].set_xlabel('ms after the first allreduce')
    axes[-1, 1].set_xlabel("ms after the step's first allreduce began")
    axes[0, 0].legend(loc='lower left', bbox_to_anchor=(0, 1.15), ncol=2,
                      fontsize='small')
    fig.tight_layout()
    return fig


def free_port(host='127.0.0.1'):
    """A TCP port nobody listens on right now (the OS picks it)."""
    import socket
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def ps_node_names(num_workers, num_servers):
    """The processes of a parameter-server job, in the order they start.

    >>> d2l.ps_node_names(2, 1)
    ['scheduler', 'server 0', 'worker 0', 'worker 1']
    """
    return (['scheduler'] + [f'server {i}' for i in range(num_servers)]
            + [f'worker {i}' for i in range(num_workers)])


def dmlc_env(name, port, num_workers, num_servers, root_uri='127.0.0.1'):
    """The ``DMLC_*`` variables of the job's process ``name`` (one of
    :func:`ps_node_names`): its role, where the scheduler listens, how many
    servers and workers there are, and its rank within its role.

    >>> d2l.dmlc_env('worker 1', 9000, 2, 1)['DMLC_WORKER_ID']
    '1'
    """
    role, _, rank = name.partition(' ')
    env = {'DMLC_ROLE': role, 'DMLC_PS_ROOT_URI': root_uri,
           'DMLC_PS_ROOT_PORT': str(port),
           'DMLC_NUM_SERVER': str(num_servers),
           'DMLC_NUM_WORKER': str(num_workers)}
    if rank:
        env[f'DMLC_{role.upper()}_ID'] = rank
    return env


def ps_log(log_dir, name):
    """The path of the output of the job's process ``name`` in ``log_dir``."""
    return os.path.join(log_dir, name.replace(' ', '-') + '.log')


def _this_package_first(env):
    # children import this d2lmini, whatever the PYTHONPATH they inherit
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    paths = [os.path.abspath(p) for p in env.get('PYTHONPATH', '').split(
        os.pathsep) if p]
    return os.pathsep.join([root] + [p for p in paths if p != root])


class ps_job:
    """Start a parameter-server job by hand: the scheduler, the servers
    and the workers, each running ``argv`` with its :func:`dmlc_env`, in
    ``cwd`` (default ``log_dir``), in a session of its own, with its output
    in the file ``ps_log(log_dir, name)``.  ``env`` is added to every
    process's environment; with ``hosts`` (objects with ``addr`` and
    ``popen``, such as ``tests/netns.py``'s), process ``i`` runs on
    ``hosts[i]`` and announces its address.  The ``with`` block gets
    ``{name: Popen}``; at its end every process still running is killed by
    its pid, even after an error.  ``started``, a list, gets every process.

    Examples
    --------
    >>> with d2l.ps_job([python, 'hello.py'], 2, 1, log_dir=workdir) as procs:
    ...     codes = d2l.wait_all(procs, timeout=60)
    >>> codes
    {'scheduler': 0, 'server 0': 0, 'worker 0': 0, 'worker 1': 0}
    """

    def __init__(self, argv, num_workers=2, num_servers=1, env=None,
                 hosts=None, log_dir='.', cwd=None, started=None):
        self.argv, self.env, self.hosts = list(argv), env or {}, hosts
        self.num_workers, self.num_servers = num_workers, num_servers
        self.log_dir, self.cwd = log_dir, cwd or log_dir
        self.started = started if started is not None else []
        self.procs = {}

    def __enter__(self):
        import subprocess
        port = free_port()
        root_uri = self.hosts[0].addr if self.hosts else '127.0.0.1'
        try:
            for i, name in enumerate(ps_node_names(self.num_workers,
                                                   self.num_servers)):
                env = dict(os.environ, **self.env, **dmlc_env(
                    name, port, self.num_workers, self.num_servers, root_uri))
                env['PYTHONPATH'] = _this_package_first(env)
                start = subprocess.Popen
                if self.hosts:
                    env['DMLC_NODE_HOST'] = self.hosts[i].addr
                    start = self.hosts[i].popen
                with open(ps_log(self.log_dir, name), 'w') as log:
                    self.procs[name] = start(
                        self.argv, env=env, cwd=self.cwd, stdout=log,
                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        start_new_session=True)
                self.started.append(self.procs[name])
        except BaseException:
            self.__exit__()
            raise
        return self.procs

    def __exit__(self, *exc):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
        for p in self.procs.values():
            p.wait(timeout=10)
        return False


def wait_all(procs, timeout):
    """``{name: exit status}`` of ``procs`` (``{name: Popen}``) after at
    most ``timeout`` seconds in all; None for a process still running.

    >>> d2l.wait_all({'sleeper': subprocess.Popen(['sleep', '9'])}, 0.1)
    {'sleeper': None}
    """
    import subprocess
    deadline = time.monotonic() + timeout
    for p in procs.values():
        try:
            p.wait(timeout=max(0.01, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    return {name: p.poll() for name, p in procs.items()}


def results(text):
    """The JSON values of the lines of ``text`` that start with
    ``RESULT `` (how the chapters' scripts report), sorted by their
    ``'rank'`` when they have one.  Ranks that share one output must write
    each line in one call (``sys.stdout.write(f'RESULT {...}\\n')``):
    ``print('RESULT', ...)`` makes several writes when Python's output is
    unbuffered, and the ranks' pieces interleave.

    >>> d2l.results('noise\\nRESULT {"rank": 1}\\nRESULT {"rank": 0}\\n')
    [{'rank': 0}, {'rank': 1}]
    """
    import json
    found = []
    for line in text.splitlines():
        if line.startswith('RESULT '):
            try:
                found.append(json.loads(line[len('RESULT '):]))
            except ValueError:
                # processes that share an output (the ranks under mpiexec)
                # mix their lines unless each line is a single write
                raise ValueError(
                    f'a RESULT line that is not JSON: {line[:200]!r}; '
                    'write each one with a single sys.stdout.write, '
                    'not print(), so that lines do not mix') from None
    return sorted(found, key=lambda r: r.get('rank', 0)
                  if isinstance(r, dict) else 0)


def mpirun(n, argv, cwd, timeout=60, env=None, check=True, started=None):
    """Run ``mpiexec -n n python *argv`` in ``cwd``; ``(exit status,
    output)``.  ``mpiexec`` runs in a session of its own with its output in
    a file (a full pipe would block the ranks); after ``timeout`` seconds,
    an error or an interrupt, its process group gets ``SIGTERM``, which
    ``mpiexec`` passes on to every rank, and ``SIGKILL`` five seconds
    later if it is still there.  With ``check``, a non-zero status raises
    ``RuntimeError`` with the end of the output.  ``started``, a list,
    gets the ``mpiexec`` process.

    Examples
    --------
    >>> status, out = d2l.mpirun(2, ['hello.py'], cwd=workdir)
    >>> d2l.results(out)                   # each rank's RESULT line
    """
    import shutil
    import signal
    import subprocess
    import tempfile
    python = sys.executable
    mpiexec = (shutil.which('mpiexec', path=os.path.dirname(python))
               or shutil.which('mpiexec'))
    if mpiexec is None:
        raise RuntimeError('mpirun: no mpiexec on the PATH or beside '
                           f'{python}: install MPICH (see the appendix)')
    with tempfile.TemporaryFile('w+') as log:
        proc = subprocess.Popen(
            [mpiexec, '-n', str(n), python, *argv], cwd=cwd,
            env=dict(os.environ, **(env or {})), stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        if started is not None:
            started.append(proc)
        try:
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:          # timed out, or interrupted
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        log.seek(0)
        out = log.read()
    if check and proc.returncode != 0:
        raise RuntimeError(f'mpiexec -n {n} {" ".join(argv)} exited with '
                           f'{proc.returncode}:\n{out[-3000:]}')
    return proc.returncode, out


__all__ += ['trace_passes', 'plot_passes', 'draw_cluster', 'draw_ring',
            'plot_collectives', 'free_port', 'ps_node_names', 'dmlc_env',
            'ps_log', 'ps_job', 'wait_all', 'results', 'mpirun']
