#!/usr/bin/env python3
"""Strip volatile metadata from executed notebooks, keeping their outputs.

``make notebooks`` (tools/run_notebooks.py) cleans each notebook it
re-executes, so that a re-run of an unchanged notebook gives an unchanged
file (no timestamps, no widget state, no per-machine Python version) while
the outputs the book shows stay in place.

Usage::

    python tools/clean_notebook.py chapters/*.ipynb          # clean in place
    python tools/clean_notebook.py --check chapters/*.ipynb  # exit 1 if dirty
"""

from __future__ import annotations

import argparse
import sys

import nbformat

# Cell metadata written by executors and front-ends, never by an author.
VOLATILE_CELL_KEYS = ("execution", "ExecuteTime", "papermill")
# Notebook metadata of the same kind.  kernelspec stays (it names the kernel);
# language_info stays too (the book uses it to pick the highlighter), less its
# version, which only says which machine ran it last.
VOLATILE_NB_KEYS = ("widgets", "papermill", "toc-autonumbering",
                    "varInspector")
VOLATILE_LANGUAGE_INFO_KEYS = ("version",)
# Output metadata that only describes the executor's run.
VOLATILE_OUTPUT_KEYS = ("execution",)
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return ``nb`` with volatile metadata removed (modified in place)."""
    for key in VOLATILE_NB_KEYS:
        nb.metadata.pop(key, None)
    lang = nb.metadata.get("language_info")
    if lang is not None:
        for key in VOLATILE_LANGUAGE_INFO_KEYS:
            lang.pop(key, None)
    for cell in nb.cells:
        for key in VOLATILE_CELL_KEYS:
            cell.metadata.pop(key, None)
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            meta = out.get("metadata")
            if meta is not None:
                for key in VOLATILE_OUTPUT_KEYS:
                    meta.pop(key, None)
            data = out.get("data")
            # A widget view is useless without the widget state removed above;
            # keep the text/plain fallback that comes with it.
            if data is not None and WIDGET_MIME in data:
                del data[WIDGET_MIME]
    return nb


def _serialize(nb: nbformat.NotebookNode) -> str:
    text = nbformat.writes(nb)  # the same bytes nbformat.write() puts on disk
    return text if text.endswith("\n") else text + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", help=".ipynb files")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if any file would change")
    args = parser.parse_args(argv)

    dirty = []
    for path in args.notebooks:
        with open(path, encoding="utf-8") as f:
            before = f.read()
        nb = nbformat.reads(before, as_version=4)
        after = _serialize(clean(nb))
        if after == before:
            continue
        dirty.append(path)
        if not args.check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(after)
    verb = "would clean" if args.check else "cleaned"
    for path in dirty:
        print(f"{verb} {path}")
    return 1 if (args.check and dirty) else 0


if __name__ == "__main__":
    sys.exit(main())
