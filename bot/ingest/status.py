"""What `papertide status` says about each source, as plain data."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.ingest.announce import EASTERN, is_announcement_day, last_announcement, next_announcement
from bot.store.models import SourceState

ARXIV_SOURCES = ("arxiv", "arxiv-rss")


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


async def collect_status(
    *, session: AsyncSession, names: list[str], now: datetime
) -> list[dict[str, Any]]:
    """One dict per source (configured ones first, then any other with stored state)."""
    rows = {r.name: r for r in (await session.execute(select(SourceState))).scalars()}
    ordered = list(dict.fromkeys([*names, *sorted(rows)]))
    return [_one(name, rows.get(name), now) for name in ordered]


def _one(name: str, row: SourceState | None, now: datetime) -> dict[str, Any]:
    data: dict[str, Any] = dict(row.data) if row else {}
    status: dict[str, Any] = {
        "source": name,
        "last_poll": _iso(row.last_polled_at) if row else None,
        "last_success": _iso(row.last_success_at) if row else None,
        "cursor": row.cursor if row else None,
        "errors": row.error_count if row else 0,
        "last_error": row.last_error if row else None,
    }
    if name in ARXIV_SOURCES:
        today = now.astimezone(EASTERN).date()
        status |= {
            "last_expected_announcement": last_announcement(now).isoformat(),
            "next_expected_announcement": next_announcement(now).isoformat(),
            "announcement_today": is_announcement_day(today),
        }
    if name == "arxiv-rss":
        status |= {
            "last_announcement_ingested": data.get("last_announcement"),
            "last_announcement_size": data.get("last_announcement_size"),
            "last_announcement_types": data.get("last_announcement_types"),
            "highest_id": data.get("highest_id"),
            "stale_feed": bool(data.get("stale", False)),
        }
    return status


def describe(status: dict[str, Any]) -> str:
    """One human line for a source's status."""
    parts = [f"{status['source']}: last poll {status['last_poll'] or 'never'}"]
    if status.get("last_announcement_ingested"):
        parts.append(
            f"last announcement {status['last_announcement_ingested']}"
            f" ({status.get('last_announcement_size') or 0} papers)"
        )
    if "next_expected_announcement" in status:
        if not status["announcement_today"]:
            parts.append("no announcement today (arXiv's schedule)")
        parts.append(f"next announcement {status['next_expected_announcement']}")
    if status.get("stale_feed"):
        parts.append("STALE FEED: still serving the previous announcement")
    if status["errors"]:
        parts.append(f"{status['errors']} error(s), last: {status['last_error']}")
    return "; ".join(parts)
