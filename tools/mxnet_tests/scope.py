"""Which upstream tests exercise what issue 15 leaves out of scope.

Classified by reading each test (not by whether it fails). Keys are
``file::test`` (pytest node ids relative to tests/python/unittest); the
value says what out-of-scope feature the test needs. Everything not listed
is in scope: d2lmini must pass it.
"""

OUT_OF_SCOPE = {
}


def reason(nodeid):
    """Why ``nodeid`` is out of scope, or None when it is in scope."""
    base = nodeid.split('[', 1)[0]
    return OUT_OF_SCOPE.get(base)
