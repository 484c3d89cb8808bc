"""SQLModel tables: the store's whole schema.

Per-target settings live in one typed JSON column (`Target.settings`), never in new
columns per integration. All datetimes are aware UTC (see `UTCDateTime`).
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Float, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from bot.store.columns import JSONType, UTCDateTime
from bot.timeutil import utcnow


def _json(**kw: Any) -> Any:
    return Field(sa_column=Column(JSONType, nullable=False), **kw)


def _when(*, nullable: bool = True, index: bool = False) -> Any:
    kw: dict[str, Any] = {} if nullable else {"default_factory": utcnow}
    return Field(sa_column=Column(UTCDateTime(), nullable=nullable, index=index), **kw)


class SourceState(SQLModel, table=True):
    """Polling state of one source, so a restart loses nothing (miniflux-style)."""

    __tablename__ = "source_state"

    name: str = Field(primary_key=True, max_length=512)
    cursor: str | None = Field(default=None, max_length=512)  # source-specific resume point
    etag: str | None = Field(default=None, max_length=512)
    last_modified: str | None = Field(default=None, max_length=128)
    last_polled_at: datetime | None = _when()
    last_success_at: datetime | None = _when()
    next_check_at: datetime | None = _when()
    error_count: int = 0
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    # Source-specific facts for `papertide status`: last announcement, its size, highest id…
    data: dict[str, Any] = _json(default_factory=dict)


class Paper(SQLModel, table=True):
    """One paper, deduplicated: arXiv id without version, or doi:/url: ids for feeds."""

    __tablename__ = "paper"

    id: str = Field(primary_key=True, max_length=128)
    version: int = 1
    title: str = Field(sa_column=Column(Text, nullable=False))
    abstract: str = Field(default="", sa_column=Column(Text, nullable=False))
    # [{"name": "Yi Wu", "affiliations": ["Tsinghua University"]}, ...]
    authors: list[dict[str, Any]] = _json(default_factory=list)
    categories: list[str] = _json(default_factory=list)  # primary first
    primary_category: str = Field(default="", max_length=64, index=True)
    comment: str = Field(default="", sa_column=Column(Text, nullable=False))
    journal_ref: str = Field(default="", sa_column=Column(Text, nullable=False))
    doi: str | None = Field(default=None, max_length=256, index=True)
    links: dict[str, str] = _json(default_factory=dict)
    published: datetime = _when(nullable=False, index=True)  # first version submitted
    updated: datetime = _when(nullable=False)
    source: str = Field(default="", max_length=512)
    ingested_at: datetime = _when(nullable=False, index=True)


class PaperIndexQueue(SQLModel, table=True):
    """A paper stored or changed since the full-text index last read it: the indexer's work.

    Ingest adds (or re-stamps) a row in its transaction; the indexer (bot/ask/index.py,
    the one writer) indexes a batch and deletes its rows in one transaction, so a crash
    between batches re-indexes nothing twice and misses nothing (migration 0010).
    """

    __tablename__ = "paper_index_queue"

    paper_id: str = Field(
        foreign_key="paper.id", primary_key=True, max_length=128, ondelete="CASCADE"
    )
    queued_at: datetime = _when(nullable=False)


class Topic(SQLModel, table=True):
    __tablename__ = "topic"

    id: int | None = Field(default=None, primary_key=True)
    slug: str = Field(max_length=128, unique=True, index=True)
    name: str = Field(max_length=256)
    query: str = Field(default="", sa_column=Column(Text, nullable=False))
    categories: list[str] = _json(default_factory=list)
    related: list[str] = _json(default_factory=list)
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    active: bool = True
    updated_at: datetime = _when(nullable=False)


class PaperTopic(SQLModel, table=True):
    __tablename__ = "paper_topic"
    __table_args__ = (
        Index("ix_paper_topic_topic", "topic_id", "paper_id"),
        # A topic page's newest papers, read from the index alone (migration 0009).
        Index("ix_paper_topic_newest", "topic_id", "published", "paper_id"),
    )

    paper_id: str = Field(
        foreign_key="paper.id", primary_key=True, max_length=128, ondelete="CASCADE"
    )
    topic_id: int = Field(foreign_key="topic.id", primary_key=True, ondelete="CASCADE")
    terms: list[str] = _json(default_factory=list)
    matched_at: datetime = _when(nullable=False)
    # paper.published, copied by the database's triggers (migration 0009): never written here.
    published: datetime | None = _when()


def new_token_version() -> int:
    """A fresh random token version (never 0, the value rows migrated from 0001 carry).

    Random rather than counting up: SQLite may give a deleted person's id to the next
    person, and a counter restarting at 1 would make the old person's links valid again.
    """
    return secrets.randbelow(2**31 - 2) + 1


class Person(SQLModel, table=True):
    """A human recipient across platforms; owns the weekly digest preferences."""

    __tablename__ = "person"

    id: int | None = Field(default=None, primary_key=True)
    email: str | None = Field(default=None, max_length=320, unique=True)  # as typed: mail goes here
    # The address compared case-insensitively: lookups and per-address limits use it.
    email_key: str | None = Field(default=None, max_length=320, unique=True)
    # Signed into every link mailed to the person; a new value revokes all of them.
    token_version: int = Field(default_factory=new_token_version)
    # none | pending | confirmed | unsubscribed
    email_status: str = Field(default="none", max_length=16, index=True)
    confirm_sent_at: datetime | None = _when()
    confirmed_at: datetime | None = _when()
    timezone: str = Field(default="UTC", max_length=64)
    digest_weekday: int = 0  # 0 = Monday, in the person's time zone
    digest_hour: int = 8
    send_quiet_week: bool = True
    created_at: datetime = _when(nullable=False)


class Target(SQLModel, table=True):
    """Where messages go: a chat channel, a chat user (DM) or a mailbox."""

    __tablename__ = "target"
    __table_args__ = (
        UniqueConstraint("platform", "workspace", "address", name="uq_target_address"),
    )

    id: int | None = Field(default=None, primary_key=True)
    platform: str = Field(max_length=16)  # bot.types.Platform
    kind: str = Field(max_length=16)  # bot.types.TargetKind
    workspace: str = Field(default="", max_length=64)  # Slack team / Discord guild
    address: str = Field(max_length=2048)  # channel id, user id, email, Apprise/webhook URL
    person_id: int | None = Field(default=None, foreign_key="person.id", index=True)
    # Typed per-target settings (quiet hours, pacing overrides, thread ts…), one column.
    settings: dict[str, Any] = _json(default_factory=dict)
    disabled_at: datetime | None = _when()
    disabled_reason: str | None = Field(default=None, sa_column=Column(Text))
    failure_count: int = 0
    created_at: datetime = _when(nullable=False)


class Subscription(SQLModel, table=True):
    __tablename__ = "subscription"
    __table_args__ = (UniqueConstraint("target_id", "topic_id", name="uq_subscription"),)

    id: int | None = Field(default=None, primary_key=True)
    target_id: int = Field(foreign_key="target.id", index=True, ondelete="CASCADE")
    topic_id: int = Field(foreign_key="topic.id", index=True, ondelete="CASCADE")
    muted_until: datetime | None = _when()
    created_at: datetime = _when(nullable=False)


class Alert(SQLModel, table=True):
    """A person's keyword alert, in the query language; fires to its (user) target."""

    __tablename__ = "alert"

    id: int | None = Field(default=None, primary_key=True)
    target_id: int = Field(foreign_key="target.id", index=True, ondelete="CASCADE")
    query: str = Field(sa_column=Column(Text, nullable=False))
    active: bool = True
    muted_until: datetime | None = _when()
    created_at: datetime = _when(nullable=False)


class AlertChange(SQLModel, table=True):
    """One change of an alert's query or activity, or its deletion: the live engine's feed.

    Written by the database's own triggers on `alert` (migration 0007_speed_ingest), so
    every change is logged in the writer's transaction, whoever writes: the alert owner,
    a restore, or a target's deletion cascading to its alerts. Pruned by its reader,
    bot/matching/live.py. No foreign key: the row outlives the alert (a tombstone).
    """

    __tablename__ = "alert_change"
    __table_args__ = {"sqlite_autoincrement": True}  # never reuse a seq after pruning

    seq: int | None = Field(default=None, primary_key=True)
    alert_id: int = Field(nullable=False)


class AlertMatch(SQLModel, table=True):
    """(alert, paper) at most once: re-polls and new versions never match twice."""

    __tablename__ = "alert_match"

    alert_id: int = Field(foreign_key="alert.id", primary_key=True, ondelete="CASCADE")
    paper_id: str = Field(
        foreign_key="paper.id", primary_key=True, max_length=128, ondelete="CASCADE"
    )
    terms: list[str] = _json(default_factory=list)
    matched_at: datetime = _when(nullable=False)


class Reaction(SQLModel, table=True):
    """ "More like this" / "less like this" on one paper, by one target.

    Keyed by target, not person: a chat user's reaction lands on their own (user) target
    and, for an alert posted in a channel, on the channel's target too, so a channel
    learns its own taste. A person's reactions are those of every target they own.
    One row per (target, paper): reacting again changes the sign, undo deletes the row.
    """

    __tablename__ = "reaction"
    __table_args__ = (UniqueConstraint("target_id", "paper_id", name="uq_reaction"),)

    id: int | None = Field(default=None, primary_key=True)
    target_id: int = Field(foreign_key="target.id", index=True, ondelete="CASCADE")
    paper_id: str = Field(foreign_key="paper.id", max_length=128, index=True, ondelete="CASCADE")
    leaning: int  # bot.types.Leaning: +1 more like this, -1 less
    via: str = Field(max_length=16)  # where it was given: slack, discord, email, chat…
    created_at: datetime = _when(nullable=False)


class TasteModel(SQLModel, table=True):
    """A person's ranking model (bot/taste), kept for the signals it was trained on
    (`fingerprint`: their marks, follows and alerts), so a digest run, in any process
    and after a restart, trains only the people whose signals changed since."""

    __tablename__ = "taste_model"

    person_id: int = Field(foreign_key="person.id", primary_key=True, ondelete="CASCADE")
    fingerprint: str = Field(max_length=64)  # sha256, hex, of the signals
    model: bytes = Field(sa_column=Column(LargeBinary(), nullable=False))  # model.pack
    trained_at: datetime = _when(nullable=False)


class OutboxRow(SQLModel, table=True):
    """One message to send. `key` is unique: enqueue twice and the database refuses."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_due", "status", "next_attempt_at"),)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=512, unique=True)
    target_id: int = Field(foreign_key="target.id", index=True, ondelete="CASCADE")
    kind: str = Field(max_length=32)  # bot.types.MessageKind
    payload: dict[str, Any] = _json(default_factory=dict)
    # pending | sending | sent | dead | held (quiet hours)
    status: str = Field(default="pending", max_length=16)
    attempts: int = 0
    next_attempt_at: datetime = _when(nullable=False)
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    lease_owner: str | None = Field(default=None, max_length=128)
    lease_expires_at: datetime | None = _when()
    created_at: datetime = _when(nullable=False)
    sent_at: datetime | None = _when()


class Quota(SQLModel, table=True):
    """A use counter per key (client IP, chat user, address) in a window that starts at
    its first use; shared by every process, like everything else (see DESIGN.md)."""

    __tablename__ = "quota"

    key: str = Field(primary_key=True, max_length=400)
    window_start: datetime = _when(nullable=False, index=True)
    count: int = 0


class Pacing(SQLModel, table=True):
    """Per paced key (a chat target, the SMTP relay): when its next message may go.

    Seconds since the epoch on the database's clock, so every worker process on every
    host reads the same timeline.
    """

    __tablename__ = "pacing"

    key: str = Field(primary_key=True, max_length=64)
    next_at: float = Field(default=0.0, sa_column=Column(Float, nullable=False))


class ProcessedEvent(SQLModel, table=True):
    """Chat platform events already handled (Slack retries an event up to three times)."""

    __tablename__ = "processed_event"

    event_id: str = Field(primary_key=True, max_length=128)
    platform: str = Field(max_length=16)
    seen_at: datetime = _when(nullable=False, index=True)


class EmergingWeek(SQLModel, table=True):
    """The emerging phrases of one ISO week (bot/catalog/emerging.py), computed by the
    leader after polls so that pages, commands and digests only read them."""

    __tablename__ = "emerging_week"

    week: str = Field(primary_key=True, max_length=10)  # '2026-W39'
    computed_at: datetime = _when(nullable=False)
    # Computed after the week ended: final. Until then, recomputed after each poll.
    complete: bool = False
    papers: int = 0  # the week's papers when computed
    phrases: list[dict[str, Any]] = _json(default_factory=list)  # Emerging.to_json() each
