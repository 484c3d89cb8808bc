"""Benchmark: requests/s and p99 latency of the topic page and of one-click unsubscribe.

50 concurrent clients on loopback against papertide's web app served by a separate
process (so client and server do not share one event loop), on SQLite and PostgreSQL,
with a few thousand seeded papers. Goal: p99 under 100 ms.

    .venv/bin/python bench/web.py [--papers 3000] [--clients 50] [--requests 2000]

The topic page is measured twice: as served (rendered pages cached 30 s) and with the
page cache off. Momentum comes from a stand-in (one SQL aggregate) until the digests
area's momentum is wired in; the web app caches it per topic either way.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
from pydantic import SecretStr
from sqlalchemy.engine import make_url

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


def serve(db_url: str, settings: Settings, ports: Any, page_cache: float) -> None:
    """Server process: the web app on 127.0.0.1, its port reported through `ports`."""

    async def run() -> None:
        async with open_papertide(settings.model_copy(update={"database_url": db_url})) as root:
            app = root.web_app(page_cache_seconds=page_cache)
            runner = await serve_web(app, "127.0.0.1", 0)
            ports.put(runner.addresses[0][1])
            await asyncio.Event().wait()

    asyncio.run(run())


async def load(
    base: str, clients: int, requests: list[tuple[str, str, str | None]]
) -> tuple[float, list[float], int]:
    """Run `requests` (method, path, body) with `clients` workers: (seconds, latencies, errors)."""
    queue = list(reversed(requests))
    latencies: list[float] = []
    errors = 0
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def worker() -> None:
            nonlocal errors
            while queue:
                method, path, body = queue.pop()
                started = time.perf_counter()
                async with http.request(method, base + path, data=body, headers=headers) as r:
                    await r.read()
                    errors += r.status != 200
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        return time.perf_counter() - started, latencies, errors


def report(backend: str, name: str, seconds: float, latencies: list[float], errors: int) -> None:
    latencies.sort()
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000
    p50 = statistics.median(latencies) * 1000
    verdict = "meets" if p99 < 100 else "misses"
    print(
        f"{backend:10} {name:24} {len(latencies) / seconds:7.0f} req/s  p50 {p50:7.1f} ms  "
        f"p99 {p99:7.1f} ms ({verdict} the 100 ms goal)  errors {errors}",
        flush=True,
    )


async def run_backend(backend: str, db_url: str, args: argparse.Namespace) -> None:
    settings = Settings(database_url=db_url, secret_key=SecretStr("bench-secret"))
    tokens = await seed(db_url, settings, args.papers, args.requests)
    spawn = mp.get_context("spawn")
    for page_cache in (30.0, 0.0):
        ports: Any = spawn.Queue()
        server = spawn.Process(target=serve, args=(db_url, settings, ports, page_cache))
        server.start()
        try:
            base = f"http://127.0.0.1:{ports.get(timeout=60)}"
            await load(base, args.clients, [("GET", f"/topics/{SLUG}", None)] * 100)  # warm-up
            page = [("GET", f"/topics/{SLUG}", None)] * args.requests
            label = "topic page (cached)" if page_cache else "topic page (no cache)"
            report(backend, label, *await load(base, args.clients, page))
            if page_cache:
                continue
            unsub = [("POST", f"/unsubscribe/{t}", "List-Unsubscribe=One-Click") for t in tokens]
            report(backend, "one-click unsubscribe", *await load(base, args.clients, unsub))
        finally:
            server.terminate()
            server.join()


def main() -> None:
    parser = argparse.ArgumentParser(description="papertide web benchmark")
    parser.add_argument("--papers", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    print(f"{args.papers} papers, {args.clients} concurrent clients, {args.requests} requests each")
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        upgrade_sync(sqlite_url)
        asyncio.run(run_backend("sqlite", sqlite_url, args))
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
