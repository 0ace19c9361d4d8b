"""``mx.util``: the switches MXNet 1.x code asks about before choosing a path.

MXNet 1.x has two array front ends (the legacy ``nd`` and NumPy-compatible
``mx.np``) and two shape conventions (legacy: no 0-d arrays, 0 means
"unknown"; NumPy: 0-d and zero-size arrays).  d2lmini has one of each: the
``nd`` front end, with NumPy's shape semantics.  Code that branches on these
questions (``gluon.utils.split_data``, MXNet's tests) gets the true answer.
"""

__all__ = ['is_np_array', 'is_np_shape']


def is_np_array():
    """False: arrays are ``nd.NDArray``s; there is no ``mx.np`` front end."""
    return False


def is_np_shape():
    """True: shapes follow NumPy (``x[1, 2]`` is 0-d, size-0 axes exist)."""
    return True
