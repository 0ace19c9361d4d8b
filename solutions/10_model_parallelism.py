"""Chapter 10, model parallelism: the coding exercise's reference."""


def gpipe_schedule(num_stages, num_micro):
    """GPipe's schedule: per tick, what each stage does ('F2', 'B0', None)."""
    S, m = num_stages, num_micro
    ticks = m + S - 1        # a phase: m passes, S - 1 ticks to fill the pipe
    schedule = [[None] * S for _ in range(2 * ticks)]
    for i in range(m):
        for s in range(S):
            # micro-batch i enters stage 0 at tick i, moves one stage a tick
            schedule[i + s][s] = f'F{i}'
            # backward: the last micro-batch first, from the last stage down;
            # the j-th backward pass starts at the last stage at tick j
            j = m - 1 - i
            schedule[ticks + j + (S - 1 - s)][s] = f'B{i}'
    return schedule
