"""Chapter 5, LeNet: the shape a convolution gives.

``conv2d_output_shape(data_shape, num_filter, kernel, stride, pad)`` is
the shape of ``nd.Convolution`` on NCHW data of ``data_shape``; the
package's operator is the oracle.
"""
from .. import context
from .. import ndarray as nd
from . import Case, compare_equal, run_cases

# LeNet's two convolutions, then strides, padding, non-square kernels, a
# stride that does not divide, a kernel as large as the input
CASES = [((1, 1, 28, 28), 6, (5, 5), (1, 1), (2, 2)),
         ((1, 6, 14, 14), 16, (5, 5), (1, 1), (0, 0)),
         ((2, 3, 9, 9), 4, (3, 3), (2, 2), (1, 1)),
         ((1, 2, 7, 10), 3, (3, 5), (2, 3), (0, 1)),
         ((1, 1, 8, 8), 2, (3, 3), (3, 3), (0, 0)),
         ((4, 1, 5, 5), 1, (5, 5), (1, 1), (0, 0))]


def _expected(data_shape, num_filter, kernel, stride, pad):
    ctx = context.current_context()
    data = nd.zeros(data_shape, ctx=ctx)
    weight = nd.zeros((num_filter, data_shape[1], *kernel), ctx=ctx)
    return nd.Convolution(data, weight, no_bias=True, kernel=kernel,
                          num_filter=num_filter, stride=stride,
                          pad=pad).shape


def conv2d_output_shape(solution):
    """Check ``solution(data_shape, num_filter, kernel, stride, pad)``."""
    cases = [Case(*c, names=('data_shape', 'num_filter', 'kernel', 'stride',
                             'pad')) for c in CASES]

    def compare(expected, got, args):   # a list is as good as a tuple
        return compare_equal(expected,
                             tuple(got) if isinstance(got, list) else got)

    return run_cases(solution, cases, _expected, compare,
                     todo='conv2d_output_shape(data_shape, num_filter, '
                          'kernel, stride, pad) returns the output shape '
                          '(batch, channels, height, width)')
