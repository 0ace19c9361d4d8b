"""Model parallelism and pipelines: one network, its stages on several devices.

Data parallelism keeps a whole copy of the model on every device and splits
the batch.  *Model parallelism* splits the model instead: stage ``s`` of the
network lives on device ``s``, and the activations travel from one device
to the next with ``as_in_context``.  Autograd records every copy, and the
gradient of a copy is a copy back (``_copyto``'s backward), so one
``backward()`` sends the gradients through the same devices in reverse.

Alone, that keeps one device busy at a time.  GPipe (Huang et al., 2019)
splits the batch into ``m`` micro-batches: while stage 1 works on
micro-batch ``i``, stage 0 already works on micro-batch ``i + 1``.  On
d2lmini's engine nothing more is needed than pushing the micro-batches one
after the other: each device's stream runs its own queue, and a copy waits
only for the activation it reads.  With ``S`` stages of equal cost each
device idles for the fraction

    bubble = (S - 1) / (m + S - 1)

of a step, while the pipeline fills and drains; :func:`idle_fractions`
measures it from an engine :class:`~d2lmini.engine.Trace`.

The micro-batches' outputs are joined into the whole batch's output before
the loss, so a pipelined step computes the gradient of the same loss as a
plain one, whatever ``m`` (up to float rounding; BatchNorm would see
per-micro-batch statistics, as in GPipe).  A :class:`gluon.Trainer` needs
all its Parameters on the same devices (MXNet's rule), so
:meth:`Pipeline.trainer` makes one per stage.

Examples
--------
>>> stages = [nn.Dense(64, activation='relu'), nn.Dense(10)]
>>> net = Pipeline(stages, [mx.cpu(0), mx.cpu(1)], num_micro=4)
>>> net.initialize()
>>> trainer = net.trainer('sgd', {'learning_rate': 0.1})
>>> l = pipeline_step(net, X, y, gluon.loss.SoftmaxCrossEntropyLoss(),
...                   trainer)                              # doctest: +SKIP
"""
import copy
import numbers

from . import autograd
from . import initializer
from . import ndarray as nd
from .context import Context
from .gluon.block import Block
from .ndarray import NDArray

__all__ = ['Pipeline', 'StageTrainers', 'pipeline_step', 'micro_batches',
           'predicted_bubble', 'idle_fractions', 'bubble']


def micro_batches(batch_size, num_micro):
    """``[(start, stop), ...]``: ``num_micro`` slices of a batch, in order.

    Sizes differ by at most one (the first ``batch_size % num_micro`` slices
    get one more sample), as ``split_data(..., even_split=False)`` does.

    >>> micro_batches(10, 4)
    [(0, 3), (3, 6), (6, 8), (8, 10)]
    """
    _check_num_micro(num_micro)
    if num_micro > batch_size:
        raise ValueError(f'cannot split a batch of {batch_size} samples into '
                         f'{num_micro} micro-batches: each needs at least one '
                         f'sample; use num_micro <= {batch_size}')
    each, extra = divmod(batch_size, num_micro)
    bounds, start = [], 0
    for i in range(num_micro):
        stop = start + each + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def _check_num_micro(num_micro):
    if isinstance(num_micro, bool) or not isinstance(num_micro, numbers.Integral):
        raise TypeError(f'num_micro must be an int (the number of micro-batches), '
                        f'got {num_micro!r}')
    if num_micro < 1:
        raise ValueError(f'num_micro must be at least 1, got {num_micro}')


class Pipeline(Block):
    """A network run as ``stages[0]`` on ``devices[0]``, then ``stages[1]`` ...

    Each stage is a Block whose Parameters live on its device; its input is
    copied there with ``as_in_context``.  With ``num_micro > 1`` the batch is
    cut into micro-batches that flow through the stages one after the other,
    so the devices work at the same time (GPipe); the output is the whole
    batch's, on the last device.

    Parameters
    ----------
    stages : list of Block
        The network, in order; each takes one NDArray and returns one.
    devices : list of Context
        ``devices[s]`` runs ``stages[s]`` (a device may appear twice).
    num_micro : int
        Micro-batches per batch (1: plain model parallelism).

    Stages whose Parameters are already initialized are moved to their
    device (``collect_params().reset_ctx``); the others are initialized
    there by :meth:`initialize`.
    """

    def __init__(self, stages, devices, num_micro=1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(stages, Block) or isinstance(devices, Context):
            raise TypeError('Pipeline takes a list of stages and a list of devices, '
                            'e.g. Pipeline([stage0, stage1], [mx.cpu(0), mx.cpu(1)])')
        stages, devices = list(stages), list(devices)
        if not stages or not devices:
            raise ValueError(f'Pipeline needs at least one stage and one device, got '
                             f'{len(stages)} stage(s) and {len(devices)} device(s)')
        if len(stages) != len(devices):
            raise ValueError(f'Pipeline needs one device per stage, got '
                             f'{len(stages)} stages and {len(devices)} devices '
                             f'({", ".join(map(str, devices))})')
        for i, s in enumerate(stages):
            if not isinstance(s, Block):
                raise TypeError(f'stage {i} must be a Block, got {type(s).__name__}')
        for i, d in enumerate(devices):
            if not isinstance(d, Context):
                raise TypeError(f'device {i} must be a Context such as mx.cpu({i}), '
                                f'got {d!r}')
        _check_num_micro(num_micro)
        for i, s in enumerate(stages):
            self.register_child(s, str(i))
        d = self.__dict__
        d['_stages'], d['_devices'], d['num_micro'] = stages, devices, num_micro
        for s, dev in zip(stages, devices):
            params = [p for p in s.collect_params().values() if _placed(p)]
            for p in params:
                if p.list_ctx() != [dev]:
                    p.reset_ctx(dev)

    @property
    def stages(self):
        return list(self._stages)

    @property
    def devices(self):
        return list(self._devices)

    def __setattr__(self, name, value):
        if name == 'num_micro':
            _check_num_micro(value)
        super().__setattr__(name, value)

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialize each stage's Parameters on its own device."""
        if ctx is not None:
            raise ValueError('a Pipeline places each stage on its own device (given '
                             'when it was made); call initialize() without ctx')
        for s, dev in zip(self._stages, self._devices):
            s.initialize(init, ctx=dev, verbose=verbose, force_reinit=force_reinit)

    def reset_ctx(self, ctx):
        raise ValueError('a Pipeline keeps stage s on devices[s]; to move one '
                         'stage use pipeline.stages[s].collect_params().reset_ctx')

    def forward(self, x):
        if not isinstance(x, NDArray):
            raise TypeError(f'Pipeline takes one NDArray (the batch), got '
                            f'{type(x).__name__}')
        if x.ndim == 0:
            raise ValueError('Pipeline needs a batch: an array with a batch axis 0, '
                             'got a scalar array')
        bounds = micro_batches(x.shape[0], self.num_micro)
        outs = []
        # Micro-batch by micro-batch: the front end only pushes operations,
        # so stage 0 of micro-batch i+1 is queued on device 0 while device 1
        # still runs stage 1 of micro-batch i.  Pushing stage by stage
        # instead would queue the same work per device, in the same order.
        for start, stop in bounds:
            h = x if len(bounds) == 1 else x[start:stop]
            for i, (stage, dev) in enumerate(zip(self._stages, self._devices)):
                h = stage(h.as_in_context(dev))
                if not isinstance(h, NDArray):
                    raise TypeError(f'stage {i} ({type(stage).__name__}) returned '
                                    f'{type(h).__name__}; a Pipeline stage must '
                                    f'return one NDArray')
            outs.append(h)
        return outs[0] if len(outs) == 1 else nd.concat(*outs, dim=0)

    def trainer(self, optimizer, optimizer_params=None, **kwargs):
        """One :class:`gluon.Trainer` per stage, stepped together."""
        return StageTrainers(self._stages, optimizer, optimizer_params, **kwargs)

    def __repr__(self):
        rows = '\n'.join(f'  ({i}) on {d}: {_indent(repr(s))}'
                         for i, (s, d) in enumerate(zip(self._stages, self._devices)))
        return f'Pipeline(num_micro={self.num_micro}\n{rows}\n)'


def _indent(s):
    return s.replace('\n', '\n  ')


def _placed(p):
    """Whether Parameter ``p`` has data or a deferred place (not bare)."""
    try:
        p.list_ctx()
    except RuntimeError:
        return False
    return True


class StageTrainers:
    """A :class:`gluon.Trainer` for each stage's Parameters, stepped together.

    A Trainer wants all its Parameters on the same devices (MXNet's rule),
    and a model-parallel network has each stage on another.  An Optimizer
    instance is copied for every stage after the first.
    """

    def __init__(self, stages, optimizer, optimizer_params=None, **kwargs):
        from .gluon.trainer import Trainer
        self.trainers = []
        for i, s in enumerate(stages):
            params = s.collect_params()
            if not len(params):
                continue                         # e.g. a stage of activations only
            opt = optimizer if i == 0 or isinstance(optimizer, str) else \
                copy.deepcopy(optimizer)
            self.trainers.append(Trainer(params, opt, optimizer_params, **kwargs))

    def step(self, batch_size, ignore_stale_grad=False):
        for t in self.trainers:
            t.step(batch_size, ignore_stale_grad)

    @property
    def learning_rate(self):
        return self.trainers[0].learning_rate

    def set_learning_rate(self, lr):
        for t in self.trainers:
            t.set_learning_rate(lr)


def pipeline_step(net, X, y, loss, trainer=None, batch_size=None):
    """Forward, backward and (with ``trainer``) one update; returns the losses.

    ``net`` is a :class:`Pipeline` (or any Block); the loss is computed on
    the device of the output and returned there, one value per sample.
    ``trainer.step`` gets ``batch_size`` (default: ``X.shape[0]``).
    """
    with autograd.record():
        out = net(X)
        lv = loss(out, y.as_in_context(out.context))
    lv.backward()
    if trainer is not None:
        trainer.step(X.shape[0] if batch_size is None else batch_size)
    return lv


# --- the bubble, measured and predicted ----------------------------------------------
def predicted_bubble(num_stages, num_micro):
    """GPipe's idle fraction ``(S - 1) / (m + S - 1)`` for equal stages."""
    return (num_stages - 1) / (num_micro + num_stages - 1)


def idle_fractions(trace, devices=None):
    """``{device: fraction of the traced step it ran no operation}``.

    The step is the time from the first operation's start to the last one's
    end on any of ``devices`` (default: every device in ``trace``).  Waiting
    for another device's data is idle time: the engine's trace starts an
    operation's span after its cross-device dependencies are met.
    """
    devices = trace.contexts() if devices is None else list(devices)
    spans = [s for s in trace.spans() if s[0] in devices]
    if not spans:
        raise ValueError(f'the trace holds no operations on {devices}; record '
                         f'the step inside "with mx.engine.Trace() as trace:"')
    window = max(s[3] for s in spans) - min(s[2] for s in spans)
    if window <= 0:
        return {d: 0.0 for d in devices}
    return {d: 1.0 - trace.busy(d) / window for d in devices}


def bubble(trace, devices=None):
    """The mean of :func:`idle_fractions` over ``devices``."""
    idle = idle_fractions(trace, devices)
    return sum(idle.values()) / len(idle)
