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

from sphinx.util import logging

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]   # this checkout's d2lmini
from book_toc import toctrees  # noqa: E402
from book_yml import read_book  # noqa: E402

BOOK = read_book(ROOT / "book.yml")

project = BOOK.title or "d2lmini"
author = BOOK.author or "The d2lmini authors"
copyright = f"{datetime.date.today().year}, {author}"


def page_exists(stem: str) -> bool:
    return any((HERE / f"{stem}{ext}").is_file() for ext in (".ipynb", ".md"))


# The toctrees of index.md, generated from book.yml by the extension
# book_toc (tools/book_toc.py).  A config value: a change to them (an edited
# book.yml, a page that appears or goes) makes Sphinx re-read every page, so
# that no page keeps a stale navigation or stale section numbers.
book_toc = toctrees(BOOK, page_exists)

extensions = [
    "myst_nb",  # brings myst_parser with it; do not list both
    "sphinx-mathjax-offline",  # bundles MathJax 3; sets mathjax_path locally
    "sphinx.ext.autodoc",  # api.md: the reference, from the docstrings
    "sphinx.ext.napoleon",  # ... whose sections are NumPy style
    "book_toc",  # the toctrees from book.yml, chapters numbered across parts
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
    # One search field, the sidebar's.  pydata-sphinx-theme (under
    # sphinx-book-theme) otherwise adds its own to a header bar that holds
    # nothing else, over the sidebar's.
    "navbar_persistent": [],
}
# pydata-sphinx-theme (under sphinx-book-theme) logs a console error on a
# reader's first visit unless the default light/dark mode is set.
html_context = {"default_mode": "auto"}
# Without an icon of its own the browser asks for /favicon.ico (a 404).
html_favicon = "_static/favicon.svg"
html_show_sourcelink = False
html_last_updated_fmt = None

def setup(app):
    log = logging.getLogger(__name__)
    for page in BOOK.pages:
        if not page_exists(page):
            log.warning("book.yml lists %r but chapters/ has no %s.ipynb or "
                        "%s.md; leaving it out", page, page, page)
