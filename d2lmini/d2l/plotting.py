"""Plotting for the chapters: matplotlib, shown inline as SVG in a notebook.

:func:`use_svg_display`, :func:`set_figsize`, :func:`set_axes` and
:func:`plot` (curves), :class:`Animator` (a live plot that a training loop
adds points to), :func:`show_images` (a grid of images) and
:func:`show_trace` (an engine trace).

matplotlib is imported on first use (``d2l.plt`` too), so importing the
helpers stays cheap.  In a script (no Jupyter kernel) :class:`Animator`
draws on its figure without displaying anything, so it runs headless.
"""
import sys

import numpy as np


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

    The first edition's ``show_images(imgs, num_rows, num_cols, scale)``,
    with the scale fourth, is :func:`d2lmini.d2l.classic.show_images`.
    """
    if isinstance(titles, (int, float)):
        raise TypeError(f'show_images: titles={titles!r} is a number; pass '
                        'scale= by name (the first edition passes the scale '
                        'fourth: that is d2lmini.d2l.classic.show_images)')
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
