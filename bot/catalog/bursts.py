"""Emerging phrases: one phrase per burst, and phrases a topic already covers. Pure.

Used by bot/catalog/emerging.py after the share test; the rules are explained there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.catalog.momentum import SpikeRule, TopicCounts, binomial_sf, share_rise_pct
from bot.catalog.phrases import Phrase, sub_phrases


def collapse(
    significant: set[Phrase],
    tested: Mapping[Phrase, TopicCounts],
    papers: Mapping[Phrase, list[str]],
    *,
    totals: tuple[int, int],
    spike: SpikeRule,
    same_burst_pct: float,
) -> list[Phrase]:
    """One phrase per burst. A shorter phrase inside a longer significant one is the same
    burst when, without the longer one's papers (this week and before), it no longer
    passes the rule: then only the longer one stays ('test-time scaling', not
    'test-time'). Otherwise the shorter one rises on its own and stays; the longer one
    then goes too unless it holds `same_burst_pct` of the shorter one's papers.
    `totals`: all papers of the tested week and of the weeks before."""
    recent, previous = totals
    p0 = recent / (recent + previous)
    dropped: set[Phrase] = set()
    for long in sorted(significant, key=lambda p: (-len(p), p)):
        for short in sub_phrases(long):
            if short not in significant:
                continue
            s, lo = tested[short], tested[long]
            rest = TopicCounts(s.recent - lo.recent, s.previous - lo.previous)
            p_rest = binomial_sf(rest.recent, rest.recent + rest.previous, p0)
            if not spike.holds(p_rest, rest.recent, share_rise_pct(rest, recent, previous)):
                dropped.add(short)
            elif 100.0 * len(papers[long]) < same_burst_pct * len(papers[short]):
                dropped.add(long)
    return [p for p in significant if p not in dropped]


def distinct_bursts(
    ranked: list[Phrase], papers: Mapping[Phrase, list[str]], same_burst_pct: float
) -> list[Phrase]:
    """Drop a phrase when most of its papers (`same_burst_pct`) already belong to a
    stronger phrase kept: the same papers rising under two names are one burst."""
    kept: list[tuple[Phrase, set[str]]] = []
    for phrase in ranked:
        mine = papers[phrase]
        if not any(100.0 * sum(i in ids for i in mine) >= same_burst_pct * len(mine)
                   for _, ids in kept):  # fmt: skip
            kept.append((phrase, set(mine)))
    return [phrase for phrase, _ in kept]


def covered(
    ids: Sequence[str],
    topic_papers: Mapping[str, frozenset[str]],
    week_total: int,
    *,
    cover_pct: float,
    broad_topic_pct: float,
) -> bool:
    """Whether a specific catalog topic already holds `cover_pct` of the phrase's papers
    (a topic holding `broad_topic_pct` of the whole week is a catch-all, not specific)."""
    for held in topic_papers.values():
        if 100.0 * len(held) >= broad_topic_pct * week_total:
            continue
        inside = sum(1 for i in ids if i in held)
        if 100.0 * inside >= cover_pct * len(ids):
            return True
    return False
