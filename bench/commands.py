"""Benchmark: time to the HTTP 200 ack of signed `/papers` slash commands.

50 concurrent clients for 30 s send signed, form-encoded slash commands to an aiohttp
server on 127.0.0.1 running our Slack routes (the same `install_slack_routes` that
`papertide serve` mounts); a local stand-in answers Slack's Web API and response_url.
Prints p50/p99 of the ack, on SQLite and on PostgreSQL. Goal: p99 < 300 ms.

    .venv/bin/python -m bench.commands [--seconds 30] [--concurrency 50] [--db sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
import psycopg
from aiohttp import web
from sqlalchemy.engine import make_url

from bot.config import Settings
from bot.platforms.slack.app import build_slack_app, install_slack_routes
from bot.store.engine import create_engine, session_factory
from bot.store.migrate import upgrade
from tests.support.chat import add_topics, make_deps
from tests.support.servers import SIGNING_SECRET, command_body, fake_slack, serve, signed_headers

TEXTS = [
    "follow rl-for-llm-agents",
    "follow diffusion-models me",
    "unfollow rl-for-llm-agents",
    "list",
    "alerts",
    "topics",
    'alert add au:"Yi Wu"',
    "mute diffusion-models 2h me",
    "help",
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _database(kind: str, tmp: Path) -> tuple[str, str | None]:
    if kind == "sqlite":
        return f"sqlite:///{tmp / 'bench.db'}", None
    server = os.environ.get(
        "PAPERTIDE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
    )
    name = f"papertide_bench_{uuid.uuid4().hex[:8]}"
    admin = make_url(server).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(server).set(database=name).render_as_string(hide_password=False), name


def _drop(database: str | None) -> None:
    if database is None:
        return
    server = os.environ.get(
        "PAPERTIDE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
    )
    admin = make_url(server).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


async def serve_routes(url: str, slack_base: str) -> None:
    """Child process: papertide's Slack routes on 127.0.0.1; prints the port, runs until killed."""
    engine = create_engine(url)
    settings = Settings(
        database_url=url,
        slack_bot_token="xoxb-bench",
        slack_signing_secret=SIGNING_SECRET,
        slack_api_url=f"{slack_base}/api/",
    )
    bolt = build_slack_app(settings=settings, sessions=session_factory(engine), deps=make_deps())
    app = web.Application()
    install_slack_routes(app, bolt, signing_secret=SIGNING_SECRET, sessions=session_factory(engine))
    async with serve(app) as base:
        print(base.rsplit(":", 1)[1], flush=True)
        await asyncio.Event().wait()


async def bench(kind: str, seconds: float, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url, pg_name = await _database(kind, Path(tmp))
        try:
            await upgrade(url)
            engine = create_engine(url)
            await add_topics(session_factory(engine))
            await engine.dispose()
            async with fake_slack() as slack:
                # The server runs in its own process, as `papertide serve` would.
                child = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "bench.commands",
                    "--serve",
                    url,
                    slack.base,
                    stdout=asyncio.subprocess.PIPE,
                )
                try:
                    assert child.stdout is not None
                    port = int((await child.stdout.readline()).decode().strip())
                    base = f"http://127.0.0.1:{port}"
                    acks, failures = await _load(base, slack.base, seconds, concurrency)
                    sent = len(acks) + failures
                    drain_started = time.monotonic()
                    # Let the after-ack work finish (bounded); report how far it got.
                    for _ in range(600):  # at most 120 s
                        if len(slack.responses) >= len(acks):
                            break
                        await asyncio.sleep(0.2)
                    drained = time.monotonic() - drain_started
                finally:
                    child.terminate()
                    await child.wait()
        finally:
            _drop(pg_name)
    ms = [a * 1000 for a in acks]
    print(
        f"{kind:10s} requests={sent} ({sent / seconds:.0f}/s) non-200={failures} "
        f"ack p50={statistics.median(ms):.1f} ms p99={_percentile(ms, 0.99):.1f} ms "
        f"max={max(ms):.1f} ms answered={len(slack.responses)} "
        f"within {seconds + drained:.0f} s of the start",
        flush=True,
    )


async def _load(
    base: str, slack_base: str, seconds: float, concurrency: int
) -> tuple[list[float], int]:
    acks: list[float] = []
    failures = 0
    deadline = time.monotonic() + seconds

    async def client(n: int, http: aiohttp.ClientSession) -> None:
        nonlocal failures
        rng = random.Random(n)
        i = 0
        while time.monotonic() < deadline:
            i += 1
            body = command_body(
                rng.choice(TEXTS),
                base=slack_base,
                channel=f"C{1 + n % 2}",
                user=f"U{n}",
                n=n * 100000 + i,
            )
            headers = {"Content-Type": "application/x-www-form-urlencoded", **signed_headers(body)}
            started = time.perf_counter()
            async with http.post(f"{base}/slack/events", data=body, headers=headers) as resp:
                await resp.read()
                if resp.status == 200:
                    acks.append(time.perf_counter() - started)
                else:
                    failures += 1

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        await asyncio.gather(*(client(n, http) for n in range(concurrency)))
    return acks, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument(
        "--serve", nargs=2, metavar=("DB_URL", "SLACK_BASE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve_routes(*args.serve))
        return
    for kind in args.db.split(","):
        asyncio.run(bench(kind.strip(), args.seconds, args.concurrency))


if __name__ == "__main__":
    main()
