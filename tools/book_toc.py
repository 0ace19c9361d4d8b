"""A Sphinx extension: the book's toctrees from ``book.yml``.

``chapters/conf.py`` sets the config value ``book_toc`` to ``toctrees(book)``
and lists this module in ``extensions``.  The extension appends those
toctrees to the root page when Sphinx reads it, and makes the chapter numbers
run on from one part's toctree to the next.
"""

from __future__ import annotations

import itertools

from docutils import nodes
from sphinx import addnodes


def toctrees(book, exists) -> str:
    """The root page's toctrees, as MyST markdown: one for each caption of
    ``book.navigation()`` (the preface, without one; each part; the
    appendices), numbered where its pages are.  Pages for which
    ``exists(page)`` is false are left out."""
    blocks = []
    for caption, entries in itertools.groupby(book.navigation(),
                                              key=lambda e: e.caption):
        entries = list(entries)
        pages = [e.page for e in entries if exists(e.page)]
        if not pages:
            continue
        options = ":maxdepth: 1\n"
        if caption:
            options += f":caption: {caption}\n"
        if entries[0].number is not None:
            options += ":numbered:\n"
        blocks.append("```{toctree}\n" + options + "\n" + "\n".join(pages)
                      + "\n```\n")
    return "\n".join(blocks)


TOC_START = "\n\n<!-- toctrees generated from book.yml -->\n"


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
    return {"parallel_read_safe": True, "parallel_write_safe": True}
