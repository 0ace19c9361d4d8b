"""Chapter 15, deploying a model: the batches a dynamic batcher forms.

``form_batches(arrivals, max_batch_size, max_delay, service_time)``
replays the rule of ``d2lmini/serve/batcher.py`` for one worker and
requests of one example each.  ``arrivals`` are the requests' arrival
times in milliseconds, in order.  The worker is free at time 0, and a
batch keeps it busy for ``service_time`` ms, whatever its size.  A batch
leaves when the worker is free *and* either ``max_batch_size`` requests
are waiting or the oldest waiting request has waited ``max_delay`` ms,
whichever comes first; it takes the oldest waiting requests, at most
``max_batch_size`` (a request arriving at that very moment counts as
waiting).  The answer: one ``(leave_time, [request indices])`` per batch,
in order.  The oracle is a small simulation of that rule.
"""
from . import Case, show, run_cases

NAMES = ('arrivals', 'max_batch_size', 'max_delay', 'service_time')
CASES = [
    ([0, 1, 2, 3, 4], 4, 10, 5),        # full at 3 ms; the last one alone
    ([0, 50], 4, 10, 1),                # a lone request waits the delay
    ([0, 10], 4, 10, 1),                # arriving as the batch leaves: in it
    ([0, 1, 2, 3, 10], 8, 0, 5),        # no delay: batches form while busy
    ([0, 0, 0], 1, 5, 2),               # batches of one queue for the worker
    ([0, 1, 2, 3, 4, 5, 6], 3, 2, 10),  # the worker is the bottleneck
    ([5, 6, 30, 31, 32, 33, 34, 60], 3, 4, 2),
    ([], 4, 5, 1),
]


def _expected(arrivals, max_batch_size, max_delay, service_time):
    batches, free, i, n = [], 0, 0, len(arrivals)
    while i < n:
        oldest = arrivals[i]
        last = i + max_batch_size - 1        # the request that fills it
        full = arrivals[last] if last < n else float('inf')
        leave = max(free, min(oldest + max_delay, full))
        j = i
        while j < n and j - i < max_batch_size and arrivals[j] <= leave:
            j += 1
        batches.append((leave, list(range(i, j))))
        free, i = leave + service_time, j
    return batches


def _compare(expected, got, args):
    try:
        got = [(t, list(ix)) for t, ix in got]
    except (TypeError, ValueError):
        return (f'expected a list of (leave_time, [request indices]), got '
                f'{show(got)}')
    for k, ((t, ix), (t2, ix2)) in enumerate(zip(expected, got)):
        if ix != ix2 or abs(t - t2) > 1e-9:
            return (f'batch {k}: expected it to leave at {t:g} ms with '
                    f'requests {ix}, got {t2!r} ms with {ix2}; all expected: '
                    f'{expected}')
    if len(got) != len(expected):
        return (f'expected {len(expected)} batches, got {len(got)}; all '
                f'expected: {expected}')
    return None


def form_batches(solution):
    """Check ``solution(arrivals, max_batch_size, max_delay,
    service_time)``: ``[(leave_time, [request indices]), ...]``."""
    cases = [Case(*c, names=NAMES) for c in CASES]
    return run_cases(solution, cases, _expected, _compare,
                     prepare=lambda args: (list(args[0]),) + args[1:],
                     todo='form_batches(arrivals, max_batch_size, max_delay, '
                          'service_time) returns [(leave_time, [request '
                          'indices]), ...], one entry per batch')
