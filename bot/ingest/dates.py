"""Dates from sources, parsed strictly but tolerantly, always to aware UTC.

Accepted: ISO 8601 with or without an offset (`2026-06-30T17:59:59Z`,
`2026-06-30T13:59:59-04:00`, `2026-06-30 17:59`), dates with unpadded fields
(`2026-6-30`), and RFC 822 / 2822 (`Tue, 30 Jun 2026 00:00:00 -0400`, `GMT`, `EDT`).
A value without an offset is UTC. Anything else is an error, never a guess.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

from bot.errors import PapertideError
from bot.timeutil import as_utc

_ISO = re.compile(
    r"^(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"(?:[T ](?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<f>\d{1,9}))?)?"
    r"\s*(?P<tz>Z|z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?)?$"
)


class DateParseError(PapertideError, ValueError):
    """A date from a source could not be read; the message quotes it."""

    def __init__(self, text: str) -> None:
        super().__init__(f"unreadable date {text[:60]!r}")
        self.text = text


def parse_date(text: str) -> datetime:
    """Parse `text` to an aware UTC datetime, or raise DateParseError."""
    try:
        return _parse(text)
    except OverflowError as exc:
        # A date near year 1 or 9999 whose offset moves it out of range (and its kin).
        raise DateParseError(text) from exc


def _parse(text: str) -> datetime:
    value = text.strip()
    if not value:
        raise DateParseError(text)
    if len(value) >= 19 and value[4] == "-" and value[10] == "T":
        # Fast path for the common, well-formed case (every arXiv API date).
        try:
            return as_utc(datetime.fromisoformat(value))
        except ValueError:
            pass
    match = _ISO.match(value)
    if match:
        return _from_iso(match, text)
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError) as exc:
        raise DateParseError(text) from exc
    if parsed is None:  # pragma: no cover - older Pythons returned None
        raise DateParseError(text)
    return as_utc(parsed)


def _from_iso(match: re.Match[str], text: str) -> datetime:
    parts = match.groupdict()
    fraction = (parts["f"] or "0")[:6].ljust(6, "0")
    try:
        naive = datetime(  # noqa: DTZ001 - the offset is applied just below
            int(parts["y"]),
            int(parts["m"]),
            int(parts["d"]),
            int(parts["H"] or 0),
            int(parts["M"] or 0),
            int(parts["S"] or 0),
            int(fraction),
        )
    except ValueError as exc:
        raise DateParseError(text) from exc
    tz = parts["tz"]
    if tz is None or tz.upper() in {"Z", "UTC", "GMT"}:
        return naive.replace(tzinfo=UTC)
    sign = -1 if tz[0] == "-" else 1
    digits = tz[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if hours > 23 or minutes > 59:
        raise DateParseError(text)
    offset_minutes = sign * (hours * 60 + minutes)

    return naive.replace(tzinfo=timezone(timedelta(minutes=offset_minutes))).astimezone(UTC)
