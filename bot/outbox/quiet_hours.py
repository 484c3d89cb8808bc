"""Quiet hours of a target: `settings["quiet_hours"] = "22-07"` in `settings["timezone"]`.

The one grammar of quiet hours, for the chat command and the fan-out alike: `22-07` or
`22:30-07:00` (hours in the target's time zone, start inclusive, end exclusive, two
different times). Pure functions; local time only here, UTC in and out.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.errors import PapertideError
from bot.timeutil import as_utc

log = logging.getLogger(__name__)

_SPEC = re.compile(r"^\s*(\d{1,2})(?::(\d{2}))?\s*-\s*(\d{1,2})(?::(\d{2}))?\s*$")


class QuietHoursError(PapertideError, ValueError):
    """Quiet hours that do not parse; the message says what to type, on one line."""


def parse_quiet_hours(spec: str) -> tuple[time, time]:
    """'22-07' or '22:30-07:00' -> (start, end) local times; QuietHoursError otherwise."""
    found = _SPEC.match(spec)
    if not found:
        raise QuietHoursError(
            "Type quiet hours as `22-07` (from 22:00 to 07:00) or `22:30-07:00`, or `off`."
        )
    sh, sm, eh, em = (int(g or 0) for g in found.groups())
    if sh > 23 or eh > 23 or sm > 59 or em > 59:
        raise QuietHoursError(
            "Quiet hours need hours from 0 to 23 and minutes from 00 to 59, e.g. `22-07`."
        )
    if (sh, sm) == (eh, em):
        raise QuietHoursError("Quiet hours need two different times, e.g. `22-07`.")
    return time(sh, sm), time(eh, em)


def format_quiet_hours(start: time, end: time) -> str:
    """The stored form: `22-07`, or `22:30-07:00` when minutes matter."""
    if start.minute == end.minute == 0:
        return f"{start.hour:02d}-{end.hour:02d}"
    return f"{start:%H:%M}-{end:%H:%M}"


def quiet_until(
    target_settings: Mapping[str, Any], now: datetime, *, default_timezone: str = "UTC"
) -> datetime | None:
    """End (UTC) of the quiet window `now` falls in, or None when the target may be disturbed.

    A malformed setting means no quiet hours (logged), never a lost message.
    """
    spec = target_settings.get("quiet_hours")
    if not spec:
        return None
    try:
        start, end = parse_quiet_hours(str(spec))
        zone = ZoneInfo(str(target_settings.get("timezone") or default_timezone))
    except (ValueError, ZoneInfoNotFoundError) as exc:
        log.warning("quiet_hours.invalid", extra={"spec": spec, "error": str(exc)})
        return None
    local = as_utc(now).astimezone(zone)
    clock = local.time().replace(tzinfo=None)
    inside = start <= clock < end if start < end else (clock >= start or clock < end)
    if not inside:
        return None
    end_local = datetime.combine(local.date(), end, tzinfo=zone)
    if end_local <= local:
        end_local += timedelta(days=1)
    return as_utc(end_local)
