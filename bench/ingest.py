"""Benchmark: ingest arXiv API pages from a local server into SQLite and PostgreSQL.

    .venv/bin/python bench/ingest.py [--counts 10000,50000] [--backends sqlite,postgresql]
                                     [--matcher stub|engine|none]

A server process serves pre-generated Atom pages (2,000 entries each, arXiv's recorded
format) for N records; each (backend, N) runs in a fresh worker process that polls them
through the real path (ArxivApiSource -> ingest_batch -> bulk upsert + matches) and
reports papers/s, CPU seconds and its peak RSS. Memory flat in N shows the streaming.
The matcher (`--matcher`) is `stub` (about one topic per paper, nearly free: the ingest
path alone), `engine` (the real compiled engine from the bundled topics, no alerts, as a
poll runs it) or `none` (matches nothing); the difference between runs is the engine's share.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

END = datetime(2026, 7, 1, tzinfo=UTC)
SPAN = timedelta(days=60)
ABSTRACT = (
    "Large language model agents must act over many turns, yet reinforcement learning with "
    "outcome rewards gives little signal about which actions mattered. "
) * 6


def _entry(i: int, when: datetime) -> str:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    pid = f"{2601 + i // 99000}.{10000 + i % 99000:05d}"
    authors = "".join(
        f"<author><name>Author {i}-{k} Çağatan</name>"
        f"<arxiv:affiliation>University {k}</arxiv:affiliation></author>"
        for k in range(4)
    )
    return (
        f"<entry><id>http://arxiv.org/abs/{pid}v1</id><updated>{stamp}</updated>"
        f"<published>{stamp}</published><title>Paper {i}: Agents\n  and Rewards</title>"
        f"<summary>{ABSTRACT}</summary>{authors}"
        f"<arxiv:comment>10 pages</arxiv:comment>"
        f'<link href="http://arxiv.org/abs/{pid}v1" rel="alternate" type="text/html"/>'
        f'<link title="pdf" href="http://arxiv.org/pdf/{pid}v1" rel="related"/>'
        f'<arxiv:primary_category term="cs.LG"/><category term="cs.LG"/><category term="cs.AI"/>'
        f"</entry>"
    )


def serve(max_count: int) -> None:
    """The stand-in arXiv: pre-generated entries, filtered by window, paged."""
    from aiohttp import web

    step = SPAN / max_count
    times = [END - SPAN + step * i for i in range(max_count)]
    entries = [_entry(i, t) for i, t in enumerate(times)]

    async def handle(request: web.Request) -> web.Response:
        count = int(request.match_info["n"])
        query = request.query["search_query"]
        lo_s, hi_s = query.split("submittedDate:[")[1].rstrip("]").split(" TO ")
        lo = datetime.strptime(lo_s, "%Y%m%d%H%M").replace(tzinfo=UTC)
        hi = datetime.strptime(hi_s, "%Y%m%d%H%M").replace(tzinfo=UTC)
        a, b = bisect.bisect_left(times, lo, hi=count), bisect.bisect_right(times, hi, hi=count)
        start, size = int(request.query["start"]), int(request.query["max_results"])
        page = entries[a + start : min(b, a + start + size)]
        body = (
            '<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom" '
            'xmlns:arxiv="http://arxiv.org/schemas/atom" '
            'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"><title>q</title>'
            f"<opensearch:totalResults>{b - a}</opensearch:totalResults>"
            f"<opensearch:startIndex>{start}</opensearch:startIndex>{''.join(page)}</feed>"
        )
        return web.Response(text=body, content_type="application/atom+xml")

    app = web.Application()
    app.router.add_get("/n{n}/api/query", handle)

    async def run() -> None:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
        await asyncio.sleep(3600)

    asyncio.run(run())


class OneTopicMatcher:
    """About one topic per paper, as the real engine yields; cheap and deterministic."""

    def __init__(self, topic_ids: list[int]) -> None:
        self.topic_ids = topic_ids

    def match(self, paper):  # type: ignore[no-untyped-def]
        from bot.types import Match, MatchKind

        tid = self.topic_ids[zlib.crc32(paper.id.encode()) % len(self.topic_ids)]
        return [Match(paper.id, MatchKind.TOPIC, tid, ("cs.LG",))]


class NoMatcher:
    """Matches nothing: the floor under both other matchers."""

    def match(self, paper):  # type: ignore[no-untyped-def]
        return []


async def work(db_url: str, port: int, count: int, matcher_name: str) -> dict[str, float]:
    from sqlalchemy import select

    from bot.config import Settings
    from bot.ingest.poll import run_poll
    from bot.ingest.sources.arxiv_api import ArxivApiSource
    from bot.ingest.sources.base import SourceContext
    from bot.service.root import open_papertide
    from bot.store.models import Topic

    settings = Settings(
        database_url=db_url,
        arxiv_api_url=f"http://127.0.0.1:{port}/n{count}/api/query",
        arxiv_delay_seconds=0.0,
        http_timeout_seconds=120,
    )
    async with open_papertide(settings) as root:
        await root.sync_catalog()
        async with root.store.sessions() as session:
            ids = [int(i) for i in (await session.execute(select(Topic.id))).scalars() if i]
        matcher = {"stub": OneTopicMatcher(ids), "none": NoMatcher(), "engine": None}[matcher_name]
        http = root.sources_http()
        source = ArxivApiSource(
            "arxiv", SourceContext(settings, http, ("cs.LG",)), since=END - SPAN, now=END
        )
        wall, cpu = time.perf_counter(), time.process_time()
        result = await run_poll(
            settings=settings, sessions=root.store.sessions, source_name="arxiv", source=source,
            http=http, matcher=matcher,
        )  # fmt: skip
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert result.error is None, result.error
    assert result.new == count, result
    return {
        "papers": result.new,
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "papers_per_s": round(result.new / wall),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def fresh_db(backend: str, tmp: Path, tag: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp / f'{tag}.db'}"
    import psycopg

    base = os.environ.get(
        "PAPERTIDE_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
    )
    name = f"papertide_bench_{tag}_{os.getpid()}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.rsplit("/", 1)[0] + f"/{name}"


def drop_db(url: str) -> None:
    """Drop a bench PostgreSQL database (SQLite files go with the temp dir)."""
    if not url.startswith("postgresql"):
        return
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/test", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", default="10000,50000")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--matcher", choices=("stub", "engine", "none"), default="stub")
    parser.add_argument("--serve", type=int)
    parser.add_argument("--work", nargs=3, metavar=("DB_URL", "PORT", "COUNT"))
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if args.work:
        db, port, count = args.work
        print(json.dumps(asyncio.run(work(db, int(port), int(count), args.matcher))))
        return
    counts = [int(c) for c in args.counts.split(",")]
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(max(counts))], stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(server.stdout.readline())  # type: ignore[union-attr]
        heads = ["papers", "wall s", "papers/s", "cpu s", "papers/cpu-s", "peak RSS MB"]
        print(f"{'backend':<11}" + "".join(f"{h:>13}" for h in heads), flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            for backend in args.backends.split(","):
                for count in counts:
                    db = fresh_db(backend, Path(tmp), f"{backend}{count}")
                    cmd = [sys.executable, __file__, "--work", db, str(port), str(count)]
                    cmd += ["--matcher", args.matcher]
                    try:
                        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
                    finally:
                        drop_db(db)
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    per_cpu = round(r["papers"] / max(r["cpu_seconds"], 0.01))
                    cells = [r["papers"], r["seconds"], r["papers_per_s"], r["cpu_seconds"]]
                    cells += [per_cpu, r["peak_rss_mb"]]
                    print(f"{backend:<11}" + "".join(f"{c:>13}" for c in cells), flush=True)
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
