"""Chapter 7, multiple devices from scratch: an allreduce with a root.

``allreduce(data, root)`` sums the arrays of ``data`` (one per device) on
the device of ``data[root]`` and writes the sum into every array of
``data``, in place, so each device holds the result on its own context.
Exercise 2 uses it to spread the sums of the parameters over the devices.
"""
import numpy as np

from .. import context, engine
from .. import ndarray as nd
from . import Case, compare_array, run_cases

# (number of devices, shape, root): one device; the first, the last and a
# middle device as the root
CASES = [(1, (3,), 0), (2, (1, 2), 0), (2, (1, 2), 1), (3, (2, 3), 2),
         (3, (2, 2, 2), 1), (4, (5,), 3)]


def _data(k, shape):
    return [nd.array(np.arange(np.prod(shape)).reshape(shape) * 10 ** i,
                     dtype='float32', ctx=context.cpu(i)) for i in range(k)]


def _sums(op):                 # operations that add: 'add', 'add_n', ...
    return any(word in op for word in ('add', 'plus', 'sum'))


def allreduce(solution):
    """Check ``solution(data, root)``: the sum in every array, in place."""
    cases = [Case(_data(k, shape), root, names=('data', 'root'))
             for k, shape, root in CASES]

    def run(data, root):
        arrays = list(data)            # the caller's arrays
        with engine.Trace() as trace:
            solution(data, root)
        return arrays, data, trace.spans()

    def expected(data, root):
        return sum(a.asnumpy() for a in data)

    def compare(total, got, args):
        arrays, data, spans = got
        root_ctx = arrays[args[1]].context
        for i, (a, b) in enumerate(zip(arrays, data)):
            if a is not b:
                return (f'data[{i}] was replaced by a new array; write the '
                        f'sum into it (data[{i}][:] = ...) so that whoever '
                        f'holds it sees the sum')
        for i, a in enumerate(arrays):
            problem = compare_array(total, a, what=f'data[{i}] on {a.context}')
            if problem:
                return problem
        away = sorted({f'{op} on {ctx}' for ctx, op, *_ in spans
                       if _sums(op) and ctx != root_ctx})
        if away:
            return (f'the sum must run on data[root]\'s device {root_ctx}, '
                    f'but these ran elsewhere: {", ".join(away)}')
        return None

    def prepare(args):                 # fresh arrays for every call
        data, root = args
        return [a.copy() for a in data], root

    return run_cases(run, cases, expected, compare, prepare=prepare,
                     todo='allreduce(data, root) sums data on the device of '
                          'data[root] and writes the sum into every array')
