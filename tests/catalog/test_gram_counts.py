"""The array counts (bot/catalog/gram_counts) against a plain count of `paper_grams`."""

from __future__ import annotations

from collections import Counter

from bot.catalog.gram_counts import history_counts, week_counts
from bot.catalog.phrases import paper_grams, segments_of

PAPERS = [
    ("Test-Time Scaling of LLMs", "We study test-time scaling; test time scaling helps."),
    ("Çağatan's $\\mu$P: test-time scaling", "Straße -- TEST TIME scaling, again (test-time)."),
    ("Paperend segmentend", "paperend segmentend PAPEREND SEGMENTEND test"),
    ("Short", ""),
    ("", "scaling"),
    ("Chain of thought", "chain-of-thought prompting; chain of thought \\emph{test} time"),
    ("Naïve test time", "µ-transfer: test time scaling of naïve models"),
]


def plain_counts(papers: list[tuple[str, str]]) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for title, abstract in papers:
        counts.update(paper_grams(segments_of(title, abstract)))
    return counts


def test_week_counts_match_every_gram_of_every_paper() -> None:
    expected = plain_counts(PAPERS)
    found, family = week_counts([segments_of(t, a) for t, a in PAPERS], min_count=2)
    assert found == {p: n for p, n in expected.items() if n >= 2}
    assert family == len(expected)
    assert found[("test", "time", "scaling")] == 3


def test_history_counts_match_per_week_for_ascii_and_other_batches() -> None:
    candidates = {p for p, n in plain_counts(PAPERS).items() if n >= 1}
    weeks = [0, 1, 1, 0, 2, 2, 1]
    found = history_counts(PAPERS, weeks, candidates, 3)
    for week in range(3):
        expected = plain_counts([p for p, w in zip(PAPERS, weeks, strict=True) if w == week])
        assert {p: found[p][week] for p in candidates if found[p][week]} == dict(expected)
    assert found[("paperend", "segmentend")] == [0, 1, 0]  # words like the markers count
    # ASCII only (the bytes path) gives the same as with the non-ASCII papers.
    ascii_papers = [p for p in PAPERS if (p[0] + p[1]).isascii()]
    only = history_counts(ascii_papers, [0] * len(ascii_papers), candidates, 1)
    assert {p: n[0] for p, n in only.items() if n[0]} == dict(plain_counts(ascii_papers))
