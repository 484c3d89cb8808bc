"""`papertide export` / `papertide import`: topics, people, targets with their follows
and alerts, as one JSON document, so an install can be backed up, moved from SQLite to
PostgreSQL, or restored.

The document names rows by what identifies them everywhere (a topic's slug, a
person's address, a target's platform/workspace/address), never by database ids, so
it imports into any store. Import adds what is missing and never changes or deletes
what is there: importing the same document twice adds nothing. A record that does not
validate (or whose URL the injected check refuses) is reported and skipped; the rest
goes in. Papers, matches and the outbox are not exported: papers come back from the
sources (`papertide backfill`), and queued messages belong to the old install.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.catalog.sync import restore_topics
from bot.errors import PapertideError
from bot.outbox.targets import restore_target
from bot.store.models import Alert, Person, Subscription, Target, Topic
from bot.subscriptions.alerts import restore_alert
from bot.subscriptions.follows import restore_follow
from bot.subscriptions.people import restore_person
from bot.timeutil import utcnow
from bot.types import EmailStatus, Platform, TargetKind

FORMAT = "papertide-export"
SECTIONS = ("topics", "people", "targets", "follows", "alerts")
VERSION = 1
# (platform, address) -> None, or raises a PapertideError saying why the URL is refused.
CheckAddress = Callable[[Platform, str], Awaitable[None]]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TopicRecord(_Record):
    slug: str = Field(min_length=1, max_length=128)
    name: str = Field(min_length=1, max_length=256)
    query: str = ""
    categories: list[str] = []
    related: list[str] = []
    description: str = ""
    active: bool = True


class PersonRecord(_Record):
    email: str = Field(min_length=3, max_length=320)
    email_status: EmailStatus = EmailStatus.NONE
    confirm_sent_at: datetime | None = None
    confirmed_at: datetime | None = None
    timezone: str = Field("UTC", max_length=64)
    digest_weekday: int = Field(0, ge=0, le=6)
    digest_hour: int = Field(8, ge=0, le=23)
    send_quiet_week: bool = True
    created_at: datetime | None = None


class FollowRecord(_Record):
    topic: str
    muted_until: datetime | None = None
    created_at: datetime | None = None


class AlertRecord(_Record):
    query: str = Field(min_length=1, max_length=1000)
    active: bool = True
    muted_until: datetime | None = None
    created_at: datetime | None = None


class TargetRecord(_Record):
    platform: Platform
    kind: TargetKind
    workspace: str = Field("", max_length=64)
    address: str = Field(min_length=1, max_length=2048)
    person: str | None = None  # the linked person's address
    settings: dict[str, Any] = {}
    disabled_at: datetime | None = None
    disabled_reason: str | None = None
    failure_count: int = 0
    created_at: datetime | None = None
    follows: list[FollowRecord] = []
    alerts: list[AlertRecord] = []


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


async def export_document(*, session: AsyncSession) -> dict[str, Any]:
    """Everything operators need to rebuild this install's audience, as JSON data."""
    topics = (await session.execute(select(Topic).order_by(col(Topic.slug)))).scalars().all()
    slugs = {t.id: t.slug for t in topics}
    people = (await session.execute(select(Person).order_by(col(Person.email)))).scalars().all()
    emails = {p.id: p.email for p in people}
    targets = (await session.execute(select(Target))).scalars().all()
    follows: dict[int, list[dict[str, Any]]] = {}
    for sub in (await session.execute(select(Subscription))).scalars():
        follows.setdefault(sub.target_id, []).append(
            {"topic": slugs[sub.topic_id], "muted_until": _iso(sub.muted_until),
             "created_at": _iso(sub.created_at)}
        )  # fmt: skip
    alerts: dict[int, list[dict[str, Any]]] = {}
    for alert in (await session.execute(select(Alert))).scalars():
        alerts.setdefault(alert.target_id, []).append(
            {"query": alert.query, "active": alert.active,
             "muted_until": _iso(alert.muted_until), "created_at": _iso(alert.created_at)}
        )  # fmt: skip
    rows = []
    for t in sorted(targets, key=lambda t: (t.platform, t.workspace, t.address)):
        assert t.id is not None
        rows.append(
            {"platform": t.platform, "kind": t.kind, "workspace": t.workspace,
             "address": t.address, "person": emails.get(t.person_id), "settings": t.settings,
             "disabled_at": _iso(t.disabled_at), "disabled_reason": t.disabled_reason,
             "failure_count": t.failure_count, "created_at": _iso(t.created_at),
             "follows": sorted(follows.get(t.id, []), key=lambda f: f["topic"]),
             "alerts": sorted(alerts.get(t.id, []), key=lambda a: (a["query"], a["created_at"]))}
        )  # fmt: skip
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": utcnow().isoformat(),
        "topics": [
            {
                "slug": t.slug,
                "name": t.name,
                "query": t.query,
                "categories": t.categories,
                "related": t.related,
                "description": t.description,
                "active": t.active,
            }
            for t in topics
        ],
        "people": [
            {
                "email": p.email,
                "email_status": p.email_status,
                "confirm_sent_at": _iso(p.confirm_sent_at),
                "confirmed_at": _iso(p.confirmed_at),
                "timezone": p.timezone,
                "digest_weekday": p.digest_weekday,
                "digest_hour": p.digest_hour,
                "send_quiet_week": p.send_quiet_week,
                "created_at": _iso(p.created_at),
            }
            for p in people
            if p.email is not None
        ],
        "targets": rows,
    }


@dataclass
class ImportReport:
    """What an import added, and every record it skipped with the reason."""

    added: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("topics", "people", "targets", "follows", "alerts"), 0
        )
    )
    skipped: list[str] = field(default_factory=list)


class NotAnExport(PapertideError):
    """The document is not a papertide export at all."""


def _parse(kind: type[_Record], raw: Any, where: str, report: ImportReport) -> Any | None:
    try:
        return kind.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        spot = ".".join(str(p) for p in err["loc"])
        report.skipped.append(f"{where}: {spot or 'record'}: {err['msg']}")
        return None


def _section(document: dict[str, Any], name: str) -> list[Any]:
    value = document.get(name, [])
    if not isinstance(value, list):
        raise NotAnExport(f"`{name}` must be a list")
    return value


async def import_document(
    *, session: AsyncSession, document: Any, check_address: CheckAddress
) -> ImportReport:
    """Add what `document` holds and this store lacks; the caller commits."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise NotAnExport(f'not a papertide export (no "format": "{FORMAT}")')
    if document.get("version") != VERSION:
        raise NotAnExport(f"export version {document.get('version')!r}; this papertide reads 1")
    report = ImportReport()
    topics = [
        t for i, raw in enumerate(_section(document, "topics"))
        if (t := _parse(TopicRecord, raw, f"topics[{i}]", report)) is not None
    ]  # fmt: skip
    report.added["topics"] = len(
        await restore_topics(session=session, topics=[t.model_dump() for t in topics])
    )
    by_slug = {t.slug: t for t in (await session.execute(select(Topic))).scalars()}
    people: dict[str, int] = {}
    for i, raw in enumerate(_section(document, "people")):
        record = _parse(PersonRecord, raw, f"people[{i}]", report)
        if record is not None:
            person, created = await restore_person(session=session, values=record.model_dump())
            assert person.id is not None
            people[record.email] = person.id
            report.added["people"] += int(created)
    for i, raw in enumerate(_section(document, "targets")):
        record = _parse(TargetRecord, raw, f"targets[{i}]", report)
        if record is not None:
            await _import_target(session, record, f"targets[{i}]", people, by_slug, report,
                                 check_address)  # fmt: skip
    return report


async def _import_target(
    session: AsyncSession,
    record: TargetRecord,
    where: str,
    people: dict[str, int],
    topics: dict[str, Topic],
    report: ImportReport,
    check_address: CheckAddress,
) -> None:
    if record.platform in (Platform.WEBHOOK, Platform.APPRISE):
        try:
            await check_address(record.platform, record.address)
        except PapertideError as exc:
            report.skipped.append(f"{where}: {exc}")
            return
    person_id = people.get(record.person) if record.person else None
    values = record.model_dump(exclude={"follows", "alerts", "person"})
    target, created = await restore_target(session=session, values=values, person_id=person_id)
    report.added["targets"] += int(created)
    for j, follow in enumerate(record.follows):
        topic = topics.get(follow.topic)
        if topic is None:
            report.skipped.append(f"{where}.follows[{j}]: no topic {follow.topic!r}")
            continue
        report.added["follows"] += int(
            await restore_follow(session=session, target=target, topic=topic,
                                 muted_until=follow.muted_until, created_at=follow.created_at)
        )  # fmt: skip
    for alert in record.alerts:
        report.added["alerts"] += int(
            await restore_alert(session=session, target=target, query=alert.query,
                                active=alert.active, muted_until=alert.muted_until,
                                created_at=alert.created_at)
        )  # fmt: skip
