"""Tests for tools/book_yml.py (reading book.yml) and tools/book_toc.py (the
Sphinx extension that turns it into the book's toctrees).  The extension is
tested by building a tiny book with Sphinx, in tmp_path."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / 'tools'
sys.path.insert(0, str(TOOLS))
from book_yml import NavEntry, parse_book, read_book, roman  # noqa: E402

# the extension needs Sphinx (and its docutils): the book's extra, which a
# machine that only runs the package (a GPU box) may lack
try:
    from book_toc import toctrees  # noqa: E402
    WHY = None
except ImportError as e:
    WHY = f'the book extension needs Sphinx: {e} (make install)'
needs_sphinx = pytest.mark.skipif(WHY is not None, reason=str(WHY))

BOOK = {'title': 'Tiny', 'preface': 'pre',
        'parts': [{'title': 'One', 'chapters': ['a', 'b']},
                  {'title': 'Two', 'chapters': ['c']}],
        'appendices': ['z']}


def test_navigation_numbers_chapters_straight_through_the_parts():
    book = parse_book(BOOK)
    assert book.chapters == ['a', 'b', 'c']
    assert book.pages == ['pre', 'a', 'b', 'c', 'z']
    assert book.navigation() == [
        NavEntry('pre', None, None),
        NavEntry('a', 'Part I: One', 1), NavEntry('b', 'Part I: One', 2),
        NavEntry('c', 'Part II: Two', 3),
        NavEntry('z', 'Appendices', None)]


def test_roman_numerals():
    assert [roman(n) for n in (1, 4, 9, 14, 40, 1994)] == [
        'I', 'IV', 'IX', 'XIV', 'XL', 'MCMXCIV']


@pytest.mark.parametrize('data, message', [
    ({'chapters': ['a']}, 'unknown key'),
    ({'parts': [{'title': 'One'}]}, 'part 1 must be'),
    ({'parts': [{'chapters': ['a']}]}, 'part 1 must be'),
    ({'parts': [{'title': 'One', 'chapters': ['a']}], 'appendices': ['a']},
     'a is listed twice'),
])
def test_parse_book_says_what_is_wrong(data, message):
    with pytest.raises(ValueError, match=message):
        parse_book(data)


def test_the_repository_book_yml_reads():
    book = read_book(TOOLS.parent / 'book.yml')
    assert len(book.parts) >= 2 and book.preface and book.appendices
    numbers = [e.number for e in book.navigation() if e.number]
    assert numbers == list(range(1, len(book.chapters) + 1))


@needs_sphinx
def test_toctrees_one_per_caption_numbered_for_parts_only():
    text = toctrees(parse_book(BOOK), exists=lambda page: page != 'b')
    blocks = re.findall(r'```\{toctree\}\n(.*?)```', text, re.S)
    assert blocks == [
        ':maxdepth: 1\n\npre\n',
        ':maxdepth: 1\n:caption: Part I: One\n:numbered:\n\na\n',
        ':maxdepth: 1\n:caption: Part II: Two\n:numbered:\n\nc\n',
        ':maxdepth: 1\n:caption: Appendices\n\nz\n']


def _tiny_book(src):
    src.mkdir()
    (src / 'conf.py').write_text(
        f'import sys\nsys.path.insert(0, {str(TOOLS)!r})\n'
        'from book_toc import toctrees\nfrom book_yml import parse_book\n'
        "extensions = ['myst_parser', 'book_toc']\n"
        f'book_toc = toctrees(parse_book({BOOK!r}), lambda page: True)\n')
    (src / 'index.md').write_text('# Tiny\n')
    for page in ('pre', 'a', 'b', 'c', 'z'):
        (src / f'{page}.md').write_text(
            f'# Page {page}\n\n## Section {page}\n\ntext\n')


def _build(src, out):
    """sphinx-build, in a process of its own; returns its warnings."""
    done = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-q', '-b', 'html', '-d',
         str(out / 'doctrees'), str(src), str(out / 'html')],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr


@needs_sphinx
def test_sphinx_numbers_the_chapters_across_parts(tmp_path):
    _tiny_book(tmp_path / 'src')
    html = tmp_path / 'out' / 'html'
    for build in ('fresh', 'incremental'):
        assert _build(tmp_path / 'src', tmp_path / 'out') == '', build
        index = (html / 'index.html').read_text()
        links = re.findall(r'<a class="reference internal" href="(\w+)\.html">'
                           r'(?:<span class="section-number">)?([\d.]*\s*)'
                           r'(?:</span>)?Page', index)
        # the page's toctrees, then the same in alabaster's sidebar
        assert [(page, number.strip()) for page, number in links] == 2 * [
            ('pre', ''), ('a', '1.'), ('b', '2.'), ('c', '3.'), ('z', '')]
        assert re.findall(r'<span class="caption-text">([^<]*)</span>',
                          index) == 2 * ['Part I: One', 'Part II: Two',
                                         'Appendices']
        c = (html / 'c.html').read_text()
        assert '<span class="section-number">3.1. </span>Section c' in c
        assert '<title>3. Page c' in c
        z = (html / 'z.html').read_text()
        assert '<h1>Page z' in z and '<title>Page z' in z     # unnumbered
        # the next build finds nothing changed but the navigation's numbers
        (tmp_path / 'src' / 'c.md').touch()
