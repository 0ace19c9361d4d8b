"""Run today's d2l-en chapters' MXNet cells on d2lmini, imports changed only.

    python tools/d2l_chapters/run.py [--src D2L_EN] [CHAPTER ...]
    python tools/d2l_chapters/run.py --python /tmp/mxvenv/bin/python \\
        --real-mxnet --json mxnet.json          # the same cells on MXNet

``--src`` is the d2l-en book (a git repository, read at ``--commit``,
default 23d7a5ae, or a checkout / ``git archive`` of it); nothing of it is
copied into this repository.  Each chapter's MXNet-tab cells are picked as
d2lbook picks them (:func:`mxnet_cells`) and run in order in one fresh
subprocess (``tools/chapter_cells.py``, shared with the classic runner).
Unlike the classic runner, a failing cell does not stop the chapter: every
cell is run and reported, so one missing feature does not hide the rest
(cells that fail only because an earlier one did are marked as such).

What is changed, and nothing else
---------------------------------
* Imports: ``mxnet`` and ``mxnet.<sub>`` are ``d2lmini`` and
  ``d2lmini.<sub>``; ``from d2l import mxnet as d2l`` loads d2l 1.0.3's
  ``d2l/mxnet.py``, unchanged, from ``--d2l`` (its own ``import mxnet``
  goes through the same alias).  ``--real-mxnet`` sets no alias.
* d2lbook's own rewriting of a cell for the MXNet tab: the tab marker line
  is dropped and ``if tab.selected(...)`` branches of other tabs removed.
* Jupyter-only lines (``%matplotlib inline``, ``!nvidia-smi``) are skipped.
* GPUs: ``gpu(i)`` is ``cpu(i + 1)`` for ``i < --gpus-as-cpus`` (default 2
  on d2lmini, so ``cpu(0)`` stays the host and the two "GPUs" are distinct
  logical CPUs), and ``num_gpus()`` says so, in ``mxnet``,
  ``mxnet.context`` and ``npx`` alike.  ``--gpus-as-cpus 0`` runs as a
  CPU-only MXNet does (``num_gpus() == 0``; the default with
  ``--real-mxnet``).
* Data: each chapter runs in a fresh temporary folder; Fashion-MNIST is
  linked from ``--data`` into ``$MXNET_HOME/datasets/fashion-mnist`` (where
  ``gluon.data.vision.FashionMNIST`` looks by default, as d2l 1.0.3 calls
  it) and ``../data/fashion-mnist``; d2lmini also gets ``D2LMINI_DATA``.
  MXNet would check the files' SHA-1 against its own S3 copies (another
  gzip wrapping of the same images) and, offline, fail to download them:
  with ``--real-mxnet`` the linked files are taken as they are.
* ``D2L_EPOCHS=N`` (opt-in) sets the epoch count of the three training
  runs (:data:`EPOCH_LINES`); without it they run as written.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import chapter_cells  # noqa: E402  (tools/chapter_cells.py, shared)

COMMIT = '23d7a5ae'
DEFAULT_SRC = '/work/.mirror/d2l-ai+d2l-en/repo'
DEFAULT_D2L = '/tmp/d2l103/d2l/mxnet.py'
EXPECTED_CELLS = 148          # the count of MXNet-tab cells

CHAPTERS = [
    'chapter_preliminaries/ndarray.md',
    'chapter_preliminaries/autograd.md',
    'chapter_builders-guide/model-construction.md',
    'chapter_builders-guide/parameters.md',
    'chapter_builders-guide/init-param.md',
    'chapter_builders-guide/lazy-init.md',
    'chapter_builders-guide/custom-layer.md',
    'chapter_builders-guide/read-write.md',
    'chapter_builders-guide/use-gpu.md',
    'chapter_convolutional-neural-networks/lenet.md',
    'chapter_computational-performance/hybridize.md',
    'chapter_computational-performance/async-computation.md',
    'chapter_computational-performance/auto-parallelism.md',
    'chapter_computational-performance/multiple-gpus.md',
    'chapter_computational-performance/multiple-gpus-concise.md',
]

# d2l-en's config.ini: ``tabs = pytorch, mxnet, jax, tensorflow``; the first
# is the default tab, which owns every cell that names no tab.
DEFAULT_TAB = 'pytorch'
TAB = 'mxnet'

# chapter -> the epoch-count line D2L_EPOCHS rewrites (group 2 replaced).
EPOCH_LINES = {
    'chapter_convolutional-neural-networks/lenet.md':
        r'^(trainer = d2l\.Trainer\(max_epochs=)(\d+)(.*)$',
    'chapter_computational-performance/multiple-gpus.md':
        r'^(\s*num_epochs = )(\d+)()$',
    'chapter_computational-performance/multiple-gpus-concise.md':
        r'^(\s*timer, num_epochs = d2l\.Timer\(\), )(\d+)()$',
}

# d2lbook's markers: ``#@tab a, b`` (older chapters) anywhere in the cell,
# else ``%%tab a, b``; the first match names the cell's tabs.
_TAB_MARKS = (re.compile(r'# *@tab +([\w, ]+)'), re.compile(r'%%tab +([\w, ]+)'))
_SELECTED = re.compile(r'''^(\s*)if tab\.selected\((.*)\):\s*$''')


def cell_tabs(code, default_tab=DEFAULT_TAB):
    """The tabs a code cell belongs to (``['all']`` for every tab)."""
    for mark in _TAB_MARKS:
        m = mark.search(code)
        if m:
            return [t.strip() for t in m.group(1).split(',')]
    return [default_tab]


def _keep_branches(lines, tab):
    """Keep only the body of ``if tab.selected(...)`` branches naming ``tab``.

    As d2lbook does when it builds a tab's notebook: the ``if`` line goes,
    the body of a matching branch moves four spaces left, the body of any
    other branch is dropped.
    """
    kept, skipping, indent = [], None, 0
    for line in lines:
        if skipping is not None and line.strip() and \
                len(line) - len(line.lstrip()) <= indent:
            skipping = None
        m = _SELECTED.match(line)
        if m:
            indent = len(m.group(1))
            skipping = not re.search(r'''['"]%s['"]''' % tab, m.group(2))
            continue
        if skipping is None:
            kept.append(line)
        elif not skipping:
            kept.append(line[4:])
    return kept


def mxnet_cells(markdown, tab=TAB, default_tab=DEFAULT_TAB):
    """The cells of ``tab`` in a chapter, as d2lbook's notebook has them.

    A ```` ```{.python .input} ```` cell belongs to the tabs its marker
    names (``all``: every tab; no marker: ``default_tab``); the cell that
    loads d2lbook's tab extension is dropped, and so is the marker line.
    """
    cells = []
    for code in chapter_cells.extract_blocks(markdown):
        tabs = cell_tabs(code, default_tab)
        if not (tabs == ['all'] or tab in tabs):
            continue
        if '%load_ext d2lbook.tab' in code:
            continue
        lines = [l for l in code.splitlines()
                 if not any(m.search(l) for m in _TAB_MARKS)]
        cells.append('\n'.join(_keep_branches(lines, tab)) + '\n')
    return cells


def prepare(chapter, markdown, epochs=None):
    cells = [chapter_cells.strip_jupyter(c) for c in mxnet_cells(markdown)]
    if epochs is not None and chapter in EPOCH_LINES:
        pat = re.compile(EPOCH_LINES[chapter], re.M)
        cells = [pat.sub(lambda m: m.group(1) + str(epochs) + m.group(3), c)
                 for c in cells]
    return cells


def read_chapter(src, chapter, commit=COMMIT):
    """A chapter's markdown: ``git show`` from a repository, else the file."""
    if os.path.isfile(os.path.join(src, chapter)):
        with open(os.path.join(src, chapter), encoding='utf-8') as f:
            return f.read()
    out = subprocess.run(['git', '--git-dir', _git_dir(src), 'show',
                          f'{commit}:{chapter}'], capture_output=True,
                         text=True, timeout=60)
    if out.returncode:
        raise SystemExit(f'cannot read {chapter} from {src} at {commit}: '
                         f'{out.stderr.strip()}')
    return out.stdout


def _git_dir(src):
    dotgit = os.path.join(src, '.git')
    return dotgit if os.path.exists(dotgit) else src


def _link_data(tmp, data):
    """Fashion-MNIST where MXNet's and the book's default roots point."""
    env = {'MXNET_HOME': os.path.join(tmp, 'mxnet_home')}
    if not data:
        return env
    for folder in (os.path.join(env['MXNET_HOME'], 'datasets', 'fashion-mnist'),
                   os.path.join(tmp, 'data', 'fashion-mnist')):
        os.makedirs(folder)
        for name in os.listdir(data):
            if name.endswith('.gz'):
                os.symlink(os.path.join(data, name), os.path.join(folder, name))
    return env


def run_chapter(chapter, cells, args):
    """Run one chapter's cells; a row with one entry per cell."""
    real = args.real_mxnet
    spec = {'keep_going': True, 'gpus_as_cpus': args.gpus_as_cpus,
            'gpu_offset': 1, 'd2l_file': os.path.abspath(args.d2l),
            'aliases': {} if real else {'mxnet': 'd2lmini'}}
    env = dict(os.environ)
    env.setdefault('MPLBACKEND', 'Agg')
    if real and args.data:
        spec['local_files'] = sorted(
            n for n in os.listdir(args.data) if n.endswith('.gz'))
    if not real:
        env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
        if args.data:
            env.setdefault('D2LMINI_DATA', args.data)
    with tempfile.TemporaryDirectory(prefix='d2l_chapter_') as tmp:
        env.update(_link_data(tmp, args.data))
        cwd = os.path.join(tmp, os.path.dirname(chapter))
        os.makedirs(cwd)
        results, out, err, rc, wall = chapter_cells.run_cells(
            cells, cwd, args.timeout, spec, env=env, python=args.python,
            verbose=args.verbose)
    printed = chapter_cells.printed_by_cell(out)
    by_cell = {r['block']: r for r in results or []}
    rows, failed_before = [], False
    for i, code in enumerate(cells, 1):
        r = by_cell.get(i)
        if r is None:
            why = ('timeout after %s s' % args.timeout if rc is None else
                   (err.strip().splitlines() or [f'exit {rc}'])[-1])
            r = {'ok': False, 'type': 'NotRun', 'error': why, 'seconds': 0}
        rows.append({'cell': i, 'first_line': _first_line(code),
                     'ok': r['ok'], 'type': r.get('type', ''),
                     'error': r.get('error', ''), 'seconds': r['seconds'],
                     'after_failure': failed_before and not r['ok'],
                     'trace': r.get('trace', ''),
                     'printed': printed.get(i, [])[-40:]})
        failed_before = failed_before or not r['ok']
    if results and results[-1]['block'] == 'waitall' and not results[-1]['ok']:
        rows[-1]['error'] += ' (waitall: %s)' % results[-1]['error']
    return {'chapter': chapter, 'cells': rows, 'seconds': round(wall, 1)}


def _first_line(code):
    for line in code.splitlines():
        if line.strip() and not line.lstrip().startswith('#'):
            return line.strip()[:60]
    return ''


# --- comparing with MXNet's run, and the report ---------------------------

_NUMBER = re.compile(r'-?\d+(\.\d*)?(e[-+]?\d+)?')


def compare(ours, theirs):
    """``same``, ``same shape`` (equal once numbers are masked: random draws,
    timings) or ``differs: <our first differing line>``."""
    if ours == theirs:
        return 'same'
    mask = lambda lines: [_NUMBER.sub('#', l) for l in lines]
    if mask(ours) == mask(theirs):
        return 'same shape'
    for a, b in zip(ours + ['(nothing)'], theirs + ['(nothing)']):
        if _NUMBER.sub('#', a) != _NUMBER.sub('#', b):
            return f'differs: `{a[:70]}` vs MXNet `{b[:70]}`'
    return 'differs'


def _result(c):
    if c['ok']:
        return 'ok'
    return (('(after) ' if c['after_failure'] else '') +
            f"{c['type']}: {c['error'][:110]}")


def _groups(run):
    """Failing cells grouped by error, leaving out a ``NameError`` after an
    earlier failure (a name that cell never defined)."""
    groups = {}
    for ch in run:
        for c in ch['cells']:
            if c['ok'] or (c['after_failure'] and c['type'] == 'NameError'):
                continue
            key = f"{c['type']}: {c['error'][:100]}"
            groups.setdefault(key, []).append(
                f"{os.path.basename(ch['chapter'])[:-3]} {c['cell']}")
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def _md(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


def write_report(path, run, args, baseline=None):
    ok = lambda chs: sum(c['ok'] for ch in chs for c in ch['cells'])
    total = sum(len(ch['cells']) for ch in run)
    base = {ch['chapter']: ch for ch in baseline or []}
    lines = ['# The d2l-en chapters (MXNet tab) on d2lmini', '',
             f'd2lmini `{chapter_cells.git_head(REPO)[:7]}`; d2l-en at '
             f'`{args.commit}`; d2l 1.0.3 `d2l/mxnet.py` unchanged. Measured '
             f'with `python tools/d2l_chapters/run.py` on '
             f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, CPU only '
             f'({os.cpu_count()} cores): {run[0]["mode"]}'
             + ('' if 'D2L_EPOCHS' in run[0]['mode'] else
                ', epoch counts as written') + '.', '',
             f'**{ok(run)} of {total} cells ran on d2lmini**'
             + (f'; {ok(baseline)} of '
                f'{sum(len(ch["cells"]) for ch in baseline)} on MXNet 1.9.1 '
                f'({baseline[0].get("mode", "")})' if baseline else '')
             + f' (the issue counts {EXPECTED_CELLS}).', '',
             '| chapter | cells | ran on d2lmini | s | ran on MXNet | s |',
             '| --- | --- | --- | --- | --- | --- |']
    for ch in run:
        b = base.get(ch['chapter'])
        lines.append(f"| {ch['chapter']} | {len(ch['cells'])} | "
                     f"{ok([ch])} | {ch['seconds']} | "
                     + (f"{ok([b])} | {b['seconds']} |" if b else '- | - |'))
    lines += ['', '## Failing cells, grouped by error', '',
              'Every failing cell but a `NameError` after an earlier '
              "failure (a name that cell never defined):", '']
    for key, cells in _groups(run):
        lines.append(f'* {len(cells)} x `{_md(key)}`: {", ".join(cells)}')
    lines += ['', '## Cell by cell', '',
              'Output: `same` (printed the same lines as MXNet), `same '
              'shape` (the same once numbers are masked: random draws, '
              'timings), or the first differing line. `(after)`: failed '
              'after an earlier cell of the chapter had failed.', '',
              '| chapter | cell | code | d2lmini | MXNet 1.9.1 | output |',
              '| --- | --- | --- | --- | --- | --- |']
    for ch in run:
        b = base.get(ch['chapter'])
        name = os.path.basename(ch['chapter'])[:-3]
        for i, c in enumerate(ch['cells']):
            theirs = b['cells'][i] if b and i < len(b['cells']) else None
            same = compare(c['printed'], theirs['printed']) \
                if theirs and c['ok'] and theirs['ok'] else ''
            lines.append(f"| {name} | {c['cell']} | `{_md(c['first_line'])}` "
                         f"| {_md(_result(c))} | "
                         f"{_md(_result(theirs)) if theirs else '-'} | "
                         f"{_md(same)} |")
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('chapters', nargs='*', help='chapter paths or substrings '
                   '(default: all 15)')
    p.add_argument('--src', default=DEFAULT_SRC, help='d2l-en: a git '
                   'repository (read at --commit) or a checkout')
    p.add_argument('--commit', default=COMMIT)
    p.add_argument('--d2l', default=DEFAULT_D2L,
                   help="d2l 1.0.3's d2l/mxnet.py (default %(default)s)")
    p.add_argument('--data', default=chapter_cells.shared_data(REPO),
                   help='a folder with the four Fashion-MNIST .gz files')
    p.add_argument('--python', default=sys.executable,
                   help='the Python that runs the cells')
    p.add_argument('--real-mxnet', action='store_true',
                   help='import the real mxnet (no alias), for a baseline')
    p.add_argument('--gpus-as-cpus', type=int, default=None, metavar='N',
                   help='gpu(i) is cpu(i+1) for i < N (default 2; 0 with '
                        '--real-mxnet)')
    p.add_argument('--timeout', type=float, default=3600,
                   help='seconds per chapter (default 3600)')
    p.add_argument('--json', help='write the per-cell results here')
    p.add_argument('--baseline', help="MXNet's results (a --json file) to "
                   'compare with in the report')
    p.add_argument('--report', help='write the markdown report here')
    p.add_argument('--load', help='report on these results (a --json file) '
                   'instead of running the chapters')
    p.add_argument('-v', '--verbose', action='store_true',
                   help="print the cells' output to stderr")
    args = p.parse_args(argv)
    if args.gpus_as_cpus is None:
        args.gpus_as_cpus = 0 if args.real_mxnet else 2
    env_epochs = os.environ.get('D2L_EPOCHS')
    args.epochs = int(env_epochs) if env_epochs else None
    chapters = [c for c in CHAPTERS
                if not args.chapters or any(s in c for s in args.chapters)]
    mode = ('MXNet 1.9.1' if args.real_mxnet else 'd2lmini') + (
        f', gpu(i) -> cpu(i+1) for i < {args.gpus_as_cpus}'
        if args.gpus_as_cpus else ', num_gpus() = 0') + (
        f', D2L_EPOCHS={args.epochs}' if args.epochs is not None else '')
    run = []
    if args.load:
        with open(args.load, encoding='utf-8') as f:
            run = json.load(f)
        chapters = []
    for chapter in chapters:
        cells = prepare(chapter, read_chapter(args.src, chapter, args.commit),
                        args.epochs)
        row = run_chapter(chapter, cells, args)
        row['mode'] = mode
        run.append(row)
        n_ok = sum(c['ok'] for c in row['cells'])
        print(f"{n_ok:3d}/{len(cells):3d} cells {row['seconds']:7.1f} s  "
              f"{chapter}", flush=True)
        for c in row['cells']:
            if not c['ok'] and not c['after_failure']:
                print(f"      cell {c['cell']}: {c['type']}: {c['error'][:120]}",
                      flush=True)
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump(run, f, indent=1)
    if args.report:
        baseline = None
        if args.baseline:
            with open(args.baseline, encoding='utf-8') as f:
                baseline = json.load(f)
        write_report(args.report, run, args, baseline)
    return 0 if all(c['ok'] for ch in run for c in ch['cells']) else 1


if __name__ == '__main__':
    sys.exit(main())
