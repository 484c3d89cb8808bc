"""Benchmark: topic page (cached, uncached, with query strings) and one-click unsubscribe,
papertide's web app vs a bare aiohttp handler returning the same bytes.

    .venv/bin/python bench/web.py [--seconds 5] [--clients 50] [--rounds 3] [--papers 3000]
                                  [--people 10000] [--db sqlite,postgresql]
                                  [--cases cached,varied,uncached,unsubscribe]
    .venv/bin/python bench/web.py --quick            # 1 s per case, SQLite only

`--clients` concurrent clients on loopback run each case for `--seconds` (time-based,
so the figure does not hang on a few hundred requests) against servers in their own
processes, alternately papertide and the comparison:
- papertide: the web app `papertide serve` builds (`root.web_app`), over a database
  seeded with `--papers` papers in the topic and `--people` confirmed email recipients;
  the topic page is served with the page cache on (30 s) and off;
- bare aiohttp: one handler per route answering the very bytes papertide answered for it
  (fetched once from papertide), with the same content type.
Cases: topic page cached, cached with a different query string per request (a cache
keyed on the query string would miss every time), uncached (the page cache off: every
request reads the topic and its count, the page's 30 papers and their tags from the
database and renders the template; only the momentum box comes from its in-process
cache, 300 s, as in `serve`), and one-click unsubscribe
(POST `List-Unsubscribe=One-Click` with a signed token; tokens cycle, so after the first
round a person may already be unsubscribed). Prints req/s, p50 and p99 per case, and
each server process's CPU microseconds per request (all its threads, from /proc), the
figure to compare on a loaded machine.
Goals (issue 14): uncached >= 2,000 req/s and p99 < 100 ms; cached unaffected by query
strings; unsubscribe p99 < 100 ms at 50 concurrent on SQLite and PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
from aiohttp import web
from pydantic import SecretStr
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.sidebyside import Series, header, percentile, report, rounds_arg
from bot.config import Settings
from bot.service.root import open_papertide
from bot.store.engine import create_engine, session_factory
from bot.store.migrate import upgrade_sync
from bot.store.models import Paper, PaperTopic, Person, Target, Topic
from bot.subscriptions.tokens import person_token
from bot.web.app import serve_web

SLUG = "rl-for-llm-agents"
NOW = datetime.now(UTC)


async def seed(db_url: str, settings: Settings, papers: int, people: int) -> list[str]:
    """Topics, papers and confirmed people; returns one unsubscribe token per person."""
    engine = create_engine(db_url)
    sessions = session_factory(engine)
    async with sessions() as session, session.begin():
        topics = [Topic(slug=SLUG, name="RL for LLM Agents")] + [
            Topic(slug=f"topic-{i}", name=f"Topic {i}") for i in range(4)
        ]
        session.add_all(topics)
        await session.flush()
        for i in range(papers):
            when = NOW - timedelta(minutes=40 * i)
            authors = [{"name": f"Author {i}-{k}", "affiliations": [f"Lab {k}"]} for k in range(6)]
            session.add(
                Paper(
                    id=f"2609.{i:05d}",
                    title=f"Paper {i}",
                    abstract="An abstract. " * 30,
                    authors=authors,
                    categories=["cs.LG"],
                    primary_category="cs.LG",
                    published=when,
                    updated=when,
                )
            )
        await session.flush()
        for i in range(papers):  # all in the benchmarked topic, each also in one other (tags)
            session.add(PaperTopic(paper_id=f"2609.{i:05d}", topic_id=topics[0].id))
            session.add(PaperTopic(paper_id=f"2609.{i:05d}", topic_id=topics[1 + i % 4].id))
        persons = [
            Person(email=f"p{i}@lab.org", email_key=f"p{i}@lab.org", email_status="confirmed")
            for i in range(people)
        ]
        session.add_all(persons)
        await session.flush()
        session.add_all(
            Target(platform="email", kind="email", address=p.email or "", person_id=p.id)
            for p in persons
        )
    await engine.dispose()
    return [person_token(settings, p, "unsubscribe") for p in persons]


def serve(db_url: str, settings: Settings, page_cache: float, ports: Any) -> None:
    """Server process: the web app on 127.0.0.1, its port reported through `ports`."""

    async def run() -> None:
        async with open_papertide(settings.model_copy(update={"database_url": db_url})) as root:
            app = root.web_app(page_cache_seconds=page_cache)
            runner = await serve_web(app, "127.0.0.1", 0)
            ports.put(runner.addresses[0][1])
            await asyncio.Event().wait()

    asyncio.run(run())


def serve_bare(answers: dict[str, tuple[bytes, str]], ports: Any) -> None:
    """Server process: a bare aiohttp app answering the same bytes for the same routes."""
    page_body, page_type = answers["page"]
    unsub_body, unsub_type = answers["unsubscribe"]

    async def page(_: web.Request) -> web.Response:
        return web.Response(body=page_body, content_type=page_type.split(";")[0])

    async def unsubscribe(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=unsub_body, content_type=unsub_type.split(";")[0])

    async def run() -> None:
        app = web.Application()
        app.router.add_get("/topics/{slug}", page)
        app.router.add_post("/unsubscribe/{token}", unsubscribe)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        ports.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(run())


Request = tuple[str, str, str | None]


async def load(
    base: str, clients: int, seconds: float, requests: itertools.cycle[Request]
) -> dict[str, float]:
    """`clients` workers send `requests` for `seconds`: req/s, p50, p99 (ms), errors."""
    latencies: list[float] = []
    errors = 0
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    deadline = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def worker() -> None:
            nonlocal errors
            while time.monotonic() < deadline:
                method, path, body = next(requests)
                started = time.perf_counter()
                async with http.request(method, base + path, data=body, headers=headers) as r:
                    await r.read()
                    errors += r.status != 200
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "rps": len(latencies) / elapsed,
        "p50": percentile(latencies, 0.5) * 1000,
        "p99": percentile(latencies, 0.99) * 1000,
        "errors": errors,
    }


async def fetch(base: str, method: str, path: str, body: str | None) -> tuple[bytes, str]:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, base + path, data=body, headers=headers) as r,
    ):
        assert r.status == 200, (path, r.status)
        return await r.read(), r.headers.get("Content-Type", "text/html")


def server_cpu(pid: int) -> float:
    """CPU seconds a server process has used, all its threads (Linux; NaN elsewhere): on a
    loaded machine the figure that holds, where req/s also measures who else is running."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measured(
    pid: int, base: str, clients: int, seconds: float, requests: itertools.cycle[Request]
) -> dict[str, float]:
    """`load`, plus the server's CPU microseconds per request over it."""
    before = server_cpu(pid)
    got = await load(base, clients, seconds, requests)
    served = got["rps"] * seconds
    got["cpu_us"] = (server_cpu(pid) - before) * 1e6 / served if served else float("nan")
    return got


def start(target: Any, args: tuple[Any, ...]) -> tuple[Any, str]:
    spawn = mp.get_context("spawn")
    ports: Any = spawn.Queue()
    proc = spawn.Process(target=target, args=(*args, ports))
    proc.start()
    return proc, f"http://127.0.0.1:{ports.get(timeout=120)}"


async def run_backend(backend: str, db_url: str, args: argparse.Namespace) -> None:
    settings = Settings(database_url=db_url, secret_key=SecretStr("bench-secret"))
    tokens = await seed(db_url, settings, args.papers, args.people + 1)
    page = ("GET", f"/topics/{SLUG}", None)
    unsub = [("POST", f"/unsubscribe/{t}", "List-Unsubscribe=One-Click") for t in tokens[1:]]
    cached, cached_url = start(serve, (db_url, settings, 30.0))
    uncached, uncached_url = start(serve, (db_url, settings, 0.0))
    spare = ("POST", f"/unsubscribe/{tokens[0]}", "List-Unsubscribe=One-Click")
    answers = {
        "page": await fetch(cached_url, *page),
        "unsubscribe": await fetch(uncached_url, *spare),
    }
    bare, bare_url = start(serve_bare, (answers,))
    procs = [cached, uncached, bare]
    pids = {cached_url: cached.pid, uncached_url: uncached.pid, bare_url: bare.pid}
    try:
        varied = (("GET", f"/topics/{SLUG}?utm_source=n{i}", None) for i in itertools.count())
        every: dict[str, tuple[str, str, Any]] = {
            "cached": ("topic page, cached", cached_url, lambda: itertools.cycle([page])),
            "varied": ("topic page, cached, a new query string each", cached_url, lambda: varied),
            "uncached": ("topic page, uncached", uncached_url, lambda: itertools.cycle([page])),
            "unsubscribe": ("one-click unsubscribe", uncached_url, lambda: shared_unsub),
        }
        cases = {every[c][0]: every[c][1:] for c in args.cases.split(",")}
        shared_unsub = itertools.cycle(unsub)
        for base in (cached_url, uncached_url, bare_url):  # warm-up
            await load(base, args.clients, 0.5, itertools.cycle([page]))
        for label, (url, requests) in cases.items():
            got: dict[str, list[dict[str, float]]] = {"papertide": [], "bare aiohttp": []}
            for r in range(rounds_arg(args.rounds)):
                for side in ("papertide", "bare aiohttp")[:: 1 if r % 2 == 0 else -1]:
                    base = url if side == "papertide" else bare_url
                    pid = pids[base]
                    got[side].append(
                        await measured(pid, base, args.clients, args.seconds, requests())
                    )
            ours, theirs = got["papertide"], got["bare aiohttp"]
            errors = sum(r["errors"] for r in ours)
            p50 = sorted(r["p50"] for r in ours)[len(ours) // 2]
            for key, name, better in (
                ("rps", "req/s", True),
                ("p99", "p99 ms", False),
                ("cpu_us", "server CPU µs/request", False),
            ):
                report(
                    f"{backend}: {label}, {name}",
                    Series("papertide", [r[key] for r in ours]),
                    Series("bare aiohttp", [r[key] for r in theirs]),
                    higher_is_better=better,
                    note=f"papertide p50 median {p50:.1f} ms"
                    + (f", {errors} non-200" if errors else ""),
                )
    finally:
        for proc in procs:
            proc.terminate()
            proc.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--papers", type=int, default=3000)
    parser.add_argument("--people", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--quick", action="store_true", help="1 s per case, SQLite only")
    parser.add_argument(
        "--cases",
        default="cached,varied,uncached,unsubscribe",
        help="which cases, comma-separated (default: all)",
    )
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.db, args.papers, args.people = 1.0, "sqlite", 500, 1000
    header(
        f"web: {args.clients} concurrent clients, {args.seconds:g} s per case; "
        f"{args.papers:,} papers, {args.people:,} people",
        rounds_arg(args.rounds),
    )
    dbs = args.db.split(",")
    if "sqlite" in dbs:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite_url = f"sqlite:///{Path(tmp) / 'bench.db'}"
            upgrade_sync(sqlite_url)
            asyncio.run(run_backend("sqlite", sqlite_url, args))
    if "postgresql" not in dbs:
        return
    admin = make_url(args.pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"papertide_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        pg_url = make_url(args.pg_url).set(database=name).render_as_string(hide_password=False)
        upgrade_sync(pg_url)
        asyncio.run(run_backend("postgresql", pg_url, args))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
