"""Build one recipient's weekly digest from plain data. Pure: no I/O, no clock.

The loader (`digests.load`) fills `WeekData` once per week and a `RecipientData` per
person; `build_digest` decides what the mail says, `digests.render` how it looks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from bot.catalog.emerging import Emerging
from bot.catalog.momentum import Momentum

MAX_SUGGESTIONS = 3
MAX_EMERGING = 5
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Recipient:
    """Who a digest is for: what links and tokens need (`id`, `email`)."""

    id: int
    email: str
    send_quiet_week: bool = True
    token_version: int = 0  # signed into the digest's links; a new one revokes them


@dataclass(frozen=True, slots=True)
class DigestPaper:
    """A paper as the digest shows it."""

    id: str
    title: str
    authors: tuple[str, ...]
    url: str
    published: datetime
    primary_category: str
    topic_count: int = 1


@dataclass(frozen=True, slots=True)
class TopicInfo:
    slug: str
    name: str


@dataclass(frozen=True, slots=True)
class AlertInfo:
    """One of the recipient's alerts and the papers it caught this week (newest first)."""

    id: int
    query: str
    papers: tuple[DigestPaper, ...] = ()


@dataclass(frozen=True, slots=True)
class MissedPaper:
    """A paper from outside the person's follows that their taste picked, and why (plain
    text: the renderer escapes it)."""

    paper: DigestPaper
    reason: str


@dataclass(frozen=True, slots=True)
class Taste:
    """What the person's model says (bot/taste): a score per paper of the week, higher
    first, and the papers they may have missed. None on a recipient: a cold start."""

    scores: Mapping[str, float]
    missed: tuple[MissedPaper, ...] = ()
    # The same order as sorting by `scores` (stable, 0.0 for a paper without one), the
    # best `n` of `papers` only, computed without a Python call per paper (digests/taste.py).
    top: Callable[[Sequence[DigestPaper], int], list[DigestPaper]] | None = field(
        default=None, compare=False
    )


@dataclass(frozen=True, slots=True)
class RecipientData:
    """What one person follows personally, across every platform they use."""

    recipient: Recipient
    follows: frozenset[str]  # topic slugs
    alerts: tuple[AlertInfo, ...] = ()
    taste: Taste | None = None


@dataclass(slots=True)
class WeekData:
    """Everything about a week that is the same for every recipient (loaded once)."""

    week: str  # '2026-W39'
    as_of: datetime  # the Monday 00:00 UTC that ends the week
    topics: Mapping[str, TopicInfo]
    momentum: Mapping[str, Momentum]
    papers_by_topic: Mapping[str, Sequence[str]]  # slug -> paper ids published this week
    papers: Mapping[str, DigestPaper] = field(default_factory=dict)
    universe: str = ""
    emerging: tuple[Emerging, ...] = ()  # rising phrases no topic covers, strongest first
    # What every recipient's digest derives alike (spiking topics, each topic's papers in
    # order), computed once per week instead of once per mail; see `derived`.
    _derived: dict[str, tuple[tuple[object, ...], Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def derived(self, name: str, compute: Callable[[], _T]) -> _T:
        """`compute()`, once for as long as the week's mappings are the same objects
        (assigning a new mapping to a field, as tests do, computes it afresh)."""
        basis = (self.topics, self.momentum, self.papers_by_topic, self.papers)
        hit = self._derived.get(name)
        if hit is not None and all(a is b for a, b in zip(hit[0], basis, strict=True)):
            return hit[1]  # type: ignore[no-any-return]
        value = compute()
        self._derived[name] = (basis, value)
        return value


@dataclass(frozen=True, slots=True)
class SpikeItem:
    slug: str
    name: str
    momentum: Momentum
    followed: bool


@dataclass(frozen=True, slots=True)
class TopicSection:
    slug: str
    name: str
    momentum: Momentum | None
    papers: tuple[DigestPaper, ...]
    alert_hits: frozenset[str]  # ids among `papers` that also match the recipient's alerts
    total: int  # papers of the week in this topic

    @property
    def more(self) -> int:
        return self.total - len(self.papers)


@dataclass(frozen=True, slots=True)
class Digest:
    """One recipient's digest for one ISO week, ready to render."""

    recipient: Recipient
    week: str
    as_of: datetime
    universe: str
    spikes: tuple[SpikeItem, ...]  # followed spiking topics, then suggestions
    sections: tuple[TopicSection, ...]
    alerts: tuple[AlertInfo, ...]
    follows_nothing: bool
    missed: tuple[MissedPaper, ...] = ()  # "You may have missed", from the person's taste
    emerging: tuple[Emerging, ...] = ()

    @property
    def quiet(self) -> bool:
        """Nothing new in the recipient's topics and alerts this week."""
        return not any(s.total for s in self.sections) and not any(a.papers for a in self.alerts)

    @property
    def followed_spikes(self) -> tuple[SpikeItem, ...]:
        return tuple(s for s in self.spikes if s.followed)

    @property
    def suggestions(self) -> tuple[SpikeItem, ...]:
        return tuple(s for s in self.spikes if not s.followed)


def _spike_order(item: tuple[str, Momentum]) -> tuple[float, int, str]:
    slug, m = item
    return (m.p_value if m.p_value is not None else math.inf, -m.count_4w, slug)


def _spiking(week: WeekData) -> list[tuple[str, Momentum]]:
    return sorted(
        ((s, m) for s, m in week.momentum.items() if m.spiking and s in week.topics),
        key=_spike_order,
    )


def select_spikes(data: RecipientData, week: WeekData) -> tuple[SpikeItem, ...]:
    """The recipient's spiking topics, then up to three spiking topics they do not follow."""
    spiking = week.derived("spiking", lambda: _spiking(week))
    theirs = [SpikeItem(s, week.topics[s].name, m, True) for s, m in spiking if s in data.follows]
    others = [
        SpikeItem(s, week.topics[s].name, m, False) for s, m in spiking if s not in data.follows
    ]
    return tuple(theirs + others[:MAX_SUGGESTIONS])


def rank_papers(
    paper_ids: Sequence[str],
    papers: Mapping[str, DigestPaper],
    alert_hits: frozenset[str],
    scores: Mapping[str, float] | None = None,
) -> list[DigestPaper]:
    """By the person's `scores` when they have a taste, highest first; without one (or
    between equal scores): alert matches first, then papers in more topics, then the
    newest, then by id."""
    found = sorted(
        (papers[p] for p in paper_ids if p in papers),
        key=lambda p: (p.id not in alert_hits, -p.topic_count, -p.published.timestamp(), p.id),
    )
    if scores is not None:
        found.sort(key=lambda p: -scores.get(p.id, 0.0))  # stable: ties keep today's order
    return found


def _ranked_in(
    week: WeekData,
    slug: str,
    alert_hits: frozenset[str],
    orders: dict[str, list[DigestPaper]],
) -> list[DigestPaper]:
    """`rank_papers` for a topic of the week: the order without alerts is the same for
    everyone, so it is sorted once (kept in `orders`, the week's "ranked"); a
    recipient's alert hits only move to the front (a stable partition of that order is
    exactly the full sort)."""
    base = orders.get(slug)
    if base is None:
        base = orders[slug] = rank_papers(week.papers_by_topic.get(slug, ()), week.papers, _NONE)
    # The topic's ids as listed (a superset of `base`'s): a set test in C, no generator.
    if not alert_hits or alert_hits.isdisjoint(week.papers_by_topic.get(slug, ())):
        return base
    return [p for p in base if p.id in alert_hits] + [p for p in base if p.id not in alert_hits]


_NONE: frozenset[str] = frozenset()


def build_digest(data: RecipientData, week: WeekData, *, papers_per_topic: int) -> Digest | None:
    """The digest for one recipient, or None for a quiet week they chose not to receive."""
    hits = frozenset(p.id for a in data.alerts for p in a.papers)
    sections: list[TopicSection] = []
    orders: dict[str, tuple[bool, int, str]] = week.derived("section_order", dict)
    for slug in data.follows:
        if slug not in orders:
            orders[slug] = _section_order(slug, week)
    ranked_orders: dict[str, list[DigestPaper]] = week.derived("ranked", dict)  # once a digest
    for slug in sorted(data.follows, key=orders.__getitem__):
        info = week.topics.get(slug)
        if info is None:
            continue  # a topic retired from the catalog since the person followed it
        ranked = _ranked_in(week, slug, hits, ranked_orders)
        if data.taste is None:
            shown = tuple(ranked[:papers_per_topic])
        elif data.taste.top is not None:
            shown = tuple(data.taste.top(ranked, papers_per_topic))
        else:  # stable: equal scores keep today's order
            scores = data.taste.scores
            shown = tuple(sorted(ranked, key=lambda p: -scores.get(p.id, 0.0))[:papers_per_topic])
        sections.append(
            TopicSection(
                slug=slug,
                name=info.name,
                momentum=week.momentum.get(slug),
                papers=shown,
                alert_hits=frozenset(p.id for p in shown if p.id in hits) if hits else _NONE,
                total=len(ranked),
            )
        )
    digest = Digest(
        recipient=data.recipient,
        week=week.week,
        as_of=week.as_of,
        universe=week.universe,
        spikes=select_spikes(data, week),
        sections=tuple(sections),
        alerts=data.alerts,
        follows_nothing=not data.follows and not data.alerts,
        missed=data.taste.missed if data.taste is not None else (),
        emerging=week.emerging[:MAX_EMERGING],
    )
    if digest.quiet and not data.recipient.send_quiet_week:
        return None
    return digest


def _section_order(slug: str, week: WeekData) -> tuple[bool, int, str]:
    # Spiking topics first, then the busiest, then by name: the mail reads top-down.
    m = week.momentum.get(slug)
    name = week.topics[slug].name.lower() if slug in week.topics else slug
    busy = len(week.papers_by_topic.get(slug, ()))
    return (not (m is not None and m.spiking), -busy, name)
