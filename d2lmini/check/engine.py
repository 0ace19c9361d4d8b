"""Chapter 3, asynchronous computation: what a loop of operations costs.

The front end spends ``t_front`` pushing each of ``n`` operations; the
back end runs them in order, ``t_back`` each, as soon as an operation is
pushed and the one before it is done.  With ``sync_every=k`` the front end
waits after every ``k``-th push until that operation is done (as
``y.wait_to_read()`` would); at the end it waits for everything
(``waitall``).  How long does the loop take?
"""
from . import Case, compare_equal, run_cases

# (n, t_front, t_back, sync_every): the back end slower, the front end
# slower, equal; waiting after every operation, every few, never
CASES = [(1, 2, 3, None), (5, 2, 3, None), (5, 3, 2, None), (4, 3, 3, None),
         (5, 2, 3, 1), (6, 2, 3, 2), (7, 1, 4, 3), (7, 4, 1, 3)]


def _simulate(n, t_front, t_back, sync_every):
    front = done = 0                  # the two clocks
    for i in range(1, n + 1):
        front += t_front              # operation i is pushed at `front`
        done = max(front, done) + t_back
        if sync_every and i % sync_every == 0:
            front = max(front, done)  # wait_to_read
    return max(front, done)           # waitall


def loop_time(solution):
    """Check ``solution(n, t_front, t_back, sync_every)``: the loop's time."""
    cases = [Case(*c, names=('n', 't_front', 't_back', 'sync_every'))
             for c in CASES]
    return run_cases(solution, cases, _simulate, compare_equal,
                     todo='loop_time(n, t_front, t_back, sync_every) returns '
                          'the time until the last operation is done')
