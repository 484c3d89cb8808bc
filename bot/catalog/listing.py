"""Read-only queries behind `papers list` and `topics list`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.outbox.payloads import paper_payload
from bot.store.models import Paper, PaperTopic, Topic

_CHUNK = 500


async def list_papers(
    *, session: AsyncSession, topic: str | None, since: datetime | None, limit: int | None
) -> list[dict[str, Any]]:
    """Papers newest first, in the JSON shape of `papers list --json`."""
    query = select(Paper).order_by(col(Paper.published).desc(), col(Paper.id))
    if topic is not None:
        query = (
            query.join(PaperTopic, col(PaperTopic.paper_id) == col(Paper.id))
            .join(Topic, col(Topic.id) == col(PaperTopic.topic_id))
            .where(col(Topic.slug) == topic)
        )
    if since is not None:
        query = query.where(col(Paper.published) >= since)
    if limit is not None:
        query = query.limit(limit)
    papers = list((await session.execute(query)).scalars())
    slugs: dict[str, list[str]] = {p.id: [] for p in papers}
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
    out = []
    for paper in papers:
        full = paper_payload(paper)
        out.append(
            {
                "id": paper.id,
                "version": paper.version,
                "title": paper.title,
                "authors": [a["name"] for a in full["authors"]],
                "categories": full["categories"],
                "published": full["published"],
                "updated": full["updated"],
                "topics": slugs[paper.id],
                "url": full["url"],
            }
        )
    return out


async def list_topics(*, session: AsyncSession) -> list[dict[str, Any]]:
    """Active topics with their paper counts, in catalog order of slug."""
    counts = dict(
        (
            await session.execute(
                select(col(PaperTopic.topic_id), func.count()).group_by(col(PaperTopic.topic_id))
            )
        ).all()
    )
    topics = (
        await session.execute(
            select(Topic).where(col(Topic.active).is_(True)).order_by(col(Topic.slug))
        )
    ).scalars()
    return [
        {
            "slug": t.slug,
            "name": t.name,
            "categories": list(t.categories),
            "query": t.query,
            "related": list(t.related),
            "description": t.description,
            "papers": int(counts.get(t.id or 0, 0)),
        }
        for t in topics
    ]
