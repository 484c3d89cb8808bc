"""Benchmark: ingest arXiv API pages end to end into SQLite and PostgreSQL, vs the floor.

    .venv/bin/python bench/ingest.py [--count 20000] [--backends sqlite,postgresql]
                                     [--matchers none,engine] [--rounds 3] [--seed 11]
    .venv/bin/python bench/ingest.py --quick         # 2,000 papers, SQLite only

The corpus is varied, realistic text (tests/support/atom_corpus.py: Zipf-distributed
words, LaTeX, accented and non-Latin names, long collaboration author lists, DOIs,
journal refs), served as arXiv API pages (2,000 entries each) by a local server process.
Per round, alternating:
- papertide, end to end: a fresh process polls the pages through the real path
  (ArxivApiSource → parse → ingest_batch → upsert + matches) into a fresh database,
  with `--matchers`: `none` (matches nothing: ingest alone) and `engine` (the real
  engine of the bundled topics: the process's live engine, compiled before the timed
  poll as in `serve`, where it outlives every poll);
- the floor: the very rows papertide stored (read back from its database), written into
  a fresh database with the same schema by plain sqlite3 `executemany` in one
  transaction (same pragmas: WAL, synchronous=NORMAL) or by psycopg `COPY`.
Then, per papertide run, the full-text indexer's catch-up (`index_until_current`, what
`serve`'s indexer job does after each poll; off the ingest transaction since migration
0010), timed apart: its papers/s, and poll + catch-up together ("until searchable").
Also printed: parsing alone (papertide's `parse_page` vs `ElementTree.fromstring` of
the same bytes), CPU seconds and peak RSS of the papertide processes.
Goals (issue 14): >= 15,000 papers/s without matching, >= 12,000/s with the engine;
PostgreSQL within 70% of SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sidebyside import Series, alternate, header, report, rounds_arg

END = datetime(2026, 7, 1, tzinfo=UTC)
SPAN = timedelta(days=60)
PAGE = 2000
PG = os.environ.get("PAPERTIDE_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def make_corpus(path: Path, count: int, seed: int) -> list[str]:
    """Render `count` entries (oldest first) and save them with their times for the server."""
    from tests.support.atom_corpus import atom_entry, generate_records

    records = generate_records(random.Random(seed), count, end=END, span=SPAN)
    entries = [atom_entry(r) for r in records]
    times = [r.published.timestamp() for r in records]
    path.write_text(json.dumps({"entries": entries, "times": times}))
    return entries


def serve(corpus: str) -> None:
    """The stand-in arXiv: the saved entries, filtered by submittedDate window, paged."""
    from aiohttp import web

    from tests.support.atom_corpus import feed_page

    data = json.loads(Path(corpus).read_text())
    entries, times = data["entries"], data["times"]

    async def handle(request: web.Request) -> web.Response:
        query = request.query["search_query"]
        lo_s, hi_s = query.split("submittedDate:[")[1].rstrip("]").split(" TO ")
        lo = datetime.strptime(lo_s, "%Y%m%d%H%M").replace(tzinfo=UTC).timestamp()
        hi = datetime.strptime(hi_s, "%Y%m%d%H%M").replace(tzinfo=UTC).timestamp() + 59
        a, b = bisect.bisect_left(times, lo), bisect.bisect_right(times, hi)
        start, size = int(request.query["start"]), int(request.query["max_results"])
        page = entries[a + start : min(b, a + start + size)]
        body = feed_page(page, total=b - a, start=start)
        return web.Response(body=body, content_type="application/atom+xml")

    app = web.Application()
    app.router.add_get("/api/query", handle)

    async def run() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        print(runner.addresses[0][1], flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


class NoMatcher:
    """Matches nothing: ingest alone."""

    def match(self, paper):  # type: ignore[no-untyped-def]
        return []


async def work(db_url: str, port: int, count: int, matcher_name: str) -> dict[str, float]:
    """Child process: one poll of the whole window, timed around `run_poll` only, then the
    indexer's catch-up, timed apart."""
    from bot.ask.index import index_until_current
    from bot.config import Settings
    from bot.ingest.poll import run_poll
    from bot.ingest.sources.arxiv_api import ArxivApiSource
    from bot.ingest.sources.base import SourceContext
    from bot.service.root import open_papertide

    settings = Settings(
        database_url=db_url,
        arxiv_api_url=f"http://127.0.0.1:{port}/api/query",
        arxiv_delay_seconds=0.0,
        http_timeout_seconds=120,
    )
    async with open_papertide(settings) as root:
        await root.sync_catalog()
        http = root.sources_http()
        source = ArxivApiSource(
            "arxiv", SourceContext(settings, http, ("cs.LG",)), since=END - SPAN, now=END
        )
        # The process's live engine, compiled once before the poll (as in `serve`, where
        # it lives across polls): what the poll pays is the engine's matching, no compile.
        await root.matcher.refresh(root.store.sessions)
        matcher = NoMatcher() if matcher_name == "none" else root.matcher
        wall, cpu = time.perf_counter(), time.process_time()
        result = await run_poll(
            settings=settings, sessions=root.store.sessions, source_name="arxiv", source=source,
            http=http, matcher=matcher,
        )  # fmt: skip
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        # The full-text index, off ingest's transaction since 0010: what `serve`'s indexer
        # job then does (woken after the poll), timed on its own so the cost stays visible.
        index_wall, index_cpu = time.perf_counter(), time.process_time()
        indexed = await index_until_current(root.store.sessions)
        index_wall = time.perf_counter() - index_wall
        index_cpu = time.process_time() - index_cpu
    assert result.error is None, result.error
    assert result.new == count, result
    assert indexed == count, indexed
    return {
        "papers": result.new,
        "matches": result.new_matches,
        "wall": wall,
        "cpu": cpu,
        "index_wall": index_wall,
        "index_cpu": index_cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# --- databases ---------------------------------------------------------------------------


def fresh_db(backend: str, tmp: Path) -> str:
    from bot.store.migrate import upgrade_sync

    tag = uuid.uuid4().hex[:8]
    if backend == "sqlite":
        url = f"sqlite:///{tmp / f'{tag}.db'}"
    else:
        import psycopg

        name = f"papertide_ingestbench_{tag}"
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = PG.rsplit("/", 1)[0] + f"/{name}"
    upgrade_sync(url)
    return url


def drop_db(url: str) -> None:
    if url.startswith("sqlite"):
        Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)
        return
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/test", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def dump_rows(url: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The paper rows exactly as papertide stored them (PostgreSQL: as text, for COPY)."""
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            cur = conn.execute("SELECT * FROM paper")
            return [d[0] for d in cur.description], cur.fetchall()
    import psycopg

    with psycopg.connect(url) as conn:
        cols = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'paper' "
                "ORDER BY ordinal_position"
            )
        ]
        listed = ", ".join(f'"{c}"::text' for c in cols)
        return cols, conn.execute(f"SELECT {listed} FROM paper").fetchall()


def floor_insert(url: str, cols: list[str], rows: list[tuple[Any, ...]]) -> tuple[float, float]:
    """(wall, CPU) seconds to write `rows`: sqlite3 executemany in one transaction, or
    psycopg COPY (the server's CPU is not counted, as it is not for papertide either)."""
    names = ", ".join(f'"{c}"' for c in cols)
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        started, cpu = time.perf_counter(), time.process_time()
        marks = ", ".join("?" * len(cols))
        conn.executemany(f"INSERT INTO paper ({names}) VALUES ({marks})", rows)
        conn.commit()
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        conn.close()
        return seconds, cpu
    import psycopg

    with psycopg.connect(url) as conn:
        started, cpu = time.perf_counter(), time.process_time()
        with conn.cursor() as cur, cur.copy(f"COPY paper ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        conn.commit()
        return time.perf_counter() - started, time.process_time() - cpu


# --- the cases ---------------------------------------------------------------------------


class Backend:
    """The papertide runs and the floor of one backend, alternated by `alternate`."""

    def __init__(self, backend: str, port: int, count: int, tmp: Path) -> None:
        self.backend, self.port, self.count, self.tmp = backend, port, count, tmp
        self.rows: tuple[list[str], list[tuple[Any, ...]]] | None = None
        self.runs: dict[str, list[dict[str, float]]] = {}
        self.floor_cpu: list[float] = []

    def papertide(self, matcher: str) -> float:
        url = fresh_db(self.backend, self.tmp)
        cmd = [sys.executable, __file__, "--work", url, str(self.port), str(self.count)]
        try:
            out = subprocess.run([*cmd, "--matcher", matcher], capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(out.stderr[-3000:])
            if self.rows is None:
                self.rows = dump_rows(url)
        finally:
            drop_db(url)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        self.runs.setdefault(matcher, []).append(r)
        return r["papers"] / r["wall"]

    def floor(self) -> float:
        assert self.rows is not None, "papertide runs first in round 1"
        url = fresh_db(self.backend, self.tmp)
        try:
            wall, cpu = floor_insert(url, *self.rows)
            self.floor_cpu.append(len(self.rows[1]) / cpu)
            return len(self.rows[1]) / wall
        finally:
            drop_db(url)


def parsing(entries: list[str], rounds: int) -> None:
    from bot.ingest.sources.arxiv_atom import parse_page
    from tests.support.atom_corpus import feed_page

    pages = [
        feed_page(entries[i : i + PAGE], total=len(entries), start=i)
        for i in range(0, len(entries), PAGE)
    ]

    def ours() -> float:
        started = time.process_time()
        n = sum(len(parse_page(p, source="arxiv", url="bench").papers) for p in pages)
        assert n == len(entries), n
        return n / (time.process_time() - started)

    def etree() -> float:
        started = time.process_time()
        for page in pages:
            ET.fromstring(page)
        return len(entries) / (time.process_time() - started)

    got = alternate({"papertide": ours, "ElementTree": etree}, rounds)
    mb = sum(map(len, pages)) / len(entries) / 1024
    report(
        f"parsing alone, papers per CPU s ({len(pages)} page(s), {mb:.1f} KiB per entry)",
        Series("papertide", got["papertide"]),
        Series("ElementTree", got["ElementTree"]),
        higher_is_better=True,
        note="papertide's parse_page vs ElementTree.fromstring of the same bytes",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--matchers", default="none,engine")
    parser.add_argument("--matcher", default="engine", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="2,000 papers, SQLite only")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--work", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if args.work:
        db, port, count = args.work
        print(json.dumps(asyncio.run(work(db, int(port), int(count), args.matcher))))
        return
    if args.quick:
        args.count, args.backends = 2000, "sqlite"
    rounds = rounds_arg(args.rounds)
    header(
        f"ingest: {args.count:,} papers end to end vs the same rows written by the driver alone",
        rounds,
        "papers/s = papers / wall seconds of the poll (papertide) or of the insert (floor)",
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        entries = make_corpus(tmp / "corpus.json", args.count, args.seed)
        parsing(entries, rounds)
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(tmp / "corpus.json")],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            port = int(server.stdout.readline())  # type: ignore[union-attr]
            for backend in args.backends.split(","):
                run_backend(backend, port, args, tmp, rounds)
        finally:
            server.terminate()
            server.wait()


def run_backend(backend: str, port: int, args: argparse.Namespace, tmp: Path, rounds: int) -> None:
    side = Backend(backend, port, args.count, tmp)
    matchers = args.matchers.split(",")
    cases = {f"papertide ({m})": (lambda m=m: side.papertide(m)) for m in matchers}
    floor = "sqlite3 executemany" if backend == "sqlite" else "psycopg COPY"
    cases[floor] = side.floor
    got = alternate(cases, rounds)  # type: ignore[arg-type]
    for m in matchers:
        name = f"papertide ({m})"
        runs = side.runs[m]
        rss = max(r["peak_rss_mb"] for r in runs)
        what = "ingest alone" if m == "none" else "with the real engine (bundled topics)"
        report(
            f"{backend}, papers/s end to end, {what}",
            Series(name, got[name]),
            Series(floor, got[floor]),
            higher_is_better=True,
            note=f"peak RSS {rss:.0f} MB, {runs[0]['matches']:,} matches",
        )
        report(
            f"{backend}, papers per CPU second of the client process, {what}",
            Series(name, [r["papers"] / r["cpu"] for r in runs]),
            Series(floor, side.floor_cpu),
            higher_is_better=True,
            note="less sensitive to the machine's load than wall time",
        )
    runs = [r for m in matchers for r in side.runs[m]]
    report(
        f"{backend}, indexer catch-up papers/s (after the poll, off ingest's transaction)",
        Series("papertide indexer", [r["papers"] / r["index_wall"] for r in runs]),
        Series(floor, got[floor]),
        higher_is_better=True,
        note=f"{len(runs)} runs (every matcher's); CPU: "
        + " ".join(f"{r['papers'] / r['index_cpu']:,.0f}" for r in runs)
        + " papers per client CPU s",
    )
    report(
        f"{backend}, papers/s until searchable (poll, then indexer catch-up), ingest alone",
        Series(
            "papertide (none) + index",
            [r["papers"] / (r["wall"] + r["index_wall"]) for r in side.runs[matchers[0]]],
        ),
        Series(floor, got[floor]),
        higher_is_better=True,
        note=f"matcher {matchers[0]}",
    )


if __name__ == "__main__":
    main()
