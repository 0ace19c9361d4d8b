"""Chapter 2, automatic differentiation: a custom ``autograd.Function``.

The straight-through estimator: rounding in the forward pass, and in the
backward pass the gradient passed through unchanged, as if rounding were
the identity.
"""
import numpy as np

from .. import autograd as ag
from .. import context
from .. import ndarray as nd
from . import Case, compare_array, run_cases

# no value ends in .5, where rounding conventions differ
INPUTS = [[0.4], [-1.7, -0.2, 0.4, 1.2, 2.9],
          [[3.1, -2.6, 0.0], [0.7, -0.4, 9.8]]]


def straight_through_round(solution):
    """Check ``solution``, a subclass of ``autograd.Function``."""
    rng = np.random.default_rng(0)
    ctx = context.current_context()
    cases = []
    for values in INPUTS:
        x = np.array(values, dtype='float32')
        head = rng.integers(1, 5, size=x.shape).astype('float32')
        cases.append(Case(nd.array(x, ctx=ctx), nd.array(head, ctx=ctx),
                          names=('x', 'head gradient')))

    def run(x, head):                  # the learner's Function, recorded
        x = x.copy()
        x.attach_grad()
        with ag.record():
            y = solution()(x)
        y.backward(head)
        return y, x.grad

    def expected(x, head):
        return np.round(x.asnumpy()), head.asnumpy()

    def compare(expected, got, args):
        (y, grad), (want_y, want_grad) = got, expected
        ctx = args[0].context
        return (compare_array(want_y, y, ctx, what='forward (rounded x)')
                or compare_array(want_grad, grad, ctx,
                                 what='x.grad (the head gradient, '
                                      'passed straight through)'))

    return run_cases(run, cases, expected, compare,
                     todo='forward returns x rounded, backward returns '
                          'the gradient dy unchanged')
