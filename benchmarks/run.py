"""Run every benchmark and write one table.

Each ``benchmarks/bench_*.py`` that defines ``run()`` is a benchmark; ``run()``
returns a list of rows, dicts with ``name``, ``ours`` (or ``value``),
``reference``, ``ratio`` and ``unit`` (``bench`` defaults to the module's
name without ``bench_``).  Every module runs in its own Python process, so
one cannot change another's engine or BLAS state, and a crash is reported
and skipped.  The table goes to stdout (markdown), ``benchmarks/results.md``
and ``benchmarks/results.json``; the exit status is non-zero if any module
failed.

    python benchmarks/run.py                  # all of them
    python benchmarks/run.py dispatch conv    # only bench_dispatch, bench_conv
                                              # (the other rows are kept)
    python benchmarks/run.py --in-process     # one process (for debugging)
"""
import argparse
import ast
import datetime
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLUMNS = ['bench', 'name', 'ours', 'reference', 'ratio', 'unit']


def discover(only=()):
    """Names (``bench_x``) of the modules here that define ``run()``."""
    found = []
    for fname in sorted(os.listdir(HERE)):
        if not (fname.startswith('bench_') and fname.endswith('.py')):
            continue
        name = fname[:-3]
        if only and name not in only and name[len('bench_'):] not in only:
            continue
        with open(os.path.join(HERE, fname)) as f:
            try:
                tree = ast.parse(f.read(), fname)
            except SyntaxError:
                found.append(name)          # let the run report the error
                continue
        if any(isinstance(n, ast.FunctionDef) and n.name == 'run' for n in tree.body):
            found.append(name)
    return found


def normalize(rows, module):
    """Rows as dicts with exactly COLUMNS (plus anything extra kept as is)."""
    out = []
    for r in rows:
        r = dict(r)
        if 'ours' not in r and 'value' in r:
            r['ours'] = r.pop('value')
        if 'ours' not in r:                 # {'ours_ms': .., 'torch_ms': ..} style
            for key in list(r):
                if key.startswith('ours_'):
                    unit = key[len('ours_'):]
                    r['ours'] = r.pop(key)
                    for ref in ('reference', 'ref', 'torch'):
                        if f'{ref}_{unit}' in r and 'reference' not in r:
                            r['reference'] = r.pop(f'{ref}_{unit}')
                            if ref == 'torch':
                                unit += ' (ref: PyTorch)'
                    r.setdefault('unit', unit)
                    break
        r.setdefault('bench', module[len('bench_'):])
        for c in COLUMNS:
            r.setdefault(c, None)
        if r['ratio'] is None and isinstance(r['ours'], (int, float)) \
                and isinstance(r['reference'], (int, float)) and r['reference']:
            r['ratio'] = round(r['ours'] / r['reference'], 3)
        out.append(r)
    return out


def run_in_process(module):
    sys.path.insert(0, HERE)
    return importlib.import_module(module).run()


def run_in_child(module, timeout):
    """Run ``module.run()`` in a fresh interpreter; its rows come back as JSON.

    The child's stdout goes straight to ours (progress shows as it runs); its
    stderr is collected, echoed, and kept for the report if it fails.
    """
    fd, rows_file = tempfile.mkstemp(prefix=f'{module}-', suffix='.json')
    os.close(fd)
    code = (f'import json, sys; sys.path[:0] = [{HERE!r}, {ROOT!r}]; '
            f'import {module} as m; rows = m.run(); '
            f'json.dump(rows, open({rows_file!r}, "w"), default=str)')
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [ROOT] + ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
    try:
        proc = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env,
                              stdout=None, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
        if proc.stderr.strip():
            print(proc.stderr.rstrip(), file=sys.stderr)
        if proc.returncode != 0:
            raise RuntimeError(f'exit status {proc.returncode}\n{proc.stderr[-4000:]}')
        with open(rows_file) as f:
            return json.load(f)
    finally:
        os.remove(rows_file)


def _fmt(v):
    if v is None:
        return ''
    if isinstance(v, float):
        return f'{v:.4g}' if abs(v) < 1e5 else f'{v:.0f}'
    return str(v).replace('|', '\\|')


def markdown(rows):
    lines = ['| ' + ' | '.join(COLUMNS) + ' |',
             '| --- | --- | ---: | ---: | ---: | --- |']
    for r in rows:
        lines.append('| ' + ' | '.join(_fmt(r[c]) for c in COLUMNS) + ' |')
    return '\n'.join(lines)


def machine():
    info = {'date': datetime.datetime.now().isoformat(timespec='seconds'),
            'python': platform.python_version(), 'platform': platform.platform(),
            'cpus': os.cpu_count()}
    try:
        info['cpus_usable'] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    for mod in ['numpy', 'torch', 'cupy']:
        try:
            info[mod] = importlib.import_module(mod).__version__
        except Exception:
            pass
    return info


def keep_others(out, modules, failed):
    """A run of some modules only keeps the previous run's rows of the
    others: ``[its date, row, ...]``, or ``[]`` when there is none."""
    try:
        with open(os.path.join(out, 'results.json')) as f:
            previous = json.load(f)
    except (OSError, ValueError):
        return []
    rerun = {m[len('bench_'):] for m in modules if m not in failed}
    rows = [r for r in previous.get('rows', []) if r.get('bench') not in rerun]
    return [previous.get('machine', {}).get('date', 'an earlier date'), *rows] \
        if rows else []


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('only', nargs='*', help='benchmark names (dispatch or bench_dispatch)')
    ap.add_argument('--in-process', action='store_true',
                    help='run the modules in this process, one after another')
    ap.add_argument('--timeout', type=float, default=3600,
                    help='seconds per module (child processes only)')
    ap.add_argument('--out', default=HERE, help='where results.md/.json go')
    args = ap.parse_args(argv)

    modules = discover(args.only)
    if not modules:
        print(f'run.py: no benchmark matches {args.only}', file=sys.stderr)
        return 2
    rows, failed = [], {}
    for module in modules:
        print(f'== {module}', flush=True)
        t = time.perf_counter()
        try:
            got = (run_in_process(module) if args.in_process
                   else run_in_child(module, args.timeout))
            rows += normalize(got, module)
        except Exception as e:                      # report, go on with the rest
            msg = ''.join(traceback.format_exception_only(type(e), e)).strip()
            if args.in_process:
                msg = traceback.format_exc()
            failed[module] = msg
            print(f'run.py: {module} FAILED: {msg}', file=sys.stderr, flush=True)
        print(f'   {module}: {time.perf_counter() - t:.1f} s', flush=True)

    print()
    print(markdown(rows))
    meta = machine()
    kept = keep_others(args.out, modules, failed) if args.only else []
    if kept:
        meta['other rows'] = f'kept from the run of {kept[0]}'
    all_rows = sorted(kept[1:] + rows, key=lambda r: r['bench'])
    table = markdown(all_rows)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'results.json'), 'w') as f:
        json.dump({'machine': meta, 'modules': modules, 'failed': failed,
                   'rows': all_rows}, f, indent=1, default=str)
    with open(os.path.join(args.out, 'results.md'), 'w') as f:
        f.write('# d2lmini benchmarks\n\n')
        f.write(', '.join(f'{k}: {v}' for k, v in meta.items()) + '\n\n')
        f.write('ratio = ours / reference; the unit column says what the '
                'reference is and which way is better.\n\n')
        f.write(table + '\n')
        if failed:
            f.write('\n## Failed\n\n')
            for m, msg in failed.items():
                f.write(f'* `{m}`:\n\n```\n{msg}\n```\n')
    if failed:
        print(f'\nrun.py: {len(failed)} benchmark module(s) failed: '
              f'{", ".join(failed)}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
