"""Chapter 8, concise multi-device training: splitting an uneven batch.

``split_and_load(data, ctx_list)`` cuts ``data`` along its first axis into
one slice per device, as ``gluon.utils.split_and_load(...,
even_split=False)`` does when the batch does not divide: the first
``len(data) % len(ctx_list)`` slices get one example more.  Each slice
goes to its device.  The package's function is the oracle.
"""
import numpy as np

from .. import context
from .. import ndarray as nd
from ..gluon import utils
from . import Case, compare_array, run_cases

# (batch size, devices, example shape): even, uneven, 1 device, an
# example per device, more devices than the remainder
CASES = [(6, 2, (4,)), (7, 3, (4,)), (5, 4, ()), (3, 1, (2, 2)),
         (3, 3, (2,)), (10, 4, (3,))]


def split_and_load(solution):
    """Check ``solution(data, ctx_list)``: a list of slices, one a device."""
    cases = []
    for n, k, shape in CASES:
        data = nd.array(np.arange(n * int(np.prod(shape))).reshape(n, *shape),
                        ctx=context.current_context())
        cases.append(Case(data, [context.cpu(i) for i in range(k)],
                          names=('data', 'ctx_list')))

    def expected(data, ctx_list):
        return [(s.asnumpy(), s.context) for s in
                utils.split_and_load(data, ctx_list, even_split=False)]

    def compare(expected, got, args):
        if not isinstance(got, (list, tuple)):
            return f'expected a list of NDArrays, got {type(got).__name__}'
        if len(got) != len(expected):
            return (f'expected {len(expected)} slices (one per device), '
                    f'got {len(got)}')
        for i, ((values, ctx), slice_) in enumerate(zip(expected, got)):
            problem = compare_array(values, slice_, ctx, what=f'slice {i}')
            if problem:
                return problem
        return None

    return run_cases(solution, cases, expected, compare,
                     todo='split_and_load(data, ctx_list) returns one slice '
                          'of data per device, on that device')
