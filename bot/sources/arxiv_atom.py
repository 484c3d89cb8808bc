"""Parse one arXiv API page (Atom + opensearch + arxiv extensions) into PaperRecords.

The page format is fixed and known, so it is read with the C ElementTree parser: it is
about twenty times faster than feedparser here and keeps each author's own
`arxiv:affiliation` (feedparser folds them into one value per entry).
"""

from __future__ import annotations

# expat resolves no external entities and bounds entity expansion (Python >= 3.7.1).
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime

from bot.dates import DateParseError, parse_date
from bot.sources.arxiv_ids import find_id
from bot.sources.base import Skip
from bot.types import Author, PaperRecord

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"


class PageError(ValueError):
    """The body is not a readable arXiv API page (malformed, truncated, HTML…)."""


@dataclass(slots=True)
class Page:
    total: int
    start: int
    papers: list[PaperRecord] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


def parse_page(body: bytes, *, source: str, url: str) -> Page:
    """Parse an API page; bad entries become Skips, a bad page raises PageError."""
    if body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        raise PageError("an HTML page instead of an Atom feed")
    try:
        root = ET.fromstring(body)  # noqa: S314 - see the import
    except ET.ParseError as exc:
        raise PageError(f"malformed XML ({exc})") from exc
    if root.tag != f"{ATOM}feed":
        raise PageError(f"not an Atom feed (root <{root.tag}>)")
    total = _int(root.findtext(f"{OPENSEARCH}totalResults"))
    start = _int(root.findtext(f"{OPENSEARCH}startIndex"))
    page = Page(total=total, start=start)
    for position, entry in enumerate(root.iter(f"{ATOM}entry"), start=start):
        entry_id = (entry.findtext(f"{ATOM}id") or "").strip()
        if "/api/errors" in entry_id:
            # arXiv reports a bad query as a feed with one "Error" entry.
            raise PageError(f"arXiv API error: {_text(entry, f'{ATOM}summary')}")
        try:
            page.papers.append(_record(entry, entry_id, source))
        except ValueError as exc:
            page.skipped.append(Skip(where=f"{url} entry {position}", reason=str(exc)))
    return page


def _record(entry: ET.Element, entry_id: str, source: str) -> PaperRecord:
    found = find_id(entry_id)
    if found is None:
        raise ValueError(f"entry without an arXiv id ({entry_id[:80]!r})")
    paper_id, version = found
    title = _text(entry, f"{ATOM}title")
    if not title:
        raise ValueError(f"entry {paper_id} without a title")
    published = _date(entry, f"{ATOM}published", paper_id)
    updated_text = _text(entry, f"{ATOM}updated")
    updated = _date(entry, f"{ATOM}updated", paper_id) if updated_text else published
    authors = tuple(
        Author(
            name=_text(author, f"{ATOM}name"),
            affiliations=tuple(
                (aff.text or "").strip() for aff in author.iter(f"{ARXIV}affiliation") if aff.text
            ),
        )
        for author in entry.iter(f"{ATOM}author")
    )
    primary = entry.find(f"{ARXIV}primary_category")
    categories = [primary.get("term", "")] if primary is not None else []
    for tag in entry.iter(f"{ATOM}category"):
        term = tag.get("term", "")
        if term and term not in categories:
            categories.append(term)
    links: dict[str, str] = {}
    for link in entry.iter(f"{ATOM}link"):
        href = link.get("href", "")
        if link.get("title") == "pdf":
            links["pdf"] = href
        elif link.get("title") == "doi":
            links["doi"] = href
        elif link.get("rel") == "alternate":
            links["abs"] = href
    return PaperRecord(
        id=paper_id,
        version=version,
        title=title,
        abstract=_text(entry, f"{ATOM}summary"),
        authors=tuple(a for a in authors if a.name),
        categories=tuple(c for c in categories if c),
        published=published,
        updated=updated,
        source=source,
        comment=_text(entry, f"{ARXIV}comment"),
        journal_ref=_text(entry, f"{ARXIV}journal_ref"),
        doi=_text(entry, f"{ARXIV}doi"),
        links=links,
    )


def _text(element: ET.Element, tag: str) -> str:
    return (element.findtext(tag) or "").strip()


def _date(entry: ET.Element, tag: str, paper_id: str) -> datetime:
    try:
        return parse_date(_text(entry, tag))
    except DateParseError as exc:
        raise ValueError(f"entry {paper_id}: {tag.split('}')[1]}: {exc}") from exc


def _int(text: str | None) -> int:
    try:
        return int((text or "0").strip())
    except ValueError:
        return 0
