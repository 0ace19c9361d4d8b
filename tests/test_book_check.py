"""Tests for tools/book_check.py (``make book-check``).

The parsing and detection functions are tested on small HTML and text
snippets, the HTTP server on a temporary folder.  The last tests run the whole
check on a tiny fake site in tmp_path, one good and one broken, in a real
headless chromium; they skip when no chromium is installed.
"""

import importlib.util
import io
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    'book_check', _REPO / 'tools' / 'book_check.py')
bc = importlib.util.module_from_spec(_spec)
sys.modules['book_check'] = bc
_spec.loader.exec_module(bc)
from book_yml import parse_book  # noqa: E402  (book_check put tools/ on the path)

# A preface, two parts, an appendix: the navigation it asks for
BOOK = {'preface': 'p', 'parts': [{'title': 'One', 'chapters': ['a', 'b']},
                                  {'title': 'Two', 'chapters': ['c']}],
        'appendices': ['z']}
EXPECTED = parse_book(BOOK).navigation()
GOOD = [('p.html', 'Preface', None), ('a.html', '1. Alpha', 'Part I: One'),
        ('b.html', '2. Beta', 'Part I: One'), ('c.html', '3. Gamma', 'Part II: Two'),
        ('z.html', 'Zeta', 'Appendices')]


def _nav(*links, current=None):
    """sphinx-book-theme's sidebar: links (href, text, caption) grouped in a
    list per caption, as one toctree each."""
    groups = []
    for href, text, caption in links:
        if not groups or groups[-1][0] != caption:
            groups.append((caption, []))
        cls = 'toctree-l1 current active' if href == current else 'toctree-l1'
        groups[-1][1].append(
            f'<li class="{cls}"><a class="reference internal" '
            f'href="{"#" if href == current else href}">{text}</a>'
            f'<ul><li class="toctree-l2"><a href="{href}#s">x</a></li></ul></li>')
    body = ''.join(
        (f'<p class="caption" role="heading"><span class="caption-text">'
         f'{caption}</span></p>' if caption else '')
        + f'<ul class="nav bd-sidenav">{"".join(items)}</ul>'
        for caption, items in groups)
    return ('<nav class="navbar"><a href="other.html">Home</a></nav>'
            f'<nav class="bd-links bd-docs-nav" aria-label="Main">{body}</nav>'
            '<aside><a href="y.html">not nav</a></aside>')


# --- navigation ------------------------------------------------------------------

def test_nav_entries_takes_first_level_links_with_their_captions():
    page = _nav(('p.html', 'Pre', None), ('a.html', '1. <span>Alpha</span>\n  one', 'I'),
                ('b.html', '2. Beta', 'I'), ('z.html', 'Zeta', 'App'))
    assert bc.nav_entries(page) == [
        ('p.html', 'Pre', None), ('a.html', '1. Alpha one', 'I'),
        ('b.html', '2. Beta', 'I'), ('z.html', 'Zeta', 'App')]


def test_nav_problems_accepts_the_book_in_order():
    entries = bc.nav_entries(_nav(*GOOD, current='c.html'))
    assert entries[3] == ('#', '3. Gamma', 'Part II: Two')
    assert bc.nav_problems(entries, EXPECTED, current='c') == []


def test_nav_problems_order_missing_and_extra():
    swapped = bc.nav_entries(_nav(GOOD[0], GOOD[2], GOOD[1], *GOOD[3:]))
    assert 'navigation order differs from book.yml: b comes where book.yml ' \
        'has a' in bc.nav_problems(swapped, EXPECTED)
    missing = bc.nav_entries(_nav(*GOOD[:3], ('x.html', 'Extra', 'Appendices'),
                                  GOOD[4]))
    assert bc.nav_problems(missing, EXPECTED) == [
        'navigation lacks c', 'navigation has x, which book.yml does not list']
    assert 'no navigation' in bc.nav_problems([], EXPECTED)[0]


def test_nav_problems_numbers_straight_through_the_parts():
    restarted = bc.nav_entries(_nav(*GOOD[:3], ('c.html', '1. Gamma', 'Part II: Two'),
                                    GOOD[4]))
    assert bc.nav_problems(restarted, EXPECTED) == [
        "navigation entry 4 (c) is '1. Gamma', not numbered '3. ...'"]
    numbered = bc.nav_entries(_nav(('p.html', '1. Preface', None), *GOOD[1:4],
                                   ('z.html', 'A.1. Zeta', 'Appendices')))
    assert bc.nav_problems(numbered, EXPECTED) == [
        "navigation entry 1 (p) is '1. Preface', numbered; book.yml has it "
        "unnumbered"]


def test_nav_problems_checks_the_parts():
    one_part = bc.nav_entries(_nav(*GOOD[:3], ('c.html', '3. Gamma', 'Part I: One'),
                                   GOOD[4]))
    assert bc.nav_problems(one_part, EXPECTED) == [
        "navigation entry 4 (c) is under 'Part I: One', not 'Part II: Two'"]
    no_captions = bc.nav_entries(_nav(*[(h, t, None) for h, t, _ in GOOD]))
    assert len(bc.nav_problems(no_captions, EXPECTED)) == 4


def test_problems_are_capped_per_page_and_grouped_across_pages():
    report = bc.PageReport('p')
    report.math_problems = [f'm{i}' for i in range(bc.MAX_LISTED + 3)]
    report.nav_problems = ['navigation lacks c']
    listed = report.problems
    assert listed[bc.MAX_LISTED] == 'math: ... and 3 more'
    assert len(listed) == bc.MAX_LISTED + 2
    lines = bc.group_problems([('a', ['x', 'y']), ('b', ['x']), ('c', ['x']),
                               ('d', ['x'])])
    assert lines == ['a, b, ... (4 pages): x', 'a: y']


# --- unrendered math ---------------------------------------------------------------

@pytest.mark.parametrize('text', [
    r'the loss \(\ell(x)\) is', r'see \[ a = b \]', 'sum $$x_i$$ here',
    r'\begin{align} a \end{align}', 'where $x^2$ grows', 'a $b$ c',
    r'a lone \( opening',
])
def test_unrendered_math_finds_tex(text):
    assert bc.unrendered_math(text)


@pytest.mark.parametrize('text', [
    'it costs $5 and $10', 'a $ sign', 'USD 5$', 'echo $HOME and $PATH',
    'plain prose (with parentheses) [and brackets]', '',
])
def test_unrendered_math_leaves_prose_alone(text):
    assert bc.unrendered_math(text) == []


def test_unrendered_math_reports_each_snippet_once_and_short():
    found = bc.unrendered_math(r'a \(x\) and $y$ then \[' + 'z' * 100 + r'\]')
    assert found[:2] == [r'\(x\)', '$y$']
    assert len(found) == 3 and len(found[2]) == 60 and found[2].endswith('...')


# --- search words ---------------------------------------------------------------------

def test_prose_words_skip_code_math_and_navigation():
    page = ('<nav class="bd-docs-nav">navigation words</nav><article>'
            '<p>Gradients flow backwards. Use <code>mx.nd.zeros</code> here.</p>'
            '<div class="highlight"><pre>print(secretcode)</pre></div>'
            r'<span class="math">\(mathword\)</span></article>')
    words = bc.prose_words(page)
    assert words['gradients'] == 1 and words['backwards'] == 1
    assert not {'navigation', 'secretcode', 'mathword', 'zeros', 'nd'} & set(words)


def test_pick_search_words_picks_a_word_no_other_chapter_has():
    words = {'a': {'gradient': 3, 'pipeline': 2, 'shared': 5},
             'b': {'shared': 1, 'kvstores': 1, 'servers': 1, 'tiny': 9},
             'c': {'shared': 2}}
    assert bc.pick_search_words(words) == {'a': 'gradient', 'b': 'kvstores'}


# --- the server ------------------------------------------------------------------------

def test_serve_picks_a_port_records_statuses_and_stops(tmp_path):
    (tmp_path / 'page.html').write_text('<p>hi</p>')
    with bc.serve(tmp_path) as server:
        assert server.url.startswith('http://127.0.0.1:')
        with urllib.request.urlopen(server.url + 'page.html?q=1') as r:
            assert r.status == 200 and r.read() == b'<p>hi</p>'
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(server.url + 'missing.png')
        assert server.statuses == {'/page.html': 200, '/missing.png': 404}
    with pytest.raises(OSError):
        urllib.request.urlopen(server.url + 'page.html', timeout=5)


def test_find_chromium_says_what_to_install(monkeypatch):
    monkeypatch.delenv('CHROMIUM', raising=False)
    monkeypatch.setenv('PATH', '')
    with pytest.raises(bc.CheckError, match='apt-get install -y chromium'):
        bc.find_chromium()
    monkeypatch.setenv('CHROMIUM', '/nonexistent/chromium')
    with pytest.raises(bc.CheckError, match='CHROMIUM='):
        bc.find_chromium()


def test_main_fails_clearly_without_a_built_site(tmp_path, capsys):
    book = tmp_path / 'book.yml'
    book.write_text('parts: [{title: One, chapters: [a]}]\n')
    assert bc.main([str(tmp_path / 'html'), '--book', str(book)]) == 2
    assert 'run `make book` first' in capsys.readouterr().err
    book.write_text('chapters: [a]\n')        # the schema before parts
    assert bc.main([str(tmp_path / 'html'), '--book', str(book)]) == 2
    assert 'unknown key(s) chapters' in capsys.readouterr().err


# --- the whole check on a fake site, in chromium -----------------------------------------

def _chromium():
    try:
        return bc.find_chromium()
    except bc.CheckError:
        return None


needs_chromium = pytest.mark.skipif(
    _chromium() is None, reason='no chromium (apt-get install chromium)')

_PNG = bytes.fromhex(   # a 1x1 PNG
    '89504e470d0a1a0a0000000d4948445200000001000000010806000000'
    '1f15c4890000000d49444154789c6360f8cf00000301010018dd8db400'
    '00000049454e44ae426082')

_SEARCH = '''<html><head><link rel="icon" href="data:,"></head><body>
<div id="search-results"></div><script>
const q = new URLSearchParams(location.search).get('q');
setTimeout(() => {
  const hit = q === 'zebra';
  document.getElementById('search-results').innerHTML = hit
    ? '<p class="search-summary">Search finished, found one page.</p>'
      + '<ul class="search"><li><a href="b.html?highlight=zebra">B</a></li></ul>'
    : '<p class="search-summary">Your search did not match any documents.</p>';
}, 100);
</script></body></html>'''


_SEARCH_FIELD = '<form action="search.html"><input type="search" name="q"></form>'


def _page(nav, body, search=_SEARCH_FIELD):
    return (f'<html><head><link rel="icon" href="data:,"></head><body>{search}'
            f'{nav}<article>{body}</article></body></html>')


def _fake_site(root, broken=False):
    root.mkdir()
    (root / 'pic.png').write_bytes(_PNG)
    links = [('a.html', '1. Alpha', 'Part I: One'), ('b.html', '2. Beta', 'Part I: One')]
    if broken:
        links = [('b.html', '1. Beta', 'Part I: One'), ('a.html', 'Alpha', 'Part I: One')]
    # broken: a second search field on the index, b's leads elsewhere
    index_search = 2 * _SEARCH_FIELD if broken else _SEARCH_FIELD
    b_search = _SEARCH_FIELD.replace('search.html', 'a.html') if broken else _SEARCH_FIELD
    (root / 'index.html').write_text(_page(_nav(*links), '<h1>Book</h1>',
                                           search=index_search))
    a_body = '<p>Alpha has a camel.</p><img src="pic.png">'
    b_body = '<p>Beta has a zebra.</p>'
    if broken:
        a_body += ('<img src="missing.png"><script>undefinedFunction()</script>'
                   r'<p>Math: <span class="math">\(x^2\)</span> and $y$.</p>')
    (root / 'a.html').write_text(_page(_nav(*links, current='a.html'), a_body))
    (root / 'b.html').write_text(_page(_nav(*links, current='b.html'), b_body,
                                       search=b_search))
    (root / 'search.html').write_text(_SEARCH)
    book = root.parent / 'book.yml'
    book.write_text('title: Fake\nparts:\n  - title: One\n    chapters: [a, b]\n')
    return book


def _group_gone(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@needs_chromium
def test_check_passes_a_good_fake_site(tmp_path):
    book = _fake_site(tmp_path / 'html')
    out = io.StringIO()
    problems = bc.run(tmp_path / 'html', book, tmp_path / 'shots',
                      searches={'b': 'zebra'}, out=out)
    assert problems == [], out.getvalue()
    table = out.getvalue()
    assert 'index' in table and 'search "zebra" -> b' in table
    assert ' NO' not in table
    for name in ('index.png', 'a.png'):
        assert (tmp_path / 'shots' / name).read_bytes()[:8] == _PNG[:8]


@needs_chromium
def test_check_finds_what_is_broken(tmp_path):
    book = _fake_site(tmp_path / 'html', broken=True)
    problems = bc.run(tmp_path / 'html', book, tmp_path / 'shots',
                      searches={'a': 'zebra'}, out=io.StringIO())
    text = '\n'.join(problems)
    assert 'a: console: JS ReferenceError: undefinedFunction' in text
    assert 'HTTP 404' in text and 'missing.png' in text
    assert 'a: image did not load' in text and 'pic.png' not in text
    assert r'a: math: not typeset: \(x^2\)' in text
    assert 'a: math: TeX in the text: $y$' in text
    assert 'index, a, b: navigation order differs from book.yml' in text
    assert "index, a, b: navigation entry 2 (a) is 'Alpha', not numbered" in text
    assert "search for 'zebra' does not find a" in text
    assert 'index: 2 visible search fields, not one: input in form, ' in text
    assert 'b: the search field (input in form) leads to /a.html' in text


@needs_chromium
def test_browser_leaves_no_process_behind():
    browser = bc.Browser(bc.find_chromium())
    browser.start()
    pgid = browser.proc.pid
    assert browser.send('Browser.getVersion')['product']
    browser.close()
    assert _group_gone(pgid)
    assert browser.proc is None and browser.profile is None
