"""The catalog into the store: the `topic` table's one writer.

Syncing upserts by slug and deactivates topics that left the catalog (subscriptions to
them survive); topics that are new or whose query or categories changed are filed over
the papers already stored (history, never alerts). Runs at every start.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.catalog.file import TopicSpec, load_topics
from bot.catalog.refile import refile_topics
from bot.matching.legacy import legacy_meaning
from bot.store.models import Topic
from bot.timeutil import utcnow

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SyncReport:
    added: int
    changed: int
    deactivated: int
    # Topics whose matching changed (new, or a new query or categories): their stored
    # papers must be filed again.
    refile: tuple[str, ...] = ()


async def sync_topics(*, session: AsyncSession, topics: list[TopicSpec]) -> SyncReport:
    """Upsert the catalog into the store by slug; topics no longer listed go inactive."""
    existing = {t.slug: t for t in (await session.execute(select(Topic))).scalars()}
    added = changed = deactivated = 0
    refile: list[str] = []
    now = utcnow()
    for spec in topics:
        values: dict[str, Any] = {
            "name": spec.name,
            "query": spec.query,
            "categories": list(spec.categories),
            "related": list(spec.related),
            "description": spec.description,
            "active": True,
        }
        row = existing.pop(spec.slug, None)
        if row is None:
            session.add(Topic(slug=spec.slug, updated_at=now, **values))
            added += 1
            refile.append(spec.slug)
        elif any(getattr(row, k) != v for k, v in values.items()):
            if (row.query, list(row.categories), row.active) != (
                spec.query,
                list(spec.categories),
                True,
            ):
                refile.append(spec.slug)
            for key, value in values.items():
                setattr(row, key, value)
            row.updated_at = now
            changed += 1
    for row in existing.values():
        if row.active:
            row.active = False
            row.updated_at = now
            deactivated += 1
    await session.flush()
    return SyncReport(added=added, changed=changed, deactivated=deactivated, refile=tuple(refile))


async def sync_catalog(*, session: AsyncSession, path: Path) -> SyncReport:
    """Load the catalog at `path` (TopicsFileError if malformed), sync it, refile."""
    topics = load_topics(path)
    warn_changed_meanings(topics, path)
    report = await sync_topics(session=session, topics=topics)
    await refile_topics(session=session, slugs=report.refile)
    log.info("topics.synced", extra={"added": report.added, "changed": report.changed})
    return report


async def restore_topics(*, session: AsyncSession, topics: list[dict[str, Any]]) -> list[str]:
    """Add the topics of a backup whose slug is unknown here (existing ones, synced from
    this install's catalog, are left alone); returns the slugs added, filed over the
    stored papers. A restored topic missing from the catalog file goes inactive at the
    next start, like any topic that left the catalog."""
    known = set((await session.execute(select(col(Topic.slug)))).scalars())
    added = []
    for values in topics:
        if values["slug"] in known:
            continue
        session.add(
            Topic(
                slug=values["slug"], name=values["name"], query=values.get("query", ""),
                categories=list(values.get("categories", [])),
                related=list(values.get("related", [])),
                description=values.get("description", ""),
                active=bool(values.get("active", True)), updated_at=utcnow(),
            )
        )  # fmt: skip
        known.add(values["slug"])
        added.append(values["slug"])
    await session.flush()
    await refile_topics(session=session, slugs=added)
    return added


def warn_changed_meanings(topics: list[TopicSpec], path: Path) -> list[str]:
    """Name the topics whose query reads differently since papertide follows arXiv's
    reading (words side by side are OR, …): migration 0004 kept the meaning of the
    queries in the store, but a catalog file written before it would now replace them.
    Returns the slugs, each logged once with the spelling that keeps the old meaning."""
    changed = []
    for spec in topics:
        keep = legacy_meaning(spec.query)
        if keep is not None:
            changed.append(spec.slug)
            log.warning(
                "topics.query_meaning_changed",
                extra={"file": str(path), "topic": spec.slug, "query": spec.query, "keep": keep},
            )
    return changed
