"""Shared reading of RSS/Atom bodies with feedparser, for the RSS and generic sources."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import feedparser
import httpx

from bot.dates import DateParseError, parse_date
from bot.errors import SourceError
from bot.sources.base import Batch, Skip, StoredState

_TAG = re.compile(r"<[^>]+>")


def read_feed(response: httpx.Response, *, source: str) -> tuple[Any, list[Skip]]:
    """Parse a feed response; raise SourceError when nothing in it is a feed."""
    url = str(response.url)
    body = response.content
    ctype = response.headers.get("content-type", "").lower()
    head = body.lstrip()[:200].lower()
    if ("html" in ctype and "xhtml" not in ctype) or head.startswith((b"<!doctype html", b"<html")):
        raise SourceError(source, "an HTML page instead of a feed", url=url)
    parsed = feedparser.parse(body, response_headers={"content-location": url})
    skipped: list[Skip] = []
    if parsed.get("bozo"):
        problem = str(parsed.get("bozo_exception", "malformed feed")).splitlines()[0]
        if not parsed.entries:
            kind = "malformed XML" if parsed.get("version") or b"<" in head else "unknown format"
            raise SourceError(source, f"{kind} ({problem})", url=url)
        # feedparser's loose parser recovered entries; keep them, note the damage.
        skipped.append(
            Skip(
                where=url,
                reason=f"malformed feed, {len(parsed.entries)} entries recovered: {problem}",
            )
        )
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


def validators(response: httpx.Response, batch: Batch) -> Batch:
    """Copy ETag / Last-Modified into the batch so they are stored with its papers."""
    batch.etag = response.headers.get("etag")
    batch.last_modified = response.headers.get("last-modified")
    return batch


def entry_date(entry: Any, *names: str) -> datetime | None:
    """The first readable date among the entry's fields `names`."""
    for name in names:
        raw = entry.get(name)
        if raw:
            try:
                return parse_date(str(raw))
            except DateParseError:
                continue
    return None


def plain(text: str) -> str:
    """Drop HTML tags a feed put in a summary (entities are already decoded)."""
    return _TAG.sub(" ", text or "")
