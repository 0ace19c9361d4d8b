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
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import chapter_cells  # noqa: E402  (tools/chapter_cells.py, shared)

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

extract_blocks = chapter_cells.extract_blocks
_strip_jupyter = chapter_cells.strip_jupyter


def prepare(chapter, markdown, epochs=None):
    blocks = [_strip_jupyter(b) for b in extract_blocks(markdown)]
    if epochs is not None and chapter in EPOCH_LINES:
        pat = re.compile(EPOCH_LINES[chapter], re.M)
        blocks = [pat.sub(lambda m: m.group(1) + str(epochs) + m.group(3), b)
                  for b in blocks]
    return blocks


# What the child process is told: ``mxnet`` (and ``mxnet.<sub>``) is
# d2lmini, ``d2lzh`` the first edition's helpers.
ALIASES = {'mxnet': 'd2lmini', 'd2lzh': 'd2lmini.d2l.classic'}


def run_chapter(src, chapter, timeout, epochs=None, verbose=False, gpus_as_cpus=0):
    with open(os.path.join(src, chapter), encoding='utf-8') as f:
        blocks = prepare(chapter, f.read(), epochs)
    table = {} if gpus_as_cpus else EXPECTED.get(chapter, {})
    expected = {str(k): v[0] for k, v in table.items()}
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    env.setdefault('MPLBACKEND', 'Agg')
    data = chapter_cells.shared_data(REPO)
    if 'D2LMINI_DATA' not in env and data:
        env['D2LMINI_DATA'] = data
    spec = {'expected': expected, 'aliases': ALIASES,
            'gpus_as_cpus': gpus_as_cpus}
    results, out, err, rc, wall = chapter_cells.run_cells(
        blocks, os.path.join(src, os.path.dirname(chapter)), timeout, spec,
        env=env, verbose=verbose)
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


def write_report(path, rows, args):
    gpus = getattr(args, 'gpus_as_cpus', 0)
    lines = ['# The classic d2l chapters on d2lmini', '',
             f'd2lmini: `{REPO}` at `{chapter_cells.git_head(REPO)}`.', '',
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
