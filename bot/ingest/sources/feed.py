"""Any RSS or Atom feed (`feed:<url>`): a journal, a lab blog, a preprint server.

Conditional GETs (ETag, Last-Modified) keep a quiet feed to one cheap 304. A paper's
id is its arXiv id when the entry links to arXiv, else `doi:<doi>`, else
`url:<sha1 of the link>`, so the same paper seen on arXiv and in a journal feed
becomes one paper.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from typing import Any

from bot.ingest.http import fetch
from bot.ingest.sources.arxiv_ids import find_id
from bot.ingest.sources.base import BATCH_SIZE, Batch, Skip, SourceContext, StoredState
from bot.ingest.sources.feedread import (
    conditional_headers,
    entry_date,
    plain,
    read_feed,
    validators,
)
from bot.timeutil import utcnow
from bot.types import Author, PaperRecord

_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE)


class FeedSource:
    """A generic feed; `name` is `feed:<url>`."""

    def __init__(self, name: str, ctx: SourceContext) -> None:
        self.name = name
        self.url = name.removeprefix("feed:")
        self._ctx = ctx

    async def fetch(self, state: StoredState) -> AsyncIterator[Batch]:
        response = await fetch(
            self._ctx.http, self.url, source=self.name, headers=conditional_headers(state)
        )
        checked = {"checked_at": utcnow().isoformat()}
        if response.status_code == 304:
            yield Batch(papers=[], data=checked | {"not_modified": True})
            return
        parsed, skipped = read_feed(response, source=self.name)
        batch = Batch(papers=[], skipped=skipped)
        for position, entry in enumerate(parsed.entries):
            try:
                batch.papers.append(self._record(entry))
            except ValueError as exc:
                batch.skipped.append(Skip(where=f"{self.url} entry {position}", reason=str(exc)))
            if len(batch.papers) >= BATCH_SIZE:
                yield batch
                batch = Batch(papers=[])
        batch.data = checked | {"not_modified": False, "entries": len(parsed.entries)}
        yield validators(response, batch)

    def _record(self, entry: Any) -> PaperRecord:
        title = str(entry.get("title", "")).strip()
        link = str(entry.get("link", "")).strip()
        guid = str(entry.get("id", "")).strip()
        if not title:
            raise ValueError(f"entry {guid or link or '?'} without a title")
        if not (link or guid):
            raise ValueError(f"entry {title[:60]!r} without an id or link")
        doi = _find_doi(entry)
        found = find_id(link) or find_id(guid)
        version = 1
        if found:
            paper_id, version = found
        elif doi:
            paper_id = f"doi:{doi.lower()}"
        else:
            digest = hashlib.sha1((link or guid).encode(), usedforsecurity=False).hexdigest()
            paper_id = f"url:{digest}"
        when = entry_date(entry, "published", "updated", "created") or utcnow()
        updated = entry_date(entry, "updated") or when
        authors = tuple(
            Author(name=str(a.get("name", "")).strip())
            for a in entry.get("authors", [])
            if str(a.get("name", "")).strip()
        )
        categories = tuple(
            dict.fromkeys(str(t.get("term", "")) for t in entry.get("tags", []) if t.get("term"))
        )
        return PaperRecord(
            id=paper_id,
            version=version,
            title=title,
            abstract=plain(str(entry.get("summary", ""))),
            authors=authors,
            categories=categories,
            published=when,
            updated=max(when, updated),
            source=self.name,
            doi=doi,
            links={"abs": link} if link else {},
        )


def _find_doi(entry: Any) -> str:
    for key in ("prism_doi", "dc_identifier", "id", "link"):
        match = _DOI.search(str(entry.get(key, "")))
        if match:
            return match.group(1).rstrip(".,;")
    return ""


def create(name: str, ctx: SourceContext) -> FeedSource:
    return FeedSource(name, ctx)
