"""Chapter 12, the distributed KVStore: how stale is a dist_async push?

A ``dist_async`` server updates its weights at every push.  A worker's
gradient was computed on the weights it last pulled, so a push is
*stale* by the number of updates the server made between that pull and
this push.  ``staleness(events)`` takes the events in the order the
server sees them, ``('pull', worker)`` or ``('push', worker)`` (every
worker pulls before its first push), and returns the staleness of each
push, in order.
"""
from . import Case, compare_equal, run_cases

CASES = [[('pull', 0), ('push', 0)],
         [('pull', 0), ('pull', 1), ('push', 0), ('push', 1)],
         [('pull', 0), ('pull', 1), ('push', 0), ('pull', 0), ('push', 1),
          ('push', 0)],
         # pushing twice without pulling: the worker's own update counts
         [('pull', 0), ('push', 0), ('push', 0)],
         [('pull', 0), ('pull', 1), ('pull', 2), ('push', 2), ('push', 1),
          ('pull', 2), ('push', 0), ('push', 2), ('pull', 1), ('push', 1)]]


def _expected(events):
    version, pulled, stale = 0, {}, []
    for what, worker in events:
        if what == 'pull':
            pulled[worker] = version
        else:
            stale.append(version - pulled[worker])
            version += 1                 # every push is an update
    return stale


def staleness(solution):
    """Check ``solution(events)``: the staleness of each push."""
    cases = [Case([tuple(e) for e in events], names=('events',))
             for events in CASES]

    def compare(expected, got, args):
        return compare_equal(expected,
                             list(got) if isinstance(got, tuple) else got)

    return run_cases(solution, cases, _expected, compare,
                     prepare=lambda args: ([tuple(e) for e in args[0]],),
                     todo='staleness(events) returns, for each push, how '
                          'many updates the server made since that '
                          "worker's last pull")
