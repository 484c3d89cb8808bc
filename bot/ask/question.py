"""A question as retrieval reads it: its terms and an optional time window (pure).

Time windows are written as people write them and cut out of the question before its
words are read: "since 2026-09", "since 2026-09-15", "since September 2026", "before
2026-10", "last 4 weeks", "past 10 days", "last month", "this year". Everything is
aware UTC; a month or year window starts on its first day.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.ask.terms import content_words, stem

MAX_QUESTION = 300  # characters; a question, not a document
MAX_TERMS = 12

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE = rf"(?:\d{{4}}-\d{{1,2}}(?:-\d{{1,2}})?|(?:{_MONTH})\.?\s+\d{{4}}|\d{{4}})"
_SINCE = re.compile(rf"\b(since|after|from)\s+({_DATE})\b", re.IGNORECASE)
_BEFORE = re.compile(rf"\b(before|until)\s+({_DATE})\b", re.IGNORECASE)
_LAST = re.compile(
    r"\b(?:in\s+the\s+|over\s+the\s+|during\s+the\s+)?(?:last|past)\s+(\d{1,3}\s+)?"
    r"(day|week|month|year)s?\b",
    re.IGNORECASE,
)
_THIS = re.compile(r"\b(?:in\s+|during\s+)?this\s+(week|month|year)\b", re.IGNORECASE)
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


class QuestionError(ValueError):
    """A question we cannot search with; the message says what to type instead."""


@dataclass(frozen=True, slots=True)
class Question:
    """What retrieval needs: the text as asked, its terms (one per stem) and a window."""

    text: str
    terms: tuple[str, ...]  # folded words, first spelling of each stem, in order
    stems: tuple[str, ...]  # their stems, same order
    since: datetime | None = None
    until: datetime | None = None


def parse_date(text: str, *, end: bool = False) -> datetime:
    """`2026-09`, `2026-09-15`, `Sep 2026`, `2026` -> the first instant (or, with `end`,
    the instant after the last day) of that day, month or year, UTC."""
    text = text.strip().rstrip(".").lower()
    parts = text.replace(".", " ").split()
    try:
        if len(parts) == 2:  # month name and year
            year, month, day = int(parts[1]), _MONTHS[parts[0]], None
        elif "-" in text:
            numbers = [int(p) for p in text.split("-")]
            year, month = numbers[0], numbers[1]
            day = numbers[2] if len(numbers) > 2 else None
        else:
            year, month, day = int(text), None, None
        start = datetime(year, month or 1, day or 1, tzinfo=UTC)
    except (KeyError, ValueError) as exc:
        raise QuestionError(
            f"`{text[:40]}` is not a date: write e.g. 2026-09 or 2026-09-15."
        ) from exc
    if not end:
        return start
    if day is not None:
        return start + timedelta(days=1)
    if month is not None:
        return start.replace(year=year + (month == 12), month=month % 12 + 1)
    return start.replace(year=year + 1)


def _window(text: str, now: datetime) -> tuple[str, datetime | None, datetime | None]:
    since: datetime | None = None
    until: datetime | None = None
    if found := _SINCE.search(text):
        since = parse_date(found.group(2))
        text = text[: found.start()] + " " + text[found.end() :]
    if found := _BEFORE.search(text):
        # "before 2026-10" excludes October; "until 2026-10" includes it.
        until = parse_date(found.group(2), end=found.group(1).lower() == "until")
        text = text[: found.start()] + " " + text[found.end() :]
    if found := _LAST.search(text):
        count = int(found.group(1) or 1)
        since = now - timedelta(days=count * _UNIT_DAYS[found.group(2).lower()])
        text = text[: found.start()] + " " + text[found.end() :]
    elif found := _THIS.search(text):
        unit = found.group(1).lower()
        day = now.replace(hour=0, minute=0, second=0, microsecond=0)
        if unit == "week":
            since = day - timedelta(days=day.weekday())
        elif unit == "month":
            since = day.replace(day=1)
        else:
            since = day.replace(month=1, day=1)
        text = text[: found.start()] + " " + text[found.end() :]
    if since is not None and until is not None and since >= until:
        raise QuestionError("That time window is empty: its start is after its end.")
    return text, since, until


def parse_question(text: str, now: datetime) -> Question:
    """The terms and window of a question; QuestionError when nothing is left to search."""
    text = " ".join(text.split())
    if not text:
        raise QuestionError("Type a question, e.g. which papers train agents with GRPO?")
    if len(text) > MAX_QUESTION:
        raise QuestionError(f"Keep the question under {MAX_QUESTION} characters.")
    rest, since, until = _window(text, now)
    terms: dict[str, str] = {}
    for word in content_words(rest):
        terms.setdefault(stem(word), word)
    if not terms:
        raise QuestionError(
            "Ask with a few words that say what you look for, e.g. GRPO ALFWorld agents."
        )
    stems = tuple(terms)[:MAX_TERMS]
    return Question(
        text=text,
        terms=tuple(terms[s] for s in stems),
        stems=stems,
        since=since,
        until=until,
    )
