"""Smoke tests of benchmarks/bench_models.py at tiny sizes (no timing
thresholds): each torch twin does the same work as our network, so that the
ratios it reports compare like with like, and run() gives all its rows."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import bench_models  # noqa: E402
from d2lmini import nd  # noqa: E402

KINDS = ['classic', 'mlp', 'lenet']
TINY = [('classic', 4), ('mlp', 4), ('lenet', 2), ('lenet', 3), ('lenet', 4),
        ('lenet', 5)]


def fake_timer(fns):
    """Seconds per call as if ours took 1 s and the reference 2 s."""
    return [None if fn is None else float(k + 1) for k, fn in enumerate(fns)]


@pytest.mark.parametrize('kind', KINDS)
def test_torch_twin_has_our_parameter_shapes(kind):
    pytest.importorskip('torch')
    X, _ = bench_models.data(2, real=False)
    net = bench_models.our_net(kind)
    net(nd.array(X))                        # deferred shapes become known
    ours = [p.shape for p in net.collect_params().values()]
    theirs = [tuple(p.shape) for p in bench_models.torch_net(kind).parameters()]
    assert ours == theirs


@pytest.mark.parametrize('kind', KINDS)
def test_torch_twin_with_our_weights_gives_our_output(kind):
    torch = pytest.importorskip('torch')
    X, _ = bench_models.data(3, real=False)
    net = bench_models.our_net(kind)
    out = net(nd.array(X)).asnumpy()
    tnet = bench_models.torch_net(kind)
    bench_models.copy_to_torch(net, tnet)
    with torch.no_grad():
        theirs = tnet(torch.from_numpy(X)).numpy()
    assert out.shape == (3, 10)
    np.testing.assert_allclose(theirs, out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('kind', KINDS)
def test_training_steps_run_and_change_the_loss(kind):
    pytest.importorskip('torch')
    X, y = bench_models.data(4, real=False)
    our_step, our_infer, torch_step, torch_infer = bench_models.closures(
        kind, 4, X, y)                      # one batch: each step sees it again
    ours = [float(our_step().asnumpy().mean()) for _ in range(2)]
    theirs = [float(torch_step().item()) for _ in range(2)]
    assert ours[0] != ours[1] and theirs[0] != theirs[1]
    assert np.isfinite(ours + theirs).all()
    assert our_infer().shape == (4, 10)
    assert tuple(torch_infer().shape) == (4, 10)


def test_best_alternating_times_every_function():
    calls = []
    times = bench_models.best_alternating(
        [lambda: calls.append('a'), None, lambda: calls.append('b')],
        rounds=2, pause=0, block_s=0.004)
    assert times[1] is None
    assert times[0] > 0 and times[2] > 0
    assert calls.count('a') > 2 and calls.count('b') > 2


def test_row_names_are_the_twelve_rows_of_the_issue():
    names = bench_models.row_names()
    assert len(names) == len(set(names)) == 12
    for model in ('classic LeNet', 'MLP 784-256-10'):
        for what in ('train step', 'inference'):
            assert sum(n.startswith(model) and f'{what}, batch 256' in n
                       for n in names) == 1
    for batch in (16, 64, 256, 1024):
        for what in ('train step', 'inference'):
            assert sum(n.startswith('LeNet (multi-GPU') and
                       n.endswith(f'{what}, batch {batch}') for n in names) == 1


def fake_kernel_timer(fn):
    return 0.25                 # a quarter of each step in the ops' own work


def test_run_gives_every_row():
    pytest.importorskip('torch')
    rows = bench_models.run(specs=TINY, timer=fake_timer, real=False,
                            kernel_timer=fake_kernel_timer)
    assert [r['name'] for r in rows[::2]] == bench_models.row_names(TINY)
    assert [r['name'] for r in rows[1::2]] == [
        n + bench_models.KERNELS_ALONE for n in bench_models.row_names(TINY)]
    for r, (kind, batch) in zip(rows[1::2], [s for s in TINY for _ in range(2)]):
        assert r['ours'] == batch * 4 and r['ratio'] == 8.0
        assert "/ 0.25, the share of a synchronous step" in r['unit']
    for r, (kind, batch) in zip(rows[::2], [s for s in TINY for _ in range(2)]):
        assert r['bench'] == 'models'
        assert r['ours'] == batch and r['reference'] == round(batch / 2)
        assert r['ratio'] == 2.0            # ours / reference, unrounded
        assert 'ratio = ours / PyTorch CPU' in r['unit']
        assert 'torch' in r['unit'] and 'cores' in r['unit']


def test_run_without_torch_still_gives_every_row(monkeypatch):
    monkeypatch.setitem(sys.modules, 'torch', None)     # import torch fails
    rows = bench_models.run(specs=TINY, timer=fake_timer, real=False,
                            kernel_timer=fake_kernel_timer)
    assert [r['name'] for r in rows[::2]] == bench_models.row_names(TINY)
    assert all(r['reference'] is None and r['ratio'] is None for r in rows)
    assert all('no PyTorch' in r['unit'] for r in rows[::2])


def test_kernel_share_counts_the_ops_not_the_python_around_them():
    """A step that sleeps 50 ms between two tiny ops: the ops' share of it
    is small, not the sleep's; the engine is as it was afterwards."""
    import time
    from d2lmini import engine
    x = nd.ones((64, 64))

    def step():
        y = nd.dot(x, x)
        time.sleep(0.05)
        (y + 1).wait_to_read()
    kind = engine.engine_type()
    share = bench_models.kernel_share(step, steps=2)
    assert engine.engine_type() == kind
    assert 0 < share < 0.5
