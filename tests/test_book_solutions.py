"""The appendix "Solutions to the Exercises" (chapters/solutions.md) shows
every file of solutions/, and every chapter of book.yml has its solution
there, in book.yml's order, under the anchor the chapters link to:
``solutions.md#solution-01-ndarray`` for chapters/01_ndarray.ipynb (the
chapter's file stem, ``_`` written ``-``, after ``solution-``)."""

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / 'chapters' / 'solutions.md'
sys.path.insert(0, str(REPO / 'tools'))
from book_yml import read_book  # noqa: E402

BOOK = read_book(REPO / 'book.yml')

# One section per chapter: its anchor, its heading, then, up to the next
# anchor, a link to the chapter and the literalinclude of its solution.
SECTION = re.compile(r'^\((solution-[\w-]+)\)=\n## Chapter (\d+)(?:: [^\n]+)?\n(.*?)(?=^\(solution-|\Z)',
                     re.M | re.S)


def anchor(chapter):
    return 'solution-' + chapter.replace('_', '-')


def sections():
    """[(anchor, chapter number, [chapters linked], [files included]), ...]
    in the page's order; included files relative to the repository."""
    found = []
    for label, number, body in SECTION.findall(PAGE.read_text(encoding='utf-8')):
        docs = re.findall(r'\{doc\}`([^`]+)`', body)
        files = [(PAGE.parent / path).resolve().relative_to(REPO).as_posix()
                 for path in re.findall(r'^```\{literalinclude\} (\S+)$', body, re.M)]
        found.append((label, int(number), docs, files))
    return found


def test_the_page_is_an_appendix_of_the_book():
    assert 'solutions' in BOOK.appendices


def test_every_solution_file_is_on_the_page():
    included = [f for *_, files in sections() for f in files]
    on_disk = sorted(f'solutions/{p.name}' for p in (REPO / 'solutions').glob('*.py'))
    assert on_disk and sorted(included) == on_disk


def test_every_chapter_has_its_solution_in_book_order():
    numbers = {e.page: e.number for e in BOOK.navigation()}
    expected = [(anchor(c), numbers[c], [c], [f'solutions/{c}.py'])
                for c in BOOK.chapters]
    assert sections() == expected
    for chapter in BOOK.chapters:
        assert (REPO / 'solutions' / f'{chapter}.py').is_file(), chapter
