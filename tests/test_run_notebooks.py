"""Tests for tools/run_notebooks.py (``make notebooks``): the table, the
budget warnings, and what happens to a notebook whose cell fails -- with
tiny notebooks executed for real in tmp_path."""

import re
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

TOOLS = Path(__file__).resolve().parents[1] / 'tools'
sys.path.insert(0, str(TOOLS))
from run_notebooks import Result, budget_warnings, format_table, main  # noqa: E402


def test_table_has_a_row_per_notebook_and_the_total():
    results = [Result('chapters/01_ndarray.ipynb', 4.04, 46, 'ok'),
               Result('chapters/05_lenet.ipynb', 71.96, 21, 'error', 'boom')]
    assert format_table(results).splitlines() == [
        'notebook          seconds  cells  status',
        '----------------------------------------',
        '01_ndarray.ipynb      4.0     46  ok',
        '05_lenet.ipynb       72.0     21  error',
        '----------------------------------------',
        'total                76.0     67  1 failed',
    ]


def test_budget_warnings_name_each_slow_notebook_and_the_total():
    fast = [Result('a.ipynb', 59.0, 1, 'ok'), Result('b.ipynb', 60.0, 1, 'ok')]
    assert budget_warnings(fast) == []
    slow = fast + [Result('c.ipynb', 61.0, 1, 'ok')]
    assert budget_warnings(slow) == [
        'WARNING: c.ipynb took 61 s, over the 60 s budget of a notebook']
    assert budget_warnings(slow, notebook_budget=100, book_budget=120) == [
        'WARNING: the notebooks took 180 s in all, over the 120 s budget of the book']


def _notebook(path, *sources):
    nb = new_notebook(cells=[new_markdown_cell('# A chapter'),
                             *(new_code_cell(s) for s in sources)])
    nb.metadata.kernelspec = {'name': 'python3', 'display_name': 'Python 3',
                              'language': 'python'}
    nbformat.write(nb, path)
    return path


def test_good_notebooks_are_written_executed_and_a_failing_one_is_left_alone(
        tmp_path, capsys):
    (tmp_path / 'data.txt').write_text('read from the notebook\'s folder\n')
    good = _notebook(tmp_path / 'good.ipynb', "print(open('data.txt').read())",
                     '6 * 7')
    bad = _notebook(tmp_path / 'bad.ipynb', 'x = 1', "raise ValueError('boom')")
    later = _notebook(tmp_path / 'later.ipynb', '1 + 1')
    bad_before = bad.read_bytes()

    assert main([str(good), str(bad), str(later), '--timeout', '60']) == 1

    # Executed in its own folder, outputs kept, executor metadata cleaned.
    nb = nbformat.read(good, as_version=4)
    first, second = nb.cells[1:]
    assert [o.text for o in first.outputs] == ["read from the notebook's folder\n\n"]
    assert second.outputs[0].data['text/plain'] == '42'
    assert [first.execution_count, second.execution_count] == [1, 2]
    assert all('execution' not in c.metadata for c in nb.cells)
    # The failure loses nothing and stops nothing.
    assert bad.read_bytes() == bad_before
    assert nbformat.read(later, as_version=4).cells[1].outputs[0].data[
        'text/plain'] == '2'

    out = re.sub(r'\x1b\[[0-9;]*m', '', capsys.readouterr().out)  # colours
    assert f'[2/3] {bad}: ' in out and '2 cells, error' in out
    assert f'{bad} is left unchanged' in out and 'ValueError: boom' in out
    table = out[out.index('notebook '):out.index('FAILED')].splitlines()
    assert [row.split()[0] for row in table if not row.startswith('-')] == [
        'notebook', 'good.ipynb', 'bad.ipynb', 'later.ipynb', 'total']
    assert table[-1].endswith(' 1 failed')
    assert out.rstrip().endswith(f'FAILED: {bad}')


def test_no_write_runs_every_notebook_and_changes_no_file(tmp_path, capsys):
    good = _notebook(tmp_path / 'good.ipynb', '6 * 7')
    bad = _notebook(tmp_path / 'bad.ipynb', "raise ValueError('boom')")
    before = [good.read_bytes(), bad.read_bytes()]

    assert main(['--no-write', str(good), '--timeout', '60']) == 0
    assert main(['--no-write', str(good), str(bad), '--timeout', '60']) == 1

    assert [good.read_bytes(), bad.read_bytes()] == before
    out = re.sub(r'\x1b\[[0-9;]*m', '', capsys.readouterr().out)  # colours
    assert '1 cells, ok' in out and 'ValueError: boom' in out
