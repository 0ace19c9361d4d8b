"""Smoke tests of benchmarks/bench_serve.py at a tiny size (no timing
thresholds): its ``run()`` gives the runner's rows and leaves no process
behind, and the ResNet-18 it serves when the model zoo is missing exports,
loads and runs like any other model (also in the process that times the
direct calls)."""
import builtins
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import bench_serve  # noqa: E402

pytest.importorskip('tornado')
pytest.importorskip('aiohttp')


def _children():
    """Pids of this process's live children (from /proc)."""
    found = set()
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open(f'/proc/{pid}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != 'Z':
            found.add(int(pid))
    return found


def test_run_rows_have_the_runner_columns():
    before = _children()
    tiny = {'lenet': 1}
    rows = bench_serve.run(models=('lenet',), repeats=tiny, seconds={'lenet': 0.3},
                           warmup={'lenet': 0.1}, fractions=(0.5,),
                           low_load_s={'lenet': 0.2}, log=lambda *a: None)
    assert _children() <= before                  # servers and workers gone
    names = [r['name'] for r in rows]
    # (each server's added latency: over direct calls at the requests' pace,
    # and back to back; 'in-process' rows: the servers with worker threads)
    for part, want in [('vs --max-batch-size 1', 2),
                       ('.npy bodies: predictions vs POST /echo', 2),
                       ('.npy bodies: p99 latency', 2),
                       ('JSON bodies: predictions vs POST /echo', 1),
                       ('2 devices (cpu(0), cpu(1)) vs 1', 1), ('open loop at', 1),
                       ('vs --wait-out-delay', 1),
                       ('worker threads (--in-process) vs worker processes', 1),
                       ('when every connection waits vs --always-hand-off', 1),
                       ('in-process hand-off server: added latency', 2),
                       (' batch 1 server: added latency', 4),
                       ('in-process batch 1 server: added latency', 2),
                       (' batching server: added latency', 2),
                       ('in-process server: added latency', 2),
                       ('wait out server: added latency', 2)]:
        assert sum(part in n for n in names) == want, part
    assert sum('at the same pace' in n for n in names) == 6
    assert len(rows) == 25
    for r in rows:
        assert r['bench'] == 'serve' and r['name'].startswith('LeNet')
        assert np.isfinite(r['ours']), r
        assert 'ms' in r['unit'] or 'req/s' in r['unit']
        if r['reference'] is not None:       # throughput vs a peer, latency vs a target
            assert r['ours'] > 0 and r['reference'] > 0
            assert r['ratio'] == pytest.approx(r['ours'] / r['reference'], rel=1e-2)


def test_fallback_resnet18_exports_and_serves_a_batch(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_zoo(name, *args, **kwargs):
        if name.startswith('d2lmini.gluon.model_zoo'):
            raise ImportError('no model zoo here')
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, '__import__', no_zoo)
    prefix = bench_serve.export_resnet18(str(tmp_path))
    monkeypatch.setattr(builtins, '__import__', real_import)
    from d2lmini.serve import model
    files = model.load(prefix)
    assert files.input_shape == (3, 32, 32)
    convs = [k for k in files.params if k.endswith('weight') and
             files.params[k].ndim == 4]
    assert len(convs) == 1 + 16 + 3          # stem, 8 blocks x 2, 3 projections
    x = np.random.RandomState(1).rand(3, 32, 32).astype(np.float32)
    direct = bench_serve.DirectPredictor(prefix, x, str(tmp_path))
    try:
        assert 0 < direct.p50(0.01) < 60
    finally:
        direct.close()
    assert direct.proc.returncode == 0
    import d2lmini as mx
    out, = model.Predictor(files, mx.cpu(0))(np.stack([x, x]))
    assert out.shape == (2, 10) and np.isfinite(out).all()
