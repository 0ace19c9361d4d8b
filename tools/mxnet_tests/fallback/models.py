"""Stand-in for MXNet's tests/python/common/models.py.

unittest/common.py appends ``../common/`` to sys.path and imports ``models``;
the harness's fallback directory comes earlier on sys.path, so this module
is found first.  It loads the real file when the MXNet checkout has one (the
small symbolic models ``mlp2()`` and ``conv()`` that test_symbol.py uses);
otherwise any attribute raises ImportError.
"""
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_real = None
for _p in sys.path:
    _cand = os.path.join(_p, 'models.py')
    if os.path.abspath(_p) != _HERE and os.path.isfile(_cand) and \
            os.path.basename(os.path.normpath(_p)) == 'common':
        _spec = importlib.util.spec_from_file_location('_upstream_models', _cand)
        _real = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_real)
        break


def __getattr__(name):
    if _real is not None:
        return getattr(_real, name)
    raise ImportError(f'models.{name}: symbolic test models are not '
                      'available (harness placeholder)')
