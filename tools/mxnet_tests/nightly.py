"""MXNet 1.9.1's nightly distributed-KVStore tests, run unchanged on d2lmini.

Each upstream script (``tests/nightly/dist_*_kvstore.py``) is one job of
2 workers and 2 servers started by ``d2lmini.launch``, as MXNet's CI starts
it with ``tools/launch.py -n 2 -s 2 --launcher local``.  ``import mxnet``
is d2lmini (the shim of this folder), ``mx.gpu(i)`` is ``mx.cpu(i)`` (the
multi-device script wants two GPUs per worker), and the big arrays are
split over the servers by ``MXNET_KVSTORE_BIGARRAY_BOUND`` as upstream.
A case passes when every process of its job exits 0.

    /work/main/.venv/bin/python tools/mxnet_tests/nightly.py [--mxnet /tmp/mx191]
        [--out tools/mxnet_tests/REPORT_nightly.md]
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

from d2lmini.launch import launch  # noqa: E402

# (script, arguments, what it checks); the dist_sync_kvstore types are the
# ones MXNet's CI runs (ci/docker/runtime_functions.sh)
CASES = [
    ('dist_device_sync_kvstore.py', [], 'dist_device_sync: push/pull of small '
     'and big (split) keys from 2 devices per worker, init, Trainer types'),
    ('dist_async_kvstore.py', [], 'dist_async: Trainer with update_on_kvstore '
     'forced, dense and row_sparse weights'),
    ('dist_sync_kvstore.py', ['--type=gluon_type_cpu'], 'Trainer types, dense and row_sparse'),
    ('dist_sync_kvstore.py', ['--type=gluon_step_cpu'], 'Trainer.step on dist_sync'),
    ('dist_sync_kvstore.py', ['--type=gluon_sparse_step_cpu'], 'row_sparse Trainer.step'),
    ('dist_sync_kvstore.py', ['--type=invalid_cpu'], 'errors: Trainer reset, bad pulls'),
    ('dist_sync_kvstore.py', ['--type=init_gpu'], 'init of many keys, small and big'),
    ('dist_sync_kvstore.py', ['--type=default_cpu', '--nrepeat=2'],
     'dense, row_sparse and float16 keys with an optimizer on the servers'),
    ('dist_sync_kvstore.py', ['--type=compressed_cpu', '--nrepeat=2'], '2-bit compression'),
]

WRAPPER = '''
import os, runpy, sys
import mxnet as mx                      # the shim: d2lmini
import d2lmini.context as ctx
ctx.gpu = mx.gpu = lambda device_id=0: ctx.cpu(device_id)
script = sys.argv[1]
sys.path.insert(0, os.path.dirname(script))
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name='__main__')
'''


def run_case(mxnet, script, args, timeout):
    nightly = os.path.join(mxnet, 'tests', 'nightly')
    path = os.pathsep.join([os.path.join(HERE, 'shim'), ROOT,
                            os.path.join(mxnet, 'tests', 'python', 'unittest'),
                            os.path.join(HERE, 'fallback')])
    wrapper = os.path.join(os.environ.get('TMPDIR', '/tmp'), f'd2lmini_nightly_{os.getpid()}.py')
    with open(wrapper, 'w') as f:
        f.write(WRAPPER)
    t0 = time.monotonic()
    try:
        result = launch([sys.executable, wrapper, os.path.join(nightly, script), *args],
                        2, 2, env={'PYTHONPATH': path, 'OMP_NUM_THREADS': '1',
                                   'PS_START_TIMEOUT': '20'},
                        timeout=timeout, echo=False, capture=True)
    finally:
        os.remove(wrapper)
    lines = [f'[{name}] {text.rstrip()}' for name, _, text in result.lines]
    errors = [ln for ln in lines if 'Error' in ln or 'error' in ln]
    return result.returncode, time.monotonic() - t0, lines, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--mxnet', default='/tmp/mx191')
    ap.add_argument('--out')
    ap.add_argument('--timeout', type=float, default=120)
    ap.add_argument('--log', action='store_true', help='print every job\'s output')
    a = ap.parse_args()
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    rows, passed = [], 0
    for script, args, what in CASES:
        rc, secs, lines, errors = run_case(a.mxnet, script, args, a.timeout)
        if a.log:
            print('\n'.join(lines))
        ok = rc == 0
        passed += ok
        why = '' if ok else (errors[-1] if errors else (lines[-1] if lines else f'exit {rc}'))
        rows.append(f'| `{script} {" ".join(args)}` | {what} | '
                    f'{"pass" if ok else "fail"} | {secs:.1f} s | {why.strip()[:160]} |')
        print(rows[-1], flush=True)
    report = '\n'.join([
        '# MXNet 1.9.1 nightly distributed KVStore tests on d2lmini', '',
        f'd2lmini {commit}; each case is a job of 2 workers and 2 servers '
        f'(`d2lmini.launch`, local), run by `tools/mxnet_tests/nightly.py`. '
        f'{passed} of {len(CASES)} cases pass.', '',
        '| case | what it checks | result | time | first reason |',
        '| --- | --- | --- | --- | --- |', *rows, ''])
    if a.out:
        with open(a.out, 'w') as f:
            f.write(report)
    print(report)
    return 0


if __name__ == '__main__':
    sys.exit(main())
