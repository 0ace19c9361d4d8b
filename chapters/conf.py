"""Sphinx configuration for the d2lmini book.

Title, author and the table of contents come from ``book.yml`` at the
repository root (read by ``tools/book_yml.py``).  The root toctrees are not
written by hand: a small extension below appends them to ``index.md`` when
Sphinx reads that page, one per part of the book, so the reading order lives
in exactly one place.  Notebooks are rendered from their committed outputs
(``make notebooks`` refreshes them); nothing is executed here.  The API
reference (``api.md``) is generated from the package's docstrings, imported
from this checkout.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.util import logging

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]   # this checkout's d2lmini
from book_yml import part_caption, read_book  # noqa: E402

BOOK = read_book(ROOT / "book.yml")

project = BOOK.title or "d2lmini"
author = BOOK.author or "The d2lmini authors"
copyright = f"{datetime.date.today().year}, {author}"


def page_exists(stem: str) -> bool:
    return any((HERE / f"{stem}{ext}").is_file() for ext in (".ipynb", ".md"))


def toctrees(book, exists=page_exists) -> str:
    """The root page's toctrees, as MyST markdown: the preface (no caption,
    unnumbered), one numbered toctree per part captioned "Part I: ...", then
    the appendices (unnumbered).  Pages that do not exist are left out."""
    def toctree(pages, caption=None, numbered=False):
        pages = [p for p in pages if exists(p)]
        if not pages:
            return ""
        options = ":maxdepth: 1\n" + (f":caption: {caption}\n" if caption else "")
        options += ":numbered:\n" if numbered else ""
        return "```{toctree}\n" + options + "\n" + "\n".join(pages) + "\n```\n"

    blocks = [toctree([book.preface] if book.preface else [])]
    blocks += [toctree(part.chapters, part_caption(i, part), numbered=True)
               for i, part in enumerate(book.parts, 1)]
    blocks.append(toctree(book.appendices, "Appendices"))
    return "\n".join(b for b in blocks if b)


# The toctrees, a config value: a change to them (an edited book.yml, a page
# that appears or goes) makes Sphinx re-read every page, so that no page keeps
# a stale navigation or stale section numbers.
book_toc = toctrees(BOOK)

extensions = [
    "myst_nb",  # brings myst_parser with it; do not list both
    "sphinx-mathjax-offline",  # bundles MathJax 3; sets mathjax_path locally
    "sphinx.ext.autodoc",  # api.md: the reference, from the docstrings
    "sphinx.ext.napoleon",  # ... whose sections are NumPy style
]

root_doc = "index"
exclude_patterns = [
    "_build",
    "**/.ipynb_checkpoints",
    "**/__pycache__",
    "Thumbs.db",
    ".DS_Store",
]

# --- notebooks and MyST -------------------------------------------------------
nb_execution_mode = "off"  # use the outputs committed in the notebooks
nb_ipywidgets_js = {}  # never pull require.js / widget managers from a CDN
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# --- the API reference (api.md) -------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures are MXNet's; docstrings say types
add_module_names = False
napoleon_google_docstring = False

# --- HTML ---------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = project
html_theme_options = {
    "use_download_button": True,
    "show_toc_level": 2,
    "home_page_in_toc": False,
}
# pydata-sphinx-theme (under sphinx-book-theme) logs a console error on a
# reader's first visit unless the default light/dark mode is set.
html_context = {"default_mode": "auto"}
# Without an icon of its own the browser asks for /favicon.ico (a 404).
html_favicon = "_static/favicon.svg"
html_show_sourcelink = False
html_last_updated_fmt = None

TOC_START = "\n\n<!-- toctrees generated from book.yml by chapters/conf.py -->\n"


def _append_toctrees(app, docname, source):
    if docname == app.config.root_doc:
        source[0] += TOC_START + app.config.book_toc


def _number_chapters_straight_through(app, env):
    """Make the chapter numbers run on from part to part (1-5, 6-10, ...).

    Sphinx numbers every numbered toctree from 1, so the chapters of each
    part would start again at 1.  This runs after Sphinx has numbered them
    (its handler of this event has the default priority) and adds to every
    number of a part the last chapter number of the parts before it: in the
    section numbers of each page and in the nodes the navigation and the
    page titles are rendered from.
    """
    root = app.config.root_doc
    if root not in env.numbered_toctrees:
        return []
    offset = 0
    for toctree in env.get_doctree(root).findall(addnodes.toctree):
        if not toctree.get("numbered"):
            continue
        last = 0
        for _title, page in toctree["entries"]:
            secnums = env.toc_secnumbers.get(page)
            if not secnums:
                continue
            last = max([last] + [n[0] for n in secnums.values() if n])
            if offset:
                _shift_numbers(env, page, offset)
        offset += last
    return []


def _shift_numbers(env, page, offset):
    def shift(number):
        return (number[0] + offset, *number[1:])

    secnums = env.toc_secnumbers[page]
    for anchor, number in secnums.items():
        if number:
            secnums[anchor] = shift(number)
    # The references of the page's toc and its title carry the same numbers,
    # as lists (the title's is the list of its first reference: replace,
    # never modify in place, so that no number is shifted twice).
    targets = list(env.tocs[page].findall(nodes.reference))
    if page in env.titles:
        targets.append(env.titles[page])
    for node in targets:
        if node.get("secnumber"):
            node["secnumber"] = list(shift(node["secnumber"]))


def setup(app):
    app.add_config_value("book_toc", "", "env")
    app.connect("source-read", _append_toctrees)
    app.connect("env-get-updated", _number_chapters_straight_through,
                priority=600)
    log = logging.getLogger(__name__)
    for page in BOOK.pages:
        if not page_exists(page):
            log.warning("book.yml lists %r but chapters/ has no %s.ipynb or "
                        "%s.md; leaving it out", page, page, page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
