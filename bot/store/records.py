"""The one mapping of a paper: `PaperRecord` ↔ `paper` row ↔ the JSON everyone reads.

Ingest writes rows with `record_to_row`, reads them back (and so do matching, refiling
and `alert test`) with `record_from_row`; the outbox payloads, the CLI's `--json` and
the web pages show a paper through `paper_json` / `paper_url`. A paper's link is
spelled here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict
from urllib.parse import quote, urlsplit

from bot.store.models import Paper
from bot.timeutil import as_utc
from bot.types import Author, PaperRecord

ARXIV_ABS = "https://arxiv.org/abs/"
MAX_LINK_CHARS = 2000
PAPER = Paper.__table__  # type: ignore[attr-defined]  # Core table: rows as mappings


class AuthorJSON(TypedDict):
    name: str
    affiliations: list[str]


class PaperJSON(TypedDict):
    """A paper in a message payload or in `--json` output."""

    id: str
    version: int
    title: str
    abstract: str
    authors: list[AuthorJSON]
    categories: list[str]  # primary first
    published: str  # ISO 8601, UTC
    updated: str
    url: str
    pdf_url: str
    comment: str
    journal_ref: str
    doi: str


def is_arxiv_id(paper_id: str) -> bool:
    """arXiv ids have no scheme; feed-only papers are `doi:…` or `url:…`."""
    return ":" not in paper_id


def abs_url(paper_id: str) -> str:
    """The arXiv abstract page of an arXiv id."""
    return ARXIV_ABS + quote(paper_id, safe="/.")


def safe_link(url: str) -> str:
    """`url` if it is an absolute http(s) URL of sane length, else ''.

    Feeds are written by strangers: a `javascript:` or `data:` link must never become an
    href on the topic page, in the Atom feed or in a digest.
    """
    url = url.strip() if isinstance(url, str) else ""
    if not url or len(url) > MAX_LINK_CHARS or not url.isprintable():
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else ""


def paper_url(paper_id: str, links: Mapping[str, str]) -> str:
    """Where a paper links to: the source's own page, else arXiv's, else nothing."""
    own = safe_link(links.get("abs") or "")
    return own or (abs_url(paper_id) if is_arxiv_id(paper_id) else "")


def record_to_row(record: PaperRecord, now: datetime) -> dict[str, Any]:
    """The `paper` row for a record, ingested at `now`."""
    return {
        "id": record.id,
        "version": record.version,
        "title": record.title,
        "abstract": record.abstract,
        "authors": [{"name": a.name, "affiliations": list(a.affiliations)} for a in record.authors],
        "categories": list(record.categories),
        "primary_category": record.primary_category,
        "comment": record.comment,
        "journal_ref": record.journal_ref,
        "doi": record.doi or None,
        "links": dict(record.links),
        "published": record.published,
        "updated": record.updated,
        "source": record.source,
        "ingested_at": now,
    }


def record_from_row(row: Mapping[Any, Any]) -> PaperRecord:
    """A stored `paper` row (a Core row mapping) as the record ingest and matching read."""
    return PaperRecord(
        id=row["id"],
        version=row["version"],
        title=row["title"],
        abstract=row["abstract"],
        authors=tuple(
            Author(str(a.get("name", "")), tuple(str(x) for x in a.get("affiliations") or ()))
            for a in row["authors"]
        ),
        categories=tuple(row["categories"]),
        published=as_utc(row["published"]),
        updated=as_utc(row["updated"]),
        source=row["source"],
        comment=row["comment"],
        journal_ref=row["journal_ref"],
        doi=row["doi"] or "",
        links=dict(row["links"]),
    )


def paper_json(row: Mapping[Any, Any]) -> PaperJSON:
    """The one JSON shape of a stored paper, from its row mapping (`select(PAPER)`)."""
    links = row["links"] or {}
    return {
        "id": row["id"],
        "version": row["version"],
        "title": row["title"],
        "abstract": row["abstract"],
        "authors": [
            {
                "name": str(a.get("name", "")),
                "affiliations": [str(x) for x in a.get("affiliations") or ()],
            }
            for a in row["authors"]
        ],
        "categories": list(row["categories"]),
        "published": as_utc(row["published"]).isoformat(),
        "updated": as_utc(row["updated"]).isoformat(),
        "url": paper_url(row["id"], links),
        "pdf_url": safe_link(links.get("pdf") or ""),
        "comment": row["comment"],
        "journal_ref": row["journal_ref"],
        "doi": row["doi"] or "",
    }
