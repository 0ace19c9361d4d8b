"""A minimal stand-in for ``nose`` (not installable on current Pythons).

Only what MXNet 1.9.1's unit tests use: ``nose.tools``, ``SkipTest`` and a
``runmodule`` that runs the module under pytest. This directory sits at the
*end* of ``sys.path``, so a real nose, if installed, wins.
"""
import sys
from unittest import SkipTest  # noqa: F401  (pytest reports it as a skip)

from . import tools  # noqa: F401


def runmodule(name='__main__', **kwargs):
    """Run a test module's tests (with pytest) and exit with its status."""
    import pytest
    module = sys.modules[name]
    sys.exit(pytest.main([module.__file__]))
