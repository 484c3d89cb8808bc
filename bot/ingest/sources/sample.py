"""The bundled offline sample (`sample`): a few hundred papers over the last 12 weeks.

The data (`bot/data/sample_papers.json`, made by `bot/data/make_sample.py`) stores
offsets in hours before "now", so the sample is always recent. "Now" is taken to
the hour: two runs within the same hour yield identical records.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bot.ingest.sources.base import BATCH_SIZE, Batch, Skip, SourceContext, StoredState
from bot.timeutil import utcnow
from bot.types import Author, PaperRecord

DATA_FILE = Path(__file__).resolve().parents[2] / "data" / "sample_papers.json"


def load_sample(now: datetime, path: Path = DATA_FILE) -> tuple[list[PaperRecord], list[Skip]]:
    """Every sample record dated relative to `now` (aware UTC)."""
    anchor = now.replace(minute=0, second=0, microsecond=0)
    raw: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    records: list[PaperRecord] = []
    skipped: list[Skip] = []
    for position, item in enumerate(raw):
        try:
            records.append(_record(item, anchor))
        except (KeyError, TypeError, ValueError) as exc:
            skipped.append(Skip(where=f"{path.name} record {position}", reason=repr(exc)))
    return records, skipped


def _record(item: dict[str, Any], anchor: datetime) -> PaperRecord:
    published = anchor - timedelta(hours=float(item["offset_hours"]))
    updated = anchor - timedelta(
        hours=float(item.get("updated_offset_hours", item["offset_hours"]))
    )
    return PaperRecord(
        id=str(item["id"]),
        version=int(item.get("version", 1)),
        title=str(item["title"]),
        abstract=str(item.get("abstract", "")),
        authors=tuple(
            Author(name=a["name"], affiliations=tuple(a.get("affiliations", ())))
            for a in item.get("authors", [])
        ),
        categories=tuple(item.get("categories", ())),
        published=published,
        updated=max(published, updated),
        source="sample",
        comment=str(item.get("comment", "")),
        journal_ref=str(item.get("journal_ref", "")),
        doi=str(item.get("doi", "")),
    )


class SampleSource:
    """Yields the whole sample in batches; the cursor records when it was last read."""

    def __init__(self, name: str, ctx: SourceContext, *, now: datetime | None = None) -> None:
        self.name = name
        self._now = now

    async def fetch(self, state: StoredState) -> AsyncIterator[Batch]:
        now = self._now or utcnow()
        records, skipped = load_sample(now)
        for start in range(0, len(records), BATCH_SIZE):
            chunk = records[start : start + BATCH_SIZE]
            last = start + BATCH_SIZE >= len(records)
            yield Batch(
                papers=chunk,
                cursor=now.isoformat() if last else state.cursor,
                data={"records": len(records)} if last else None,
                skipped=skipped if last else [],
                progress=(start + len(chunk), len(records)),
            )


def create(name: str, ctx: SourceContext) -> SampleSource:
    return SampleSource(name, ctx)
