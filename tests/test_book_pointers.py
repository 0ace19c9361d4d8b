"""The book's pointers into the package stay true.

Every ``d2lmini/...`` path and every ``:mod:`d2lmini....``` reference that
a chapter, the README or a docstring names must exist, and a module it
sends the reader to must hold code (a function or a class), not only
re-export names from elsewhere: a reader sent to a re-export finds nothing
to read.
"""
import ast
import glob
import json
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = re.compile(r'(?<![\w.~/-])d2lmini/[\w/]*\w(?:\.py)?/?')
MOD = re.compile(r':mod:`~?(d2lmini(?:\.\w+)+)`')


def _texts():
    """``(where, text)`` of everything a reader reads."""
    for nb in sorted(glob.glob(os.path.join(ROOT, 'chapters', '*.ipynb'))):
        with open(nb) as f:
            cells = json.load(f)['cells']
        for i, c in enumerate(cells):
            yield f'{os.path.basename(nb)} cell {i}', ''.join(c['source'])
    for md in sorted(glob.glob(os.path.join(ROOT, 'chapters', '*.md'))) + \
            [os.path.join(ROOT, 'README.md')]:
        with open(md) as f:
            yield os.path.basename(md), f.read()
    for py in sorted(glob.glob(os.path.join(ROOT, 'd2lmini', '**', '*.py'),
                               recursive=True)):
        with open(py) as f:
            yield os.path.relpath(py, ROOT), f.read()


def _target(ref):
    """The file or folder a reference names, or None."""
    if ref.startswith('d2lmini/'):
        p = os.path.join(ROOT, ref.rstrip('/'))
        return p if os.path.exists(p) else None
    base = os.path.join(ROOT, *ref.split('.'))
    for p in (base + '.py', base):
        if os.path.exists(p):
            return p
    return None


def _holds_code(path):
    with open(path) as f:
        tree = ast.parse(f.read())
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for n in tree.body)


REFS = sorted({(where, m.group(0) if pat is PATH else m.group(1))
               for where, text in _texts()
               for pat in (PATH, MOD) for m in pat.finditer(text)})


def test_there_are_pointers_to_check():
    assert len(REFS) > 30


@pytest.mark.parametrize('where,ref', REFS)
def test_a_pointer_names_code_that_exists(where, ref):
    path = _target(ref)
    assert path is not None, f'{where} names {ref}, which does not exist'
    if path.endswith('.py') and not path.endswith('__init__.py'):
        assert _holds_code(path), (f'{where} sends the reader to {ref}, which only '
                                   f're-exports names defined elsewhere')


def test_chapter_2_counts_the_operators_its_text_names():
    """Chapter 2 checks the gradients of "every differentiable operator of
    the core library (elemwise.py, ...; the neural-network operators are
    checked in their own chapter)": the cell's filter must pick exactly the
    operators of the files the text lists."""
    import numpy as np
    from d2lmini import nd
    with open(os.path.join(ROOT, 'chapters', '02_autograd.ipynb')) as f:
        cells = [''.join(c['source']) for c in json.load(f)['cells']]
    i = next(i for i, c in enumerate(cells) if c.lstrip().startswith('core = {')
             or '\ncore = {' in c)
    text = cells[i - 1]
    listed = set(re.findall(r'`(\w+)\.py`', text))
    code = cells[i]
    start = code.index('core = {')
    scope = {'nd': nd, 'np': np}
    exec(code[start:code.index('}', start) + 1], scope)
    counted = {type(op).__module__.rsplit('.', 1)[1] for op in scope['core'].values()}
    assert counted == listed, (counted, listed)
    assert 'neural-network operators' in text


# --- files a reader can hold in mind --------------------------------------------------
LONG = 600           # the "about 600 lines"


def test_a_long_module_says_why_at_its_top():
    """No module of the package is over LONG lines without a reason in the
    first paragraphs of its docstring ("Why one long file: ...")."""
    unexplained = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'd2lmini', '**', '*.py'),
                                 recursive=True)):
        with open(path) as f:
            lines = f.read().splitlines()
        if len(lines) > LONG and not any('Why one long file' in line
                                         for line in lines[:25]):
            unexplained.append(f'{os.path.relpath(path, ROOT)}: {len(lines)} lines')
    assert not unexplained, unexplained


# --- the reading path -----------------------------------------------------------------
def _reading_path():
    """[(file, lines)] of the README's reading-path table, and its text."""
    with open(os.path.join(ROOT, 'README.md')) as f:
        readme = f.read()
    section = readme.split('## Reading the code\n', 1)[1].split('\n## ', 1)[0]
    rows = re.findall(r'^\| *\d+ *\| *`(d2lmini/[^`]+)` *\| *(\d+) *\|', section, re.M)
    return [(path, int(n)) for path, n in rows], section


def test_the_reading_path_is_true():
    """Every file of the path exists, opens with a docstring, and has about
    the lines the README says; the total the README states is their sum."""
    rows, section = _reading_path()
    assert len(rows) >= 10
    wrong = []
    for path, stated in rows:
        full = os.path.join(ROOT, path)
        with open(full) as f:
            text = f.read()
        assert ast.get_docstring(ast.parse(text)), f'{path} opens without a docstring'
        n = len(text.splitlines())
        if abs(n - stated) > max(10, stated // 10):
            wrong.append(f'{path}: README says {stated} lines, it has {n}')
    assert not wrong, wrong
    total = sum(n for _, n in rows)
    about = re.search(r'about ([\d,]+) lines:', section)
    assert about, 'the README states the path\'s size'
    assert abs(int(about.group(1).replace(',', '')) - total) <= total // 20
    words = {10: 'ten', 12: 'twelve', 14: 'fourteen', 15: 'fifteen', 16: 'sixteen',
             17: 'seventeen', 18: 'eighteen'}
    assert f'ideas are in {words.get(len(rows), len(rows))} of those files' in section
    files = glob.glob(os.path.join(ROOT, 'd2lmini', '**', '*.py'), recursive=True)
    lines = 0
    for path in files:
        with open(path) as f:
            lines += len(f.read().splitlines())
    size = re.search(r'about ([\d,]+) lines in (\d+) files', section)
    assert size, "the README states the package's size"
    assert abs(int(size.group(1).replace(',', '')) - lines) <= lines // 10, lines
    assert abs(int(size.group(2)) - len(files)) <= len(files) // 10, len(files)


def test_the_preface_gives_the_same_reading_path():
    rows, _ = _reading_path()
    with open(os.path.join(ROOT, 'chapters', 'preface.md')) as f:
        preface = f.read()
    section = preface.split('## Reading the code\n', 1)[1].split('\n## ', 1)[0]
    listed = re.findall(r'^\d+\. `(d2lmini/[^`]+)`', section, re.M)
    assert listed == [path for path, _ in rows]
