"""Inputs shared by the MPI scripts (which make them on each rank) and the
tests (which rebuild them to compute the NumPy oracle)."""
import hashlib

import numpy as np

SIZES = (1, 7, 1000, 1_000_000)
DTYPES = ('float32', 'float64', 'float16')
ALGORITHMS = ('ring', 'mpi')
GROUP_SHAPES = [(i % 5 + 1, i % 3 + 1) for i in range(40)]   # 40 small tensors


def quarters(rank, size, dtype, salt=0):
    """Rank ``rank``'s tensor: multiples of 1/4 in [-16, 16).  Sums of up to
    4 of them are exact in float16 too, whatever order a ring adds them in,
    so a sum must equal NumPy's to the last bit."""
    rng = np.random.default_rng([rank, size, salt])
    return (rng.integers(-64, 64, size) / 4).astype(dtype)


def normals(rank, size, dtype='float64', salt=1):
    """Rank ``rank``'s tensor of normal floats (sums depend on the order)."""
    return np.random.default_rng([rank, size, salt]).standard_normal(size).astype(dtype)


def gathered(rank):
    """Rank ``rank``'s allgather input: ``rank + 1`` rows of 3."""
    return np.arange((rank + 1) * 3, dtype=np.float32).reshape(rank + 1, 3) + 100 * rank


def digest(a):
    a = np.ascontiguousarray(a)
    return hashlib.sha1(a.tobytes() + str((a.dtype, a.shape)).encode()).hexdigest()
