"""Every chapter is committed executed: the book renders the committed
outputs and executes nothing, so a notebook saved without them would be an
empty chapter on the site.

A notebook counts as executed when each of its code cells (empty ones aside,
which no kernel runs) has an execution count, the counts are 1, 2, ..., n in
order -- it ran top to bottom in one kernel, as ``make notebooks`` runs it --
and it has outputs.  Whether each cell's outputs are the ones its code prints
is for ``make test``'s strict nbval run to say.

How nbval checks a cell is said by nbval's cell tags, in the metadata, so
that the code a learner reads carries no test markers."""

import copy
from pathlib import Path

import nbformat
import pytest

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / 'chapters').glob('*.ipynb'))


def code_cells(nb):
    """The cells a kernel runs: code cells that are not empty."""
    return [c for c in nb.cells if c.cell_type == 'code' and c.source.strip()]


def execution_problems(nb):
    """Why ``nb`` does not look executed top to bottom; [] when it does."""
    cells = code_cells(nb)
    counts = [c.execution_count for c in cells]
    problems = []
    missing = [i for i, n in enumerate(counts) if n is None]
    if missing:
        problems.append(f'{len(missing)} of {len(cells)} code cells never ran '
                        f'(code cells {missing[:5]}...)')
    elif counts != list(range(1, len(cells) + 1)):
        problems.append(f'execution counts {counts} are not 1..{len(cells)}: '
                        'not one top-to-bottom run')
    if cells and not any(c.outputs for c in cells):
        problems.append('no cell has outputs')
    return problems


@pytest.mark.parametrize('path', CHAPTERS, ids=lambda p: p.name)
def test_chapter_is_committed_executed(path):
    problems = execution_problems(nbformat.read(path, as_version=4))
    assert not problems, f'{path.name}: {"; ".join(problems)}; run `make notebooks`'


@pytest.fixture
def chapter():
    return nbformat.read(CHAPTERS[0], as_version=4)


def test_a_stripped_chapter_is_rejected(chapter):
    stripped = copy.deepcopy(chapter)
    for cell in stripped.cells:
        if cell.cell_type == 'code':
            cell.outputs, cell.execution_count = [], None
    n = len(code_cells(chapter))
    assert execution_problems(chapter) == []
    assert execution_problems(stripped) == [
        f'{n} of {n} code cells never ran (code cells [0, 1, 2, 3, 4]...)',
        'no cell has outputs']


def test_a_chapter_with_outputs_cleared_but_counts_kept_is_rejected(chapter):
    for cell in code_cells(chapter):
        cell.outputs = []
    assert execution_problems(chapter) == ['no cell has outputs']


def test_cells_run_out_of_order_or_twice_are_rejected(chapter):
    cells = code_cells(chapter)
    cells[0].execution_count, cells[1].execution_count = 2, 1
    assert 'not one top-to-bottom run' in execution_problems(chapter)[0]
    cells[0].execution_count, cells[1].execution_count = 1, 7
    assert 'not one top-to-bottom run' in execution_problems(chapter)[0]


# nbval's own cell tags; a misspelt one would be silently ignored by nbval.
NBVAL_TAGS = {'nbval-ignore-output', 'nbval-skip', 'nbval-raises-exception'}


def marker_problems(nb):
    """Test markers where a learner reads code, and unknown nbval tags."""
    problems = []
    for number, cell in enumerate(code_cells(nb), 1):
        for line in cell.source.splitlines():
            if line.strip().lstrip('#').strip().startswith('NBVAL_'):
                problems.append(f'code cell {number} has the comment {line.strip()!r}; '
                                f'put it in the cell\'s tags instead')
        unknown = {t for t in cell.metadata.get('tags', [])
                   if t.startswith('nbval') and t not in NBVAL_TAGS}
        if unknown:
            problems.append(f'code cell {number}: unknown nbval tags {sorted(unknown)}')
    return problems


@pytest.mark.parametrize('path', CHAPTERS, ids=lambda p: p.name)
def test_no_test_markers_in_the_code_learners_read(path):
    problems = marker_problems(nbformat.read(path, as_version=4))
    assert not problems, f'{path.name}: ' + '; '.join(problems)


def test_a_marker_comment_or_a_misspelt_tag_is_found(chapter):
    cells = code_cells(chapter)
    cells[0].source = '# NBVAL_IGNORE_OUTPUT\n' + cells[0].source
    cells[1].metadata['tags'] = ['nbval-ignore-ouput']
    assert marker_problems(chapter) == [
        "code cell 1 has the comment '# NBVAL_IGNORE_OUTPUT'; put it in the "
        "cell's tags instead",
        "code cell 2: unknown nbval tags ['nbval-ignore-ouput']"]
