"""Chapter 13, the ring allreduce: a reduce-scatter that ends where MPI's does.

The chapter's reduce-scatter leaves rank ``r`` with the complete sum of
chunk ``(r + 1) % n``; MPI's ``Reduce_scatter`` leaves it with chunk
``r``.  ``reduce_scatter_schedule(n)`` returns the ``n - 1`` steps of a
ring reduce-scatter, each a list of ``(sender, receiver, chunk)``, after
which rank ``r`` holds the complete sum of chunk ``r``.  In every step
each rank sends one chunk to its right neighbour, and all sends of a
step happen at once.  The check runs the steps, as ``simulate_ring``
does, tracking whose contributions each chunk holds.
"""
from . import Case, run_cases

CASES = [2, 3, 4, 5]


def _problem(n, steps):
    """What is wrong with ``steps`` as a reduce-scatter on n ranks, or None."""
    if not isinstance(steps, (list, tuple)) or len(steps) != n - 1:
        return f'expected a list of n - 1 = {n - 1} steps, got {steps!r}'
    holds = [[{r} for _ in range(n)] for r in range(n)]  # [rank][chunk]
    for s, moves in enumerate(steps):
        moves = [tuple(m) for m in moves]
        senders = sorted(src for src, _, _ in moves)
        if senders != list(range(n)):
            return (f'step {s}: every rank sends exactly one chunk, but the '
                    f'senders are {senders}')
        for src, dst, chunk in moves:
            if dst != (src + 1) % n:
                return (f'step {s}: rank {src} sends to rank {dst}, but in a '
                        f'ring it sends only to its right neighbour, rank '
                        f'{(src + 1) % n}')
            if not 0 <= chunk < n:
                return f'step {s}: rank {src} sends chunk {chunk} of {n}'
        sent = [(dst, c, set(holds[src][c])) for src, dst, c in moves]
        for dst, c, who in sent:         # everybody sends, then receives
            holds[dst][c] |= who
    for r in range(n):
        if holds[r][r] != set(range(n)):
            return (f"at the end, rank {r}'s chunk {r} holds the "
                    f'contributions of ranks {sorted(holds[r][r])}, expected '
                    f'those of all ranks {list(range(n))}')
    return None


def reduce_scatter_schedule(solution):
    """Check ``solution(n)``: the steps of a ring reduce-scatter."""
    cases = [Case(n, names=('n',)) for n in CASES]
    return run_cases(solution, cases, lambda n: n,
                     lambda n, got, args: _problem(n, got),
                     todo='reduce_scatter_schedule(n) returns n - 1 steps, '
                          'each a list of (sender, receiver, chunk)')
