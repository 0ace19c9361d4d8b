"""Placeholder for SciPy when it is not installed.

MXNet's test_gluon.py does ``import scipy.sparse as sps`` at module level for
one sparse-storage test; without SciPy the whole file would fail to collect.
This directory sits at the *end* of ``sys.path`` so a real SciPy wins; here
any use of an attribute raises ImportError, which the tests that probe for
SciPy (``try: import scipy ... except ImportError``) already handle.
"""


def __getattr__(name):
    raise ImportError(f'scipy is not installed (harness placeholder; '
                      f'scipy.{name} unavailable)')
