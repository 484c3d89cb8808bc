"""What `papertide status` says about each source, as plain data.

A source is *failing* when its last poll failed (its error count says how many polls in
a row), and *stalled* when a poll started and has made no progress (no batch stored,
no end) for longer than `stall_after`: a fetch ends by its deadline, so a healthy poll
never goes that long without storing a batch or ending.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.ingest.announce import EASTERN, is_announcement_day, last_announcement, next_announcement
from bot.ingest.dates import DateParseError, parse_date
from bot.store.models import SourceState

ARXIV_SOURCES = ("arxiv", "arxiv-rss")
DEFAULT_STALL_AFTER = timedelta(minutes=10)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def stall_after(fetch_deadline_seconds: float) -> timedelta:
    """How long a poll may go without progress before `status` calls it stalled."""
    # A window split of the API source may take a few fetches before its first batch.
    return max(DEFAULT_STALL_AFTER, timedelta(seconds=4 * fetch_deadline_seconds))


async def collect_status(
    *,
    session: AsyncSession,
    names: list[str],
    now: datetime,
    stalled_after: timedelta = DEFAULT_STALL_AFTER,
) -> list[dict[str, Any]]:
    """One dict per source (configured ones first, then any other with stored state)."""
    rows = {r.name: r for r in (await session.execute(select(SourceState))).scalars()}
    ordered = list(dict.fromkeys([*names, *sorted(rows)]))
    return [_one(name, rows.get(name), now, stalled_after) for name in ordered]


def _when(value: Any) -> datetime | None:
    try:
        return parse_date(str(value)) if value else None
    except DateParseError:
        return None


def _polling_since(row: SourceState | None, data: dict[str, Any]) -> datetime | None:
    """When the running poll started, or None when no poll is running."""
    started = _when(data.get("poll_started_at"))
    finished = _when(data.get("poll_finished_at"))
    if started is None or (finished is not None and finished >= started):
        return None
    return started


def _one(
    name: str, row: SourceState | None, now: datetime, stalled_after: timedelta
) -> dict[str, Any]:
    data: dict[str, Any] = dict(row.data) if row else {}
    since = _polling_since(row, data)
    progress = max(filter(None, (since, row.last_success_at if row else None)), default=None)
    stalled = since is not None and progress is not None and now - progress > stalled_after
    status: dict[str, Any] = {
        "source": name,
        "last_poll": _iso(row.last_polled_at) if row else None,
        "last_success": _iso(row.last_success_at) if row else None,
        "cursor": row.cursor if row else None,
        "errors": row.error_count if row else 0,
        "last_error": row.last_error if row else None,
        "polling_since": _iso(since),
        "last_progress": _iso(progress) if since else None,
        "stalled": stalled,
        "failing": bool(row and row.error_count),
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
    if status.get("stalled"):
        parts.append(
            f"STALLED: polling since {status['polling_since']},"
            f" no progress since {status['last_progress']}"
        )
    elif status.get("polling_since"):
        parts.append(f"polling since {status['polling_since']}")
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
        parts.append(
            f"FAILING: {status['errors']} failed poll(s) in a row, last: {status['last_error']}"
        )
    return "; ".join(parts)
