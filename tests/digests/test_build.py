"""build_digest derives what recipients share once per week, and still says the same."""

from __future__ import annotations

from dataclasses import replace

from digests.build import AlertInfo, Recipient, RecipientData, build_digest, rank_papers
from digests.sample import sample_recipient, sample_week


def test_each_recipient_gets_the_full_sort_with_their_alert_hits_first() -> None:
    week = sample_week("2026-W39", topics=6, papers_per_topic=12)
    slugs = list(week.topics)
    for person in range(1, 9):
        follows = frozenset(slugs[(person + k) % len(slugs)] for k in range(3))
        caught = tuple(
            week.papers[p] for s in sorted(follows) for p in week.papers_by_topic[s][person::5]
        )
        data = RecipientData(Recipient(person, f"p{person}@example.org"), follows,
                             (AlertInfo(person, "x", caught),))  # fmt: skip
        digest = build_digest(data, week, papers_per_topic=5)
        assert digest is not None
        hits = frozenset(p.id for p in caught)
        for section in digest.sections:
            full = rank_papers(week.papers_by_topic[section.slug], week.papers, hits)
            assert section.papers == tuple(full[:5])
            assert section.total == len(full)
            assert section.alert_hits == frozenset(p.id for p in full[:5] if p.id in hits)


def test_a_week_given_new_momentum_is_derived_afresh() -> None:
    week = sample_week("2026-W39", topics=6, papers_per_topic=4)
    data = sample_recipient(week, follows=6)
    before = build_digest(data, week, papers_per_topic=3)
    assert before is not None
    week.momentum = {s: replace(m, spiking=True, p_value=0.001) for s, m in week.momentum.items()}
    after = build_digest(data, week, papers_per_topic=3)
    assert after is not None
    assert {s.slug for s in after.spikes} == set(week.topics)
    assert len(after.spikes) > len(before.spikes)
