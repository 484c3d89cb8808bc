"""Quiet hours have one grammar, for the chat command and the fan-out alike.

Two copies used to disagree: chat accepted `22-07` but not `22:30-07:00`, and the fan-out
accepted `22-22` (a window of nothing). Both now take both forms and refuse equal ends.
"""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest

from bot.outbox.quiet_hours import (
    QuietHoursError,
    format_quiet_hours,
    parse_quiet_hours,
    quiet_until,
)


@pytest.mark.parametrize(
    ("spec", "parsed", "stored"),
    [
        ("22-07", (time(22), time(7)), "22-07"),
        ("22:30-07:00", (time(22, 30), time(7)), "22:30-07:00"),
        (" 9 - 17 ", (time(9), time(17)), "09-17"),
        ("22:00-07:00", (time(22), time(7)), "22-07"),
    ],
)
def test_both_forms_parse_and_store_canonically(
    spec: str, parsed: tuple[time, time], stored: str
) -> None:
    assert parse_quiet_hours(spec) == parsed
    assert format_quiet_hours(*parsed) == stored
    assert parse_quiet_hours(stored) == parsed  # what is stored reads back the same


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("22-22", "two different times"),
        ("07:30-07:30", "two different times"),
        ("25-07", "from 0 to 23"),
        ("22:61-07", "from 0 to 23"),
        ("late", "22-07"),
        ("22-07-09", "22-07"),
    ],
)
def test_bad_specs_are_one_line_errors(spec: str, message: str) -> None:
    with pytest.raises(QuietHoursError, match=message) as info:
        parse_quiet_hours(spec)
    assert "\n" not in str(info.value)


def test_a_stored_window_of_nothing_never_holds_a_message() -> None:
    night = datetime(2026, 7, 1, 22, 30, tzinfo=UTC)
    assert quiet_until({"quiet_hours": "22-22"}, night) is None  # malformed: sent at once
    assert quiet_until({"quiet_hours": "22:30-07:00"}, night) == datetime(2026, 7, 2, 7, tzinfo=UTC)
