"""Chapter 6, automatic parallelism: when does each operation finish?

A program is a list of operations ``(name, device, duration, inputs)`` in
the order they were pushed.  As in d2lmini's engine, each device runs its
operations one at a time in that order, and an operation starts once the
previous one on its device has finished and so have all its inputs
(which may be on other devices).  ``finish_times(ops)`` returns
``{name: finish time}``, starting at time 0.
"""
from . import Case, compare_equal, run_cases

CASES = [
    [('a', 'cpu(0)', 3, [])],
    # one device runs in order, even what does not depend on each other
    [('a', 'cpu(0)', 2, []), ('b', 'cpu(0)', 3, [])],
    # two devices: independent work overlaps
    [('a', 'cpu(0)', 2, []), ('b', 'cpu(1)', 3, [])],
    # the diamond of Exercise 2
    [('a', 'cpu(0)', 1, []), ('b', 'cpu(0)', 4, ['a']),
     ('c', 'cpu(1)', 2, ['a']), ('d', 'cpu(1)', 1, ['b', 'c'])],
    # products on cpu(0), each copied to cpu(1) while the next is computed
    [('y0', 'cpu(0)', 2, []), ('copy0', 'cpu(1)', 1, ['y0']),
     ('y1', 'cpu(0)', 2, []), ('copy1', 'cpu(1)', 1, ['y1'])],
    # c needs nothing, but cpu(1) reaches it only after b, which waits
    [('a', 'cpu(0)', 5, []), ('b', 'cpu(1)', 1, ['a']),
     ('c', 'cpu(1)', 1, [])],
]


def _simulate(ops):
    free, finish = {}, {}              # device: when it is free; op: end
    for name, device, duration, inputs in ops:
        start = max([free.get(device, 0)] + [finish[i] for i in inputs])
        finish[name] = free[device] = start + duration
    return finish


def finish_times(solution):
    """Check ``solution(ops)``: {name: the time the operation finishes}."""
    cases = [Case([tuple(op) for op in ops], names=('ops',)) for ops in CASES]

    def compare(expected, got, args):
        if not isinstance(got, dict):
            return f'expected a dict {{name: finish time}}, got {got!r}'
        for name, t in expected.items():
            if got.get(name) != t:
                return (f'operation {name!r}: expected it to finish at {t}, '
                        f'got {got.get(name)!r}; all expected: {expected}')
        return compare_equal(expected, got)

    return run_cases(solution, cases, _simulate, compare,
                     prepare=lambda args: ([tuple(op) for op in args[0]],),
                     todo='finish_times(ops) returns {name: finish time}')
