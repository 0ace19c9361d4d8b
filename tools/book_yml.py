"""Read ``book.yml``, the book's table of contents.

The one reader of that file: ``chapters/conf.py`` builds the site's
navigation with it and ``tools/book_check.py`` checks the built site against
it.  See the comment at the top of ``book.yml`` for the schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

KEYS = {"title", "author", "preface", "parts", "appendices"}
APPENDICES_CAPTION = "Appendices"


class NavEntry(NamedTuple):
    """One page as the navigation lists it: under ``caption`` (None: none),
    numbered ``number`` (None: unnumbered)."""
    page: str
    caption: str | None
    number: int | None


@dataclass
class Part:
    title: str
    chapters: list[str]


@dataclass
class Book:
    title: str = ""
    author: str = ""
    preface: str | None = None
    parts: list[Part] = field(default_factory=list)
    appendices: list[str] = field(default_factory=list)

    @property
    def chapters(self):
        """Every chapter, in reading order (numbered 1, 2, ... in the book)."""
        return [c for part in self.parts for c in part.chapters]

    @property
    def pages(self):
        """Every page the navigation lists, in its order."""
        return [entry.page for entry in self.navigation()]

    def navigation(self):
        """The navigation, a list of ``NavEntry``: the preface (no caption,
        unnumbered), the chapters of each part under its caption
        (``part_caption``), numbered 1, 2, ... straight through the parts,
        then the appendices under ``APPENDICES_CAPTION``, unnumbered."""
        entries = [NavEntry(self.preface, None, None)] if self.preface else []
        number = 0
        for i, part in enumerate(self.parts, 1):
            for chapter in part.chapters:
                number += 1
                entries.append(NavEntry(chapter, part_caption(i, part), number))
        return entries + [NavEntry(page, APPENDICES_CAPTION, None)
                          for page in self.appendices]


def roman(n):
    """1 -> 'I', 4 -> 'IV', 14 -> 'XIV' (part numbers)."""
    out = ""
    for value, letters in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
                           (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
                           (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        count, n = divmod(n, value)
        out += letters * count
    return out


def part_caption(number, part):
    """The heading a part gets in the navigation: 'Part II: Many Devices'."""
    return f"Part {roman(number)}: {part.title}"


def parse_book(data):
    """A ``Book`` from the parsed YAML ``data``; ValueError naming what is
    wrong (an unknown key, a part without a title or chapters, a page listed
    twice)."""
    data = data or {}
    if not isinstance(data, dict):
        raise ValueError("book.yml: expected a mapping at the top level")
    unknown = set(data) - KEYS
    if unknown:
        raise ValueError(f"book.yml: unknown key(s) {', '.join(sorted(unknown))}"
                         f"; expected {', '.join(sorted(KEYS))}")
    parts = []
    for i, part in enumerate(data.get("parts") or [], 1):
        if (not isinstance(part, dict) or not part.get("title")
                or not part.get("chapters") or set(part) - {"title", "chapters"}):
            raise ValueError(f"book.yml: part {i} must be a mapping with a "
                             f"title and a list of chapters, not {part!r}")
        parts.append(Part(str(part["title"]),
                          [str(c) for c in part["chapters"]]))
    preface = data.get("preface")
    book = Book(title=str(data.get("title", "")),
                author=str(data.get("author", "")),
                preface=str(preface) if preface else None, parts=parts,
                appendices=[str(a) for a in data.get("appendices") or []])
    seen = set()
    for page in book.pages:
        if page in seen:
            raise ValueError(f"book.yml: {page} is listed twice")
        seen.add(page)
    return book


def read_book(path):
    """The ``Book`` that the YAML file ``path`` describes."""
    import yaml
    return parse_book(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
