"""Benchmark: emerging-topic detection over 12 weeks of 60,000 papers, with planted bursts.

    .venv/bin/python bench/emerging.py [--per-week 5000] [--bursts 20] [--decoys 20]
                                       [--rounds 3] [--seed 16]
    .venv/bin/python bench/emerging.py --quick       # 12 x 500 papers, a smoke run

The corpus (tests/support/emerging_corpus.py) is 12 weeks of Zipf-vocabulary papers
(real-length abstracts, flat collocations) with planted bursts (2-3-word phrases in
10-30 papers of the last week, at most a trickle before) and planted decoys (phrases in
2-5% of the papers of every week). Printed:

- quality: recall and precision of the detected phrases against the planted bursts
  (a sub- or super-phrase of a burst counts as wrong) and how many decoys were reported;
  goals (issue 16): >= 0.9 both, no decoy.
- time: papertide's detection (`detect_emerging`: the tested week counted in full, the
  history only for its candidate phrases) against a naive detector that counts every
  1-3-gram of every paper of every week and then runs the same test, alternating, in
  the same run; wall seconds. Goal: < 10 s for 12 weeks of 60,000 papers.
  Both must report the same phrases (checked).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sidebyside import alternate, header, report, rounds_arg
from bot.catalog.emerging import (
    Doc,
    Emerging,
    EmergingRule,
    PhraseCounts,
    decide_emerging,
    detect_emerging,
)
from bot.catalog.momentum import CHART_WEEKS, SpikeRule, TopicCounts
from bot.catalog.phrases import Phrase, Segments, is_phrase, paper_grams, segments_of
from tests.support.emerging_corpus import Planted, planted_corpus

RULE = EmergingRule(SpikeRule(0.01, 5, 50.0), limit=1000)


def naive_detect(docs: list[Doc]) -> list[Emerging]:
    """Every n-gram of every paper counted, per week; then the same decision."""
    last = CHART_WEEKS - 1
    per_week: list[Counter[Phrase]] = [Counter() for _ in range(CHART_WEEKS)]
    held: dict[str, Segments] = {}
    for d in docs:
        segments = segments_of(d.title, d.abstract)
        per_week[d.week].update(paper_grams(segments))
        if d.week == last:
            held[d.id] = segments
    recent = per_week[last]
    tested = {
        p: TopicCounts(n, sum(w[p] for w in per_week[:last]), tuple(w[p] for w in per_week))
        for p, n in recent.items()
        if n >= RULE.spike.min_count and is_phrase(p)
    }
    current = [d for d in docs if d.week == last]
    counted = PhraseCounts(tested, held, len(current), len(docs) - len(current), len(recent))
    return decide_emerging(counted, current={d.id: d for d in current}, rule=RULE)


def quality(planted: Planted, found: list[Emerging]) -> tuple[float, float, int]:
    words = {e.words for e in found}
    hits = len(words & set(planted.bursts))
    recall = hits / len(planted.bursts) if planted.bursts else 1.0
    precision = hits / len(words) if words else 1.0
    return recall, precision, len(words & set(planted.decoys))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--per-week", type=int, default=5000)
    ap.add_argument("--bursts", type=int, default=20)
    ap.add_argument("--decoys", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="12 x 500 papers")
    args = ap.parse_args()
    if args.quick:
        args.per_week = 500
    header(
        f"emerging topics: 12 weeks x {args.per_week:,} papers "
        f"({12 * args.per_week:,}), {args.bursts} planted bursts, {args.decoys} decoys",
        rounds_arg(args.rounds),
        "papertide = detect_emerging (word-id arrays); naive = every n-gram of every paper",
    )
    started = time.perf_counter()
    planted = planted_corpus(
        args.seed, per_week=args.per_week, bursts=args.bursts, decoys=args.decoys
    )
    print(f"   corpus generated in {time.perf_counter() - started:.1f} s")
    found: dict[str, list[Emerging]] = {}
    cpu: dict[str, list[float]] = {"papertide": [], "naive": []}

    def timed(name: str, detect: object) -> float:
        start, start_cpu = time.perf_counter(), time.process_time()
        found[name] = detect(planted.docs)  # type: ignore[operator]
        cpu[name].append(time.process_time() - start_cpu)
        return time.perf_counter() - start

    cases = {
        "papertide": lambda: timed("papertide", lambda d: detect_emerging(d, rule=RULE)),
        "naive": lambda: timed("naive", naive_detect),
    }
    times = alternate(cases, args.rounds)
    recall, precision, decoys = quality(planted, found["papertide"])
    print(
        f"quality: recall {recall:.3f}  precision {precision:.3f}  decoys reported {decoys}"
        f"  ({len(found['papertide'])} phrases reported, {len(planted.bursts)} planted)"
    )
    for item in found["papertide"]:
        mark = "planted" if item.words in set(planted.bursts) else "NOT PLANTED"
        print(f"   {mark:<11} {item.line}")
    same = [e.words for e in found["papertide"]] == [e.words for e in found["naive"]]
    print(f"same phrases as the naive detector: {'yes' if same else 'NO'}")
    report(
        "detection, wall s",
        ("papertide", times["papertide"]),
        ("naive", times["naive"]),
        higher_is_better=False,
        note="goal < 10 s for 12 weeks of 60,000 papers",
    )
    report(
        "detection, CPU s (this process only: the honest figure on a loaded machine)",
        ("papertide", cpu["papertide"]),
        ("naive", cpu["naive"]),
        higher_is_better=False,
        note="goal < 10 s for 12 weeks of 60,000 papers",
    )
    ok = recall >= 0.9 and precision >= 0.9 and decoys == 0 and same
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
