"""Smoke tests of benchmarks/bench_horovod.py (no timing thresholds: only
that each piece measures what it says, on real MPI ranks, and reports a
failed rank)."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
import bench_horovod  # noqa: E402
from mpi_job import needs_mpi  # noqa: E402



def test_bus_bandwidth_is_nccls_convention():
    # 2 ranks: each sends the whole buffer once; 4 ranks: 1.5 times
    assert bench_horovod.busbw(1000, 2.0, 2) == pytest.approx(500)
    assert bench_horovod.busbw(1000, 2.0, 4) == pytest.approx(750)


def test_sizes_sweep_4_kb_to_64_mb():
    assert bench_horovod.SIZES[0] == 4 << 10 and bench_horovod.SIZES[-1] == 64 << 20
    assert [bench_horovod._fmt_bytes(s) for s in (4096, 1 << 20, 64 << 20)] == \
        ['4 KB', '1 MB', '64 MB']


@needs_mpi
@pytest.mark.parametrize('n', [2, 3])
def test_sweep_worker_times_both_algorithms(n):
    # 4100 bytes: 1025 elements, not a multiple of the ranks' chunks; the
    # worker itself checks that the ring's sum is right
    res = bench_horovod.run_mpi(['--worker', 'sweep', '--sizes', '4096,4100',
                                 '--repeat', '2', '--batch-seconds', '0.001'],
                                n, timeout=60)
    assert res['size'] == n
    assert [r['bytes'] for r in res['rows']] == [4096, 4100]
    for r in res['rows']:
        assert r['number'] >= 1
        assert 0 < r['ring_best_s'] <= r['ring_s'] and 0 < r['mpi_best_s'] <= r['mpi_s']


@needs_mpi
def test_sweep_rows_ratio_is_ring_over_mpi():
    rows = bench_horovod.sweep_rows(ranks=(2,), sizes=[16 << 10], repeat=1)
    assert [r['name'] for r in rows] == ['allreduce 16 KB, 2 ranks']
    r = rows[0]
    # the ratio is rounded to 3 decimals and the MB/s to 1 (computed before
    # rounding): it lies between the ratios the rounded figures allow
    ours, ref, h = r['ours'], r['reference'], 0.05
    assert (ours - h) / (ref + h) - 5e-4 <= r['ratio'] <= (ours + h) / (ref - h) + 5e-4


@needs_mpi
def test_lenet_worker_counts_every_ranks_images():
    res = bench_horovod.run_mpi(['--worker', 'lenet', '--max-steps', '2',
                                 '--synthetic'], 2, timeout=120)
    assert res['size'] == 2 and res['data'] == 'synthetic'
    assert res['steps'] == 2 and res['batch_per_rank'] == 128
    assert res['images'] == 2 * 2 * 128
    assert res['images_per_s'] == pytest.approx(res['images'] / res['seconds'])
    assert 0 <= res['test_acc'] <= 1


@needs_mpi
def test_a_failing_rank_is_reported():
    with pytest.raises(RuntimeError, match='rc=2'):
        bench_horovod.run_mpi(['--worker', 'no-such-worker'], 2, timeout=60)
