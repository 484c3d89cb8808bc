"""Three `papertide worker` processes on PostgreSQL, one Slack stand-in counting when each
channel receives a message: together they respect each channel's rate (issue 12, 18).

Each worker alone paces a channel at its rate; before pacing lived in the store, three
workers sent up to three times that rate.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from aiohttp import web
from sqlalchemy.engine import make_url

from tests.support.paths import REPO

WORKERS = 3
CHANNELS = ("C1", "C2")
PER_CHANNEL = 10
RATE = 4.0  # messages per second per channel: one every 0.25 s
DEADLINE_SECONDS = 120


@dataclass
class SlackClock:
    base: str = ""
    arrivals: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    done: asyncio.Event = field(default_factory=asyncio.Event)
    ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


@pytest.fixture
async def slack_clock() -> AsyncIterator[SlackClock]:
    """chat.postMessage that notes when each channel got a message."""
    clock = SlackClock()

    async def api(request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if method != "chat.postMessage":
            return web.json_response({"ok": True})
        if request.content_type == "application/json":
            args = await request.json()
        else:
            args = dict(await request.post())
        channel = str(args.get("channel"))
        clock.arrivals[channel].append(time.monotonic())
        if sum(len(v) for v in clock.arrivals.values()) >= PER_CHANNEL * len(CHANNELS):
            clock.done.set()
        return web.json_response(
            {"ok": True, "channel": channel, "ts": f"1700000000.{next(clock.ts):06d}"}
        )

    app = web.Application()
    app.router.add_post("/api/{method}", api)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    clock.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield clock
    await runner.cleanup()


def _fill(url: str) -> None:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for channel in CHANNELS:
            target_id = conn.execute(
                "INSERT INTO target (platform, kind, workspace, address, settings,"
                " failure_count, created_at) VALUES ('slack', 'channel', 'T1', %s, '{}', 0,"
                " now()) RETURNING id",
                (channel,),
            ).fetchone()[0]  # type: ignore[index]
            conn.execute(
                "INSERT INTO outbox (key, target_id, kind, payload, status, attempts,"
                " next_attempt_at, created_at) SELECT %s || i, %s, 'paper',"
                " jsonb_build_object('paper', jsonb_build_object('id', '2606.0' || i,"
                " 'title', 'Paper ' || i, 'url', 'https://arxiv.org/abs/2606.0' || i),"
                " 'reasons', '[]'::jsonb), 'pending', 0, now(), now()"
                " FROM generate_series(1, %s) AS i",
                (f"{channel}-", target_id, PER_CHANNEL),
            )


def _all_started(where: Path) -> bool:
    logs = sorted(where.glob("worker*.log"))
    return len(logs) == WORKERS and all("worker.start" in p.read_text() for p in logs)


def _tails(where: Path) -> str:
    return "\n".join(p.read_text()[-1500:] for p in sorted(where.glob("worker*.log")))


async def test_three_workers_together_respect_each_channels_rate(
    own_pg_database: str,
    slack_clock: SlackClock,
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "PAPERTIDE_DATABASE_URL": own_pg_database,
        "PAPERTIDE_SLACK_BOT_TOKEN": "xoxb-test",
        "PAPERTIDE_SLACK_API_URL": f"{slack_clock.base}/api/",
        "PAPERTIDE_SLACK_RATE_PER_SECOND": str(RATE),
        "PAPERTIDE_OUTBOX_BATCH_SIZE": "5",
    }
    procs = []
    for i in range(WORKERS):
        log = (tmp_path / f"worker{i}.log").open("w")
        procs.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot.cli",
                "worker",
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=log,
            )
        )
    # Every worker up and idle before there is work, so all three compete for it.
    async with asyncio.timeout(DEADLINE_SECONDS):
        while not await asyncio.to_thread(_all_started, tmp_path):  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    await asyncio.to_thread(_fill, own_pg_database)
    try:
        async with asyncio.timeout(DEADLINE_SECONDS):
            await slack_clock.done.wait()
    except TimeoutError:
        pass  # the assertions below say what was missing
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        codes = [await proc.wait() for proc in procs]
    logs = await asyncio.to_thread(_tails, tmp_path)
    interval = 1.0 / RATE
    for channel in CHANNELS:
        times = sorted(slack_clock.arrivals[channel])
        assert len(times) == PER_CHANNEL, logs
        gaps = [b - a for a, b in itertools.pairwise(times)]
        print(f"\n{channel}: smallest gap {min(gaps):.3f} s (interval {interval:.3f} s)")
        # Never faster than the rate, give or take the jitter of three processes' sleeps.
        assert min(gaps) >= interval * 0.8, (channel, gaps)
        # Any one-second window holds at most the rate's worth (plus the one at its edge).
        assert all(sum(1 for t in times if start <= t < start + 1.0) <= RATE + 1 for start in times)
    assert codes == [0] * WORKERS, logs
