"""Run a book chapter's code cells in a fresh Python process, as Jupyter would.

Shared by ``tools/classic_chapters/run.py`` (the first edition, d2l-zh v1)
and ``tools/d2l_chapters/run.py`` (today's d2l-en): both pick a chapter's
cells out of its markdown, then hand them to :func:`run_cells`, which runs
them in order in one namespace of a new subprocess and returns, per cell,
whether it raised and what it printed.

The child process is told, through a JSON spec on its stdin, which imports
to alias (``aliases``: ``{'mxnet': 'd2lmini'}`` makes ``mxnet`` and every
``mxnet.<sub>`` the matching ``d2lmini`` module), which file is the
``d2l.mxnet`` module (``d2l_file``), and whether ``gpu(i)`` is a logical
CPU (``gpus_as_cpus`` devices, ``gpu(i)`` -> ``cpu(i + gpu_offset)``; the
library's ``num_gpus`` then says ``gpus_as_cpus``), and which dataset files
MXNet is to take as they are (``local_files``: no SHA-1 check, no
download).  With no aliases the
real ``mxnet`` is imported: the same child runs the cells on MXNet itself.
"""
import json
import os
import re
import subprocess
import sys
import time

_BLOCK = re.compile(r'^```\{\.python \.input[^}]*\}\s*\n(.*?)^```\s*$',
                    re.S | re.M)


def extract_blocks(markdown):
    """The source of each ```{.python .input} block, in order."""
    return [m.group(1) for m in _BLOCK.finditer(markdown)]


def strip_jupyter(code):
    """Drop IPython magics and shell escapes (not Python).

    Only at the start of a line: an indented ``% (a, b)`` is the second
    line of a Python string formatting, not a magic.
    """
    lines = []
    for line in code.splitlines():
        lines.append('' if line.startswith(('%', '!')) else line)
    return '\n'.join(lines) + '\n'


# The child: sets up the imports, runs the cells in one namespace, prints
# '--- block N' before each cell's output and one JSON line at the end.
_CHILD = r'''
import ast, importlib, importlib.abc, importlib.util, json, sys, time
import traceback
spec = json.load(sys.stdin)
import matplotlib
matplotlib.use('Agg')


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``name`` and ``name.<sub>`` are the modules ``target(.<sub>)``."""

    def __init__(self, aliases):
        self.aliases = aliases

    def find_spec(self, name, path=None, target=None):
        for alias, real in self.aliases.items():
            if name == alias or name.startswith(alias + '.'):
                module = importlib.import_module(real + name[len(alias):])
                return importlib.util.spec_from_loader(
                    name, self, origin=getattr(module, '__file__', None))
        return None

    def create_module(self, spec):
        for alias, real in self.aliases.items():
            if spec.name == alias or spec.name.startswith(alias + '.'):
                module = sys.modules[real + spec.name[len(alias):]]
                self._spec = module.__spec__
                return module

    def exec_module(self, module):
        module.__spec__ = self._spec      # keep the real module's own spec


class _D2L(importlib.abc.MetaPathFinder):
    """``d2l.mxnet`` is the file ``spec['d2l_file']``, unchanged."""

    def find_spec(self, name, path=None, target=None):
        if name == 'd2l':
            return importlib.util.spec_from_loader(name, None, is_package=True)
        if name == 'd2l.mxnet':
            return importlib.util.spec_from_file_location(
                name, spec['d2l_file'])
        return None


if spec.get('aliases'):
    sys.meta_path.insert(0, _Alias(spec['aliases']))
if spec.get('d2l_file'):
    sys.meta_path.insert(0, _D2L())
import mxnet
if spec.get('local_files'):
    # MXNet checks a dataset file's SHA-1 and downloads it again when it
    # differs; these files are the same data in another gzip wrapping.
    import mxnet.gluon.utils as _ds       # download() calls check_sha1
    _check = _ds.check_sha1

    def _check_sha1(filename, sha1_hash):
        import os
        if os.path.basename(filename) in spec['local_files']:
            return os.path.exists(filename)
        return _check(filename, sha1_hash)
    _ds.check_sha1 = _check_sha1
if spec.get('gpus_as_cpus'):
    _n, _off = spec['gpus_as_cpus'], spec.get('gpu_offset', 0)
    _cpu, _real_gpu = mxnet.context.cpu, mxnet.context.gpu

    def _gpu(device_id=0):
        if device_id < _n:
            return _cpu(device_id + _off)
        return _real_gpu(device_id)

    def _num_gpus():
        return _n
    _mods = [mxnet, mxnet.context]
    for _name in ('numpy_extension', 'npx'):
        try:
            _mods.append(importlib.import_module('mxnet.' + _name))
        except ImportError:
            pass
    for _mod in _mods:
        if hasattr(_mod, 'gpu'):
            _mod.gpu = _gpu
        if hasattr(_mod, 'num_gpus'):
            _mod.num_gpus = _num_gpus
ns = {'__name__': '__main__'}
results = []


def run_block(code, name):
    """exec the block; a last bare expression is shown, as Jupyter does."""
    tree = ast.parse(code, name)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, name, 'exec'), ns)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), name, 'eval'), ns)
        if value is not None:
            print('Out: ' + repr(value), flush=True)


for i, code in enumerate(spec['blocks'], 1):
    t0 = time.time()
    print(f'--- block {i}', flush=True)
    try:
        run_block(code, f'<block {i}>')
        res = {'block': i, 'ok': True}
    except BaseException as e:
        res = {'block': i, 'ok': False, 'type': type(e).__name__,
               'mro': [c.__name__ for c in type(e).__mro__],
               'error': str(e).strip().splitlines()[0][:300] if str(e).strip() else '',
               'trace': traceback.format_exc()[-2000:]}
    res['seconds'] = round(time.time() - t0, 2)
    results.append(res)
    exp = spec['expected'].get(str(i))
    if (not res['ok'] and not (exp and exp in res['mro'])
            and not spec.get('keep_going')):
        break
try:
    (getattr(mxnet, 'waitall', None) or mxnet.nd.waitall)()
except BaseException as e:
    results.append({'block': 'waitall', 'ok': False, 'type': type(e).__name__,
                    'mro': [], 'error': str(e)[:300], 'seconds': 0})
sys.stdout.flush()
print('@@RESULT@@' + json.dumps(results), flush=True)
'''


def run_cells(blocks, cwd, timeout, spec=None, env=None, python=None,
              verbose=False):
    """Run ``blocks`` in one fresh child process.

    Returns ``(results, out, err, rc, wall)``: ``results`` is the child's
    list of per-cell dicts (``None`` if it died or timed out), ``out`` its
    stdout, with a ``--- block N`` line before each cell's output.
    """
    spec = dict(spec or {}, blocks=blocks)
    spec.setdefault('expected', {})
    t0 = time.time()
    try:
        proc = subprocess.run(
            [python or sys.executable, '-c', _CHILD], input=json.dumps(spec),
            capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or '')
        err, rc = f'timeout after {timeout} s', None
    wall = time.time() - t0
    results = None
    for line in out.splitlines():
        if line.startswith('@@RESULT@@'):
            results = json.loads(line[len('@@RESULT@@'):])
    if verbose:
        print(out.replace('@@RESULT@@', '# '), file=sys.stderr)
    return results, out, err, rc, wall


def printed_by_cell(out):
    """``{cell number: [lines it printed]}`` from a child's stdout."""
    cells, current = {}, None
    for line in out.splitlines():
        if line.startswith('--- block '):
            current = int(line.split()[-1])
            cells[current] = []
        elif line.startswith('@@RESULT@@'):
            current = None
        elif current is not None:
            cells[current].append(line)
    return cells


def shared_data(repo):
    """``shared/data/fashion-mnist`` next to the checkout or one level up."""
    for up in (os.path.dirname(repo), os.path.dirname(os.path.dirname(repo))):
        path = os.path.join(up, 'shared', 'data', 'fashion-mnist')
        if os.path.isdir(path):
            return path
    return None


def git_head(repo):
    try:
        out = subprocess.run(['git', '-C', repo, 'log', '-1', '--format=%h %s'],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or '(not a git checkout)'
    except (OSError, subprocess.SubprocessError):
        return '(not a git checkout)'
