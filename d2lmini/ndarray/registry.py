"""The op table: one :class:`Op` per operator, forward and backward side by side.

``forward`` works on raw backend arrays (NumPy or CuPy); ``backward`` works on
NDArrays, so the gradient itself runs through the engine and can be recorded
again (that is all higher-order gradients need).  ``infer`` computes the
output's shape and dtype on the front end, before anything runs: the engine
returns an array at once, and bad shapes fail at the line that caused them.

Every op carries ``cases``: small inputs on which a test checks its gradient
against central differences, so an op without a check fails CI.
"""
import functools

import numpy as np

OPS = {}


class Case:
    """Inputs for an op's gradient check: shapes (or arrays) and attributes.

    ``low``/``high`` bound the random inputs (e.g. ``low=0.1`` for log);
    ``grad`` lists which inputs to check (default: all float inputs).
    """

    def __init__(self, *shapes, low=-1.0, high=1.0, grad=None, inputs=None,
                 **attrs):
        self.shapes, self.low, self.high = shapes, low, high
        self.grad, self.inputs, self.attrs = grad, inputs, attrs

    def make(self, rng):
        """The inputs, as float64 NumPy arrays drawn from ``rng``."""
        if self.inputs is not None:
            return [np.array(x, dtype=np.float64) if not callable(x) else x(rng)
                    for x in self.inputs]
        return [rng.uniform(self.low, self.high, s) for s in self.shapes]

    def __repr__(self):
        return f'Case{self.shapes}{self.attrs}'


class Op:
    """Base class: subclasses define ``forward``, ``backward`` and ``infer``.

    A subclass is named after its operator and ends in ``Op``
    (``ConvolutionOp``), never sharing a name with the front end
    (``nd.Convolution``) that calls it through the table.
    """
    name = None
    nout = 1
    differentiable = True
    # A loss head's backward is the gradient of a loss, not of its output
    # (SoftmaxOutput): tested against its formula, not central differences.
    loss_head = False
    # The last outputs may be the op's own (RNN's reserve for its backward
    # pass): no results, no gradient; the gradient check leaves them out.
    internal_outputs = 0
    cases = ()

    def infer(self, shapes, dtypes, **attrs):     # pragma: no cover - abstract
        """The output's ``(shape, dtype)`` (a list of them if ``nout > 1``)
        from the inputs' shapes and dtypes; raises on shapes that do not fit."""
        raise NotImplementedError

    def forward(self, *arrays, **attrs):           # pragma: no cover - abstract
        """The output(s), computed on raw NumPy or CuPy arrays."""
        raise NotImplementedError

    def backward(self, ograd, inputs, output, **attrs):
        """The gradients of the inputs (None for one that has none), from the
        output's gradient ``ograd``, in NDArray operations."""
        raise NotImplementedError(f"operator '{self.name}' has no gradient")

    def __repr__(self):
        return f'<Op {self.name}>'


def register(cls):
    """Class decorator: instantiate the op and put it in the table."""
    op = cls()
    if op.name in OPS:
        raise ValueError(f'operator {op.name!r} registered twice')
    OPS[op.name] = op
    return op


# --- shape helpers shared by many ops --------------------------------------
def broadcast_shapes(name, a, b):
    """The shape that ``a`` and ``b`` broadcast to; an error naming ``name``
    if they cannot."""
    if a == b:
        return a
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        raise ValueError(f"operator '{name}': shapes {a} and {b} cannot be "
                         f"broadcast together") from None


@functools.lru_cache(maxsize=4096)
def result_dtype(a, b):
    """The dtype NumPy gives an operation on dtypes ``a`` and ``b`` (cached)."""
    return np.result_type(a, b)


def norm_axis(name, axis, ndim):
    """Normalize ``axis`` (None, int or tuple) to a sorted tuple of ints."""
    if axis is None or axis == ():
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    out = []
    for ax in axis:
        if not -max(ndim, 1) <= ax < max(ndim, 1):   # a 0-d array takes 0 or -1
            raise ValueError(f"operator '{name}': axis {ax} out of range for an "
                             f"array with {ndim} dimensions")
        out.append(ax % max(ndim, 1))
    return tuple(sorted(set(out)))
