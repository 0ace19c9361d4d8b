"""Sphinx configuration for the d2lmini book.

Title, author and chapter order come from ``book.yml`` at the repository root
(the parent directory of this file).  The root toctree is not written by hand:
a small extension below appends it to ``index.md`` when Sphinx reads that
page, so the reading order lives in exactly one place.  Notebooks are rendered
from their committed outputs (``make notebooks`` refreshes them); nothing is
executed here.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import yaml
from sphinx.util import logging

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BOOK = yaml.safe_load((ROOT / "book.yml").read_text(encoding="utf-8")) or {}

project = BOOK.get("title", "d2lmini")
author = BOOK.get("author", "The d2lmini authors")
copyright = f"{datetime.date.today().year}, {author}"


def _chapter_exists(stem: str) -> bool:
    return any((HERE / f"{stem}{ext}").is_file() for ext in (".ipynb", ".md"))


# The table of contents: the chapters book.yml lists that exist.  It is a
# config value, so a change to it (an edited book.yml, a chapter file that
# appears or goes) makes Sphinx re-read every page, not serve a stale toctree.
BOOK_CHAPTERS = [str(c) for c in BOOK.get("chapters") or []]
book_toc = [c for c in BOOK_CHAPTERS if _chapter_exists(c)]
# Chapters and their sections are numbered (1., 1.1., ...) in the navigation
# and the page titles.  Also a config value, so that turning it off or on
# re-reads every page (the numbers are stored with each page).
book_toc_numbered = True

extensions = [
    "myst_nb",  # brings myst_parser with it; do not list both
    "sphinx-mathjax-offline",  # bundles MathJax 3; sets mathjax_path locally
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

TOC_START = "\n\n<!-- toctree generated from book.yml by chapters/conf.py -->\n"


def _append_toctree(app, docname, source):
    if docname == app.config.root_doc:
        body = "\n".join(app.config.book_toc)
        numbered = ":numbered:\n" if app.config.book_toc_numbered else ""
        source[0] += (f"{TOC_START}\n```{{toctree}}\n:maxdepth: 1\n"
                      f":caption: Chapters\n{numbered}\n{body}\n```\n")


def setup(app):
    app.add_config_value("book_toc", [], "env")
    app.add_config_value("book_toc_numbered", True, "env")
    app.connect("source-read", _append_toctree)
    log = logging.getLogger(__name__)
    for stem in BOOK_CHAPTERS:
        if stem not in book_toc:
            log.warning("book.yml lists chapter %r but chapters/ has no "
                        "%s.ipynb or %s.md; leaving it out", stem, stem, stem)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
