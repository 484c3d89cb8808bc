"""Benchmark: signed `/papers` slash commands, papertide's Slack routes vs a bare slack-bolt app.

    .venv/bin/python bench/commands.py [--seconds 20] [--concurrency 50] [--rounds 3]
                                       [--db sqlite,postgresql] [--drain 15]
                                       [--rates 50,100,200]
    .venv/bin/python bench/commands.py --quick       # 3 s of load, SQLite only

Closed loop (the default): `--concurrency` clients send signed, form-encoded slash
commands (a mix of follow, unfollow, list, alerts, topics, alert add, mute, help) for
`--seconds`, each sending the next as soon as its ack arrived. Open loop (`--rates`):
commands arrive at a fixed rate per second whatever the server does, one rate after
the other; that is what "answers keep up with arrivals" is measured on (a closed loop's
arrival rate is the ack rate, thousands per second, so no command worker could keep up
with it). Either way the load goes to an aiohttp server in its own process, alternately:
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
answer p99 < 1 s. In open loop a rate is kept up with when nothing was answered "busy"
and the backlog at the end is no more than one second of arrivals (commands in flight).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
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
    """The routes `serve` mounts, built by the composition root (store, command queue)."""
    from bot.config import Settings
    from bot.platforms.slack.app import build_slack_app, install_slack_routes
    from bot.service.root import open_papertide

    # One warning per hundred "busy" answers is right for an operator, noise here.
    logging.getLogger("bot.chat.queue").setLevel(logging.ERROR)
    from tests.support.chat import make_deps

    settings = Settings(
        database_url=url,
        slack_bot_token="xoxb-bench",
        slack_signing_secret=SIGNING_SECRET,
        slack_api_url=f"{slack_base}/api/",
    )
    async with open_papertide(settings, migrate=False) as root:
        sessions = root.store.sessions
        work = root.command_work()
        bolt = build_slack_app(settings=settings, sessions=sessions, deps=make_deps(), work=work)
        app = web.Application()
        install_slack_routes(
            app, bolt, signing_secret=SIGNING_SECRET, sessions=sessions, commands=work.queue
        )
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
    base: str, slack: Answers, args: argparse.Namespace, drain: float
) -> dict[str, Any]:
    """Closed loop (`args.rate` 0: `args.concurrency` clients) or open loop (`args.rate`
    commands per second, spread over `args.concurrency` people); the figures of one run."""
    sent: dict[int, float] = {}
    acks: list[float] = []
    failures = busy = 0
    started = time.monotonic()
    deadline = started + args.seconds

    async def one(c: int, i: int, rng: random.Random, http: aiohttp.ClientSession) -> None:
        nonlocal failures, busy
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

    async def client(c: int, http: aiohttp.ClientSession) -> None:
        rng, i = random.Random(c), 0
        while time.monotonic() < deadline:
            i += 1
            await one(c, i, rng, http)

    async def arrivals(http: aiohttp.ClientSession) -> None:
        # A fixed schedule: command k leaves at started + k / rate, late or not.
        rng, tasks, k = random.Random(0), set(), 0
        while (due := started + k / args.rate) < deadline:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            task = asyncio.create_task(one(k % args.concurrency, k, rng, http))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            k += 1
        await asyncio.gather(*tasks)

    connector = aiohttp.TCPConnector(limit=args.concurrency if not args.rate else 500)
    async with aiohttp.ClientSession(connector=connector) as http:
        if args.rate:
            await arrivals(http)
        else:
            await asyncio.gather(*(client(c, http) for c in range(args.concurrency)))
    ended = time.monotonic()
    answered_in_load = sum(1 for t in slack.arrivals.values() if t <= ended)
    backlog = len(sent) - answered_in_load
    drain_until = ended + drain
    while len(slack.arrivals) < len(sent) and time.monotonic() < drain_until:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    latencies = [slack.arrivals[n] - sent[n] for n in slack.arrivals if n in sent]
    return {
        "arrived_per_s": (len(acks) + failures) / (ended - started),
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
                return await run_load(f"http://127.0.0.1:{port}", slack, args, drain)
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
    db = f"{db}, {args.rate:g} commands/s arriving" if args.rate else db
    for key, label in (("ack_p99", "ack p99, ms"), ("ack_p50", "ack p50, ms")):
        report(
            f"{db}: {label}",
            Series("papertide", [r[key] for r in ours]),
            Series("bare slack-bolt", [r[key] for r in bare]),
            higher_is_better=False,
        )
    report(
        f"{db}: commands acked per second (both sides under the same load)",
        Series("papertide", [r["acked"] / r["seconds"] for r in ours]),
        Series("bare slack-bolt", [r["acked"] / r["seconds"] for r in bare]),
        higher_is_better=True,
    )
    for key, label, better in (
        ("arrived_per_s", "commands sent per second (the load generator's own rate)", True),
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
    if args.rate:
        kept = [r["busy"] == 0 and r["backlog"] <= max(1.0, args.rate) for r in ours]
        print(f"  kept up with {args.rate:g}/s in {sum(kept)} of {len(kept)} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--drain", type=float, default=15.0, help="max s to wait for answers")
    parser.add_argument("--quick", action="store_true", help="3 s of load, SQLite only")
    parser.add_argument(
        "--rates", default="", help="open loop: arrival rates per second, e.g. 50,100,200"
    )
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
    rates = [float(r) for r in args.rates.split(",") if r.strip()] or [0.0]
    load = (
        f"commands arriving at {args.rates} per second (open loop)"
        if args.rates
        else f"{args.concurrency} concurrent clients (closed loop)"
    )
    header(
        f"slash commands: {load} for {args.seconds:g} s, "
        "papertide vs a bare slack-bolt app that only acks",
        rounds,
    )
    with tempfile.TemporaryDirectory() as tmp:
        for db in args.db.split(","):
            for rate in rates:
                args.rate = rate
                run_db(db.strip(), args, Path(tmp), rounds)


if __name__ == "__main__":
    main()
