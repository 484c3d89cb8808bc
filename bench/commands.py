"""Benchmark: signed `/papers` slash commands, papertide's Slack routes vs a bare slack-bolt app.

    .venv/bin/python bench/commands.py [--seconds 20] [--concurrency 50] [--rounds 3]
                                       [--db sqlite,postgresql] [--drain 15]
    .venv/bin/python bench/commands.py --quick       # 3 s of load, SQLite only

`--concurrency` clients send signed, form-encoded slash commands (a mix of follow,
unfollow, list, alerts, topics, alert add, mute, help) for `--seconds` to an aiohttp
server in its own process, alternately:
- papertide: the Slack routes `papertide serve` mounts (`install_slack_routes`), on a
  fresh database per round; commands are acked, then answered through response_url;
- bare slack-bolt: an AsyncApp with the same signing secret whose `/papers` handler only
  acks (the floor of Bolt's own verification and dispatch on aiohttp).
A local stand-in answers Slack's Web API and stamps every response_url answer, so for
papertide we also report: answered commands per second during the load, answer latency
(command sent → answer received) p50/p99, and the backlog at the end of the load
(accepted but not yet answered), then how long the backlog took to drain (at most
`--drain` s). A command papertide's bounded queue has no room for is answered "busy, try
again" in the ack itself; those are counted (per second) apart from the accepted ones.
Goals (issue 14): ack p99 <= 3x the bare app; answers keep up (no backlog growth),
answer p99 < 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
from aiohttp import web
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.sidebyside import Series, header, percentile, report, rounds_arg
from tests.support.servers import (
    SIGNING_SECRET,
    FakeSlack,
    command_body,
    serve,
    signed_headers,
)

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
PG = os.environ.get("PAPERTIDE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _admin() -> str:
    return make_url(PG).set(drivername="postgresql").render_as_string(hide_password=False)


def fresh_db(kind: str, tmp: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp / f'{uuid.uuid4().hex[:8]}.db'}"
    name = f"papertide_cmdbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_admin(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(PG).set(database=name).render_as_string(hide_password=False)


def drop_db(url: str) -> None:
    if url.startswith("sqlite"):
        return
    with psycopg.connect(_admin(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')


# --- the servers (own process) -------------------------------------------------------------


async def serve_papertide(url: str, slack_base: str) -> None:
    from bot.config import Settings
    from bot.platforms.slack.app import build_slack_app, install_slack_routes
    from bot.store.engine import create_engine, session_factory
    from tests.support.chat import make_deps

    settings = Settings(
        database_url=url,
        slack_bot_token="xoxb-bench",
        slack_signing_secret=SIGNING_SECRET,
        slack_api_url=f"{slack_base}/api/",
    )
    engine = create_engine(url)
    bolt = build_slack_app(settings=settings, sessions=session_factory(engine), deps=make_deps())
    app = web.Application()
    install_slack_routes(app, bolt, signing_secret=SIGNING_SECRET, sessions=session_factory(engine))
    async with serve(app) as base:
        print(base.rsplit(":", 1)[1], flush=True)
        await asyncio.Event().wait()


async def serve_bare(slack_base: str) -> None:
    """A bare slack-bolt AsyncApp on aiohttp whose `/papers` only acks."""
    from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    bolt = AsyncApp(
        signing_secret=SIGNING_SECRET,
        client=AsyncWebClient(token="xoxb-bench", base_url=f"{slack_base}/api/"),
    )

    @bolt.command("/papers")
    async def papers(ack: Any) -> None:
        await ack()

    async def events(request: web.Request) -> web.Response:
        bolt_request = await to_bolt_request(request)
        return await to_aiohttp_response(await bolt.async_dispatch(bolt_request))

    app = web.Application()
    app.router.add_post("/slack/events", events)
    async with serve(app) as base:
        print(base.rsplit(":", 1)[1], flush=True)
        await asyncio.Event().wait()


# --- the load (this process) ---------------------------------------------------------------


class Answers(FakeSlack):
    """The Web API stand-in, plus the arrival time of every response_url answer."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: dict[int, float] = {}

    async def response_url(self, request: web.Request) -> web.Response:
        await request.read()
        self.arrivals[int(request.match_info["n"])] = time.monotonic()
        return web.Response(text="ok")


async def run_load(
    base: str, slack: Answers, seconds: float, concurrency: int, drain: float
) -> dict[str, Any]:
    sent: dict[int, float] = {}
    acks: list[float] = []
    failures = busy = 0
    started = time.monotonic()
    deadline = started + seconds

    async def client(c: int, http: aiohttp.ClientSession) -> None:
        nonlocal failures, busy
        rng = random.Random(c)
        i = 0
        while time.monotonic() < deadline:
            i += 1
            n = c * 1_000_000 + i
            body = command_body(rng.choice(TEXTS), base=slack.base, channel=f"C{1 + c % 2}",
                                user=f"U{c}", n=n)  # fmt: skip
            headers = {"Content-Type": "application/x-www-form-urlencoded", **signed_headers(body)}
            t0 = time.monotonic()
            async with http.post(f"{base}/slack/events", data=body, headers=headers) as resp:
                answer = await resp.read()
                if resp.status == 200:
                    acks.append(time.monotonic() - t0)
                    if b"busy" in answer:  # answered in the ack: "busy, try again"
                        busy += 1
                    else:
                        sent[n] = t0
                else:
                    failures += 1

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        await asyncio.gather(*(client(c, http) for c in range(concurrency)))
    ended = time.monotonic()
    answered_in_load = sum(1 for t in slack.arrivals.values() if t <= ended)
    backlog = len(sent) - answered_in_load
    drain_until = ended + drain
    while len(slack.arrivals) < len(sent) and time.monotonic() < drain_until:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    latencies = [slack.arrivals[n] - sent[n] for n in slack.arrivals if n in sent]
    return {
        "acked": len(acks),
        "accepted": len(sent),
        "busy": busy,
        "busy_per_s": busy / (ended - started),
        "failures": failures,
        "seconds": ended - started,
        "ack_p50": percentile(acks, 0.5) * 1000,
        "ack_p99": percentile(acks, 0.99) * 1000,
        "answered_per_s": answered_in_load / (ended - started),
        "backlog": backlog,
        "left": len(sent) - sum(1 for n in slack.arrivals if n in sent),
        "drain_s": time.monotonic() - ended,
        "answer_p50": percentile(latencies, 0.5) * 1000,
        "answer_p99": percentile(latencies, 0.99) * 1000,
    }


async def one_run(side: str, db: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from bot.store.engine import create_engine, session_factory
    from bot.store.migrate import upgrade
    from tests.support.chat import add_topics

    url = fresh_db(db, tmp)
    try:
        if side == "papertide":
            await upgrade(url)
            engine = create_engine(url)
            await add_topics(session_factory(engine))
            await engine.dispose()
        slack = Answers()
        app = web.Application()
        app.router.add_route("*", "/api/{method}", slack.api)
        app.router.add_post("/response/{n}", slack.response_url)
        async with serve(app) as slack_base:
            slack.base = slack_base
            argv = ["--serve", side, url, slack_base]
            child = await asyncio.create_subprocess_exec(
                sys.executable, __file__, *argv, stdout=asyncio.subprocess.PIPE
            )
            try:
                assert child.stdout is not None
                port = int((await child.stdout.readline()).decode().strip())
                drain = args.drain if side == "papertide" else 0.0
                return await run_load(
                    f"http://127.0.0.1:{port}", slack, args.seconds, args.concurrency, drain
                )
            finally:
                child.terminate()
                await child.wait()
    finally:
        drop_db(url)


def run_db(db: str, args: argparse.Namespace, tmp: Path, rounds: int) -> None:
    runs: dict[str, list[dict[str, Any]]] = {"papertide": [], "bare slack-bolt": []}
    names = list(runs)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            side = "papertide" if name == "papertide" else "bare"
            runs[name].append(asyncio.run(one_run(side, db, args, tmp)))
    ours, bare = runs["papertide"], runs["bare slack-bolt"]
    for key, label in (("ack_p99", "ack p99, ms"), ("ack_p50", "ack p50, ms")):
        report(
            f"{db}: {label}",
            Series("papertide", [r[key] for r in ours]),
            Series("bare slack-bolt", [r[key] for r in bare]),
            higher_is_better=False,
        )
    report(
        f"{db}: commands acked per second (both sides under the same closed-loop load)",
        Series("papertide", [r["acked"] / r["seconds"] for r in ours]),
        Series("bare slack-bolt", [r["acked"] / r["seconds"] for r in bare]),
        higher_is_better=True,
    )
    for key, label, better in (
        ("answered_per_s", "answered commands per second during the load", True),
        ("busy_per_s", 'commands answered "busy, try again" in the ack, per second', False),
        ("answer_p50", "answer latency p50, ms (sent → answer; of the answered ones)", False),
        ("answer_p99", "answer latency p99, ms (of the answered ones; see what was left)", False),
        ("backlog", "backlog at the end of the load (accepted, not yet answered)", False),
    ):
        report(
            f"{db}: {label}",
            Series("papertide", [r[key] for r in ours]),
            None,
            higher_is_better=better,
            note="the bare app only acks",
        )
    for r in ours:
        print(
            f"  papertide round: {r['acked']:,} acked ({r['accepted']:,} accepted, "
            f"{r['busy']:,} busy), {r['failures']} non-200, backlog "
            f"{r['backlog']:,} → {r['left']:,} left after {r['drain_s']:.1f} s of draining"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--drain", type=float, default=15.0, help="max s to wait for answers")
    parser.add_argument("--quick", action="store_true", help="3 s of load, SQLite only")
    parser.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        side, url, slack_base = args.serve
        asyncio.run(
            serve_papertide(url, slack_base) if side == "papertide" else serve_bare(slack_base)
        )
        return
    if args.quick:
        args.seconds, args.db, args.drain = 3.0, "sqlite", 5.0
    rounds = rounds_arg(args.rounds)
    header(
        f"slash commands: {args.concurrency} concurrent clients for {args.seconds:g} s, "
        "papertide vs a bare slack-bolt app that only acks",
        rounds,
    )
    with tempfile.TemporaryDirectory() as tmp:
        for db in args.db.split(","):
            run_db(db.strip(), args, Path(tmp), rounds)


if __name__ == "__main__":
    main()
