"""The arXiv daily announcement feeds (`arxiv-rss`), one request per announcement.

The RSS 2.0 and Atom formats arXiv has served since 2024 (arXiv/arxiv-docs
`rss_specifications.md`, `atom_specifications.md`; written by arXiv/arxiv-feed) carry the
same item fields: `dc:creator` (authors and affiliations in arXiv's author-list grammar,
see arxiv_authors.py), `arxiv:DOI`, `arxiv:journal_reference` and `arxiv:announce_type`:
new, cross, replace, replace-cross or absonly. Ingest turns a replacement or an absonly
into an update of a known paper and a cross-list of a known paper into one more
category; a type arXiv does not document is skipped and logged once per poll. The item's
date is the announcement, not the submission: the arXiv API repairs dates, authors and
the rest when it returns the same version (persist.py).

arXiv sometimes keeps serving the previous announcement on an announcement day: when
the highest paper id has not moved although a new announcement was due, the feed is
recorded as stale (shown by `papertide status`), not as quiet.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from bot.ingest.announce import last_announcement
from bot.ingest.dates import DateParseError, parse_date
from bot.ingest.http import fetch
from bot.ingest.sources.arxiv_authors import parse_authors
from bot.ingest.sources.arxiv_ids import find_id, sort_key
from bot.ingest.sources.base import BATCH_SIZE, Batch, Skip, SourceContext, StoredState
from bot.ingest.sources.feedread import conditional_headers, entry_date, read_feed, validators
from bot.timeutil import utcnow
from bot.types import AnnounceType, PaperRecord

log = logging.getLogger(__name__)

_ABSTRACT = re.compile(r"^.*?Abstract:\s*", re.DOTALL)


class UnknownAnnounceType(ValueError):
    """An item whose announce_type arXiv does not document (counted, logged once a poll)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class ArxivRssSource:
    """One feed for all configured categories (`cs.LG+cs.AI`), polled per announcement."""

    def __init__(self, name: str, ctx: SourceContext, *, now: datetime | None = None) -> None:
        self.name = name
        self._ctx = ctx
        self._now = now

    @property
    def url(self) -> str:
        cats = sorted(set(self._ctx.categories)) or ["cs.LG", "cs.AI"]
        return self._ctx.settings.arxiv_rss_url + "+".join(cats)

    async def fetch(self, state: StoredState) -> AsyncIterator[Batch]:
        now = self._now or utcnow()
        expected = last_announcement(now)
        ingested = _when(state.data.get("last_announcement"))
        due = ingested is None or ingested < expected
        facts: dict[str, Any] = {
            "checked_at": now.isoformat(),
            "expected_announcement": expected.isoformat(),
        }
        response = await fetch(
            self._ctx.http,
            self.url,
            source=self.name,
            headers=conditional_headers(state),
            limiter=self._ctx.http.arxiv_limiter,
        )
        if response.status_code == 304:
            yield Batch(papers=[], data={**facts, "stale": due and ingested is not None})
            return
        parsed, skipped = read_feed(response, source=self.name)
        records: list[PaperRecord] = []
        unknown: Counter[str] = Counter()
        for position, entry in enumerate(parsed.entries):
            try:
                records.append(self._record(entry))
            except UnknownAnnounceType as exc:
                unknown[exc.kind] += 1
            except ValueError as exc:
                skipped.append(Skip(where=f"{self.url} item {position}", reason=str(exc)))
        if unknown:
            # One line per poll, not one per item: a new type arXiv invents may be on all.
            kinds = ", ".join(f"{kind!r} x{n}" for kind, n in sorted(unknown.items()))
            skipped.append(
                Skip(
                    where=self.url,
                    reason=f"items with an unknown announce_type skipped: {kinds}",
                    count=sum(unknown.values()),
                )
            )
        highest = max((r.id for r in records), key=sort_key, default=None)
        previous = state.data.get("highest_id")
        moved = highest is not None and (
            previous is None or sort_key(highest) > sort_key(str(previous))
        )
        if moved:
            counts = {t.value: 0 for t in AnnounceType}
            for record in records:
                counts[record.announce_type.value] += 1
            facts |= {
                "highest_id": highest,
                "last_announcement": expected.isoformat(),
                "last_announcement_size": len(records),
                "last_announcement_types": counts,
                "stale": False,
            }
        else:
            # Nothing newer than what we hold: stale if an announcement was due.
            facts["stale"] = due and previous is not None
            if facts["stale"]:
                log.warning("rss.stale", extra={"url": self.url, "highest_id": previous})
        chunks = [records[i : i + BATCH_SIZE] for i in range(0, len(records), BATCH_SIZE)]
        for chunk in chunks[:-1]:
            yield Batch(papers=chunk)
        # Validators and facts ride with the last batch: stored only once all is stored.
        last = Batch(papers=chunks[-1] if chunks else [], data=facts, skipped=skipped)
        yield validators(response, last)

    def _record(self, entry: Any) -> PaperRecord:
        found = find_id(str(entry.get("id", ""))) or find_id(str(entry.get("link", "")))
        if found is None:
            raise ValueError("item without an arXiv id")
        paper_id, version = found
        title = str(entry.get("title", "")).strip()
        if not title:
            raise ValueError(f"item {paper_id} without a title")
        summary = str(entry.get("summary", ""))
        described = find_id(summary)
        if described and described[0] == paper_id:
            version = max(version, described[1])
        # The announcement (pubDate in RSS, published in Atom; Atom's updated is the build).
        when = entry_date(entry, "published", "updated") or utcnow()
        kind = str(entry.get("arxiv_announce_type", "new")).strip().lower()
        try:
            announce = AnnounceType(kind)
        except ValueError:
            raise UnknownAnnounceType(kind[:40]) from None
        categories = tuple(dict.fromkeys(t.get("term", "") for t in entry.get("tags", [])))
        return PaperRecord(
            id=paper_id,
            version=version,
            title=title,
            abstract=_ABSTRACT.sub("", summary, count=1),
            authors=parse_authors(str(entry.get("author", ""))),
            categories=tuple(c for c in categories if c),
            published=when,
            updated=when,
            source=self.name,
            journal_ref=str(entry.get("arxiv_journal_reference", "")).strip(),
            doi=str(entry.get("arxiv_doi", "")).strip(),
            links={"abs": f"https://arxiv.org/abs/{paper_id}"},
            announce_type=announce,
        )


def _when(value: Any) -> datetime | None:
    try:
        return parse_date(str(value)) if value else None
    except DateParseError:
        return None


def create(name: str, ctx: SourceContext) -> ArxivRssSource:
    return ArxivRssSource(name, ctx)
