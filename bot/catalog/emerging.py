"""Emerging topics: phrases whose weekly frequency rose significantly. Pure, no I/O.

Over the 12 chart weeks (bot.catalog.momentum), the last week is tested against the
11 before it with topic momentum's own test (`share_test`: one-sided exact binomial on
the phrase's share of all new papers, Benjamini-Hochberg) and rule (`SpikeRule.holds`:
adjusted p, minimum count, minimum share rise). BH's family is every 1-3-gram of the
tested week, not just those over the minimum count: filtering on this week's count
picks exactly the chance flukes of rare words, and a family of the survivors alone
would let them through. The phrases under the minimum count in with p = 1 (they could
never be reported; a higher p only makes BH more conservative).

Cost: every n-gram of every paper would be ~27 million tuples for 60,000 papers, so the
tested week is counted in full (its papers only) and the history only for the candidate
phrases, both as word-id arrays (bot.catalog.gram_counts: one int64 code per n-gram, no
tuples). Measured on bench/emerging.py (12 x 5,000 papers): 27-34 CPU s a pass with
Python sets of tuples, ~8-9 CPU s with the arrays; what is left is mostly turning 12
million words into ids (one dict lookup each).

Then (1) sub- and super-phrases of one burst collapse into one: a shorter phrase whose
rise is gone once the longer phrase's papers are taken out is the same burst, and only
the longer one stays ('test-time scaling' over 'test-time' and 'time scaling'), and a
phrase most of whose papers belong to a stronger one is that burst too; (2)
phrases a catalog topic already covers are dropped: a topic covers a phrase when it
holds at least `cover_pct` of the phrase's papers this week, unless the topic holds
`broad_topic_pct` of all the week's papers (a catch-all like `cat:cs.LG` would "cover"
every phrase and so names none). Papers, not queries, decide coverage: the engine
already filed them, and a query that finds the phrase's papers through other words
covers it just as well as one that spells it.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.catalog.bursts import collapse, covered, distinct_bursts
from bot.catalog.gram_counts import history_counts, week_counts
from bot.catalog.momentum import (
    CHART_WEEKS,
    SpikeRule,
    TopicCounts,
    share_rise_pct,
    share_test,
)
from bot.catalog.phrases import (
    Phrase,
    Segments,
    is_phrase,
    paper_grams,
    segments_of,
    suggested_query,
    suggested_slug,
    surface_form,
)
from bot.config import Settings


@dataclass(frozen=True, slots=True)
class EmergingRule:
    """When a phrase is emerging; built from Settings."""

    spike: SpikeRule
    cover_pct: float = 50.0
    broad_topic_pct: float = 25.0
    same_burst_pct: float = 80.0
    limit: int = 20

    @classmethod
    def from_settings(cls, settings: Settings) -> EmergingRule:
        spike = SpikeRule(
            settings.spike_p_value, settings.emerging_min_count, settings.spike_min_rise_pct
        )
        return cls(spike, cover_pct=settings.emerging_cover_pct, limit=settings.emerging_limit)


@dataclass(frozen=True, slots=True)
class Doc:
    """A paper as detection reads it; `week` 0 is the oldest chart week, the last is tested."""

    id: str
    week: int
    title: str
    abstract: str
    category: str = ""  # primary arXiv category


@dataclass(frozen=True, slots=True)
class Emerging:
    """One emerging phrase of the tested week."""

    phrase: str  # as papers write it: 'test-time scaling'
    words: tuple[str, ...]  # folded: ('test', 'time', 'scaling')
    count: int  # papers this week
    previous: int  # papers in the weeks before
    weekly: tuple[int, ...]  # papers per chart week, oldest first
    p_value: float  # BH-adjusted
    papers: tuple[str, ...]  # this week's paper ids, in the order given
    query: str
    slug: str
    categories: tuple[str, ...] = ()  # the papers' commonest primary categories

    @property
    def line(self) -> str:
        """ "'test-time scaling', 9 papers this week, none in the 11 weeks before"."""
        papers = "paper" if self.count == 1 else "papers"
        before = "none" if self.previous == 0 else str(self.previous)
        weeks = len(self.weekly) - 1
        this_week = f"'{self.phrase}', {self.count} {papers} this week"
        return f"{this_week}, {before} in the {weeks} weeks before"

    def to_json(self) -> dict[str, Any]:
        """One item of `topics emerging --json` (its field names are a contract)."""
        return {
            "phrase": self.phrase,
            "words": list(self.words),
            "count": self.count,
            "previous": self.previous,
            "weekly": list(self.weekly),
            "p_value": self.p_value,
            "papers": list(self.papers),
            "query": self.query,
            "slug": self.slug,
            "categories": list(self.categories),
            "add_command": add_command(self),
            "line": self.line,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Emerging:
        return cls(
            phrase=str(data["phrase"]), words=tuple(data["words"]), count=int(data["count"]),
            previous=int(data["previous"]), weekly=tuple(int(n) for n in data["weekly"]),
            p_value=float(data["p_value"]), papers=tuple(data["papers"]),
            query=str(data["query"]), slug=str(data["slug"]),
            categories=tuple(data.get("categories", ())),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class PhraseCounts:
    """What the test needs: each candidate's counts (this week, the weeks before, per
    week), this week's papers as words, the totals and BH's family size."""

    tested: dict[Phrase, TopicCounts]
    # This week's papers as words: their n-gram sets would take ~40 KB a paper.
    held: dict[str, Segments]
    total_recent: int
    total_prev: int
    family: int  # every n-gram of the tested week: BH's m


def count_phrases(docs: Sequence[Doc], *, min_count: int, weeks: int = CHART_WEEKS) -> PhraseCounts:
    """Count the tested week in full and the history only for its candidate phrases
    (at least `min_count` papers this week), as word-id arrays (bot.catalog.gram_counts)."""
    last = weeks - 1
    current = [d for d in docs if d.week == last]
    history = [d for d in docs if 0 <= d.week < last]
    held = {d.id: segments_of(d.title, d.abstract) for d in current}
    counts, family = week_counts(list(held.values()), min_count=min_count)
    candidates = {p for p in counts if is_phrase(p)}
    per_week = history_counts(
        [(d.title, d.abstract) for d in history],
        [d.week for d in history],
        candidates,
        weeks,
    )
    tested = {
        p: TopicCounts(counts[p], sum(per_week[p][:last]), (*per_week[p][:last], counts[p]))
        for p in candidates
    }
    return PhraseCounts(tested, held, len(current), len(history), family)


def detect_emerging(
    docs: Sequence[Doc],
    *,
    rule: EmergingRule,
    topic_papers: Mapping[str, frozenset[str]] | None = None,
    weeks: int = CHART_WEEKS,
) -> list[Emerging]:
    """The emerging phrases of week `weeks - 1`, most significant first (at most
    `rule.limit`). `topic_papers`: each active topic's paper ids of the tested week."""
    counted = count_phrases(docs, min_count=rule.spike.min_count, weeks=weeks)
    current = {d.id: d for d in docs if d.week == weeks - 1}
    return decide_emerging(counted, current=current, rule=rule, topic_papers=topic_papers)


def decide_emerging(
    counted: PhraseCounts,
    *,
    current: Mapping[str, Doc],
    rule: EmergingRule,
    topic_papers: Mapping[str, frozenset[str]] | None = None,
) -> list[Emerging]:
    """Test, collapse, drop what topics cover, word and rank: counts -> `Emerging`s.
    `current`: this week's papers by id (how they spell a phrase, their categories)."""
    tested, total_recent, total_prev = counted.tested, counted.total_recent, counted.total_prev
    if not tested or not total_prev:
        return []

    def rise(c: TopicCounts) -> float | None:
        return share_rise_pct(c, total_recent, total_prev)

    def worth(c: TopicCounts) -> bool:
        return rule.spike.holds(0.0, c.recent, rise(c))

    q = share_test(
        tested, total_recent=total_recent, total_prev=total_prev, worth=worth,
        family=counted.family,
    )  # fmt: skip
    significant = {p for p, c in tested.items() if rule.spike.holds(q.get(p), c.recent, rise(c))}
    papers: dict[Phrase, list[str]] = {p: [] for p in significant}
    for paper_id, segments in counted.held.items():
        for p in significant.intersection(paper_grams(segments)):
            papers[p].append(paper_id)
    kept = collapse(
        significant, tested, papers, totals=(total_recent, total_prev), spike=rule.spike,
        same_burst_pct=rule.same_burst_pct,
    )  # fmt: skip
    topics, week_total = topic_papers or {}, total_recent
    cover, broad = rule.cover_pct, rule.broad_topic_pct
    kept = [
        p
        for p in kept
        if not covered(papers[p], topics, week_total, cover_pct=cover, broad_topic_pct=broad)
    ]
    kept.sort(key=lambda p: (q[p], -tested[p].recent, -len(p), p))
    found = []
    for p in distinct_bursts(kept, papers, rule.same_burst_pct)[: rule.limit]:
        mine = [current[i] for i in papers[p] if i in current]
        form = surface_form(p, (t for d in mine for t in (d.title, d.abstract)))
        cats = Counter(d.category for d in mine if d.category)
        c = tested[p]
        found.append(
            Emerging(
                phrase=form, words=p, count=c.recent, previous=c.previous, weekly=c.weekly,
                p_value=q[p], papers=tuple(papers[p]), query=suggested_query(form),
                slug=suggested_slug(form),
                categories=tuple(sorted(cat for cat, _ in cats.most_common(3))),
            )
        )  # fmt: skip
    return found


def add_command(item: Emerging) -> str:
    """The one command that turns a suggestion into a catalog topic (shell-quoted)."""
    words = ["papertide", "topics", "add", item.slug, "--name", item.phrase, "--query", item.query]
    for category in item.categories or ("cs.LG",):
        words += ["--category", category]
    return shlex.join(words)
