"""The JSON shapes of outbox payloads: what the fan-out, the digest and the confirmation
mails enqueue, and what every channel reads.

A paper is `bot.store.records.PaperJSON` (also the CLI's `--json`). Payloads are plain
JSON in the outbox row; these TypedDicts say what each message kind carries.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from bot.store.records import PaperJSON


class TopicReason(TypedDict):
    kind: Literal["topic"]
    id: int
    slug: str
    name: str
    terms: list[str]  # the words that matched (never the topic's own category filter)


class AlertReason(TypedDict):
    kind: Literal["alert"]
    id: int
    query: str
    terms: list[str]


Reason = TopicReason | AlertReason


class PaperItem(TypedDict):
    """A PAPER message's payload, and one paper of a group or a quiet-hours summary."""

    paper: PaperJSON
    reasons: list[Reason]


class GroupPayload(TypedDict):
    """PAPER_GROUP: every paper of one poll for one channel, posted as one thread."""

    items: list[PaperItem]


class QuietSummaryPayload(TypedDict):
    """QUIET_SUMMARY: what quiet hours held back, sent when they end."""

    items: list[PaperItem]
    until: str  # ISO 8601, UTC


class ReservedPayload(TypedDict):
    """A GROUPED row: a paper's key, reserved by the group message that carries it."""

    grouped_in: str


class EmailPayload(TypedDict):
    """DIGEST and CONFIRM: a finished mail; the email channel only wraps it in MIME."""

    to: str
    subject: str
    text: str
    html: str
    headers: dict[str, str]
