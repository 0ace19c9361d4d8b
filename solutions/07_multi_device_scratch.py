"""Chapter 7, multiple devices from scratch: the exercise's reference."""


def allreduce(data, root=0):
    """Sum the arrays of ``data`` on data[root]'s device, then copy the sum
    into every array of ``data``, in place."""
    ctx = data[root].context
    # reduce: add everybody's array, copied over, to a new array on the
    # root's device (the arrays of data stay as they are until the end)
    total = data[root].copy()
    for i, x in enumerate(data):
        if i != root:
            total += x.copyto(ctx)         # copy to the root, add there
    for x in data:
        total.copyto(x)        # broadcast: copy into each array, in place
