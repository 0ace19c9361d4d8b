"""Placeholder for MXNet's tests/python/common/models.py.

unittest/common.py imports it; its symbolic models are out of d2lmini's scope
and none of the harness's default test files use them. The real file, if the
MXNet checkout has it, comes earlier on sys.path and wins.
"""


def __getattr__(name):
    raise ImportError(f'models.{name}: symbolic test models are not '
                      'available (harness placeholder)')
