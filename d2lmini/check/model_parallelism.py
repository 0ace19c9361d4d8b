"""Chapter 10, model parallelism: GPipe's schedule, tick by tick.

``gpipe_schedule(num_stages, num_micro)`` returns one list per clock
tick, with one entry per stage: ``'F3'`` for the forward pass of
micro-batch 3, ``'B3'`` for its backward pass, ``None`` for idle.  Each
pass takes one tick on one stage; a forward pass moves from stage 0 to
the last stage, a backward pass back from the last stage to stage 0.  All
forward passes come first, micro-batch 0 first, then all backward passes,
the last micro-batch first, every pass as early as it can.  The idle
entries are the bubble.
"""
from . import Case, run_cases

CASES = [(1, 1), (1, 3), (2, 1), (2, 3), (3, 4), (4, 2)]


def _expected(num_stages, num_micro):
    S, m = num_stages, num_micro
    ticks = m + S - 1                      # of each phase
    forward = [[f'F{t - s}' if 0 <= t - s < m else None for s in range(S)]
               for t in range(ticks)]
    # backward tick u: stage s works on the u-(S-1-s)-th micro-batch in
    # backward order, which is micro-batch m-1 minus that
    backward = [[f'B{m - 1 - (u - (S - 1 - s))}'
                 if 0 <= u - (S - 1 - s) < m else None for s in range(S)]
                for u in range(ticks)]
    return forward + backward


def gpipe_schedule(solution):
    """Check ``solution(num_stages, num_micro)``: the schedule's ticks."""
    cases = [Case(*c, names=('num_stages', 'num_micro')) for c in CASES]

    def compare(expected, got, args):
        if not isinstance(got, (list, tuple)):
            return f'expected a list of ticks, got {type(got).__name__}'
        got = [list(tick) for tick in got]
        if len(got) != len(expected):
            return (f'expected {len(expected)} ticks, got {len(got)}; '
                    f'expected {expected}')
        for t, (want, have) in enumerate(zip(expected, got)):
            if want != have:
                return (f'tick {t}: expected {want} (stage 0 first), got '
                        f'{have}; all expected: {expected}')
        return None

    return run_cases(solution, cases, _expected, compare,
                     todo='gpipe_schedule(num_stages, num_micro) returns a '
                          'list of ticks, each a list with one entry per '
                          'stage')
