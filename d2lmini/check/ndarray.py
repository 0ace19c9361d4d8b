"""Chapter 1, NDArray: the reduction that undoes broadcasting.

``sum_to(x, shape)`` adds up the NDArray ``x`` (the shape of a broadcast
result) into an array of ``shape`` (one of the broadcast inputs): what
the backward pass of ``a + b`` does to the gradient of the smaller one.
"""
import numpy as np

from .. import context
from .. import ndarray as nd
from . import Case, compare_array, run_cases

# (shape of x, shape to sum to): unchanged, leading axes dropped, axes of
# length 1 kept, both at once, down to a single element
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (1, 3)),
          ((2, 3), (2, 1)), ((2, 3, 4), (3, 1)), ((4, 1, 5), (1, 5)),
          ((2, 3), (1,))]


def _expected(x, shape):
    x = x.asnumpy()
    lead = x.ndim - len(shape)         # axes that broadcasting added in front
    x = x.sum(axis=tuple(range(lead)))
    for axis, n in enumerate(shape):   # axes that broadcasting stretched
        if n == 1:
            x = x.sum(axis=axis, keepdims=True)
    return x


def sum_to(solution):
    """Check ``solution(x, shape)``: ``x`` summed down to ``shape``."""
    rng = np.random.default_rng(0)
    cases = [Case(nd.array(rng.integers(-5, 6, size=xs), dtype='float32',
                           ctx=context.current_context()), shape,
                  names=('x', 'shape'))
             for xs, shape in SHAPES]

    def compare(expected, got, args):
        return compare_array(expected, got, ctx=args[0].context)

    return run_cases(solution, cases, _expected, compare,
                     todo='sum_to(x, shape) returns x summed over the axes '
                          'that broadcasting shape to x.shape adds or '
                          'stretches, with shape `shape`')
