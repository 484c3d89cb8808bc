"""Stored papers as `papers list` shows them: newest first, with their topics."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.store.models import PaperTopic, Topic
from bot.store.records import PAPER, paper_json

_CHUNK = 500


async def list_papers(
    *, session: AsyncSession, topic: str | None, since: datetime | None, limit: int | None
) -> list[dict[str, Any]]:
    """Papers newest first, in the JSON shape of `papers list --json`."""
    query = select(PAPER).order_by(PAPER.c.published.desc(), PAPER.c.id)
    if topic is not None:
        query = (
            query.join(PaperTopic, col(PaperTopic.paper_id) == PAPER.c.id)
            .join(Topic, col(Topic.id) == col(PaperTopic.topic_id))
            .where(col(Topic.slug) == topic)
        )
    if since is not None:
        query = query.where(PAPER.c.published >= since)
    if limit is not None:
        query = query.limit(limit)
    papers = [paper_json(row) for row in (await session.execute(query)).mappings()]
    slugs: dict[str, list[str]] = {p["id"]: [] for p in papers}
    ids = list(slugs)
    for start in range(0, len(ids), _CHUNK):
        rows = await session.execute(
            select(col(PaperTopic.paper_id), col(Topic.slug))
            .join(Topic, col(Topic.id) == col(PaperTopic.topic_id))
            .where(col(PaperTopic.paper_id).in_(ids[start : start + _CHUNK]))
            .order_by(col(Topic.slug))
        )
        for paper_id, slug in rows:
            slugs[paper_id].append(slug)
    return [
        {
            "id": p["id"],
            "version": p["version"],
            "title": p["title"],
            "authors": [a["name"] for a in p["authors"]],
            "categories": p["categories"],
            "published": p["published"],
            "updated": p["updated"],
            "topics": slugs[p["id"]],
            "url": p["url"],
        }
        for p in papers
    ]
