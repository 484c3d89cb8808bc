"""A person's reference library, as exported by Zotero, Mendeley, EndNote, JabRef…:
BibTeX, RIS or CSL-JSON, read into titles, abstracts and authors.

Parsers, and why these: bibtexparser 2 (maintained, pure Python; its middlewares decode
LaTeX accents and split names into given/family parts the way BibTeX itself does,
`von` particles included); rispy (maintained, pure Python, knows the RIS tag set and
its repeated and continued lines); CSL-JSON is plain JSON in a documented schema, so
the standard library reads it and pydantic-free code below picks the fields we need.
Bounded: at most MAX_ITEMS entries and MAX_FIELD characters per field; a broken entry
is skipped and counted, never fatal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.errors import PapertideError

MAX_ITEMS = 5000
MAX_FIELD = 20_000
MAX_AUTHORS = 100
_RIS_START = re.compile(r"^\s*TY  - ", re.MULTILINE)
_BIBTEX_START = re.compile(r"^\s*@\w+\s*[{(]", re.MULTILINE)


class LibraryFormat(StrEnum):
    BIBTEX = "BibTeX"
    RIS = "RIS"
    CSL_JSON = "CSL-JSON"


class LibraryError(PapertideError):
    """A file that is none of the formats we read (one line)."""


@dataclass(frozen=True, slots=True)
class Name:
    given: str
    family: str

    @property
    def full(self) -> str:
        return f"{self.given} {self.family}".strip()


@dataclass(frozen=True, slots=True)
class Entry:
    title: str
    abstract: str
    authors: tuple[Name, ...]


@dataclass
class Library:
    format: LibraryFormat
    entries: list[Entry] = field(default_factory=list)
    skipped: int = 0


def _text(value: Any) -> str:
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    text = " ".join(str(value or "").replace("{", "").replace("}", "").split())
    return text[:MAX_FIELD]


def split_name(raw: str) -> Name | None:
    """'Family, Given' or 'Given Family' → Name; None for an empty or one-word literal."""
    raw = _text(raw).strip(" ,;")
    if not raw:
        return None
    if "," in raw:
        family, _, given = raw.partition(",")
        return Name(given=given.strip(), family=family.strip())
    words = raw.split()
    if len(words) < 2:
        return Name(given="", family=words[0])
    return Name(given=" ".join(words[:-1]), family=words[-1])


def decode(data: bytes) -> str:
    """UTF-8 (BOM or not), else Windows-1252 as old BibTeX files often are."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def detect(text: str) -> LibraryFormat:
    """Which format `text` is in, from its first non-blank characters and tags."""
    head = text.lstrip()
    if head.startswith(("[", "{")):
        return LibraryFormat.CSL_JSON
    if _RIS_START.search(text[:200_000]):
        return LibraryFormat.RIS
    if _BIBTEX_START.search(text[:200_000]):
        return LibraryFormat.BIBTEX
    raise LibraryError("That is not a BibTeX, RIS or CSL-JSON export.")


def _bibtex(text: str, library: Library) -> None:
    import bibtexparser
    from bibtexparser import middlewares

    parsed = bibtexparser.parse_string(  # type: ignore[attr-defined]
        text,
        append_middleware=[
            middlewares.LatexDecodingMiddleware(),
            middlewares.SeparateCoAuthors(),
            middlewares.SplitNameParts(),
        ],
    )
    library.skipped += len(parsed.failed_blocks)
    for entry in parsed.entries[:MAX_ITEMS]:
        fields = entry.fields_dict
        names = []
        people = fields["author"].value if "author" in fields else []
        for person in people if isinstance(people, list) else []:
            given = " ".join(getattr(person, "first", []))
            family = " ".join([*getattr(person, "von", []), *getattr(person, "last", [])])
            if family:
                names.append(Name(given=_text(given), family=_text(family)))
        _add(library, fields.get("title"), fields.get("abstract"), names)


def _value(field_: Any) -> str:
    return _text(getattr(field_, "value", field_) if field_ is not None else "")


def _add(library: Library, title: Any, abstract: Any, names: list[Name]) -> None:
    entry = Entry(title=_value(title), abstract=_value(abstract),
                  authors=tuple(names[:MAX_AUTHORS]))  # fmt: skip
    if entry.title or entry.abstract or entry.authors:
        library.entries.append(entry)
    else:
        library.skipped += 1


def _ris(text: str, library: Library) -> None:
    import rispy

    try:
        records = rispy.loads(text)
    except (ValueError, KeyError, IndexError) as exc:
        raise LibraryError(f"That RIS file does not parse: {str(exc)[:120]}") from exc
    for record in records[:MAX_ITEMS]:
        raw_names = [*record.get("authors", []), *record.get("first_authors", [])]
        names = [n for n in (split_name(str(a)) for a in raw_names) if n is not None]
        title = next((record[k] for k in ("title", "primary_title", "short_title")
                      if record.get(k)), "")  # fmt: skip
        abstract = record.get("abstract") or record.get("notes_abstract") or ""
        _add(library, title, abstract, names)


def _csl(text: str, library: Library) -> None:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LibraryError(f"That JSON does not parse: {exc}") from exc
    items = document.get("items", [document]) if isinstance(document, dict) else document
    if not isinstance(items, list):
        raise LibraryError("A CSL-JSON export is a list of items.")
    for item in items[:MAX_ITEMS]:
        if not isinstance(item, dict):
            library.skipped += 1
            continue
        names = []
        for person in item.get("author", []) if isinstance(item.get("author"), list) else []:
            if not isinstance(person, dict):
                continue
            if person.get("family"):
                names.append(Name(given=_text(person.get("given", "")),
                                  family=_text(person["family"])))  # fmt: skip
            elif (literal := split_name(str(person.get("literal", "")))) is not None:
                names.append(literal)
        _add(library, item.get("title"), item.get("abstract"), names)


def read_library(data: bytes) -> Library:
    """The entries of a BibTeX, RIS or CSL-JSON export (LibraryError if it is none)."""
    text = decode(data)
    library = Library(format=detect(text))
    reader = {LibraryFormat.BIBTEX: _bibtex, LibraryFormat.RIS: _ris,
              LibraryFormat.CSL_JSON: _csl}[library.format]  # fmt: skip
    reader(text, library)
    if not library.entries:
        raise LibraryError(f"No entries found in that {library.format} file.")
    return library
