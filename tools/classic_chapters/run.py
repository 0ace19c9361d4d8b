"""Run the classic d2l chapters' MXNet code on d2lmini, imports changed only.

    python tools/classic_chapters/run.py --src /path/to/d2l-zh-v1 [CHAPTER ...]

``--src`` is a checkout of d2l-zh's ``v1`` branch (the first edition, MXNet
code, ``import d2lzh as d2l``); nothing from it is copied into this
repository.  For each chapter the ```` ```{.python .input} ```` blocks of its
markdown file are extracted and run, in order, in one fresh Python
subprocess (one namespace, like "Run All" in Jupyter), with a timeout.  The
first block that raises stops the chapter, as in a notebook.  The result
(ran / failed at block N with error E, wall time) is printed and, with
``--report FILE``, written as a markdown table.

What is changed, and nothing else
---------------------------------
* Imports: a ``sys.modules`` alias makes ``mxnet`` -> ``d2lmini`` and
  ``d2lzh`` -> ``d2lmini.d2l.classic``, the first edition's helpers (so
  ``import mxnet as mx``, ``from mxnet import nd``, ``from mxnet.gluon
  import nn`` and ``import d2lzh as d2l`` resolve to this package).  The
  source text of the blocks is left as it is.
* Jupyter-only lines: a block's IPython magics (``%matplotlib inline``) and
  shell escapes (``!nvidia-smi``) are skipped, since they are not Python.
* Figures: matplotlib uses the ``Agg`` backend (nothing is displayed).
* Output: as in Jupyter, a block's last bare expression is shown (its
  ``repr``, on a line starting ``Out:``), so the printed record can be
  compared with the book's.
* Data: Fashion-MNIST is read from ``D2LMINI_DATA``; when it is not set,
  from ``shared/data/fashion-mnist`` next to the checkout (or one level
  further up) if that folder exists, else d2lmini looks where it always
  does (see the top-level README).

Blocks that fail on MXNet too
-----------------------------
The chapters were written for a machine with GPUs.  On a CPU-only machine
MXNet 1.9.1 creates a ``mx.gpu(i)`` Context object without complaint, but
the first array allocated on it raises ``mxnet.base.MXNetError`` (a CPU
build: "GPU is not enabled"; a GPU build without a device: "CUDA: no
CUDA-capable device is detected").  The blocks that do that
unconditionally are listed in :data:`EXPECTED` below: such a block counts
as behaving like MXNet when it raises ``MXNetError``, and the chapter goes
on with the next block.  A later block that only fails because an earlier
expected block defined nothing (``NameError``) is listed too.  Every entry
says which line raises on MXNet.

GPUs as logical CPUs (opt-in)
-----------------------------
``--gpus-as-cpus N`` runs the chapters as if the machine had ``N`` GPUs:
in the child, ``mx.gpu(i)`` for ``i < N`` is ``mx.cpu(i)`` (d2lmini's
logical CPU devices, each with its own engine stream), so
``d2l.try_all_gpus()`` finds ``N`` devices and the multi-GPU code really
runs on several devices.  No block is then expected to fail.  The source
text is still unchanged; the report says which mode was used.  (Chapters
sized for GPUs, such as auto-parallelism's 6000 x 6000 products or
ResNet-18 in multiple-gpus-gluon, take long on a CPU.)

Shorter training (opt-in)
-------------------------
``CLASSIC_EPOCHS=N`` replaces the epoch count of the chapters' training
runs (LeNet: ``lr, num_epochs = 0.9, 5``; multiple-gpus and
multiple-gpus-gluon: ``for epoch in range(4):`` in ``train``) by ``N``, by
rewriting the one line listed in :data:`EPOCH_LINES`.  Without it the chapters run exactly
as written.  The report says which was used.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

CHAPTERS = [
    'chapter_prerequisite/ndarray.md',
    'chapter_prerequisite/autograd.md',
    'chapter_deep-learning-computation/model-construction.md',
    'chapter_deep-learning-computation/parameters.md',
    'chapter_deep-learning-computation/deferred-init.md',
    'chapter_deep-learning-computation/custom-layer.md',
    'chapter_deep-learning-computation/read-write.md',
    'chapter_deep-learning-computation/use-gpu.md',
    'chapter_convolutional-neural-networks/lenet.md',
    'chapter_computational-performance/hybridize.md',
    'chapter_computational-performance/async-computation.md',
    'chapter_computational-performance/auto-parallelism.md',
    'chapter_computational-performance/multiple-gpus.md',
    'chapter_computational-performance/multiple-gpus-gluon.md',
]

# chapter -> {block number (1-based): (exception name, why MXNet raises too)}
# What MXNet 1.9.1 does on a machine without a GPU, block by block.  A
# Gluon layer whose input size is not given defers its weight's
# initialization to the first forward pass, but its bias has a known shape
# and is initialized (copied to every context) at once, so
# ``net.initialize(ctx=mx.gpu())`` raises ``MXNetError`` there; reading the
# deferred weight afterwards raises ``DeferredInitializationError``, a
# subclass of ``MXNetError`` (and so of ``RuntimeError``).
_GPU = 'allocates on mx.gpu(): MXNetError'
EXPECTED = {
    'chapter_deep-learning-computation/use-gpu.md': {
        5: ('MXNetError', 'nd.array(..., ctx=mx.gpu()): ' + _GPU),
        6: ('MXNetError', 'nd.random.uniform(..., ctx=mx.gpu(1)): ' + _GPU),
        7: ('MXNetError', 'x.copyto(mx.gpu()): ' + _GPU),
        8: ('MXNetError', 'x.as_in_context(mx.gpu()): ' + _GPU),
        9: ('NameError', 'y was not defined (block 7 raised)'),
        10: ('NameError', 'y was not defined (block 7 raised)'),
        11: ('NameError', 'z was not defined (block 8 raised)'),
        12: ('MXNetError', 'net.initialize(ctx=mx.gpu()): the Dense bias '
                           '(shape (1,) known) is copied to gpu(0): ' + _GPU),
        13: ('NameError', 'y was not defined (block 7 raised)'),
        14: ('MXNetError', 'net[0].weight.data(): DeferredInitializationError '
                           '(no forward pass ever ran)'),
    },
    'chapter_computational-performance/auto-parallelism.md': {
        3: ('MXNetError', 'nd.random.uniform(..., ctx=mx.gpu(0)): ' + _GPU),
        4: ('NameError', 'x_gpu was not defined (block 3 raised)'),
        5: ('NameError', 'x_gpu was not defined (block 3 raised)'),
        6: ('NameError', 'x_gpu was not defined (block 3 raised)'),
        7: ('NameError', 'x_gpu was not defined (block 3 raised)'),
    },
    'chapter_computational-performance/multiple-gpus.md': {
        5: ('MXNetError', 'get_params(params, mx.gpu(0)) copies to gpu(0): '
                          + _GPU),
        7: ('MXNetError', 'nd.ones(..., ctx=mx.gpu(i)): ' + _GPU),
        9: ('MXNetError', 'split_and_load(batch, [gpu(0), gpu(1)]): ' + _GPU),
        12: ('MXNetError', 'train(num_gpus=1): get_params copies to gpu(0): '
                           + _GPU),
        13: ('MXNetError', 'train(num_gpus=2): get_params copies to gpu(0): '
                           + _GPU),
    },
    'chapter_computational-performance/multiple-gpus-gluon.md': {
        3: ('MXNetError', 'net.initialize(ctx=[gpu(0), gpu(1)]): the first '
                          'convolution bias (shape (64,) known) is copied to '
                          'gpu(0): ' + _GPU),
        4: ('MXNetError', 'gutils.split_and_load(x, [gpu(0), gpu(1)]): '
                          + _GPU),
        5: ('MXNetError', 'weight.data(ctx[0]): DeferredInitializationError '
                          '(after `except RuntimeError` caught the first one)'),
        7: ('MXNetError', 'train(num_gpus=1): net.initialize(ctx=[gpu(0)], '
                          'force_reinit=True) copies a bias to gpu(0): ' + _GPU),
        8: ('MXNetError', 'train(num_gpus=2): net.initialize(ctx=[gpu(0), '
                          'gpu(1)], ...) copies a bias to gpu(0): ' + _GPU),
    },
}

# chapter -> regular expression of the epoch-count line that CLASSIC_EPOCHS
# rewrites (group 1 is kept, the number after it replaced).
EPOCH_LINES = {
    'chapter_convolutional-neural-networks/lenet.md':
        r'^(lr, num_epochs = [0-9.]+, )(\d+)()$',
    'chapter_computational-performance/multiple-gpus.md':
        r'^(\s*for epoch in range\()(\d+)(\):)$',
    'chapter_computational-performance/multiple-gpus-gluon.md':
        r'^(\s*for epoch in range\()(\d+)(\):)$',
}

_BLOCK = re.compile(r'^```\{\.python \.input[^}]*\}\s*\n(.*?)^```\s*$',
                    re.S | re.M)


def extract_blocks(markdown):
    """The source of each ```{.python .input} block, in order."""
    return [m.group(1) for m in _BLOCK.finditer(markdown)]


def _strip_jupyter(code):
    """Drop IPython magics and shell escapes (not Python).

    Only at the start of a line: an indented ``% (a, b)`` is the second
    line of a Python string formatting, not a magic.
    """
    lines = []
    for line in code.splitlines():
        lines.append('' if line.startswith(('%', '!')) else line)
    return '\n'.join(lines) + '\n'


def prepare(chapter, markdown, epochs=None):
    blocks = [_strip_jupyter(b) for b in extract_blocks(markdown)]
    if epochs is not None and chapter in EPOCH_LINES:
        pat = re.compile(EPOCH_LINES[chapter], re.M)
        blocks = [pat.sub(lambda m: m.group(1) + str(epochs) + m.group(3), b)
                  for b in blocks]
    return blocks


# The child: runs the blocks in one namespace and writes one JSON line per
# block to stdout's last line.  It is given its input on stdin.
_CHILD = r'''
import json, sys, time, traceback
spec = json.load(sys.stdin)
import matplotlib
matplotlib.use('Agg')
import d2lmini, d2lmini.d2l.classic
sys.modules['mxnet'] = d2lmini
sys.modules['d2lzh'] = d2lmini.d2l.classic
for sub in ('ndarray', 'autograd', 'gluon', 'init', 'initializer',
            'optimizer', 'context', 'engine'):
    try:
        mod = __import__('d2lmini.' + sub, fromlist=['_'])
    except ImportError:
        continue
    sys.modules['mxnet.' + sub] = mod
import d2lmini.gluon as _g
for sub in ('nn', 'loss', 'data', 'utils', 'parameter', 'trainer', 'block'):
    if hasattr(_g, sub):
        mod = getattr(_g, sub)
        sys.modules['mxnet.gluon.' + sub] = mod
if spec.get('gpus_as_cpus'):
    import d2lmini.context as _ctx
    _real_gpu, _n = _ctx.gpu, spec['gpus_as_cpus']

    def _gpu(device_id=0):
        return _ctx.cpu(device_id) if device_id < _n else _real_gpu(device_id)
    _ctx.gpu = d2lmini.gpu = _gpu
import ast
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
    if not res['ok'] and not (exp and exp in res['mro']):
        break
try:
    d2lmini.waitall()
except BaseException as e:
    results.append({'block': 'waitall', 'ok': False, 'type': type(e).__name__,
                    'mro': [], 'error': str(e)[:300], 'seconds': 0})
sys.stdout.flush()
print('@@RESULT@@' + json.dumps(results), flush=True)
'''


def _shared_data():
    """``shared/data/fashion-mnist`` next to the checkout or one level up."""
    for up in (os.path.dirname(REPO), os.path.dirname(os.path.dirname(REPO))):
        path = os.path.join(up, 'shared', 'data', 'fashion-mnist')
        if os.path.isdir(path):
            return path
    return None


def run_chapter(src, chapter, timeout, epochs=None, verbose=False, gpus_as_cpus=0):
    with open(os.path.join(src, chapter), encoding='utf-8') as f:
        blocks = prepare(chapter, f.read(), epochs)
    table = {} if gpus_as_cpus else EXPECTED.get(chapter, {})
    expected = {str(k): v[0] for k, v in table.items()}
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    env.setdefault('MPLBACKEND', 'Agg')
    if 'D2LMINI_DATA' not in env and _shared_data():
        env['D2LMINI_DATA'] = _shared_data()
    t0 = time.time()
    try:
        proc = subprocess.run(
            [sys.executable, '-c', _CHILD], input=json.dumps(
                {'blocks': blocks, 'expected': expected,
                                     'gpus_as_cpus': gpus_as_cpus}),
            capture_output=True, text=True, timeout=timeout, env=env,
            cwd=os.path.join(src, os.path.dirname(chapter)))
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
    row = summarize(chapter, blocks, results, out, err, rc, wall, table)
    row['printed'] = [l for l in out.splitlines()
                      if not l.startswith(('--- block ', '@@RESULT@@'))]
    return row


def summarize(chapter, blocks, results, out, err, rc, wall, expected=None):
    n = len(blocks)
    if expected is None:
        expected = EXPECTED.get(chapter, {})
    row = {'chapter': chapter, 'blocks': n, 'seconds': round(wall, 1)}
    if results is None:
        last = [l for l in out.splitlines() if l.startswith('--- block ')]
        at = last[-1].split()[-1] if last else '?'
        why = err.strip().splitlines()[-1] if err.strip() else f'exit {rc}'
        row.update(status='failed', detail=f'block {at}: {why}')
        return row
    fails = [r for r in results if not r['ok']]
    unexpected = [r for r in fails if str(r['block']) == 'waitall' or
                  expected.get(r['block'], ('',))[0] not in r['mro']]
    as_mxnet = [r for r in fails if r not in unexpected]
    # A block that raises on MXNet but runs here is a difference too.
    missing = [r for r in results if r['ok'] and r['block'] in expected]
    if missing and not unexpected:
        r = missing[0]
        unexpected = [dict(r, type='no error', error='expected ' +
                           expected[r['block']][0] + ' as on MXNet: ' +
                           expected[r['block']][1])]
    if unexpected:
        r = unexpected[0]
        row.update(status='failed',
                   detail=f"block {r['block']}: {r['type']}: {r['error']}",
                   trace=r.get('trace', ''))
    elif len([r for r in results if r['block'] != 'waitall']) < n:
        row.update(status='failed', detail='stopped early')
    else:
        row.update(status='ran', detail='')
    if as_mxnet:
        row['detail'] = (row['detail'] + '; ' if row['detail'] else '') + \
            'as on MXNet without a GPU: ' + ', '.join(
                f"block {r['block']} raised {r['type']}" for r in as_mxnet)
    return row


def _git_head():
    try:
        out = subprocess.run(['git', '-C', REPO, 'log', '-1', '--format=%h %s'],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or '(not a git checkout)'
    except (OSError, subprocess.SubprocessError):
        return '(not a git checkout)'


def write_report(path, rows, args):
    gpus = getattr(args, 'gpus_as_cpus', 0)
    lines = ['# The classic d2l chapters on d2lmini', '',
             f'd2lmini: `{REPO}` at `{_git_head()}`.', '',
             f'Measured with `python tools/classic_chapters/run.py` on '
             f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, '
             f'CPU only ({os.cpu_count()} cores), '
             + (f'`--gpus-as-cpus {gpus}` (`mx.gpu(i)` is `mx.cpu(i)` '
                f'for i < {gpus}), ' if gpus else '')
             + (f'`CLASSIC_EPOCHS={args.epochs}`' if args.epochs is not None
                else 'epoch counts as written') + '.', '',
             '| chapter | blocks | result | wall time (s) |',
             '| --- | --- | --- | --- |']
    for r in rows:
        res = r['status'] + (f": {r['detail']}" if r['detail'] else '')
        res = res.replace('|', '\\|')
        lines.append(f"| {r['chapter']} | {r['blocks']} | {res} | {r['seconds']} |")
    ran = sum(r['status'] == 'ran' for r in rows)
    lines += ['', f'{ran} of {len(rows)} chapters ran.', '',
              '## What the chapters printed', '',
              'What each chapter printed, and, as in Jupyter, each '
              "block's last expression (`Out:`): the last 40 lines, to "
              'compare with what the book shows.', '']
    for r in rows:
        if r.get('printed'):
            lines += [f"### {r['chapter']}", '', '```']
            lines += r['printed'][-40:]
            lines += ['```', '']
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--src', required=True, help='a d2l-zh v1 checkout')
    p.add_argument('chapters', nargs='*', help='chapter paths or substrings '
                   '(default: all 13)')
    p.add_argument('--timeout', type=float, default=1800,
                   help='seconds per chapter (default 1800)')
    p.add_argument('--report', help='write a markdown table here')
    p.add_argument('--gpus-as-cpus', type=int, default=0, metavar='N',
                   help='run as if there were N GPUs: mx.gpu(i) is mx.cpu(i) '
                        'for i < N (default 0: as MXNet on a CPU-only machine)')
    p.add_argument('-v', '--verbose', action='store_true',
                   help="print the chapters' output to stderr")
    args = p.parse_args(argv)
    env_epochs = os.environ.get('CLASSIC_EPOCHS')
    args.epochs = int(env_epochs) if env_epochs else None
    chapters = [c for c in CHAPTERS
                if not args.chapters or any(s in c for s in args.chapters)]
    rows = []
    for ch in chapters:
        row = run_chapter(args.src, ch, args.timeout, args.epochs, args.verbose,
                          args.gpus_as_cpus)
        rows.append(row)
        print(f"{row['status']:6s} {row['seconds']:7.1f} s  {ch}"
              + (f"  -- {row['detail']}" if row['detail'] else ''), flush=True)
        if row['status'] != 'ran' and args.verbose and row.get('trace'):
            print(row['trace'], file=sys.stderr)
    if args.report:
        write_report(args.report, rows, args)
    return 0 if all(r['status'] == 'ran' for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
