"""Smoke tests of benchmarks/bench_hybrid.py at tiny sizes (no timing
thresholds): each pair of functions it times does the same work, so that
the ratios it reports compare like with like."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import bench_hybrid  # noqa: E402


def test_mlp_three_ways_give_the_same_output():
    imp, hyb, sym, last = bench_hybrid.mlp_closures(in_dim=16, hidden=(8, 4),
                                                    out=2, calls=3)
    for fn in (imp, hyb, sym):
        fn()
    assert last['imperative'].shape == (1, 2)
    np.testing.assert_allclose(last['hybridized'].asnumpy(),
                               last['imperative'].asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(last['symbolic'].asnumpy(),
                               last['imperative'].asnumpy(), rtol=1e-5, atol=1e-6)


def test_mlp_sym_is_the_gluon_mlp():
    sym = bench_hybrid.mlp_sym()
    assert sym.list_arguments() == ['data', 'fc1_weight', 'fc1_bias', 'fc2_weight',
                                    'fc2_bias', 'fc3_weight', 'fc3_bias']
    arg_shapes, out_shapes, _ = sym.infer_shape(data=(1, 512))
    assert arg_shapes[1] == (256, 512) and arg_shapes[5] == (2, 128)
    assert out_shapes == [(1, 2)]


def test_lenet_imperative_and_hybridized_steps_agree():
    X, y = bench_hybrid.data(8, real=False)
    fns = bench_hybrid.lenet_closures(X, y)
    (step_i, infer_i), (step_h, infer_h) = fns['imperative'], fns['hybridized']
    np.testing.assert_allclose(infer_h().asnumpy(), infer_i().asnumpy(),
                               rtol=1e-4, atol=1e-6)
    for _ in range(2):                      # same seed, same weights, same updates
        li, lh = step_i(), step_h()
        np.testing.assert_allclose(lh.asnumpy(), li.asnumpy(), rtol=1e-4, atol=1e-6)
    assert infer_i().shape == (8, 10)


def test_module_fit_and_gluon_epoch_run_the_same_batches():
    X, y = bench_hybrid.data(12, seed=1, real=False)
    module_epoch, gluon_epoch = bench_hybrid.fit_closures(X, y, batch=4)
    mod = module_epoch()
    mod = module_epoch()                    # a second call reuses the bound module
    assert mod.output_shapes == [('softmax_output', (4, 10))]
    arg, _ = mod.get_params()
    assert arg['conv1_weight'].shape == (20, 1, 3, 3)
    assert arg['fc1_weight'].shape == (128, 50 * 4 * 4)
    acc = gluon_epoch()
    assert acc.num_inst == 12               # all three batches, each scored


def test_best_alternating_measures_each_function():
    calls = []
    best = bench_hybrid.best_alternating([lambda: calls.append('a'),
                                          lambda: calls.append('b')],
                                         rounds=3, number=2, pause=0)
    assert len(best) == 2 and all(b >= 0 for b in best)
    # warm-up, then alternating blocks of two calls each
    assert calls == ['a', 'b'] + ['a', 'a', 'b', 'b'] * 3


def test_run_rows_have_the_runner_columns(monkeypatch):
    monkeypatch.setattr(bench_hybrid, 'CALLS', 2)
    monkeypatch.setattr(bench_hybrid, 'BATCH', 4)
    monkeypatch.setattr(bench_hybrid, 'FIT_BATCHES', 2)
    rows = bench_hybrid.run(rounds=1)
    assert [r['name'].split(':')[0].split(',')[0] for r in rows] == [
        'MLP 512-256-128-2 x2 on (1', 'MLP 512-256-128-2 x2 on (1',
        'LeNet train step', 'LeNet inference', 'LeNet Module.fit']
    for r in rows:
        assert r['bench'] == 'hybrid'
        assert r['ratio'] == pytest.approx(r['ours'] / r['reference'], rel=1e-2)
        assert 'ref:' in r['unit']
