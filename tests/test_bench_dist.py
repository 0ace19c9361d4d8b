"""Smoke tests of benchmarks/bench_dist.py's functions (no timing thresholds:
only that each piece measures what it says and cleans up after itself)."""
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import bench_dist  # noqa: E402

# A stand-in for a training script: every role prints what it was given.
ECHO_ROLE = ('import json, os; r = os.environ["DMLC_ROLE"]; '
             'print("noise"); '
             'print("BENCH_DIST " + json.dumps({"rank": int(os.environ.get('
             '"DMLC_WORKER_ID", -1)), "role": r, "n": os.environ['
             '"DMLC_NUM_WORKER"], "port": os.environ["DMLC_PS_ROOT_PORT"], '
             '"threads": os.environ["OMP_NUM_THREADS"]}))')


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_zmq_echo_moves_the_bytes_back():
    t = bench_dist.zmq_echo(nbytes=1 << 16, repeat=2, number=2, timeout=20)
    assert 0 < t < 20


def test_parse_result_takes_the_last_tagged_line():
    out = 'hello\nBENCH_DIST {"rank": 1, "x": 2}\nBENCH_DIST {"rank": 1, "x": 3}\n'
    assert bench_dist.parse_result(out) == {'rank': 1, 'x': 3}
    with pytest.raises(RuntimeError, match='no BENCH_DIST line'):
        bench_dist.parse_result('nothing here')


def test_run_cluster_sets_every_role_and_collects_workers_by_rank():
    res = bench_dist.run_cluster(['-c', ECHO_ROLE], num_workers=3,
                                 num_servers=2, timeout=60)
    assert [r['rank'] for r in res] == [0, 1, 2]
    assert {r['role'] for r in res} == {'worker'}
    assert {r['n'] for r in res} == {'3'}
    assert len({r['port'] for r in res}) == 1          # one scheduler address
    assert {r['threads'] for r in res} == {'1'}


def test_run_cluster_names_a_failed_process():
    code = ('import os, sys; '
            'sys.exit(3 if os.environ["DMLC_ROLE"] == "server" else 0)')
    with pytest.raises(RuntimeError, match=r'server 0 exited with status 3'):
        bench_dist.run_cluster(['-c', code], num_workers=1, timeout=60)


def test_run_cluster_times_out_and_kills_everything(tmp_path):
    pids = tmp_path / 'pids'
    code = (f'import os, time; open({str(pids)!r}, "a").write('
            f'str(os.getpid()) + "\\n"); time.sleep(600)')
    with pytest.raises(RuntimeError, match='still running after'):
        bench_dist.run_cluster(['-c', code], num_workers=2, timeout=3)
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 4                      # scheduler, server, 2 workers
    assert not any(_alive(p) for p in started)


def test_lenet_single_process_counts_images():
    ips, seconds = bench_dist.lenet_images_per_s(None, batch=8, warmup=1,
                                                 steps=2)
    assert seconds > 0 and ips == pytest.approx(8 * 2 / seconds)


def test_pushpull_worker_through_the_store_split_over_two_servers():
    # 1000 elements above a bound of 100: the array is split over both servers;
    # the worker itself checks that the pull returns the sum of the pushes
    res = bench_dist.run_cluster(
        [bench_dist.__file__, '--worker', 'pushpull', '--elems', '1000',
         '--repeat', '1', '--number', '2'], num_workers=2, num_servers=2,
        timeout=120, env={'MXNET_KVSTORE_BIGARRAY_BOUND': '100'})
    assert [r['rank'] for r in res] == [0, 1]
    assert all(r['nbytes'] == 4000 and r['seconds'] > 0 for r in res)


def test_lenet_worker_through_the_store():
    res = bench_dist.run_cluster(
        [bench_dist.__file__, '--worker', 'lenet', '--steps', '1',
         '--warmup', '1'], num_workers=2, timeout=120)
    assert [r['rank'] for r in res] == [0, 1]
    assert all(r['images_per_s'] > 0 for r in res)
