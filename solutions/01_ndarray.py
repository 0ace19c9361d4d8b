"""Chapter 1, NDArray: the coding exercise's reference solution."""


def sum_to(x, shape):
    """Sum ``x`` down to ``shape``, undoing a broadcast to ``x.shape``."""
    # Broadcasting first puts axes of length 1 in front of the shorter
    # shape; those axes we sum away entirely.
    lead = x.ndim - len(shape)
    if lead > 0:
        x = x.sum(axis=tuple(range(lead)))
    # Then every axis of length 1 was stretched to x's length: sum it, but
    # keep it, so that the result has exactly `shape`.
    stretched = tuple(i for i, n in enumerate(shape)
                      if n == 1 and x.shape[i] != 1)
    if stretched:
        x = x.sum(axis=stretched, keepdims=True)
    return x
