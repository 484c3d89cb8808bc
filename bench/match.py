"""Benchmark: one arXiv day against 100,000 alerts and 200 topics, engine vs baseline.

    .venv/bin/python bench/match.py [--papers 2000] [--alerts 100000] [--topics 200]
                                    [--sample 20] [--seed 7]

Prints the engine's time for the day, papers/s, peak memory, the cost of adding one
alert, and the per-query baseline (every query evaluated on every paper, same
semantics) measured on a sample of papers and extrapolated to the day; checks that
engine and baseline give identical match sets on the sampled papers.
Goals (issue 3): < 1 s for the day on one core, >= 50x the baseline, < 1 GB peak.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.matching.engine import MatchEngine, topic_query
from bot.matching.query import parse_query
from bot.matching.terms import BaselineQuery
from bot.matching.textnorm import PaperText
from bot.types import Match, MatchKind, PaperRecord
from tests.support.match_corpus import (
    Vocabulary,
    generate_alert,
    generate_papers,
    generate_topic,
)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def cpu() -> float:
    return time.process_time()


def reference_loop() -> float:
    """CPU seconds of a plain 10M-step Python loop: how fast this machine is right now."""
    t0, x = cpu(), 0
    for i in range(10_000_000):
        x += i
    return cpu() - t0


def time_day(engine: MatchEngine, papers: list[PaperRecord]) -> tuple[list[float], list]:
    gc.collect()
    gc.disable()  # measure matching, not the cyclic collector's pauses
    runs, results = [], []
    for _ in range(3):
        t0 = cpu()
        results = [engine.match(p) for p in papers]
        runs.append(cpu() - t0)
    gc.enable()
    return runs, results


def time_changes(engine: MatchEngine, rng: random.Random, vocab: Vocabulary) -> None:
    adds, removes = [], []
    for i in range(1000):
        query = generate_alert(rng, vocab)
        t0 = time.perf_counter()
        engine.add_alert(10_000_000 + i, query)
        adds.append(time.perf_counter() - t0)
    for i in range(1000):
        t0 = time.perf_counter()
        engine.remove_alert(10_000_000 + i)
        removes.append(time.perf_counter() - t0)
    print(
        f"add one alert: median {statistics.median(adds) * 1e6:.0f} µs, "
        f"p99 {sorted(adds)[989] * 1e6:.0f} µs; remove one: median "
        f"{statistics.median(removes) * 1e6:.0f} µs (with {len(engine):,} queries loaded)"
    )


def run_baseline(
    topics: list[tuple[str, list[str]]], alerts: list[str], sample: list[PaperRecord]
) -> tuple[float, list[set[Match]]]:
    """Every query on every sampled paper; returns (CPU s per paper, match sets)."""
    queries = [(MatchKind.TOPIC, i, topic_query(q, c)) for i, (q, c) in enumerate(topics)]
    queries += [(MatchKind.ALERT, i, parse_query(q)) for i, q in enumerate(alerts)]
    compiled = [(kind, ref, BaselineQuery(node)) for kind, ref, node in queries if node]
    t0 = cpu()
    expected: list[set[Match]] = []
    for paper in sample:
        text = PaperText(paper)
        found = set()
        for kind, ref, query in compiled:
            terms = query.fired(text)
            if terms is not None:
                found.add(Match(paper.id, kind, ref, terms))
        expected.append(found)
    return (cpu() - t0) / len(sample), expected


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", type=int, default=2000)
    ap.add_argument("--alerts", type=int, default=100_000)
    ap.add_argument("--topics", type=int, default=200)
    ap.add_argument("--sample", type=int, default=20, help="papers run through the baseline")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    print(f"machine: a 10M-step Python loop takes {reference_loop():.2f} CPU s right now")
    rng = random.Random(args.seed)
    vocab = Vocabulary(rng)
    papers = generate_papers(rng, vocab, args.papers)
    alerts = [generate_alert(rng, vocab) for _ in range(args.alerts)]
    topics = [generate_topic(rng, vocab) for _ in range(args.topics)]
    words = sum(len(p.abstract.split()) for p in papers) / len(papers)
    print(
        f"corpus: {len(papers)} papers (abstracts {words:.0f} words on average), "
        f"{len(alerts):,} alerts, {len(topics)} topics; seed {args.seed}"
    )
    before = peak_mib()
    t0 = cpu()
    engine = MatchEngine()
    for i, (query, cats) in enumerate(topics):
        engine.add_topic(i, query, cats)
    for i, query in enumerate(alerts):
        engine.add_alert(i, query)
    print(f"compile: {cpu() - t0:.2f} CPU s for {len(engine):,} queries")

    runs, results = time_day(engine, papers)
    day = min(runs)
    total = sum(len(r) for r in results)
    alert_hits = sum(1 for r in results for m in r if m.kind is MatchKind.ALERT)
    print(
        f"engine: {day:.3f} CPU s for the day (best of 3: "
        f"{', '.join(f'{r:.3f}' for r in runs)}), {len(papers) / day:,.0f} papers/s; "
        f"{total:,} matches ({alert_hits:,} alert, {total - alert_hits:,} topic; "
        f"{total / len(papers):.1f} per paper, {alert_hits / len(alerts):.2f} per alert)"
    )
    time_changes(engine, rng, vocab)
    peak = peak_mib()
    print(f"peak memory: {peak:.0f} MiB RSS (corpus and interpreter: {before:.0f} MiB)")

    sample = papers[:: max(1, len(papers) // args.sample)][: args.sample]
    per_paper, expected = run_baseline(topics, alerts, sample)
    base_day = per_paper * len(papers)
    same = [set(engine.match(p)) for p in sample] == expected
    print(
        f"baseline: {per_paper * 1000:.0f} CPU ms per paper, measured on {len(sample)} "
        f"sampled papers and extrapolated: {base_day:.0f} CPU s for the day"
    )
    print(
        f"speed-up: {base_day / day:,.0f}x; match sets identical on the sample: {same} "
        f"({sum(len(e) for e in expected):,} matches)"
    )
    met = day < 1.0 and base_day / day >= 50 and peak < 1024 and same
    print(f"goals (< 1 s, >= 50x, < 1 GiB, identical): {'met' if met else 'NOT met'}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
