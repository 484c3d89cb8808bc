"""Shared reading of RSS/Atom bodies with feedparser, for the RSS and generic sources."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from xml.sax import SAXException

import feedparser

from bot.errors import SourceError
from bot.ingest.dates import DateParseError, parse_date
from bot.ingest.http import Fetched
from bot.ingest.sources.base import Batch, Skip, StoredState
from bot.ingest.sources.xmlrepair import repair_xml

_TAG = re.compile(r"<[^>]+>")
# A server's wrong Content-Type or charset label is not damage to the feed itself.
_BENIGN = (feedparser.NonXMLContentType, feedparser.CharacterEncodingOverride)


def read_feed(response: Fetched, *, source: str) -> tuple[Any, list[Skip]]:
    """Parse a feed response; raise SourceError when nothing in it is a feed."""
    url = response.url
    body = response.content
    ctype = response.headers.get("content-type", "").lower()
    head = body.lstrip()[:200].lower()
    if ("html" in ctype and "xhtml" not in ctype) or head.startswith((b"<!doctype html", b"<html")):
        raise SourceError(source, "an HTML page instead of a feed", url=url)
    headers = {"content-location": url, "content-type": ctype or "application/xml"}
    try:
        # repair_xml: one entry's lone surrogate must not lose (or crash) the whole feed.
        parsed = feedparser.parse(repair_xml(body), response_headers=headers)
    except Exception as exc:  # feedparser raises whatever its input provokes
        raise SourceError(source, f"unreadable feed ({type(exc).__name__})", url=url) from exc
    skipped: list[Skip] = []
    problem = parsed.get("bozo_exception")
    if parsed.get("bozo") and not isinstance(problem, _BENIGN):
        first_line = str(problem or "malformed feed").splitlines()[0]
        if isinstance(problem, SAXException) or not parsed.entries:
            # A truncated or broken body: whatever feedparser salvaged may be cut short,
            # so none of it is stored; the validators are not stored either, so the next
            # poll fetches it again.
            raise SourceError(source, f"malformed XML ({first_line})", url=url)
        skipped.append(Skip(where=url, reason=f"feed damaged but readable: {first_line}"))
    elif not parsed.get("version") and not parsed.entries:
        raise SourceError(source, "unknown feed format", url=url)
    return parsed, skipped


def conditional_headers(state: StoredState) -> dict[str, str]:
    """If-None-Match / If-Modified-Since from what the last poll stored."""
    headers: dict[str, str] = {}
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.last_modified:
        headers["If-Modified-Since"] = state.last_modified
    return headers


def validators(response: Fetched, batch: Batch) -> Batch:
    """Copy ETag / Last-Modified into the batch so they are stored with its papers."""
    batch.etag = response.headers.get("etag")
    batch.last_modified = response.headers.get("last-modified")
    return batch


def entry_date(entry: Any, *names: str) -> datetime | None:
    """The first readable date among the entry's fields `names`."""
    present = entry.keys()  # not .get(): feedparser warns on its updated->published fallback
    for name in names:
        raw = entry[name] if name in present else None
        if raw:
            try:
                return parse_date(str(raw))
            except DateParseError:
                continue
    return None


def plain(text: str) -> str:
    """Drop HTML tags a feed put in a summary (entities are already decoded)."""
    return _TAG.sub(" ", text or "")
