"""The fan-out's pure middle: who gets which papers, and as which outbox rows.

`plan_fanout` takes the matches and what the store said about their audience
(`Audience`, read by bot/outbox/fanout.py) and returns the rows to insert. No I/O, so
every rule below is tested on plain data:

- A topic match goes to every follower of the topic (enabled, not muted); an alert
  match goes to the alert's own target.
- One paper reaches one target once, whatever fired: key `t<target>:paper:<paper id>`,
  every reason merged into that one message. A key already taken is never planned again.
- More than `group_threshold` new papers for one CHANNEL become ONE `paper_group`
  message; each paper's own key is reserved by a `grouped` row so a re-poll sends none.
- Inside a target's quiet hours, paper messages are `held` until the window ends.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.outbox.payloads import AlertReason, GroupPayload, PaperItem, Reason, TopicReason
from bot.outbox.queue import message_key
from bot.outbox.quiet_hours import quiet_until
from bot.store.records import PaperJSON
from bot.types import Match, MatchKind, MessageKind, OutboxStatus, TargetKind


@dataclass(frozen=True, slots=True)
class TopicInfo:
    slug: str
    name: str
    categories: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AlertInfo:
    target_id: int
    query: str


@dataclass(frozen=True, slots=True)
class TargetInfo:
    kind: TargetKind
    settings: Mapping[str, Any]


@dataclass(slots=True)
class Audience:
    """What the store says about the matches' audience; filled in two reads."""

    topics: dict[int, TopicInfo] = field(default_factory=dict)
    followers: dict[int, list[int]] = field(default_factory=dict)  # topic id -> target ids
    alerts: dict[int, AlertInfo] = field(default_factory=dict)  # active, unmuted alerts
    targets: dict[int, TargetInfo] = field(default_factory=dict)
    papers: dict[str, PaperJSON] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)  # message keys already in the outbox


@dataclass(frozen=True, slots=True)
class PlannedRow:
    target_id: int
    kind: MessageKind
    key: str
    payload: Any
    status: OutboxStatus = OutboxStatus.PENDING
    not_before: datetime | None = None


@dataclass(frozen=True, slots=True)
class PlannedGroup:
    """A group message; its members' keys are reserved first (see `write_plan`)."""

    target_id: int
    key: str
    members: tuple[tuple[str, PaperItem], ...]


Plan = list[PlannedRow | PlannedGroup]
Reasons = dict[int, dict[str, dict[tuple[str, int], Reason]]]  # target -> paper -> why


def reasons_by_target(matches: Sequence[Match], audience: Audience) -> Reasons:
    """Every (target, paper) the matches call for, with all their reasons merged."""
    reasons: Reasons = defaultdict(lambda: defaultdict(dict))
    for m in matches:
        if m.kind is MatchKind.TOPIC and m.ref_id in audience.topics:
            topic = audience.topics[m.ref_id]
            why: Reason = TopicReason(
                kind="topic",
                id=m.ref_id,
                slug=topic.slug,
                name=topic.name,
                # The topic's own category filter is not news to its followers: show the
                # words that matched, not "cs.LG".
                terms=[t for t in m.terms if t not in topic.categories],
            )
            for target_id in audience.followers.get(m.ref_id, []):
                reasons[target_id][m.paper_id][("topic", m.ref_id)] = why
        elif m.kind is MatchKind.ALERT and m.ref_id in audience.alerts:
            alert = audience.alerts[m.ref_id]
            why = AlertReason(kind="alert", id=m.ref_id, query=alert.query, terms=list(m.terms))
            reasons[alert.target_id][m.paper_id][("alert", m.ref_id)] = why
    return reasons


def candidate_keys(reasons: Reasons) -> list[str]:
    """The per-paper keys the plan could use, to ask the store which are taken."""
    return [
        message_key(target_id, MessageKind.PAPER, paper_id)
        for target_id, per_paper in reasons.items()
        for paper_id in per_paper
    ]


def plan_fanout(
    reasons: Reasons,
    audience: Audience,
    *,
    group_threshold: int,
    default_timezone: str,
    now: datetime,
) -> Plan:
    """The rows to insert, target by target, in a stable order."""
    plan: Plan = []
    for target_id in sorted(reasons):
        keyed = [
            (message_key(target_id, MessageKind.PAPER, pid), item)
            for pid, why in sorted(reasons[target_id].items())
            if pid in audience.papers
            for item in [PaperItem(paper=audience.papers[pid], reasons=list(why.values()))]
        ]
        keyed = [(key, item) for key, item in keyed if key not in audience.taken]
        if keyed:
            plan += _plan_target(
                target_id, audience.targets[target_id], keyed, group_threshold,
                default_timezone, now,
            )  # fmt: skip
    return plan


def _plan_target(
    target_id: int,
    target: TargetInfo,
    keyed: list[tuple[str, PaperItem]],
    group_threshold: int,
    default_timezone: str,
    now: datetime,
) -> Plan:
    held_until = quiet_until(target.settings, now, default_timezone=default_timezone)
    if held_until is not None:
        # Held one by one; fold_held turns them into one summary when the window ends.
        return [
            PlannedRow(target_id, MessageKind.PAPER, key, item, OutboxStatus.HELD, held_until)
            for key, item in keyed
        ]
    if target.kind == TargetKind.CHANNEL and len(keyed) > group_threshold:
        ids = sorted(item["paper"]["id"] for _, item in keyed)
        digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]
        group_key = message_key(target_id, MessageKind.PAPER_GROUP, digest)
        return [PlannedGroup(target_id, group_key, tuple(keyed))]
    return [PlannedRow(target_id, MessageKind.PAPER, key, item) for key, item in keyed]


def group_payload(members: Sequence[PaperItem]) -> GroupPayload:
    return GroupPayload(items=list(members))
