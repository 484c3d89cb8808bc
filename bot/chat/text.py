"""Pure text helpers shared by the chat commands and the Slack/Discord renderers.

No SDK imports: both adapters and the platform-neutral command layer use these.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

MAX_ARGUMENT_CHARS = 1000
MAX_MUTE = timedelta(days=365)

_DURATION = re.compile(r"^(\d{1,4})\s*(m|min|h|d|w)$", re.IGNORECASE)
_UNIT_SECONDS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
_SENTENCE_END = re.compile(r"[.!?](?=\s)")


class BadInput(ValueError):
    """Text a user typed that we refuse; the message is one line saying what to type."""


def clean_text(text: str) -> str:
    """Collapse whitespace (Slack sends newlines in command text) and refuse control characters.

    Raises BadInput for control or format characters (NUL, ESC, bidi overrides…) and for
    text over MAX_ARGUMENT_CHARS, so nothing odd reaches the store or a reply.
    """
    text = re.sub(r"[\t\r\n\u00a0]+", " ", text).strip()
    if len(text) > MAX_ARGUMENT_CHARS:
        raise BadInput(f"That is too long: keep it under {MAX_ARGUMENT_CHARS:,} characters.")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in text):
        raise BadInput("Remove the control characters from your text and try again.")
    return " ".join(text.split(" "))


def parse_duration(text: str) -> timedelta:
    """`30m`, `2h`, `3d`, `1w` → timedelta (at most a year)."""
    found = _DURATION.match(text.strip())
    if not found:
        raise BadInput(f"`{text}` is not a duration: type e.g. `2h`, `3d` or `1w`.")
    amount = int(found.group(1))
    seconds = amount * _UNIT_SECONDS[found.group(2).lower()]
    if amount == 0 or seconds > MAX_MUTE.total_seconds():
        raise BadInput("Pick a duration between `1m` and `52w`.")
    return timedelta(seconds=seconds)


def format_duration(span: timedelta) -> str:
    """A short human form: `2 hours`, `3 days`, `1 week`."""
    seconds = int(span.total_seconds())
    for unit, size in (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds // 60} minutes"


def cut_text(text: str, limit: int, *, ellipsis: str = "…") -> str:
    """Cut at a word boundary to at most `limit` characters (ellipsis included)."""
    if len(text) <= limit:
        return text
    room = max(limit - len(ellipsis), 0)
    head = text[:room]
    space = head.rfind(" ")
    if space > room * 0.6:
        head = head[:space]
    return head.rstrip(" ,;:") + ellipsis


def cut_at_sentence(text: str, limit: int) -> str:
    """The longest run of whole sentences within `limit`; a word cut if one sentence is too long."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    best = 0
    for found in _SENTENCE_END.finditer(text):
        if found.end() > limit:
            break
        best = found.end()
    if best >= limit * 0.4:
        return text[:best]
    return cut_text(text, limit)


def author_line(authors: Sequence[Mapping[str, Any]], *, shown: int = 3) -> str:
    """`A, B, C + 297 more` — the first three authors and how many others."""
    names = [str(a.get("name", "")).strip() for a in authors if str(a.get("name", "")).strip()]
    if len(names) <= shown:
        return ", ".join(names)
    return ", ".join(names[:shown]) + f" + {len(names) - shown} more"


def reason_summary(reason: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(what fired, matched terms) for a payload reason: topic name or alert query."""
    terms = [str(t) for t in reason.get("terms", []) if str(t).strip()]
    if reason.get("kind") == "alert":
        return f"alert #{reason.get('id')} {reason.get('query', '')}".strip(), terms
    return f"topic {reason.get('name') or reason.get('slug', '')}".strip(), terms


_MENTION_TOKEN = re.compile("\x1f(channel|user):([A-Za-z0-9]{1,40})\x1f")


def mention(kind: str, ident: str) -> str:
    """A placeholder for a channel or user mention; renderers turn it into their own
    form (`<#C1>`, `<@U1>`) only when the Reply lists it in `mentions`."""
    safe = re.sub(r"[^A-Za-z0-9]", "", ident)[:40]
    return f"\x1f{kind}:{safe}\x1f"


def show_mentions(text: str, allowed: Sequence[str], channel: str, user: str) -> str:
    """Placeholders of `allowed` as `channel`/`user` formats (`{id}` inside); any other
    placeholder (from stored text, say) becomes its bare id."""

    def one(found: re.Match[str]) -> str:
        if found.group(0) not in allowed:
            return found.group(2)
        return (channel if found.group(1) == "channel" else user).format(id=found.group(2))

    return _MENTION_TOKEN.sub(one, text)
