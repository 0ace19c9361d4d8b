"""Timing in alternating blocks, the method every side-by-side bench uses.

Two functions timed one after the other see different machines: on a shared
CPU another job slows whichever block it overlaps.  So the functions take
turns, a block each (first, second, first, ...), for several rounds, and
each keeps its best block: the least disturbed one.  A pause before each
block lets the previous block's worker threads (BLAS, the engine's, the
other framework's) go idle.
"""
import time


def best_alternating(fns, rounds=5, number=None, pause=0.2, block_s=0.25):
    """Best seconds per call of each of ``fns`` (None: skipped, gives None).

    ``number`` calls make a block; ``None`` sizes each function's block to
    fill about ``block_s`` seconds, judged from a warm-up (small batches take
    microseconds, and a block of a few calls would time mostly noise).
    Every function is called once (or, sizing its block, a few times) before
    the timed rounds: deferred initialization and first-call caches.
    """
    counts = []
    for fn in fns:
        if fn is None:
            counts.append(None)
        elif number is None:
            counts.append(_calls_per_block(fn, block_s))
        else:
            fn()
            counts.append(number)
    best = [None] * len(fns)
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            if fn is None:
                continue
            time.sleep(pause)
            t = time.perf_counter()
            for _ in range(counts[k]):
                fn()
            per_call = (time.perf_counter() - t) / counts[k]
            best[k] = per_call if best[k] is None else min(best[k], per_call)
    return best


def _calls_per_block(fn, block_s):
    fn()                             # deferred initialization, first-call caches
    n, t = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        spent = time.perf_counter() - t
        if spent >= block_s / 4:
            return max(1, round(block_s * n / spent))
