#!/usr/bin/env python3
"""Re-execute notebooks in place, one by one, and report how long each took.

``make notebooks`` runs this over ``chapters/*.ipynb``.  Each notebook runs
top to bottom in a fresh kernel started in its own folder; when every cell
has run, the notebook is written back with its new outputs and cleaned as
``tools/clean_notebook.py`` cleans it.  A notebook with a failing cell is
left as it was on disk, and the others still run.  A line is printed as each
notebook finishes, then a table of all of them, then a warning for any
notebook over the course's budget (60 s each, 10 minutes for the book, on
two cores).  The exit status is 1 when any notebook failed.

Usage::

    python tools/run_notebooks.py chapters/*.ipynb
    python tools/run_notebooks.py --timeout 300 chapters/05_lenet.ipynb
    python tools/run_notebooks.py --no-write chapters/*.ipynb   # only run them

``--no-write`` executes and reports but writes nothing: ``make
test-gpu-standin`` uses it to run every chapter on ``gpu(0)``, where device
names and the numbers drawn by a device's random generator differ from the
committed (CPU) outputs, so only that every cell runs is checked there.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from clean_notebook import clean

NOTEBOOK_BUDGET_S = 60       # what one chapter may take on a 2-core laptop
BOOK_BUDGET_S = 10 * 60      # what the whole book may take there


@dataclass
class Result:
    path: str
    seconds: float
    cells: int               # code cells in the notebook
    status: str              # 'ok', 'error', 'timeout' or 'dead kernel'
    error: str = ''          # the failure, as nbclient reported it

    @property
    def ok(self) -> bool:
        return self.status == 'ok'


def run_notebook(path: str, timeout: int, kernel_name: str = 'python3',
                 write: bool = True) -> Result:
    """Execute ``path`` in a kernel started in its folder; on success write it
    back, executed and cleaned (unless ``write`` is false); on failure leave
    the file as it was."""
    nb = nbformat.read(path, as_version=4)
    cells = sum(cell.cell_type == 'code' for cell in nb.cells)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name=kernel_name, record_timing=False,
        resources={'metadata': {'path': os.path.dirname(os.path.abspath(path))}})
    start = time.perf_counter()
    try:
        client.execute()
    except Exception as exc:  # noqa: BLE001 - each kind is reported, none lost
        status = ('timeout' if isinstance(exc, CellTimeoutError) else
                  'dead kernel' if isinstance(exc, DeadKernelError) else 'error')
        return Result(path, time.perf_counter() - start, cells, status, str(exc))
    seconds = time.perf_counter() - start
    if write:
        nbformat.write(clean(nb), path)
    return Result(path, seconds, cells, 'ok')


def format_result(result: Result, index: int, count: int) -> str:
    """The progress line printed as a notebook finishes."""
    return (f'[{index}/{count}] {result.path}: {result.seconds:.1f} s, '
            f'{result.cells} cells, {result.status}')


def format_table(results: list[Result]) -> str:
    """One row per notebook (name, seconds, cells, status), then the total."""
    failed = sum(not r.ok for r in results)
    rows = [(os.path.basename(r.path), f'{r.seconds:.1f}', str(r.cells), r.status)
            for r in results]
    rows.append(('total', f'{sum(r.seconds for r in results):.1f}',
                 str(sum(r.cells for r in results)),
                 f'{failed} failed' if failed else 'ok'))
    header = ('notebook', 'seconds', 'cells', 'status')
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]

    def line(row):
        name, seconds, cells, status = row
        return (f'{name:<{widths[0]}}  {seconds:>{widths[1]}}  '
                f'{cells:>{widths[2]}}  {status}')
    rule = '-' * len(line(header))
    return '\n'.join([line(header), rule, *map(line, rows[:-1]), rule, line(rows[-1])])


def budget_warnings(results: list[Result], notebook_budget: float = NOTEBOOK_BUDGET_S,
                    book_budget: float = BOOK_BUDGET_S) -> list[str]:
    """A warning for each notebook over its budget, and for the book's total."""
    warnings = [f'WARNING: {r.path} took {r.seconds:.0f} s, over the '
                f'{notebook_budget:.0f} s budget of a notebook'
                for r in results if r.seconds > notebook_budget]
    total = sum(r.seconds for r in results)
    if total > book_budget:
        warnings.append(f'WARNING: the notebooks took {total:.0f} s in all, over '
                        f'the {book_budget:.0f} s budget of the book')
    return warnings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('notebooks', nargs='+', help='.ipynb files, run in this order')
    parser.add_argument('--timeout', type=int, default=120,
                        help='seconds a cell may run (default: 120)')
    parser.add_argument('--kernel', default='python3', help='kernel name')
    parser.add_argument('--no-write', dest='write', action='store_false',
                        help='execute and report, but leave every file as it is')
    args = parser.parse_args(argv)

    results = []
    for index, path in enumerate(args.notebooks, 1):
        result = run_notebook(path, args.timeout, args.kernel, args.write)
        results.append(result)
        print(format_result(result, index, len(args.notebooks)), flush=True)
        if not result.ok:
            print(f'  {path} is left unchanged; {result.error}', flush=True)
    print()
    print(format_table(results))
    for warning in budget_warnings(results):
        print(warning)
    failed = [r.path for r in results if not r.ok]
    if failed:
        print(f'FAILED: {" ".join(failed)}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
