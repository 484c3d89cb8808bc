"""The core's own types: what flows between sources, ingest, matching and the outbox.

Plain frozen dataclasses; SDK types (Slack, Discord, SMTP) never appear here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum, StrEnum
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Author:
    name: str
    affiliations: tuple[str, ...] = ()


class AnnounceType(StrEnum):
    """arXiv RSS `announce_type` (the types arXiv/arxiv-feed writes); API and feeds yield NEW.

    `absonly` announces changed metadata (abstract, title, references) of a paper without
    a new version.
    """

    NEW = "new"
    CROSS = "cross"
    REPLACE = "replace"
    REPLACE_CROSS = "replace-cross"
    ABSONLY = "absonly"


@dataclass(frozen=True, slots=True)
class PaperRecord:
    """One normalized paper as a source yields it, before dedup.

    `id` is the arXiv id without version (`2606.01234`, `hep-th/9901001`); papers
    from a generic feed without an arXiv id use `doi:<doi>` or `url:<sha1 of link>`.
    `published` is the first version's submission time (UTC); `updated` the latest.
    Text fields keep LaTeX for display; matching derives plain text itself.
    `authoritative` marks the arXiv API's record, which repairs what a feed stored first.
    """

    id: str
    version: int
    title: str
    abstract: str
    authors: tuple[Author, ...]
    categories: tuple[str, ...]
    published: datetime
    updated: datetime
    source: str
    comment: str = ""
    journal_ref: str = ""
    doi: str = ""
    links: dict[str, str] = field(default_factory=dict)
    announce_type: AnnounceType = AnnounceType.NEW
    authoritative: bool = False

    @property
    def primary_category(self) -> str:
        return self.categories[0] if self.categories else ""


class MatchKind(StrEnum):
    TOPIC = "topic"
    ALERT = "alert"


@dataclass(frozen=True, slots=True)
class Match:
    """A paper belongs to a topic or fires an alert; `terms` says why (for highlighting)."""

    paper_id: str
    kind: MatchKind
    ref_id: int  # topic.id or alert.id
    terms: tuple[str, ...] = ()


class Platform(StrEnum):
    CONSOLE = "console"
    SLACK = "slack"
    DISCORD = "discord"
    EMAIL = "email"
    WEBHOOK = "webhook"  # any HTTP endpoint: the JSON message POSTed to target.address
    APPRISE = "apprise"  # Mattermost, Teams, Matrix, Telegram, Zulip, ntfy…: an Apprise URL


class TargetKind(StrEnum):
    CHANNEL = "channel"  # a Slack or Discord channel
    USER = "user"  # a chat user (DMs)
    EMAIL = "email"  # a mailbox


class OutboxStatus(StrEnum):
    """Life of an outbox row (see bot/outbox/queue.py for the transitions)."""

    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    DEAD = "dead"
    HELD = "held"  # quiet hours: waits until the window ends, then folded into a summary
    GROUPED = "grouped"  # a paper's key reserved by the group or summary that carries it


class EmailStatus(StrEnum):
    """Where a person's weekly digest stands (double opt-in)."""

    NONE = "none"  # known from chat, never asked for mail
    PENDING = "pending"  # asked; the confirmation link was not clicked yet
    CONFIRMED = "confirmed"
    UNSUBSCRIBED = "unsubscribed"


class Leaning(IntEnum):
    """A reader's reaction to a paper, stored as its sign: more like this, or less."""

    MORE = 1
    LESS = -1


class MessageKind(StrEnum):
    PAPER = "paper"  # one paper for a channel/user (topic subscription or alert)
    PAPER_GROUP = "paper_group"  # many papers for one channel from one poll, threaded
    QUIET_SUMMARY = "quiet_summary"  # what was held back during quiet hours
    DIGEST = "digest"  # weekly email digest
    CONFIRM = "confirm"  # double opt-in mail


@dataclass(frozen=True, slots=True)
class TargetRef:
    """Where a message goes, as adapters need it (no ORM row)."""

    id: int
    platform: Platform
    kind: TargetKind
    workspace: str  # Slack team id, Discord guild id, "" for email/console
    address: str  # channel id, user id or email address


@dataclass(frozen=True, slots=True)
class OutboundMessage:
    """One outbox row handed to a Channel. `payload` is JSON data, kind-specific."""

    id: int
    key: str
    kind: MessageKind
    target: TargetRef
    payload: dict[str, Any]
    attempt: int = 1


class PaperMatcher(Protocol):
    """Decides which topics a paper belongs to and which alerts it fires.

    Implemented by `bot.matching` (the compiled engine); ingest calls it once per
    new or changed paper.
    """

    def match(self, paper: PaperRecord) -> list[Match]: ...
