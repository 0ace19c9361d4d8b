"""Chapter 9, the KVStore: the coding exercise's reference solution."""


def reduce_devices(sizes, num_devices):
    """The index of the device that sums each key in a 'device' store."""
    work = [0] * num_devices             # elements each device sums so far
    where = [None] * len(sizes)
    # largest first; sorted() is stable, so equal sizes stay in key order
    for key in sorted(range(len(sizes)), key=lambda k: -sizes[k]):
        device = work.index(min(work))   # the least loaded, first on a tie
        where[key] = device
        work[device] += sizes[key]
    return where
