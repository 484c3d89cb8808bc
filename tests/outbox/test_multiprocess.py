"""Four `papertide worker` processes share 20,000 messages on PostgreSQL; one is SIGKILLed.

Every message must arrive at the local HTTP endpoint; the only duplicates allowed are
rows the killed worker had leased and possibly sent but not yet marked.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from aiohttp import web
from sqlalchemy.engine import make_url

from tests.support.paths import REPO

MESSAGES = 20_000
TARGETS = 50
WORKERS = 4
KILL_AFTER = 5_000
# Generous for a loaded CI box; an idle 2-core machine needs far less.
DEADLINE_SECONDS = 150


@dataclass
class Recorder:
    base: str = ""
    received: Counter[str] = field(default_factory=Counter)
    kill_now: asyncio.Event = field(default_factory=asyncio.Event)
    all_in: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def recorder() -> AsyncIterator[Recorder]:
    rec = Recorder()

    async def handle(request: web.Request) -> web.Response:
        rec.received[request.headers["Idempotency-Key"]] += 1
        if rec.received.total() >= KILL_AFTER:
            rec.kill_now.set()
        if len(rec.received) >= MESSAGES:
            rec.all_in.set()
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook/{n}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    rec.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield rec
    await runner.cleanup()


def _fill(url: str, base: str) -> None:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO target (platform, kind, workspace, address, settings, failure_count,"
            " created_at) SELECT 'webhook', 'channel', '', %s || '/hook/' || n, '{}', 0, now()"
            " FROM generate_series(1, %s) AS n",
            (base, TARGETS),
        )
        conn.execute(
            "INSERT INTO outbox (key, target_id, kind, payload, status, attempts,"
            " next_attempt_at, created_at)"
            " SELECT 'm' || i, 1 + i %% %s, 'paper', '{\"paper\": {}, \"reasons\": []}',"
            " 'pending', 0, now(), now() FROM generate_series(1, %s) AS i",
            (TARGETS, MESSAGES),
        )


def _in_flight_of(url: str, pid: int) -> int:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM outbox WHERE status = 'sending' AND lease_owner LIKE %s",
            (f"%:{pid}:%",),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _statuses(url: str) -> dict[str, int]:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return dict(conn.execute("SELECT status, count(*) FROM outbox GROUP BY status").fetchall())


def _tail_logs(tmp_path: Path) -> str:
    return "\n".join(p.read_text()[-2000:] for p in sorted(tmp_path.glob("worker*.log")))


async def test_four_workers_share_the_queue_and_survive_a_sigkill(
    own_pg_database: str, recorder: Recorder, tmp_path: Path
) -> None:
    received = recorder.received
    _fill(own_pg_database, recorder.base)
    env = {
        **os.environ,
        "PAPERTIDE_DATABASE_URL": own_pg_database,
        "PAPERTIDE_OUTBOX_LEASE_SECONDS": "5",
        "PAPERTIDE_OUTBOX_BATCH_SIZE": "100",
        "PAPERTIDE_WORKER_CONCURRENCY": "8",
    }
    procs = []
    for i in range(WORKERS):
        log = (tmp_path / f"worker{i}.log").open("w")
        procs.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                "from bot.cli import main; main()",
                "worker",
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=log,
            )
        )
    victim = procs[0]
    in_flight = -1
    statuses: dict[str, int] = {}
    try:
        async with asyncio.timeout(DEADLINE_SECONDS):
            await recorder.kill_now.wait()
            victim.send_signal(signal.SIGKILL)
            await victim.wait()
            in_flight = await asyncio.to_thread(_in_flight_of, own_pg_database, victim.pid)
            await recorder.all_in.wait()
            # Let the survivors settle their last results before judging the table.
            while statuses.get("sent") != MESSAGES:
                await asyncio.sleep(0.2)
                statuses = await asyncio.to_thread(_statuses, own_pg_database)
    except TimeoutError:
        pass  # the assertions below say what was missing
    finally:
        for proc in procs[1:]:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        codes = [await proc.wait() for proc in procs[1:]]
    duplicates = received.total() - len(received)
    print(f"\nkilled worker had {in_flight} rows in flight; duplicates delivered: {duplicates}")
    logs = await asyncio.to_thread(_tail_logs, tmp_path)
    assert len(received) == MESSAGES, logs
    assert statuses == {"sent": MESSAGES}
    assert in_flight > 0  # the kill really happened mid-run
    assert duplicates <= in_flight
    assert codes == [0] * (WORKERS - 1), logs  # SIGTERM: graceful exit
