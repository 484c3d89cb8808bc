"""Benchmark: questions over 100,000 stored papers, SQLite and PostgreSQL, each against a
naive scan of the same papers; and ingest with the full-text index kept current vs not.

    .venv/bin/python bench/ask.py [--papers 100000] [--questions 200] [--naive 12]
                                  [--rounds 3] [--ingest 20000] [--backends sqlite,postgresql]
                                  [--pg-url URL]

Corpus: tests/support/match_corpus.py (Zipf vocabulary, real-length abstracts, accented
names), published over the year before 2026-11-30, filed into 25 topics (4% each).
Questions: 2-5 words of a random paper's title and abstract (a rare one or two, a common
one), a quarter over every paper (`--all`), a fifth with a time window.

Per backend, alternating in every round:
- retrieval: `Asker.search` (index candidates + the shared ranking), per question;
- extractive answer end to end: `Asker.ask` without a model (search, rows, passages);
- naive: every paper of the scope read from the store and ranked by the same BM25F in
  Python (`--naive` questions per round); its top 10 is the exhaustive answer, so the
  overlap with the index's top 10 is the index's recall.
Ingest: `ingest_batch` of `--ingest` papers into a fresh store, batches of 500, then the
indexer's catch-up until they are all searchable, vs ingest alone (the index's queue left
unread); once with
a stub matcher (the persist path alone: the strictest ratio) and once with the bundled
catalog's compiled engine (as a poll runs it).
Prints p50/p95 (min and median over rounds), ratios, and the SQLite/PostgreSQL top-10
overlap. Goals (issue 15): retrieval p95 < 50 ms, extractive answer < 200 ms, ingest drop
< 15%.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.ask.answer import TopicRef
from bot.ask.rank import rank_papers
from bot.ask.service import Asker
from bot.ask.terms import content_words
from bot.store.store import Store, open_store
from bot.types import Match, MatchKind, PaperRecord
from tests.support.match_corpus import Vocabulary, generate_papers

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
TOPICS = 25


def corpus(n: int, seed: int = 15) -> list[PaperRecord]:
    rng = random.Random(seed)
    vocab = Vocabulary(rng)
    papers = generate_papers(rng, vocab, n)
    out = []
    for i, p in enumerate(papers):
        when = NOW - timedelta(days=rng.uniform(0, 365))
        pid = f"{2512 + i // 99_000}.{i % 99_000:05d}"
        out.append(
            PaperRecord(
                id=pid, version=1, title=p.title, abstract=p.abstract, authors=p.authors,
                categories=p.categories, published=when, updated=when, source="bench",
            )
        )  # fmt: skip
    return out


class TopicMatcher:
    """Each paper in one of the TOPICS topics (by its id): 4% of the store per topic."""

    def __init__(self, topic_ids: list[int]) -> None:
        self.topic_ids = topic_ids

    def match(self, paper: PaperRecord) -> list[Match]:
        tid = self.topic_ids[zlib.crc32(paper.id.encode()) % len(self.topic_ids)]
        return [Match(paper.id, MatchKind.TOPIC, tid, ())]


async def make_topics(store: Store) -> list[TopicRef]:
    from bot.store.models import Topic

    async with store.sessions() as session, session.begin():
        rows = [Topic(slug=f"bench-{i}", name=f"Bench topic {i}") for i in range(TOPICS)]
        session.add_all(rows)
        await session.flush()
        return [TopicRef(int(t.id or 0), t.slug, t.name) for t in rows]


async def ingest(
    store: Store, papers: list[PaperRecord], matcher: Any, *, index: bool = True
) -> float:
    """Seconds to ingest `papers` in batches of 500 through the real persist path, then
    (with `index`) for the indexer to catch up with them, as a one-shot poll does."""
    from bot.ask.index import index_until_current
    from bot.ingest.persist import ingest_batch

    started = time.perf_counter()
    for start in range(0, len(papers), 500):
        async with store.sessions() as session, session.begin():
            await ingest_batch(
                session=session, records=papers[start : start + 500], matcher=matcher, now=NOW
            )
    if index:
        await index_until_current(store.sessions)
    return time.perf_counter() - started


def questions(
    papers: list[PaperRecord], topics: list[TopicRef], n: int, seed: int = 7
) -> list[tuple[TopicRef | None, str]]:
    rng = random.Random(seed)
    out: list[tuple[TopicRef | None, str]] = []
    while len(out) < n:
        paper = rng.choice(papers)
        words = [w for w in content_words(f"{paper.title} {paper.abstract}") if w.isalpha()]
        if len(words) < 5:
            continue
        picked = rng.sample(words, rng.randint(2, 5))
        text = " ".join(picked)
        if rng.random() < 0.2:
            text += rng.choice([" in the last 12 weeks", " since 2026-06", " this year"])
        topic = None
        if rng.random() >= 0.25:
            topic = topics[zlib.crc32(paper.id.encode()) % len(topics)]
        out.append((topic, text))
    return out


async def naive(store: Store, asker: Asker, topic: TopicRef | None, text: str) -> list[str]:
    """Every paper of the scope, read and ranked in Python with the same ranking."""
    from sqlalchemy import select

    from bot.ask.question import parse_question
    from bot.store.models import PaperTopic
    from bot.store.records import PAPER

    question = parse_question(text, NOW)
    async with store.read_sessions() as session:
        size = await asker.stats.size(session)
        dfs = await asker.stats.freqs(session, list(question.terms))
        query = select(PAPER)
        if topic is not None:
            query = query.join(PaperTopic, PaperTopic.paper_id == PAPER.c.id).where(
                PaperTopic.topic_id == topic.id
            )
        if question.since is not None:
            query = query.where(PAPER.c.published >= question.since)
        rows = [dict(r) for r in (await session.execute(query)).mappings()]
    stem_dfs = {s: dfs.get(t, 0) for s, t in zip(question.stems, question.terms, strict=True)}
    ranked = rank_papers(rows, stem_dfs=stem_dfs, size=size, now=NOW)
    return [s.paper_id for s in ranked[:10]]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_backend(
    url: str, args: argparse.Namespace, papers: list[PaperRecord]
) -> dict[str, Any]:
    async with open_store(url) as store:
        topics = await make_topics(store)
        seconds = await ingest(store, papers, TopicMatcher([t.id for t in topics]))
        print(f"  stored {len(papers):,} papers in {seconds:.0f} s", flush=True)
        if store.dialect == "postgresql":
            async with store.engine.begin() as conn:
                await conn.exec_driver_sql("ANALYZE")
        asker = Asker(sessions=store.read_sessions, clock=lambda: NOW)
        asked = questions(papers, topics, args.questions)
        for topic, text in asked[:20]:  # warm the stemmer and the connection pool
            await asker.search(text, topic=topic, limit=10)
        asker.stats.clear()  # every round starts with cold term statistics
        rounds: dict[str, list[list[float]]] = {"search": [], "answer": [], "naive": []}
        tops: list[list[str]] = []
        recall: list[float] = []
        for r in range(args.rounds):
            asker.stats.clear()
            times = []
            for topic, text in asked:
                t0 = time.perf_counter()
                found = await asker.search(text, topic=topic, limit=10)
                times.append(time.perf_counter() - t0)
                if r == 0:
                    tops.append([s.paper_id for s in found.ranked])
            rounds["search"].append(times)
            times = []
            for topic, text in asked:
                t0 = time.perf_counter()
                await asker.ask(text, topic=topic, use_model=False)
                times.append(time.perf_counter() - t0)
            rounds["answer"].append(times)
            times = []
            for i, (topic, text) in enumerate(asked[: args.naive]):
                t0 = time.perf_counter()
                exhaustive = await naive(store, asker, topic, text)
                times.append(time.perf_counter() - t0)
                if r == 0 and exhaustive:
                    recall.append(len(set(exhaustive) & set(tops[i])) / len(exhaustive))
            rounds["naive"].append(times)
            print(f"  round {r + 1} done", flush=True)
    return {"rounds": rounds, "tops": tops, "recall": recall}


async def engine_matcher(store: Store) -> Any:
    """The production matcher: the bundled catalog's topics, compiled (as a poll runs it)."""
    from bot.catalog.sync import sync_catalog
    from bot.config import DEFAULT_TOPICS_FILE
    from bot.matching.trial import load_engine

    async with store.sessions() as session, session.begin():
        await sync_catalog(session=session, path=DEFAULT_TOPICS_FILE)
    async with store.sessions() as session:
        return await load_engine(session=session)


async def ingest_rounds(
    url_for: Any, args: argparse.Namespace, papers: list[PaperRecord], matcher_name: str
) -> dict[str, list[float]]:
    rates: dict[str, list[float]] = {"with index": [], "without index": []}
    for _ in range(args.rounds):
        for label in ("without index", "with index"):
            url, drop = url_for()
            try:
                async with open_store(url) as store:
                    if matcher_name == "engine":
                        matcher = await engine_matcher(store)
                    else:
                        matcher = TopicMatcher([t.id for t in await make_topics(store)])
                    seconds = await ingest(store, papers, matcher, index=label == "with index")
            finally:
                drop()
            rates[label].append(len(papers) / seconds)
    return rates


def fresh_url(backend: str, tmp: Path, pg_url: str) -> tuple[str, Any]:
    if backend == "sqlite":
        path = tmp / f"{uuid.uuid4().hex}.db"
        return f"sqlite:///{path}", lambda: [
            p.unlink(missing_ok=True) for p in tmp.glob(path.name + "*")
        ]
    import psycopg

    name = f"papertide_bench_ask_{uuid.uuid4().hex[:8]}"
    admin = pg_url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return pg_url.rsplit("/", 1)[0] + f"/{name}", drop


def line(label: str, per_round: list[list[float]], q: float) -> tuple[float, float]:
    values = [pct(times, q) * 1000 for times in per_round]
    return min(values), statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--naive", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ingest", type=int, default=20_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get(
            "PAPERTIDE_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
        ),
    )
    args = parser.parse_args()
    import tempfile

    papers = corpus(args.papers)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for backend in args.backends.split(","):
            print(f"{backend}: building the store", flush=True)
            url, drop = fresh_url(backend, tmp, args.pg_url)
            try:
                results[backend] = asyncio.run(run_backend(url, args, papers))
            finally:
                drop()
            results[backend]["ingest"] = {}
            for matcher_name in ("stub", "engine"):
                print(
                    f"{backend}: ingest ({matcher_name} matcher), {args.ingest:,} papers per run",
                    flush=True,
                )
                results[backend]["ingest"][matcher_name] = asyncio.run(
                    ingest_rounds(
                        lambda b=backend: fresh_url(b, tmp, args.pg_url),
                        args,
                        corpus(args.ingest, seed=99),
                        matcher_name,
                    )
                )
    print()
    print(
        f"{args.papers:,} papers, {args.questions} questions ({args.naive} for the naive scan), "
        f"{args.rounds} rounds; figures in ms as min / median over rounds"
    )
    for backend, r in results.items():
        rounds = r["rounds"]
        print(f"\n{backend}")
        for key, name in (
            ("search", "retrieval"),
            ("answer", "extractive answer"),
            ("naive", "naive scan"),
        ):
            p50 = line(name, rounds[key], 0.5)
            p95 = line(name, rounds[key], 0.95)
            cells = f"p50 {p50[0]:8.1f} / {p50[1]:8.1f}   p95 {p95[0]:8.1f} / {p95[1]:8.1f}"
            print(f"  {name:<18} {cells}")
        naive95 = line("", rounds["naive"], 0.95)[1]
        search95 = line("", rounds["search"], 0.95)[1]
        answer95 = line("", rounds["answer"], 0.95)[1]
        ratios = f"naive / retrieval {naive95 / search95:,.0f}x"
        ratios += f", naive / answer {naive95 / answer95:,.0f}x"
        print(f"  p95 ratios: {ratios}")
        recall = r["recall"]
        if recall:
            mean = statistics.mean(recall)
            print(f"  top-10 overlap with the naive (exhaustive) ranking: {mean:.1%}")
        for matcher_name, rates in r["ingest"].items():
            w, wo = rates["with index"], rates["without index"]
            drop_pct = 100 * (1 - statistics.median(w) / statistics.median(wo))
            print(
                f"  ingest ({matcher_name} matcher) papers/s with index min {min(w):.0f} median "
                f"{statistics.median(w):.0f}; without min {min(wo):.0f} median "
                f"{statistics.median(wo):.0f}; drop {drop_pct:.1f}% (medians)"
            )
    if len(results) == 2:
        a, b = (results[k]["tops"] for k in ("sqlite", "postgresql"))
        overlaps = [len(set(x) & set(y)) / max(1, len(x)) for x, y in zip(a, b, strict=True) if x]
        print(
            f"\nSQLite vs PostgreSQL top-10 overlap: mean {statistics.mean(overlaps):.1%}, "
            f"min {min(overlaps):.0%} over {len(overlaps)} questions"
        )


if __name__ == "__main__":
    main()
