"""Chapter 11, parameter servers: what a server holds after some pushes.

``server_value(w, lr, pushes, num_workers, sync)``: a server holds the
number ``w`` and receives ``pushes``, ``(worker, gradient)`` pairs in the
order they arrive.  Synchronous: it adds up a round (one push from every
worker) and then takes one SGD step with the sum; a round not complete
at the end is not applied.  Asynchronous: one SGD step per push.
"""
import math

from . import Case, compare_equal, run_cases

# (w, lr, pushes, num_workers, sync): one round, a round and a half, one
# worker, three workers, the same pushes in both modes
CASES = [(10.0, 0.5, [(0, 1.0), (1, 3.0)], 2, True),
         (10.0, 0.5, [(0, 1.0), (1, 3.0), (0, 2.0)], 2, True),
         (10.0, 0.5, [(0, 1.0), (1, 3.0), (0, 2.0)], 2, False),
         (1.0, 0.25, [(0, 4.0), (0, -2.0)], 1, True),
         (0.0, 1.0, [(2, 1.0), (0, 2.0), (1, 4.0), (0, 8.0), (2, 16.0)], 3,
          True),
         (0.0, 1.0, [(2, 1.0), (0, 2.0), (1, 4.0), (0, 8.0), (2, 16.0)], 3,
          False)]


def _expected(w, lr, pushes, num_workers, sync):
    pending = []
    for worker, grad in pushes:
        if not sync:
            w -= lr * grad
            continue
        pending.append(grad)
        if len(pending) == num_workers:
            w -= lr * sum(pending)
            pending = []
    return w


def server_value(solution):
    """Check ``solution(w, lr, pushes, num_workers, sync)``: the final w."""
    cases = [Case(*c, names=('w', 'lr', 'pushes', 'num_workers', 'sync'))
             for c in CASES]

    def compare(expected, got, args):
        if isinstance(got, (int, float)) and math.isclose(got, expected):
            return None
        return compare_equal(expected, got)

    return run_cases(solution, cases, _expected, compare,
                     prepare=lambda args: (*args[:2], list(args[2]),
                                           *args[3:]),
                     todo='server_value(w, lr, pushes, num_workers, sync) '
                          'returns the value the server holds at the end')
