"""benchmarks/bench_busy.py without timing thresholds: its neighbours are
really CPU-bound and leave nothing behind, the quiet and busy blocks take
turns, and the rows report busy / quiet against PyTorch's ratio."""
import os
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import bench_busy  # noqa: E402


def test_neighbours_burn_cpu_and_are_gone_afterwards():
    with bench_busy.neighbours(2) as procs:
        assert all(p.poll() is None for p in procs)
        pids = [p.pid for p in procs]
        before = [_cpu_ticks(pid) for pid in pids]
        time.sleep(0.5)
        after = [_cpu_ticks(pid) for pid in pids]
        assert all(b > a for a, b in zip(before, after))   # they do compute
    assert all(p.returncode is not None for p in procs)    # killed and reaped
    assert not any(os.path.exists(f'/proc/{pid}') for pid in pids)


def _cpu_ticks(pid):
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])                # utime + stime


def test_slowdowns_alternate_quiet_and_busy_and_take_medians():
    events = []

    class Busy:
        def __enter__(self):
            events.append('busy')

        def __exit__(self, *exc):
            events.append('quiet')

    blocks = iter([1, 2, 10, 20,      # round 1: quiet a, b; busy a, b
                   3, 4, 30, 40,      # round 2
                   2, 3, 20, 30])     # round 3

    def time_block(step):
        step()
        return next(blocks)
    calls = []
    steps = {'a': lambda: calls.append('a'), 'b': lambda: calls.append('b')}
    result = bench_busy.slowdowns(steps, rounds=3, busy=Busy,
                                  time_block=time_block)
    assert result == {'a': (2, 20), 'b': (3, 30)}
    assert events == ['busy', 'quiet'] * 3
    assert calls[:2] == ['a', 'b'] and len(calls) == 2 + 12


def test_rows_compare_our_slowdown_with_pytorchs():
    results = {('step', 'd2lmini'): (0.1, 0.25), ('step', 'PyTorch'): (0.05, 0.15),
               ('alone', 'd2lmini'): (0.2, 0.3)}
    rows = bench_busy.rows(results, {'step': 256, 'alone': 512})
    assert [r['ours'] for r in rows] == [2.5, 1.5]
    assert rows[0]['reference'] == 3.0 and rows[0]['ratio'] == pytest.approx(0.833)
    assert rows[0]['name'] == ('step: 2,560 -> 1,024 images/s '
                               '(PyTorch 5,120 -> 1,707)')
    assert rows[1]['reference'] is None and rows[1]['ratio'] is None
