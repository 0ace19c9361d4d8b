"""Run MXNet 1.9.1's own unit tests, unchanged, against d2lmini; write a report.

    python tools/mxnet_tests/run.py [--mxnet DIR] [--out REPORT.md]
                                    [--timeout S] [-k EXPR] [FILE[::TEST] ...]

Tests the d2lmini importable from the CURRENT DIRECTORY (run it from your
worktree root to test your copy). DIR holds MXNet's sources with
``tests/python/unittest/`` (default /tmp/mx191). FILEs default to the ten
files of issue 15, the two KVStore files of issue 7, the five symbolic-API
files of issue 10 and the three mx.np files of issue 27 (``--numpy``: only
those). Each file runs in its own pytest process, with the
harness plugin (shim/_mxnet_harness.py) loaded and shim/ first on
PYTHONPATH; a process that dies or hangs is restarted after the test it was
running, which is reported as crashed. See README.md.
"""
import argparse
import ast
import collections
import concurrent.futures
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(HERE, 'shim')
sys.path.insert(0, HERE)
import causes  # noqa: E402
import scope  # noqa: E402

DEFAULT_FILES = ['test_autograd.py', 'test_ndarray.py', 'test_gluon.py',
                 'test_gluon_trainer.py', 'test_gluon_data.py',
                 'test_optimizer.py', 'test_init.py', 'test_loss.py',
                 'test_engine.py', 'test_exc_handling.py',
                 'test_kvstore.py', 'test_kvstore_custom.py',
                 'test_symbol.py', 'test_executor.py', 'test_module.py',
                 'test_io.py', 'test_metric.py']
# Issue 27: mx.np / npx and Gluon in NumPy mode (``--numpy`` runs only these).
NUMPY_FILES = ['test_numpy_ndarray.py', 'test_numpy_gluon.py', 'test_numpy_op.py']
DEFAULT_FILES += NUMPY_FILES


def find_d2lmini(cwd):
    """The repository root holding the d2lmini importable from ``cwd``."""
    sys.path.insert(0, cwd)
    try:
        spec = importlib.util.find_spec('d2lmini')
    finally:
        sys.path.pop(0)
    if spec is None or not spec.origin:
        sys.exit(f'run.py: no d2lmini importable from {cwd}')
    return os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))


def git_head(root):
    """HEAD of the checkout, and the last commit that touched d2lmini/."""
    def log(*extra):
        out = subprocess.run(['git', '-C', root, 'log', '-1', '--format=%h %s', *extra],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    try:
        head, code = log(), log('--', 'd2lmini')
    except (OSError, subprocess.CalledProcessError):
        return '(not a git checkout)'
    dirty = subprocess.run(['git', '-C', root, 'status', '--porcelain', '--', 'd2lmini'],
                           capture_output=True, text=True).stdout.strip()
    text = head if head == code else f'{head}; d2lmini/ last changed in {code}'
    return text + (' (plus uncommitted changes in d2lmini/)' if dirty else '')


def static_tests(path):
    """Test names pytest would collect from ``path``, read from its AST."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read())
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith('test'):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith('Test'):
            names += [f'{node.name}::{m.name}' for m in node.body
                      if isinstance(m, ast.FunctionDef) and m.name.startswith('test')]
    return names


def prepare(mxnet_dir, tmp):
    """Copy upstream's test tree into ``tmp`` (never into the repository)."""
    src = os.path.join(mxnet_dir, 'tests', 'python')
    unit = os.path.join(src, 'unittest')
    if not os.path.isdir(unit):
        sys.exit(f'run.py: {unit} not found; see tools/mxnet_tests/README.md')
    shutil.copytree(unit, os.path.join(tmp, 'unittest'),
                    ignore=shutil.ignore_patterns('__pycache__'))
    for extra in ('common',):
        if os.path.isdir(os.path.join(src, extra)):
            shutil.copytree(os.path.join(src, extra), os.path.join(tmp, extra))
    # Upstream's conftest (tests/python/ or, in later versions, the repository
    # root) runs as is, next to the tests; 1.9.1's tree at /tmp/mx191 has none.
    for conftest in (os.path.join(src, 'conftest.py'),
                     os.path.join(mxnet_dir, 'conftest.py')):
        if os.path.isfile(conftest):
            shutil.copy(conftest, tmp)
            break
    for root, dirs, _ in os.walk(tmp):      # copies keep upstream's read-only modes
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    with open(os.path.join(tmp, 'pytest.ini'), 'w') as f:
        f.write('[pytest]\npython_files = test_*.py\n')
    os.makedirs(os.path.join(tmp, 'work'))   # one sub-directory per file: cwd of its tests


_RANK = {'passed': 0, 'skipped': 1, 'failed': 2}


def read_events(path):
    """The JSON lines the plugin wrote (a line cut off by a hard exit is dropped)."""
    events = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return events


def apply_events(events, outcomes, done, collect_errors, root):
    """Fold one pytest run's events into ``outcomes`` (worst phase wins) and
    ``done``; returns (finished normally?, test running when it stopped)."""
    finished, started = False, None
    for ev in events:
        node = ev.get('nodeid', '').split('unittest/', 1)[-1]
        if ev['event'] == 'start':
            started = node
        elif ev['event'] == 'report':
            done.add(node)
            prev = outcomes.get(node)
            if prev is None or _RANK[ev['outcome']] > _RANK[prev[0]]:
                reason = ev['reason']
                if ev['outcome'] == 'failed' and ev['when'] != 'call':
                    reason = f'[{ev["when"]}] {reason}'
                outcomes[node] = (ev['outcome'], reason)
            if ev['when'] == 'teardown':
                started = None
        elif ev['event'] == 'collect_error':
            collect_errors.append(ev['reason'])
        elif ev['event'] == 'env':
            want = os.path.join(root, 'd2lmini')
            if os.path.realpath(ev['d2lmini']) != os.path.realpath(want):
                sys.exit(f'run.py: the tests imported {ev["d2lmini"]}, not {want}; '
                         'is PYTHONPATH or an install shadowing it?')
        elif ev['event'] == 'finish':
            finished = True
    return finished, started


def crash_reason(results_path, returncode, timeout):
    """Why a pytest process stopped inside a test: a hang or an exit status."""
    hang = ''
    if os.path.exists(results_path + '.hang'):
        with open(results_path + '.hang') as f:
            hang = f.read()
    if not hang.strip():
        return f'exit status {returncode}'
    frames = [ln.strip() for ln in hang.splitlines() if ln.strip().startswith('File')]
    return (f'hung: no progress for {timeout + 30:g} s, stopped by faulthandler; '
            f'main thread in {frames[0] if frames else "?"}')


def run_file(fname, selectors, args, tmp, root):
    """Run one upstream file; returns ({test: (outcome, reason)}, errors, crashed).

    A pytest process that dies or hangs inside a test is started again with
    every test that already has a result deselected, so one crash costs one
    test, not the rest of the file."""
    results_path = os.path.join(tmp, f'{fname}.jsonl')
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [SHIM, root] + ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
    if args.dense_only:
        env['MXH_DENSE_ONLY'] = '1'
    if args.seed is not None:
        env['MXNET_TEST_SEED'] = env['MXNET_MODULE_SEED'] = str(args.seed)
    env.update(MXH_UPSTREAM_DIR=tmp, MXH_RESULTS=results_path,
               MXH_TIMEOUT=str(args.timeout), PYTHONDONTWRITEBYTECODE='1')
    # Tests write files (params, states) into their cwd: one per file keeps
    # files run in parallel (--jobs) from clobbering each other's.
    work = os.path.join(tmp, 'work', fname)
    os.makedirs(work, exist_ok=True)
    targets = [os.path.join(tmp, 'unittest', fname + ('::' + s if s else ''))
               for s in (selectors or [''])]
    outcomes, collect_errors, crashed, done = {}, [], [], set()
    for attempt in range(len(static_tests(os.path.join(tmp, 'unittest', fname))) + 2):
        cmd = [sys.executable, '-m', 'pytest', '-p', '_mxnet_harness',
               '-p', 'no:cacheprovider', '-c', os.path.join(tmp, 'pytest.ini'),
               '--rootdir', tmp, '-q', '--tb=short', *targets]
        if args.k:
            cmd += ['-k', args.k]
        for nodeid in sorted(done):     # node ids are relative to --rootdir
            cmd += ['--deselect', f'unittest/{nodeid}']
        open(results_path, 'w').close()
        log_path = os.path.join(tmp, f'{fname}.{attempt}.log')
        with open(log_path, 'w') as log:
            proc = subprocess.run(cmd, cwd=work, env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
        with open(log_path) as log:
            log_text = log.read()
        if args.log:
            sys.stderr.write(log_text.replace(tmp + os.sep, ''))
        finished, started = apply_events(read_events(results_path), outcomes, done,
                                         collect_errors, root)
        if finished or started is None:
            if not finished:
                collect_errors.append(f'pytest exited with status {proc.returncode} '
                                      f'without finishing: {log_text.strip()[-300:]}')
            break
        if started in crashed:
            collect_errors.append(f'{started} crashed again although deselected; '
                                  'giving up on the rest of the file')
            break
        why = crash_reason(results_path, proc.returncode, args.timeout)
        outcomes[started] = ('failed', f'CRASHED: test process died ({why}); '
                                       'the harness went on after it')
        crashed.append(started)
        done.add(started)
    strip = lambda text: text.replace(tmp + os.sep, '')   # noqa: E731
    outcomes = {n: (o, strip(r)) for n, (o, r) in outcomes.items()}
    return outcomes, [strip(e) for e in collect_errors], crashed


def normalise(reason, lines=1):
    """The first ``lines`` non-empty lines of a reason, addresses blanked.

    'AssertionError: ' followed by the message on the next lines counts the
    type and the first message line as one line."""
    parts = [ln.strip() for ln in (reason or '').splitlines() if ln.strip()]
    if len(parts) > 1 and parts[0].endswith(':') and ' ' not in parts[0].rstrip(':'):
        parts[:2] = [parts[0] + ' ' + parts[1]]
    line = ' / '.join(parts[:lines])
    line = re.sub(r'0x[0-9a-fA-F]+', '0x…', line)
    return line[:240 * lines]


def command_line(args):
    parts = ['python tools/mxnet_tests/run.py', *args.files]
    if args.numpy and args.files == NUMPY_FILES:
        parts[1:] = ['--numpy']
    if args.k:
        parts += ['-k', repr(args.k)]
    if args.dense_only:
        parts.append('--dense-only')
    if args.seed is not None:
        parts += ['--seed', str(args.seed)]
    if args.timeout != 60:
        parts += ['--timeout', f'{args.timeout:g}']
    return ' '.join(parts)


def build_report(per_file, statics, args, root, elapsed, mxnet_dir):
    lines = ['# MXNet 1.9.1 upstream unit tests on d2lmini', '',
             f'- d2lmini: `{root}` at `{git_head(root)}`',
             f'- upstream tests: `{mxnet_dir}/tests/python/unittest` (run unchanged)',
             f'- generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC '
             f'in {elapsed:.0f} s, per-test timeout {args.timeout:g} s',
             f'- command: `{command_line(args)}`',
             *(['', '**--dense-only: sparse comparisons in compare_optimizer skipped; '
                 'these counts are NOT the measure.**'] if args.dense_only else []),
             '',
             'In scope = not listed in `scope.py` (out of scope: sparse storage, '
             'contrib, DLPack, mx.image, the model zoo, ...). "not run" = tests in the file that '
             'produced no result (collection error, deselected by -k, ...).', '',
             '| file | tests | passed | failed | skipped | not run | in-scope passed '
             '| in-scope failed | out-of-scope passed/failed/skipped |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---|']
    totals = collections.Counter()
    in_scope_fail = collections.defaultdict(list)
    in_scope_raw = {}
    by_file_fail = collections.defaultdict(list)
    for fname, (outcomes, collect_errors, crashed) in per_file.items():
        c = collections.Counter()
        names = set(f'{fname}::{t}' for t in statics.get(fname, []))
        for node in names | set(outcomes):
            outcome, reason = outcomes.get(node, ('not run', ''))
            out_reason = scope.reason(node)
            c[outcome] += 1
            c['tests'] += 1
            if out_reason is None:
                c['in ' + outcome] += 1
                if outcome == 'failed':
                    in_scope_fail[normalise(reason)].append(node)
                    in_scope_raw[node] = reason
                    by_file_fail[fname].append((node, normalise(reason, 3)))
            else:
                c['out ' + outcome] += 1
        totals.update(c)
        lines.append(f'| {fname} | {c["tests"]} | {c["passed"]} | {c["failed"]} | '
                     f'{c["skipped"]} | {c["not run"]} | {c["in passed"]} | '
                     f'{c["in failed"]} | {c["out passed"]}/{c["out failed"]}/'
                     f'{c["out skipped"]} |')
    t = totals
    lines.append(f'| **total** | {t["tests"]} | {t["passed"]} | {t["failed"]} | '
                 f'{t["skipped"]} | {t["not run"]} | {t["in passed"]} | '
                 f'{t["in failed"]} | {t["out passed"]}/{t["out failed"]}/'
                 f'{t["out skipped"]} |')
    lines.append('')
    errors = [(f, e) for f, (_, errs, _) in per_file.items() for e in errs]
    if errors:
        lines += ['## Collection errors / aborted runs', '']
        lines += [f'- `{f}`: {normalise(e)}' for f, e in errors]
        lines.append('')
    crashed = [n for _, (_, _, cr) in per_file.items() for n in cr]
    if crashed:
        lines += ['## Crashed or hung tests (process restarted after them)', '']
        lines += [f'- `{n}`' for n in crashed]
        lines.append('')
    lines += [f'## In-scope failures by cause ({len(in_scope_raw)})', '',
              'Each failing test counted once, under the first failure it hit '
              '(causes.py reads the reasons below).', '',
              *causes.table(in_scope_raw), '']
    lines += [f'## In-scope failures by reason ({sum(map(len, in_scope_fail.values()))})', '']
    for reason, nodes in sorted(in_scope_fail.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f'- **{len(nodes)}** × `{reason}`')
        lines += [f'  - `{n}`' for n in sorted(nodes)]
    lines += ['', '## In-scope failures by file', '']
    for fname in per_file:
        fails = sorted(by_file_fail.get(fname, []))
        lines.append(f'### {fname} ({len(fails)})')
        lines += [f'- `{n.split("::", 1)[1]}`: {r}' for n, r in fails]
        lines.append('')
    lines += ['## Out-of-scope tests (see scope.py)', '',
              '| test | outcome | why out of scope | in-scope part to pin in tests/ |',
              '|---|---|---|---|']
    for fname, (outcomes, _, _) in per_file.items():
        names = set(f'{fname}::{t}' for t in statics.get(fname, [])) | set(outcomes)
        for node in sorted(names):
            why = scope.reason(node)
            if why is not None:
                outcome, why_failed = outcomes.get(node, ('not run', ''))
                if outcome == 'failed':
                    outcome += ': ' + normalise(why_failed)[:100].replace('|', '\\|')
                lines.append(f'| `{node}` | {outcome} | {why} | {scope.partly(node) or ""} |')
    lines.append('')
    return '\n'.join(lines), totals


def baseline_section(per_file, path):
    """Markdown: tests whose outcome changed since the ``--json`` file ``path``."""
    with open(path) as f:
        before = json.load(f)
    gained, lost = [], []
    for fname, (outcomes, _, _) in per_file.items():
        old = before.get(fname, {})
        for node, (outcome, reason) in sorted(outcomes.items()):
            was = old.get(node, ['not run', ''])[0]
            if outcome == 'passed' and was != 'passed':
                gained.append(f'- `{node}` (was {was})')
            elif was == 'passed' and outcome != 'passed':
                lost.append(f'- `{node}`: {outcome}: {normalise(reason)}')
    return '\n'.join(['', f'## Against the baseline {path}', '',
                      f'### Now failing, passed before ({len(lost)})', *lost, '',
                      f'### Now passing ({len(gained)})', *gained, ''])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--mxnet', default='/tmp/mx191',
                    help='MXNet source tree holding tests/python/unittest')
    ap.add_argument('--out', help='write the markdown report here')
    ap.add_argument('--json', help='write raw per-test outcomes here')
    ap.add_argument('--timeout', type=float, default=60, help='seconds per test')
    ap.add_argument('-k', help='pytest -k expression')
    ap.add_argument('-j', '--jobs', type=int, default=1,
                    help='files run in parallel (default 1: the machine is shared)')
    ap.add_argument('--log', action='store_true',
                    help="print pytest's own output (tracebacks) to stderr")
    ap.add_argument('--baseline', help='a --json file of an earlier run: list the tests '
                                       'whose outcome changed (regressions first)')
    ap.add_argument('--seed', type=int,
                    help='fix every with_seed() test to this seed (MXNET_TEST_SEED and '
                         'MXNET_MODULE_SEED), to reproduce a failure; default: random, as upstream')
    ap.add_argument('--dense-only', action='store_true',
                    help="skip compare_optimizer's sparse comparisons (to see "
                         "the dense part of partly-in-scope tests; not the measure)")
    ap.add_argument('--numpy', action='store_true',
                    help='run the mx.np files of issue 27 only: ' + ', '.join(NUMPY_FILES))
    ap.add_argument('files', nargs='*', help='test_x.py or test_x.py::test_name')
    args = ap.parse_args(argv)
    if args.numpy:
        args.files = args.files + NUMPY_FILES
    root = find_d2lmini(os.getcwd())
    selections = collections.OrderedDict()
    for spec in args.files or DEFAULT_FILES:
        fname, _, test = spec.partition('::')
        fname = os.path.basename(fname)
        if not fname.endswith('.py'):
            fname += '.py'
        selections.setdefault(fname, [])
        if test:
            selections[fname].append(test)
    start = datetime.datetime.now()
    tmp = tempfile.mkdtemp(prefix='mxnet_tests_')
    try:
        prepare(args.mxnet, tmp)
        statics = {}
        for fname, selectors in selections.items():
            path = os.path.join(tmp, 'unittest', fname)
            if not os.path.isfile(path):
                sys.exit(f'run.py: no upstream file {fname}')
            statics[fname] = (selectors if selectors else static_tests(path)) \
                if not args.k else []

        def one(fname):
            print(f'[run.py] {fname} ...', file=sys.stderr, flush=True)
            result = run_file(fname, selections[fname], args, tmp, root)
            o = collections.Counter(v[0] for v in result[0].values())
            print(f'[run.py] {fname}: {dict(o)}', file=sys.stderr, flush=True)
            return result

        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = list(pool.map(one, selections))     # keeps the files' order
        per_file = collections.OrderedDict(zip(selections, results))
        elapsed = (datetime.datetime.now() - start).total_seconds()
        report, totals = build_report(per_file, statics, args, root, elapsed, args.mxnet)
        if args.baseline:
            report += baseline_section(per_file, args.baseline)
    finally:
        if os.environ.get('MXH_KEEP_TMP'):
            print(f'[run.py] kept {tmp}', file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({fn: {n: list(v) for n, v in r[0].items()}
                       for fn, r in per_file.items()}, f, indent=1, sort_keys=True)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(report)
    print(report)
    return 0


if __name__ == '__main__':
    sys.exit(main())
