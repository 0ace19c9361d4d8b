"""The course's helpers: ``from d2lmini import d2l``, as in the book.

A chapter names ``d2l.train_ch6`` or ``d2l.table``; each helper lives in
the module of its concern, and this package gathers them:

* ``d2lmini/d2l/timing.py``: :class:`Timer`, :class:`Accumulator`,
  :class:`Benchmark`; results as tables: :func:`table`;
* ``d2lmini/d2l/plotting.py`` (matplotlib, inline SVG in notebooks):
  :data:`plt`, :func:`use_svg_display`, :func:`set_figsize`,
  :func:`set_axes`, :func:`plot`, :class:`Animator`, :func:`show_images`,
  :func:`show_trace` (an engine trace);
* ``d2lmini/d2l/devices.py``: :func:`try_gpu`, :func:`try_all_gpus` (fall
  back to the CPU when allocating on a GPU raises ``MXNetError``, as in
  the book);
* ``d2lmini/d2l/data.py``: :func:`synthetic_data`, :func:`load_array`,
  :func:`load_data_fashion_mnist`, :func:`get_fashion_mnist_labels`,
  :func:`split_batch`;
* ``d2lmini/d2l/training.py``: :func:`linreg`, :func:`squared_loss`,
  :func:`sgd`, :func:`accuracy`, :func:`evaluate_accuracy`,
  :func:`evaluate_accuracy_gpu`, :func:`train_ch6`;
* ``d2lmini/d2l/speed.py`` (chapter 5): :func:`images_per_sec`,
  :func:`median_time`, and the same network in PyTorch,
  :func:`torch_twin` and :func:`torch_steps`;
* ``d2lmini/d2l/models.py``: :func:`lenet_classic`, the multi-device
  chapters' :func:`get_lenet_params` / :func:`lenet` (from raw operators)
  and :func:`lenet_multigpu` (Gluon); :func:`num_parameters` (chapter
  11), a network's size from its graph;
* ``d2lmini/d2l/figures.py`` and ``d2lmini/d2l/jobs.py`` (chapters 9-14):
  the figures those chapters draw, and the processes of a distributed job
  started, waited for and always stopped;
* exercises: ``d2l.check.<chapter>.<name>(solution)`` checks a coding
  exercise (:mod:`d2lmini.check`).

The first edition's helpers (``import d2lzh as d2l``, the classic book)
are in ``d2lmini/d2l/classic.py``, a namespace of their own.  Where the
two editions give a name two meanings, ``d2l.X`` is the course's: e.g.
``d2l.evaluate_accuracy(net, data_iter)`` here and
``classic.evaluate_accuracy(data_iter, net, ctx)`` there.  The first
edition's names that mean one thing (``train_ch3``, ``train_ch5``,
``train``, ``data_iter``, ``Residual``, ``resnet18``, ``semilogy``,
``show_fashion_mnist``) are reachable here too, so that older code keeps
running.

matplotlib is imported on first use (``d2l.plt`` too), and
``d2l.Residual`` is made on first use, so importing this package stays
cheap.
"""
from .. import check
from . import classic
from .data import (get_dataloader_workers, get_fashion_mnist_labels,
                   load_array, load_data_fashion_mnist, split_batch,
                   synthetic_data)
from .devices import try_all_gpus, try_gpu
from .figures import (draw_cluster, draw_ring, plot_collectives, plot_passes,
                      trace_passes)
from .jobs import (dmlc_env, free_port, mpirun, ps_job, ps_log, ps_node_names,
                   results, wait_all)
from .models import (get_lenet_params, get_params, lenet, lenet_classic,
                     lenet_multigpu, num_parameters)
from .plotting import (Animator, plot, set_axes, set_figsize, show_images,
                       show_trace, use_svg_display)
from .speed import images_per_sec, median_time, torch_steps, torch_twin
from .timing import Accumulator, Benchmark, Table, Timer, table
from .training import (accuracy, evaluate_accuracy, evaluate_accuracy_gpu,
                       linreg, sgd, size, squared_loss, train_ch6)
# the first edition's names that mean one thing (older code says d2l.X)
from .classic import (data_iter, resnet18, semilogy, show_fashion_mnist, train,
                      train_ch3, train_ch5)

__all__ = ['Timer', 'Accumulator', 'Animator', 'Benchmark', 'table', 'Table',
           'use_svg_display', 'set_figsize', 'set_axes', 'plot', 'plt',
           'try_gpu', 'try_all_gpus', 'synthetic_data', 'load_array',
           'get_dataloader_workers', 'load_data_fashion_mnist',
           'get_fashion_mnist_labels', 'show_images', 'linreg',
           'squared_loss', 'sgd', 'size', 'accuracy', 'evaluate_accuracy',
           'evaluate_accuracy_gpu', 'train_ch6', 'lenet_classic',
           'get_lenet_params', 'get_params', 'lenet', 'lenet_multigpu',
           'num_parameters', 'split_batch', 'images_per_sec', 'median_time',
           'show_trace',
           'torch_twin', 'torch_steps', 'trace_passes', 'plot_passes',
           'draw_cluster', 'draw_ring', 'plot_collectives', 'free_port',
           'ps_node_names', 'dmlc_env', 'ps_log', 'ps_job', 'wait_all',
           'results', 'mpirun']


def __getattr__(name):          # d2l.plt, d2l.Residual: made on first use
    if name == 'plt':
        from matplotlib import pyplot
        return pyplot
    if name == 'Residual':
        return classic.Residual
    raise AttributeError(f"module 'd2lmini.d2l' has no attribute {name!r}")
