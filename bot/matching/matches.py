"""The one writer of `paper_topic` and `alert_match`: which paper matched what, and why.

Ingest records the matches of new and changed papers (and fans out exactly the ones
inserted now); refiling rewrites a topic's papers over the whole store. Both go
through here, so (topic or alert, paper) is written the same way everywhere: at most
once, the database's primary key deciding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.dialect import dialect_insert
from bot.store.models import AlertMatch, PaperTopic
from bot.types import Match, MatchKind

PAPER_TOPIC = PaperTopic.__table__  # type: ignore[attr-defined]
ALERT_MATCH = AlertMatch.__table__  # type: ignore[attr-defined]
_TABLES = ((MatchKind.TOPIC, PAPER_TOPIC, "topic_id"), (MatchKind.ALERT, ALERT_MATCH, "alert_id"))


async def record_matches(
    *, session: AsyncSession, matches: Iterable[Match], now: datetime
) -> list[Match]:
    """Insert the matches not yet recorded; returns exactly those (what is news)."""
    rows: dict[MatchKind, list[dict[str, Any]]] = {MatchKind.TOPIC: [], MatchKind.ALERT: []}
    by_key: dict[tuple[MatchKind, int, str], Match] = {}
    for match in matches:
        key = (match.kind, match.ref_id, match.paper_id)
        if key in by_key:
            continue
        by_key[key] = match
        ref = "topic_id" if match.kind is MatchKind.TOPIC else "alert_id"
        rows[match.kind].append(
            {"paper_id": match.paper_id, ref: match.ref_id, "terms": list(match.terms),
             "matched_at": now}
        )  # fmt: skip
    fresh: list[Match] = []
    for kind, table, ref in _TABLES:
        if not rows[kind]:
            continue
        stmt = dialect_insert(session, table).on_conflict_do_nothing()
        result = await session.execute(stmt.returning(table.c[ref], table.c.paper_id), rows[kind])
        fresh += [by_key[(kind, int(ref_id), pid)] for ref_id, pid in result]
    return fresh


async def clear_topics(*, session: AsyncSession, topic_ids: Sequence[int]) -> None:
    """Forget the papers filed under these topics (before they are filed again)."""
    if topic_ids:
        await session.execute(delete(PAPER_TOPIC).where(PAPER_TOPIC.c.topic_id.in_(topic_ids)))
