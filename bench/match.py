"""Benchmark: one arXiv day against N alerts and 200 topics, papertide's engine vs tantivy.

    .venv/bin/python bench/match.py [--alerts 10000,100000] [--million] [--papers 2000]
                                    [--topics 200] [--rounds 3] [--sample 20] [--seed 7]
    .venv/bin/python bench/match.py --quick          # a smoke run, well under a minute

For each alert count, two child processes build the same seeded corpus
(tests/support/match_corpus.py): one compiles papertide's MatchEngine, the other builds
one tantivy query per topic and alert (bench/match_tantivy.py). The parent then asks
them, alternately, to match the day: papertide matches every paper through the engine;
tantivy indexes the day's papers in RAM and runs every query. Printed per count:
compile (CPU s), first pass (the first day after compiling) and steady passes (the
rounds after), peak RSS of each process, papertide's cost of adding/removing one alert,
and two correctness checks: identical (paper, topic|alert) sets against tantivy (an
independent implementation of the term semantics) and against the per-query baseline
(shares term compilation with the engine) on a sample of papers.
`--million` adds 1,000,000 alerts (about 5 minutes and 3 GB; tantivy's rounds dominate).
Goals (issue 14): ahead of tantivy at 10k, 100k and 1M; at 1M < 2 s a day, < 1.2 GB.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import random
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sidebyside import header, report, rounds_arg

Key = tuple[int, tuple[int, int]]  # (paper index, (0 topic | 1 alert, id))


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def corpus(seed: int, papers: int, alerts: int, topics: int) -> tuple[list, list, list]:  # type: ignore[type-arg]
    from tests.support.match_corpus import (
        Vocabulary,
        generate_alert,
        generate_papers,
        generate_topic,
    )

    rng = random.Random(seed)
    vocab = Vocabulary(rng)
    day = generate_papers(rng, vocab, papers)
    queries = [generate_alert(rng, vocab) for _ in range(alerts)]
    cats = [generate_topic(rng, vocab) for _ in range(topics)]
    return day, queries, cats


class PapertideSide:
    def __init__(self, papers: list, alerts: list, topics: list) -> None:  # type: ignore[type-arg]
        from bot.matching.engine import MatchEngine

        self.papers, self.alerts, self.topics = papers, alerts, topics
        self.engine = MatchEngine()
        for i, (query, cats) in enumerate(topics):
            self.engine.add_topic(i, query, cats)
        for i, query in enumerate(alerts):
            self.engine.add_alert(i, query)
        self.index = {p.id: i for i, p in enumerate(papers)}

    def run(self) -> list[Key]:
        index, match = self.index, self.engine.match
        return [
            (index[m.paper_id], (0 if m.kind == "topic" else 1, m.ref_id))
            for p in self.papers
            for m in match(p)
        ]

    def changes(self, rng: random.Random) -> dict[str, float]:
        from tests.support.match_corpus import Vocabulary, generate_alert

        vocab = Vocabulary(random.Random(1))
        adds, removes = [], []
        for i in range(1000):
            query = generate_alert(rng, vocab)
            t0 = time.perf_counter()
            self.engine.add_alert(10_000_000 + i, query)
            adds.append(time.perf_counter() - t0)
        for i in range(1000):
            t0 = time.perf_counter()
            self.engine.remove_alert(10_000_000 + i)
            removes.append(time.perf_counter() - t0)
        return {
            "add_median_us": statistics.median(adds) * 1e6,
            "add_p99_us": sorted(adds)[989] * 1e6,
            "remove_median_us": statistics.median(removes) * 1e6,
        }

    def baseline(self, sample_size: int) -> dict[str, Any]:
        """The per-query baseline on a sample of papers: CPU s per paper, identical?"""
        from bot.matching.query import parse_query, topic_query
        from bot.matching.terms import BaselineQuery
        from bot.matching.textnorm import PaperText
        from bot.types import Match, MatchKind

        papers = self.papers
        sample = papers[:: max(1, len(papers) // sample_size)][:sample_size]
        queries = [(MatchKind.TOPIC, i, topic_query(q, c)) for i, (q, c) in enumerate(self.topics)]
        queries += [(MatchKind.ALERT, i, parse_query(q)) for i, q in enumerate(self.alerts)]
        compiled = [(kind, ref, BaselineQuery(node)) for kind, ref, node in queries if node]
        t0 = time.process_time()
        expected = []
        for paper in sample:
            text = PaperText(paper)
            found = set()
            for kind, ref, query in compiled:
                terms = query.fired(text)
                if terms is not None:
                    found.add(Match(paper.id, kind, ref, terms))
            expected.append(found)
        per_paper = (time.process_time() - t0) / len(sample)
        same = [set(self.engine.match(p)) for p in sample] == expected
        return {"per_paper": per_paper, "same": same, "sample": len(sample)}


class TantivySide:
    def __init__(self, papers: list, alerts: list, topics: list) -> None:  # type: ignore[type-arg]
        from bench.match_tantivy import TantivyDay
        from bot.matching.query import parse_query, topic_query

        self.papers = papers
        self.day = TantivyDay()
        for i, (query, cats) in enumerate(topics):
            node = topic_query(query, cats)
            if node is not None:
                self.day.add((0, i), node)
        for i, query in enumerate(alerts):
            self.day.add((1, i), parse_query(query))

    def run(self) -> list[Key]:
        return self.day.run(self.papers)  # type: ignore[return-value]


def child(side: str, conn: Any, seed: int, papers: int, alerts: int, topics: int) -> None:
    """One implementation in its own process, so its compile and RSS are its own."""
    day, queries, cats = corpus(seed, papers, alerts, topics)
    gc.collect()
    base = peak_mib()
    t0, w0 = time.process_time(), time.perf_counter()
    impl = (PapertideSide if side == "papertide" else TantivySide)(day, queries, cats)
    compiled = {"cpu": time.process_time() - t0, "wall": time.perf_counter() - w0}
    gc.collect()
    compiled.update(corpus_mib=base, after_compile_mib=peak_mib())
    if side == "tantivy":
        compiled["unmapped"] = impl.day.unmapped  # type: ignore[attr-defined]
    conn.send(compiled)
    last: list[Key] = []
    while True:
        cmd = conn.recv()
        if cmd == "run":
            gc.disable()  # the day's matching, not the cyclic collector's pauses
            t0, w0 = time.process_time(), time.perf_counter()
            last = impl.run()
            cpu, wall = time.process_time() - t0, time.perf_counter() - w0
            gc.enable()
            conn.send({"cpu": cpu, "wall": wall, "matches": len(last)})
        elif cmd == "matches":
            conn.send(sorted(set(last)))
        elif cmd == "extras":
            extras: dict[str, Any] = {"peak_mib": peak_mib()}
            if isinstance(impl, PapertideSide):
                extras.update(impl.changes(random.Random(seed + 1)))
                extras["baseline"] = impl.baseline(args_sample)
                extras["peak_mib"] = max(extras["peak_mib"], peak_mib())
            conn.send(extras)
        else:
            return


args_sample = 20  # set by main before the children start (spawn re-imports the module)


def _start(side: str, args: argparse.Namespace, alerts: int) -> tuple[Any, Any]:
    ctx = mp.get_context("fork")  # the child inherits args_sample; nothing else is loaded yet
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(
        target=child, args=(side, theirs, args.seed, args.papers, alerts, args.topics)
    )
    proc.start()
    return proc, ours


def describe_difference(only: list[Key], alerts: list[str], topics: list, label: str) -> None:  # type: ignore[type-arg]
    for paper, (kind, ref) in only[:5]:
        query = alerts[ref] if kind else topics[ref]
        print(f"    only {label}: paper #{paper} {'alert' if kind else 'topic'} {ref}: {query!r}")


def one_size(args: argparse.Namespace, alerts: int) -> None:
    started = time.perf_counter()
    procs = {side: _start(side, args, alerts) for side in ("papertide", "tantivy")}
    compiled = {side: conn.recv() for side, (_, conn) in procs.items()}
    print(
        f"\n-- {args.papers:,} papers x {alerts:,} alerts + {args.topics} topics "
        f"(corpus built and compiled in {time.perf_counter() - started:.0f} s)"
    )
    if compiled["tantivy"].get("unmapped"):
        print(f"   tantivy could not map {compiled['tantivy']['unmapped']} queries")
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in procs}
    names = list(procs)
    for r in range(rounds_arg(args.rounds)):
        for side in names if r % 2 == 0 else names[::-1]:
            conn = procs[side][1]
            conn.send("run")
            runs[side].append(conn.recv())
    ours = [r["cpu"] for r in runs["papertide"]]
    theirs = [r["cpu"] for r in runs["tantivy"]]
    report(
        "compile, CPU s (papertide: MatchEngine; tantivy: one Query object per topic and alert)",
        ("papertide", [compiled["papertide"]["cpu"]]),
        ("tantivy", [compiled["tantivy"]["cpu"]]),
        higher_is_better=False,
        note="once per process",
    )
    report(
        "first pass, CPU s for the day (the first day after compiling)",
        ("papertide", ours[:1]),
        ("tantivy", theirs[:1]),
        higher_is_better=False,
    )
    report(
        "steady passes, CPU s for the day (rounds 2 on; tantivy re-indexes each time)",
        ("papertide", ours[1:]),
        ("tantivy", theirs[1:]),
        higher_is_better=False,
    )
    report(
        "all passes, wall s for the day",
        ("papertide", [r["wall"] for r in runs["papertide"]]),
        ("tantivy", [r["wall"] for r in runs["tantivy"]]),
        higher_is_better=False,
    )
    sets = {}
    for side, (_, conn) in procs.items():
        conn.send("matches")
        sets[side] = conn.recv()
    extras = {}
    for side, (_, conn) in procs.items():
        conn.send("extras")
        extras[side] = conn.recv()
    for proc, conn in procs.values():
        conn.send("quit")
        proc.join(60)
    report(
        "peak RSS, MiB (whole process: interpreter + corpus + compiled queries + a day)",
        ("papertide", [extras["papertide"]["peak_mib"]]),
        ("tantivy", [extras["tantivy"]["peak_mib"]]),
        higher_is_better=False,
        note=f"corpus and interpreter alone: {compiled['papertide']['corpus_mib']:.0f} MiB",
    )
    p = extras["papertide"]
    print(
        f"papertide add one alert: median {p['add_median_us']:.0f} µs, p99 "
        f"{p['add_p99_us']:.0f} µs; remove one: median {p['remove_median_us']:.0f} µs"
    )
    a, b = set(sets["papertide"]), set(sets["tantivy"])
    alert_hits = sum(1 for _, (kind, _) in a if kind)
    print(
        f"match sets identical to tantivy's: {a == b} ({len(a):,} papertide, {len(b):,} tantivy; "
        f"{alert_hits:,} alert matches, {alert_hits / alerts:.2f} per alert)"
    )
    if a != b:
        _, queries, cats = corpus(args.seed, args.papers, alerts, args.topics)
        describe_difference(sorted(a - b), queries, cats, "papertide")
        describe_difference(sorted(b - a), queries, cats, "tantivy")
    base = p["baseline"]
    print(
        f"match sets identical to the per-query baseline on {base['sample']} sampled papers: "
        f"{base['same']} (baseline {base['per_paper'] * 1000:.0f} CPU ms per paper, "
        f"{base['per_paper'] * args.papers:.0f} s extrapolated to the day)"
    )
    if a != b or not base["same"]:
        global failed
        failed = True


failed = False


def main() -> None:
    global args_sample
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--alerts", default="10000,100000", help="comma-separated alert counts")
    ap.add_argument("--million", action="store_true", help="also run 1,000,000 alerts")
    ap.add_argument("--papers", type=int, default=2000)
    ap.add_argument("--topics", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sample", type=int, default=20, help="papers run through the baseline")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="300 papers x 3,000 alerts")
    args = ap.parse_args()
    if args.quick:
        args.alerts, args.papers, args.topics, args.sample = "3000", 300, 50, 5
    counts = [int(c) for c in args.alerts.split(",")] + ([1_000_000] if args.million else [])
    args_sample = args.sample
    header(
        "matching: papertide MatchEngine vs tantivy (index the day, run each query)",
        rounds_arg(args.rounds),
        "figures are CPU seconds of each process; each side runs in its own process",
    )
    for count in counts:
        one_size(args, count)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
