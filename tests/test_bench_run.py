"""benchmarks/run.py: a run of some modules keeps the other modules' rows
of the previous run (and says from when), so `run.py busy` refreshes the
busy rows of results.md without losing the rest."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import run  # noqa: E402


def test_keep_others_drops_only_the_rows_of_modules_that_ran_again(tmp_path):
    rows = [{'bench': 'busy', 'name': 'old busy'}, {'bench': 'conv', 'name': 'c'},
            {'bench': 'lenet', 'name': 'l'}]
    (tmp_path / 'results.json').write_text(json.dumps(
        {'machine': {'date': '2026-11-24T19:45'}, 'rows': rows}))
    kept = run.keep_others(tmp_path, ['bench_busy', 'bench_lenet'], failed={})
    assert kept == ['2026-11-24T19:45', {'bench': 'conv', 'name': 'c'}]
    # a module that failed this time keeps its old rows
    kept = run.keep_others(tmp_path, ['bench_busy', 'bench_lenet'],
                           failed={'bench_lenet': 'boom'})
    assert [r['name'] for r in kept[1:]] == ['c', 'l']


def test_keep_others_without_a_previous_run(tmp_path):
    assert run.keep_others(tmp_path, ['bench_busy'], failed={}) == []
    (tmp_path / 'results.json').write_text('not json')
    assert run.keep_others(tmp_path, ['bench_busy'], failed={}) == []
