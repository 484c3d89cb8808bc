"""arXiv's author-list grammar, as the announcement feeds write it in `dc:creator`.

    Antonin Monteil, Paul Pegon
    Matthew Everitt, Robert M. Heath and Viv Kendon
    Ann Lee (Dept. of Physics, Ohio State), Bo Wu (MIT)
    S. Gupta (1), J. Bock (2,3), M. Zemcov (1 and 3) ((1) Cardiff, (2) JPL, (3) Caltech)
    QUaD collaboration: S. Gupta, P. Ade, et al

Names are separated by commas, `and`, `&` and a collaboration's colon. A parenthesised
group after a name is that author's affiliation, kept whole (affiliations contain
commas). A group of numbers refers to a numbered list `((1) …, (2) …)`, so one
affiliation can apply to several authors. `et al` is dropped; `Jr`, `Sr`, `II`… after a
comma stay with their name.

arXiv's own parser (arxiv-base `parse_author_affil`) also copies an affiliation back to
the authors before it that have none, because an author line typed by a submitter
means "A, B (X)" as "both at X". The feed is written from that parser's result, one
author at a time (arxiv-feed `ArxivEntryExtension.__add_authors`), so in a feed an
author without a group has no affiliation, and none is copied here.

The scan is one pass over the separators (a regular expression that cannot backtrack),
so its cost is linear in the length of the line whatever the line holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.types import Author

_TOKEN = re.compile(r"[(),:;&]|\s+and\s+")
_ET_AL = re.compile(r"et\.?\s*al\.?", re.IGNORECASE)
_SUFFIX = re.compile(r"(?:Jr|Sr)\.?|I{2,3}|IV", re.IGNORECASE)
_REFERENCES = re.compile(r"\d+(?:\s*(?:,|&|\band\b)\s*\d+)*")
_NUMBER = re.compile(r"\d+")
_NUMBERED = re.compile(r"\(\s*(\d+)\s*\)")


@dataclass(slots=True)
class _Entry:
    name: str
    affiliations: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)


def _tidy(text: str) -> str:
    return " ".join(text.split())


def _numbered(text: str) -> dict[str, str]:
    """`(1) Cardiff University, (2) JPL` → {"1": "Cardiff University", "2": "JPL"}."""
    found = list(_NUMBERED.finditer(text))
    table: dict[str, str] = {}
    if not found:
        return table
    ends = [m.start() for m in found[1:]] + [len(text)]
    for here, end in zip(found, ends, strict=True):
        value = _tidy(text[here.end() : end]).rstrip(" ,.;")
        if value:
            table.setdefault(here.group(1), value)
    return table


class _Builder:
    """Collects names and groups in order, then resolves numbered affiliations."""

    def __init__(self) -> None:
        self.entries: list[_Entry] = []
        self.numbered: dict[str, str] = {}
        self._after_comma = False

    def name(self, text: str) -> None:
        name = _tidy(text)
        if not name or _ET_AL.fullmatch(name):
            return
        if self._after_comma and self.entries and _SUFFIX.fullmatch(name):
            self.entries[-1].name += f" {name}"  # "Fred Bloggs, Jr" is one author
            return
        self.entries.append(_Entry(name))

    def separator(self, mark: str) -> None:
        self._after_comma = mark == ","

    def group(self, text: str) -> None:
        inner = text.strip()
        if inner.startswith("("):
            self.numbered.update(_numbered(inner))  # the numbered list, not an author's
            return
        if not self.entries or not inner:
            return
        if _REFERENCES.fullmatch(inner):
            self.entries[-1].references += _NUMBER.findall(inner)
        else:
            self.entries[-1].affiliations.append(_tidy(inner))
        self._after_comma = False

    def authors(self) -> tuple[Author, ...]:
        out = []
        for entry in self.entries:
            resolved = [self.numbered[n] for n in entry.references if n in self.numbered]
            affiliations = tuple(dict.fromkeys([*entry.affiliations, *resolved]))
            out.append(Author(entry.name, affiliations))
        return tuple(out)


def parse_authors(line: str) -> tuple[Author, ...]:
    """The authors of one `dc:creator` line, each with their affiliations."""
    builder = _Builder()
    depth = 0
    start = 0  # where the current name (depth 0) or group (depth 1) text begins
    for token in _TOKEN.finditer(line):
        mark = token.group()
        if depth == 0:
            builder.name(line[start : token.start()])
            if mark == "(":
                depth = 1
            elif mark != ")":  # a stray ")" only ends the name before it
                builder.separator(mark.strip())
            start = token.end()
        elif mark == "(":
            depth += 1
        elif mark == ")":
            depth -= 1
            if depth == 0:
                builder.group(line[start : token.start()])
                start = token.end()
    if depth:
        builder.group(line[start:])  # an unclosed group: still not part of a name
    else:
        builder.name(line[start:])
    return builder.authors()
