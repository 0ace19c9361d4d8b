"""``import mxnet`` for MXNet's upstream unit tests: an alias of d2lmini.

Importing this package installs :class:`_AliasFinder` at the front of
``sys.meta_path`` and then replaces itself in ``sys.modules`` by the d2lmini
package, so ``mxnet`` *is* ``d2lmini`` (identity, not a copy) and
``mxnet.X.Y`` is ``d2lmini.X.Y``. The one exception is ``mxnet.test_utils``,
which is the harness's own NumPy implementation (``_test_utils.py`` next to
this file), because d2lmini has no test-utility module of its own.

It is a real package on ``sys.path`` (not only a finder installed by the
pytest plugin) so that processes spawned by the tests (DataLoader workers,
``multiprocessing`` spawn) get the same alias.
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


class _AliasLoader(importlib.abc.Loader):
    """Hands back an already imported d2lmini module under an mxnet name."""

    def __init__(self, module):
        self._module = module
        self._spec = getattr(module, '__spec__', None)

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        # The import system has just set module.__spec__ to the alias spec;
        # give the module its own spec back so that d2lmini's relative
        # imports keep resolving inside d2lmini.
        if self._spec is not None:
            module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``mxnet`` and ``mxnet.<sub>`` to d2lmini's modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != 'mxnet' and not fullname.startswith('mxnet.'):
            return None
        if fullname == 'mxnet.test_utils':
            return importlib.util.spec_from_file_location(
                fullname, os.path.join(_HERE, '_test_utils.py'))
        target_name = 'd2lmini' + fullname[len('mxnet'):]
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as err:
            # Only "this very module is absent" means "mxnet.X does not
            # exist"; a missing dependency inside d2lmini must surface.
            if err.name == target_name:
                return None
            raise
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(module),
            is_package=hasattr(module, '__path__'))


def _install():
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    import d2lmini
    sys.modules['mxnet'] = d2lmini
    # Submodules d2lmini imported before the finder existed are already in
    # sys.modules under their d2lmini name; alias them too.
    for name, mod in list(sys.modules.items()):
        if name.startswith('d2lmini.') and mod is not None:
            sys.modules.setdefault('mxnet' + name[len('d2lmini'):], mod)
    # MXNet's __init__ imports test_utils, so tests use `mx.test_utils.X`
    # after a bare `import mxnet as mx`; importing it here also sets the
    # attribute on the package (in this process only).
    importlib.import_module('mxnet.test_utils')


_install()
