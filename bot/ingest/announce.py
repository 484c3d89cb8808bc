"""arXiv's announcement schedule: when new papers appear in the daily feeds.

arXiv announces at 20:00 US/Eastern, Sunday to Thursday; nothing on Friday and
Saturday, nor on its holidays. The holiday list below is small on purpose: it holds
the days arXiv has skipped for years (Christmas, New Year) plus the dates it has
published for 2026-2027. A missing holiday only makes `status` expect an announcement
that does not come, which the stale check then reports as such; it never loses papers.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.timeutil import as_utc

EASTERN = ZoneInfo("America/New_York")
ANNOUNCE_AT = time(20, 0)
# Monday=0 … Sunday=6: announcements Sunday-Thursday evenings.
ANNOUNCE_WEEKDAYS = frozenset({6, 0, 1, 2, 3})

# Evenings (US/Eastern date) on which arXiv makes no announcement.
HOLIDAYS: frozenset[date] = frozenset(
    {
        date(2025, 12, 24),
        date(2025, 12, 25),
        date(2025, 12, 31),
        date(2026, 1, 1),
        date(2026, 11, 26),  # Thanksgiving
        date(2026, 12, 24),
        date(2026, 12, 25),
        date(2026, 12, 31),
        date(2027, 1, 1),
    }
)


def is_announcement_day(day: date) -> bool:
    """True when arXiv announces on the evening of `day` (a US/Eastern date)."""
    return day.weekday() in ANNOUNCE_WEEKDAYS and day not in HOLIDAYS


def _announcement_on(day: date) -> datetime:
    return as_utc(datetime.combine(day, ANNOUNCE_AT, tzinfo=EASTERN))


def last_announcement(now: datetime) -> datetime:
    """The most recent announcement at or before `now` (aware UTC)."""
    day = now.astimezone(EASTERN).date()
    for _ in range(30):
        if is_announcement_day(day) and _announcement_on(day) <= now:
            return _announcement_on(day)
        day -= timedelta(days=1)
    raise AssertionError("no announcement in 30 days: the holiday list is wrong")


def next_announcement(now: datetime) -> datetime:
    """The first announcement strictly after `now` (aware UTC)."""
    day = now.astimezone(EASTERN).date()
    for _ in range(30):
        if is_announcement_day(day) and _announcement_on(day) > now:
            return _announcement_on(day)
        day += timedelta(days=1)
    raise AssertionError("no announcement in 30 days: the holiday list is wrong")
