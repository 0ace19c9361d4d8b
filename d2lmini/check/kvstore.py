"""Chapter 9, the KVStore: which device sums which key in a 'device' store.

At the first push, the ``'device'`` store gives every key, largest first
(keys of equal size in key order), to the device with the fewest elements
to sum so far (the first such device on a tie).
``reduce_devices(sizes, num_devices)`` returns the device index of each
key; the package's ``kv.reduce_context`` is the oracle.
"""
from .. import context, kvstore
from .. import ndarray as nd
from . import Case, compare_equal, run_cases

# (sizes of keys 0, 1, ..., number of devices): Exercise 1's keys, one
# key, one device, more devices than keys, ties, a greedy-unfriendly mix
CASES = [([100, 400, 600, 700, 800, 1000], 3), ([7], 2), ([3, 1, 2], 1),
         ([5, 9], 4), ([5, 5, 5, 5], 2), ([10, 1, 1, 1, 1, 1, 1], 2),
         ([3, 3, 2, 2, 2], 2)]


def _expected(sizes, num_devices):
    kv = kvstore.create('device')
    for key, n in enumerate(sizes):
        kv.init(key, nd.zeros((n,), ctx=context.cpu(0)))
    values = [nd.zeros((1,), ctx=context.cpu(i)) for i in range(num_devices)]
    where = [kv.reduce_context(key, values) for key in range(len(sizes))]
    return [ctx.device_id for ctx in where]


def reduce_devices(solution):
    """Check ``solution(sizes, num_devices)``: each key's device index."""
    cases = [Case(list(sizes), k, names=('sizes', 'num_devices'))
             for sizes, k in CASES]

    def compare(expected, got, args):
        got = list(got) if isinstance(got, tuple) else got
        return compare_equal(expected, got)

    return run_cases(solution, cases, _expected, compare,
                     prepare=lambda args: (list(args[0]), args[1]),
                     todo='reduce_devices(sizes, num_devices) returns the '
                          'index of the device that sums each key')
