"""Chapter 13, the ring allreduce: the coding exercise's reference."""


def reduce_scatter_schedule(n):
    """n - 1 ring steps after which rank r holds the whole sum of chunk r.

    The chapter's schedule sends chunk (r - s) % n at step s and leaves
    rank r with chunk (r + 1) % n.  Starting one chunk earlier, (r - s - 1)
    % n, shifts where every chunk ends by one rank: chunk c starts at rank
    c + 1, travels n - 1 hops around the ring, picking up each rank's
    contribution, and arrives complete at rank c.
    """
    return [[(r, (r + 1) % n, (r - s - 1) % n) for r in range(n)]
            for s in range(n - 1)]
