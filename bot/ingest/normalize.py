"""Normalise a source's record before it is stored: tidy text, bounded fields, safe links.

Every source's records pass here (persist.ingest_batch), so these rules hold for the
arXiv API, the announcement feeds and any RSS/Atom feed alike:

- Text is NFC with whitespace collapsed; bidi overrides, zero-width and control
  characters (C0, C1) are removed and lone surrogates become U+FFFD, so feed text can
  neither reorder what a reader sees nor hide a word from matching.
- Fields fit their columns (bot.store.models): an over-long DOI is dropped, an over-long
  category left out, over-long text cut; a record that cannot be stored at all (its id
  too long, its version outside the column) raises `BadRecord` and is skipped.
- Authors are at most MAX_AUTHORS per paper, names at most MAX_NAME_CHARS: a feed entry
  cannot make one paper cost unbounded memory or matching time.
- Links are kept only when they are http(s) URLs: `javascript:` and `data:` links from
  a feed are never stored, hence never published.
"""

from __future__ import annotations

import operator
import unicodedata

from bot.store.records import MAX_LINK_CHARS, PAPER, safe_link
from bot.types import Author, PaperRecord

MAX_AUTHORS = 1000  # collaborations list more; the rest is not matchable, never a crash
MAX_NAME_CHARS = 200
MAX_AFFILIATIONS = 10  # per author
MAX_AFFILIATION_CHARS = 300
MAX_CATEGORIES = 50
MAX_TITLE_CHARS = 1000
MAX_ABSTRACT_CHARS = 20_000
MAX_NOTE_CHARS = 2000  # comment, journal reference
MAX_VERSION = 2**31 - 1  # the `version` column is a 32-bit integer

ID_CHARS: int = PAPER.c.id.type.length
DOI_CHARS: int = PAPER.c.doi.type.length
CATEGORY_CHARS: int = PAPER.c.primary_category.type.length
SOURCE_CHARS: int = PAPER.c.source.type.length

# Removed from feed text: bidi embeddings, overrides and isolates, zero-width characters,
# the soft hyphen, C0 controls but the whitespace that collapses anyway, DEL and C1.
_INVISIBLE = [
    0x00AD, 0x061C, 0x180E, *range(0x200B, 0x2010), *range(0x202A, 0x202F),
    *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF,
    *(c for c in range(0x20) if chr(c) not in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"),
    *range(0x7F, 0xA0),
]  # fmt: skip
_STRIP: dict[int, str | None] = dict.fromkeys(_INVISIBLE)
_STRIP[0x85] = " "  # NEL is a line break: keep the words apart
_STRIP.update(dict.fromkeys(range(0xD800, 0xE000), "\ufffd"))  # lone surrogates


class BadRecord(ValueError):
    """A record that cannot be stored as it is; the message says which field and why."""


def clean_text(text: str) -> str:
    """Collapse whitespace, drop invisible and control characters, compose (NFC).

    Returns `text` itself when nothing changes (checked in C for the common case).
    Whitespace is collapsed first: line breaks are what most often makes a field
    unprintable (an abstract wrapped over lines), and once they are gone the per-character
    translation runs only for text that really holds invisible or control characters.
    The result is the same in either order: the translation maps whitespace to whitespace
    and other characters to nothing or to non-whitespace, and NFC never crosses a space.
    """
    tidy = text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "
    if tidy and text.isascii():
        return text  # the common case, checked in C: nothing to do
    if not tidy:
        text = " ".join(text.split())
        if not text.isprintable():
            text = " ".join(text.translate(_STRIP).split())
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text


def clamp(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a space when one is near, with '…'."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ", limit // 2)
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


def normalize(record: PaperRecord) -> PaperRecord:
    """A record with tidy text and bounded fields, or BadRecord when it cannot be stored."""
    if not record.id or len(record.id) > ID_CHARS or not record.id.isprintable():
        raise BadRecord(f"id {record.id[:60]!r} is empty, unprintable or over {ID_CHARS} chars")
    if not 1 <= record.version <= MAX_VERSION:
        raise BadRecord(f"{record.id}: version {str(record.version)[:20]} out of range")
    title = clamp(clean_text(record.title), MAX_TITLE_CHARS)
    if not title:
        raise BadRecord(f"{record.id}: no title")
    doi = clean_text(record.doi).strip().lower() if record.doi else ""
    doi = doi if len(doi) <= DOI_CHARS and " " not in doi else ""
    abstract = clamp(clean_text(record.abstract), MAX_ABSTRACT_CHARS)
    authors = _clean_authors(record.authors)
    categories = _categories(record.categories)
    source = record.source[:SOURCE_CHARS]
    comment = clamp(clean_text(record.comment), MAX_NOTE_CHARS)
    journal_ref = clamp(clean_text(record.journal_ref), MAX_NOTE_CHARS)
    links = _links(record.links)
    if (
        title is record.title
        and abstract is record.abstract
        and authors is record.authors
        and categories == record.categories
        and source == record.source
        and comment is record.comment
        and journal_ref is record.journal_ref
        and doi == record.doi
        and links is record.links
    ):
        return record  # the common case: nothing to tidy, no second object per paper
    # Built directly, not with dataclasses.replace: this runs for every paper ingested.
    return PaperRecord(
        id=record.id,
        version=record.version,
        title=title,
        abstract=abstract,
        authors=authors,
        categories=categories,
        published=record.published,
        updated=record.updated,
        source=source,
        comment=comment,
        journal_ref=journal_ref,
        doi=doi,
        links=links,
        announce_type=record.announce_type,
        authoritative=record.authoritative,
    )


def _categories(categories: tuple[str, ...]) -> tuple[str, ...]:
    kept = dict.fromkeys(
        c for c in (x.strip() for x in categories) if c and len(c) <= CATEGORY_CHARS
    )
    return tuple(kept)[:MAX_CATEGORIES]


def _links(links: dict[str, str]) -> dict[str, str]:
    if all(map(_plain_http, links.values())):
        return links  # the common case (arXiv's own links), checked without parsing
    return {k[:20]: kept for k, v in links.items() if (kept := safe_link(v))}


def _plain_http(url: str) -> bool:
    """True for an http(s) URL with a host that safe_link keeps as it is (cheap checks)."""
    start = 8 if url.startswith("https://") else 7 if url.startswith("http://") else 0
    return (
        start > 0
        and len(url) <= MAX_LINK_CHARS
        and url[start : start + 1] not in ("", "/", "?", "#", "\\", "@", ":", "[")
        and url.isprintable()
        and " " not in url
    )


def _clean_authors(authors: tuple[Author, ...]) -> tuple[Author, ...]:
    if len(authors) <= MAX_AUTHORS and _all_clean(authors):
        return authors
    if len(authors) > MAX_AUTHORS:
        authors = authors[:MAX_AUTHORS]
    cleaned = tuple(a for a in map(_clean_author, authors) if a is not None)
    # Keep the tuple the source built when nothing changed: fewer objects per paper.
    if len(cleaned) == len(authors) and all(map(operator.is_, cleaned, authors)):
        return authors
    return cleaned


def _all_clean(authors: tuple[Author, ...]) -> bool:
    """True when cleaning would keep every name and affiliation as it is.

    One C-level check of all names (then of all affiliations) joined by "|" instead of a
    Python call per string: a list of a thousand authors costs about as much as a title.
    "|" is a printable starter that composes with nothing, so the joined text is printable,
    tidy and NFC exactly when every part is, and an empty or space-padded part shows as
    "||", "| " or " |" (a name holding one of those only takes the slow path).
    """
    if not authors:
        return True
    names = [a.name for a in authors]
    if not _tidy_parts(names, MAX_NAME_CHARS):
        return False
    affiliations = [a.affiliations for a in authors if a.affiliations]
    if not affiliations:
        return True
    if max(map(len, affiliations)) > MAX_AFFILIATIONS:
        return False
    return _tidy_parts([x for affs in affiliations for x in affs], MAX_AFFILIATION_CHARS)


def _tidy_parts(parts: list[str], limit: int) -> bool:
    joined = "|".join(parts)
    return (
        max(map(len, parts)) <= limit
        and joined.isprintable()
        and joined[:1] not in ("", " ", "|")
        and joined[-1:] not in (" ", "|")
        and "  " not in joined
        and "||" not in joined
        and "| " not in joined
        and " |" not in joined
        and (joined.isascii() or unicodedata.is_normalized("NFC", joined))
    )


def _clean_author(author: Author) -> Author | None:
    name = clamp(clean_text(author.name), MAX_NAME_CHARS)
    if not name:
        return None
    affiliations = author.affiliations
    if affiliations and (
        len(affiliations) > MAX_AFFILIATIONS or not all(map(_is_clean, affiliations))
    ):
        cleaned = (clamp(clean_text(x), MAX_AFFILIATION_CHARS) for x in affiliations)
        affiliations = tuple(dict.fromkeys(x for x in cleaned if x))[:MAX_AFFILIATIONS]
    if name == author.name and affiliations is author.affiliations:
        return author
    return Author(name, affiliations)


def _is_clean(text: str) -> bool:
    """True when cleaning would keep `text` as it is (cheap C checks first)."""
    return bool(text) and len(text) <= MAX_AFFILIATION_CHARS and clean_text(text) is text
