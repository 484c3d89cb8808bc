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

from bot.store.columns import json_text, sqlite_time
from bot.store.models import AlertMatch, PaperTopic
from bot.timeutil import as_utc
from bot.types import Match, MatchKind

PAPER_TOPIC = PaperTopic.__table__  # type: ignore[attr-defined]
ALERT_MATCH = AlertMatch.__table__  # type: ignore[attr-defined]
_ENCODE = json_text
# Straight to the driver (as bot/ingest/paperrows.py writes papers): SQLAlchemy's
# per-row bind processing and its batched INSERT … RETURNING cost more than the
# database's own work for the thousands of matches of a backfill batch. Built from our
# own table and column names, never from input.
_TABLES = (
    (MatchKind.TOPIC, "paper_topic", "topic_id"),
    (MatchKind.ALERT, "alert_match", "alert_id"),
)
_SQLITE_KNOWN = {
    kind: f"SELECT {ref}, paper_id FROM {table} "  # noqa: S608
    "WHERE paper_id IN (SELECT value FROM json_each(?))"
    for kind, table, ref in _TABLES
}
_SQLITE_INSERT = {
    kind: f"INSERT INTO {table} (paper_id, {ref}, terms, matched_at) VALUES (?, ?, ?, ?)"  # noqa: S608
    for kind, table, ref in _TABLES
}
_PG_INSERT = {
    kind: f"INSERT INTO {table} (paper_id, {ref}, terms, matched_at) "  # noqa: S608
    f"SELECT t.paper_id, t.ref, t.terms::jsonb, %b::timestamptz "
    "FROM unnest(%b::varchar[], %b::integer[], %b::text[]) AS t(paper_id, ref, terms) "
    f"ON CONFLICT DO NOTHING RETURNING {ref}, paper_id"
    for kind, table, ref in _TABLES
}


async def record_matches(
    *, session: AsyncSession, matches: Iterable[Match], now: datetime
) -> list[Match]:
    """Insert the matches not yet recorded; returns exactly those (what is news)."""
    by_key: dict[tuple[MatchKind, int, str], Match] = {}
    for match in matches:
        by_key.setdefault((match.kind, match.ref_id, match.paper_id), match)
    if not by_key:
        return []
    conn = await session.connection()
    postgres = conn.dialect.name == "postgresql"
    fresh: list[Match] = []
    for kind, _table, _ref in _TABLES:
        some = [m for (k, _, _), m in by_key.items() if k is kind]
        if not some:
            continue
        if postgres:
            arrays = (
                as_utc(now),
                [m.paper_id for m in some],
                [m.ref_id for m in some],
                [_ENCODE(list(m.terms)) for m in some],
            )
            result: Iterable[Any] = await conn.exec_driver_sql(_PG_INSERT[kind], arrays)
            fresh += [by_key[(kind, int(ref_id), pid)] for ref_id, pid in result]
            continue
        # SQLite: the transaction began IMMEDIATE (bot/store/engine.py), so no other
        # writer can add a match between this read and the insert: those not found are
        # exactly the ones this insert records.
        papers = _ENCODE(list(dict.fromkeys(m.paper_id for m in some)))
        found: Iterable[Any] = await conn.exec_driver_sql(_SQLITE_KNOWN[kind], (papers,))
        known = {(ref_id, pid) for ref_id, pid in found}
        some = [m for m in some if (m.ref_id, m.paper_id) not in known]
        if some:
            when = sqlite_time(now)
            await conn.exec_driver_sql(
                _SQLITE_INSERT[kind],
                [(m.paper_id, m.ref_id, _ENCODE(list(m.terms)), when) for m in some],
            )
            fresh += some
    return fresh


async def clear_topics(*, session: AsyncSession, topic_ids: Sequence[int]) -> None:
    """Forget the papers filed under these topics (before they are filed again)."""
    if topic_ids:
        await session.execute(delete(PAPER_TOPIC).where(PAPER_TOPIC.c.topic_id.in_(topic_ids)))
