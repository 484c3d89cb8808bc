"""Delivery benchmark: papertide's outbox workers vs pgqueuer, same posts to the same endpoint.

    .venv/bin/python bench/deliver.py [--pg postgresql://postgres@127.0.0.1:5432/test]
                                      [--messages 20000] [--workers 1,4] [--rounds 3]
                                      [--extras outbox,latency,pacing,sqlite]
    .venv/bin/python bench/deliver.py --quick        # 1,000 messages, 1 worker

Per round, alternating, on a fresh PostgreSQL database each:
- papertide: N webhook messages in the outbox (50 targets), then W worker processes
  running `bot.outbox.worker.Worker` exactly as `papertide worker` builds it (the root's
  channels and delivery client, worker_concurrency 8);
- pgqueuer (the `bench` extra, on asyncpg, its usual driver): the same N jobs enqueued
  with `Queries.enqueue`, then W worker processes running pgqueuer's QueueManager
  (batch_size 10, its default) whose
  entrypoint POSTs the very same JSON body (webhook shape, Idempotency-Key header) with
  one aiohttp ClientSession per process (connection limit 8, papertide's).
Both post to one aiohttp endpoint in its own process, which stamps every arrival: the
figure is messages / (last delivery − first delivery) of the run, so worker start-up
and the enqueue are never counted. Every run must deliver N distinct keys.
`--extras` adds papertide-only figures: outbox only (1 ms null channel), latency at a
steady 200 msg/s, pacing, and 1 worker on SQLite.
Goal (issue 14): ahead of pgqueuer (>= 1.0x, stretch 1.2x) at 1 and at 4 workers; more
workers never slower.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psycopg
from aiohttp import web
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.sidebyside import Series, alternate, header, report, rounds_arg
from bot.store.migrate import upgrade_sync

TARGETS = 50
CONCURRENCY = 8


# --- the endpoint (own process) ------------------------------------------------------------


def run_endpoint(port_out: mp.Queue) -> None:  # type: ignore[type-arg]
    """Counts every POST per run (the path's first part) and stamps the first and the last."""
    runs: dict[str, dict[str, object]] = {}
    lat: list[float] = []

    async def hook(request: web.Request) -> web.Response:
        body = await request.json()
        now = time.monotonic()
        run = runs.setdefault(request.match_info["run"], {"keys": set(), "first": now})
        run["keys"].add(body["key"])  # type: ignore[attr-defined]
        run["last"] = now
        sent_at = body["payload"].get("t")
        if sent_at:
            lat.append(time.time() - sent_at)
        return web.Response(text="ok")

    async def stats(request: web.Request) -> web.Response:
        run = runs.get(request.match_info["run"], {"keys": set(), "first": 0.0, "last": 0.0})
        return web.json_response(
            {"unique": len(run["keys"]), "first": run["first"], "last": run.get("last", 0.0)}  # type: ignore[arg-type]
        )

    async def latencies(_: web.Request) -> web.Response:
        out = list(lat)
        lat.clear()
        return web.json_response(out)

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/hook/{run}/{n}", hook)
        app.router.add_get("/stats/{run}", stats)
        app.router.add_get("/latencies", latencies)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port_out.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


# --- a worker (own process) ----------------------------------------------------------------


class NullChannel:
    """Stands in for the network: 1 ms per send, no HTTP stack (isolates the outbox's cost)."""

    platform = "webhook"

    async def send(self, message: object) -> object:
        from bot.outbox.channel import Delivered

        await asyncio.sleep(0.001)
        return Delivered()


def run_worker(
    url: str, rate: float | None, concurrency: int, null: bool = False, scope: str | None = None
) -> None:
    from bot.config import Settings
    from bot.outbox.pacing import Pacer, rates_from_settings
    from bot.outbox.worker import Worker
    from bot.service.root import open_papertide
    from bot.types import Platform

    async def main() -> None:
        settings = Settings(
            database_url=url, worker_concurrency=concurrency, console_out=os.devnull
        )
        if scope is not None:  # where pacing state lives: each process, or the store
            settings = settings.model_copy(update={"pacing_scope": scope})
        rates = rates_from_settings(settings)
        if rate:
            rates[Platform.WEBHOOK] = rate
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        # Exactly what `papertide worker` builds: the root's channels and delivery client.
        async with open_papertide(settings, migrate=False) as root:
            worker = Worker(
                sessions=root.store.sessions,
                channels={Platform.WEBHOOK: NullChannel()}  # type: ignore[dict-item]
                if null
                else root.channels(),
                settings=settings,
                pacer=Pacer(rates),
                idle_seconds=0.1,
            )
            await worker.run(stop)

    asyncio.run(main())


# --- helpers ----------------------------------------------------------------------------------


def conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(False)


def fresh_pg(server: str, migrate: bool = True) -> str:
    name = f"papertide_deliverbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(conninfo(server), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(server).set(database=name).render_as_string(hide_password=False)
    if migrate:
        upgrade_sync(url)
    return url


def drop_pg(server: str, url: str) -> None:
    name = make_url(url).database
    with psycopg.connect(conninfo(server), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fresh_sqlite(tmp: Path) -> str:
    url = f"sqlite:///{tmp / f'bench-{uuid.uuid4().hex[:6]}.db'}"
    upgrade_sync(url)
    return url


def sql_exec(url: str, statements: list[tuple[str, tuple[object, ...]]]) -> None:
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(make_url(url).database or "") as conn:
            for sql, args in statements:
                conn.execute(sql.replace("%s", "?"), args)
        return
    with psycopg.connect(conninfo(url), autocommit=True) as conn:
        for sql, args in statements:
            conn.execute(sql, args)


def add_targets(url: str, base: str, n: int) -> None:
    rows = [
        (
            "INSERT INTO target (platform, kind, workspace, address, settings, failure_count,"
            " created_at) VALUES ('webhook', 'channel', '', %s, '{}', 0, CURRENT_TIMESTAMP)",
            (f"{base}/{i}",),
        )
        for i in range(1, n + 1)
    ]
    sql_exec(url, rows)


def add_messages(url: str, n: int, targets: int, prefix: str, stamp: bool = False) -> None:
    payload = json.dumps({"paper": {}, "reasons": [], "t": time.time()} if stamp else {"paper": {}})
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    rows = [
        (
            "INSERT INTO outbox (key, target_id, kind, payload, status, attempts,"
            " next_attempt_at, created_at) VALUES (%s, %s, 'paper', %s, 'pending', 0, %s, %s)",
            (f"{prefix}{i}", 1 + i % targets, payload, now, now),
        )
        for i in range(n)
    ]
    if url.startswith("sqlite"):
        sql_exec(url, rows)
        return
    with psycopg.connect(conninfo(url), autocommit=True) as conn, conn.cursor() as cur:
        cur.executemany(rows[0][0], [r[1] for r in rows])


def start_workers(  # type: ignore[type-arg]
    url: str,
    n: int,
    rate: float | None = None,
    concurrency: int = 8,
    null: bool = False,
    scope: str | None = None,
) -> list:
    ctx = mp.get_context("spawn")
    args = (url, rate, concurrency, null, scope)
    procs = [ctx.Process(target=run_worker, args=args) for _ in range(n)]
    for p in procs:
        p.start()
    return procs


def stop_workers(procs: list) -> None:  # type: ignore[type-arg]
    for p in procs:
        os.kill(p.pid, signal.SIGTERM)
    for p in procs:
        p.join(20)


# --- pgqueuer (own processes) ---------------------------------------------------------------


def run_pgq_worker(conninfo_: str, concurrency: int) -> None:
    """A pgqueuer worker: dequeue, POST the job's body, done (as a team would write it)."""
    import aiohttp
    import asyncpg
    from pgqueuer import AsyncpgDriver, Queries, QueueManager

    async def main() -> None:
        conn = await asyncpg.connect(conninfo_)
        qm = QueueManager(Queries(AsyncpgDriver(conn)))
        http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))

        @qm.entrypoint("deliver")
        async def deliver(job) -> None:  # type: ignore[no-untyped-def]
            data = json.loads(job.payload)
            body = data["body"]
            headers = {"Idempotency-Key": body["key"]}
            async with http.post(data["url"], json=body, headers=headers) as resp:
                await resp.read()
                if resp.status >= 300:
                    raise RuntimeError(f"HTTP {resp.status}")

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, qm.shutdown.set)
        try:
            await qm.run(batch_size=10)
        finally:
            await http.close()
            await conn.close()

    asyncio.run(main())


async def pgq_enqueue(url: str, base: str, run: str, n: int) -> None:
    import asyncpg
    from pgqueuer import AsyncpgDriver, Queries

    conn = await asyncpg.connect(conninfo(url))
    try:
        queries = Queries(AsyncpgDriver(conn))
        await queries.install()
        payloads = []
        for i in range(n):
            body = webhook_body(i, f"{run}-{i}")
            target = f"{base}/hook/{run}/{1 + i % TARGETS}"
            payloads.append(json.dumps({"url": target, "body": body}).encode())
        for at in range(0, n, 5000):
            chunk = payloads[at : at + 5000]
            await queries.enqueue(["deliver"] * len(chunk), chunk, [0] * len(chunk))
    finally:
        await conn.close()


def webhook_body(i: int, key: str) -> dict[str, object]:
    """What papertide's WebhookChannel posts for a message (bot/platforms/webhook.py)."""
    return {
        "id": i + 1,
        "key": key,
        "kind": "paper",
        "attempt": 1,
        "target": {"id": 1 + i % TARGETS, "kind": "channel", "workspace": ""},
        "payload": {"paper": {}},
    }


def start_pgq_workers(url: str, n: int) -> list:  # type: ignore[type-arg]
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=run_pgq_worker, args=(conninfo(url), CONCURRENCY)) for _ in range(n)
    ]
    for p in procs:
        p.start()
    return procs


# --- scenarios -----------------------------------------------------------------------------


def run_stats(base: str, run: str) -> dict[str, float]:
    return httpx.get(f"{base}/stats/{run}").json()  # type: ignore[no-any-return]


def first_to_last(base: str, run: str, n: int, timeout: float | None = None) -> float:
    """messages/s from the first to the last delivery of `run`, once all `n` arrived."""
    # At least 20 msg/s: a shared 2-core box under heavy load runs far below its usual rate.
    deadline = time.monotonic() + (timeout or max(120.0, n / 20))
    while time.monotonic() < deadline:
        s = run_stats(base, run)
        if s["unique"] >= n:
            return (n - 1) / max(s["last"] - s["first"], 1e-9)
        time.sleep(0.1)
    raise SystemExit(f"timed out: {run_stats(base, run)}")


def papertide_run(server: str, base: str, workers: int, messages: int) -> float:
    url = fresh_pg(server)
    run = uuid.uuid4().hex[:8]
    try:
        add_targets(url, f"{base}/hook/{run}", TARGETS)
        add_messages(url, messages, TARGETS, prefix=f"{run}-")
        procs = start_workers(url, workers)
        try:
            return first_to_last(base, run, messages)
        finally:
            stop_workers(procs)
    finally:
        drop_pg(server, url)


def pgqueuer_run(server: str, base: str, workers: int, messages: int) -> float:
    url = fresh_pg(server, migrate=False)
    run = uuid.uuid4().hex[:8]
    try:
        asyncio.run(pgq_enqueue(url, base, run, messages))
        procs = start_pgq_workers(url, workers)
        try:
            return first_to_last(base, run, messages)
        finally:
            stop_workers(procs)
    finally:
        drop_pg(server, url)


def sent_count(url: str) -> int:
    with psycopg.connect(conninfo(url), autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM outbox WHERE status = 'sent'").fetchone()
    return int(row[0]) if row else 0


def outbox_only(
    server: str, workers: int, messages: int, rate: float | None = None, scope: str | None = None
) -> float:
    """Same workers, no HTTP: what the outbox (claim, lease, settle) sustains by itself."""
    url = fresh_pg(server)
    try:
        add_targets(url, "http://unused", TARGETS)
        add_messages(url, messages, TARGETS, prefix="n-")
        procs = start_workers(url, workers, rate=rate, null=True, scope=scope)
        try:
            while sent_count(url) == 0:
                time.sleep(0.05)
            start, first = time.monotonic(), sent_count(url)
            while (done := sent_count(url)) < messages:
                time.sleep(0.25)
            return (done - first) / (time.monotonic() - start)
        finally:
            stop_workers(procs)
    finally:
        drop_pg(server, url)


def latency(server: str, base: str, workers: int, rate: int, seconds: int) -> tuple[float, float]:
    url = fresh_pg(server)
    run = uuid.uuid4().hex[:8]
    try:
        add_targets(url, f"{base}/hook/{run}", TARGETS)
        procs = start_workers(url, workers)
        try:
            time.sleep(3)  # workers up
            httpx.get(f"{base}/latencies")
            for tick in range(seconds * 10):
                add_messages(url, rate // 10, TARGETS, prefix=f"l{tick}-{run}-", stamp=True)
                time.sleep(0.1)
            time.sleep(2)
            lat = sorted(httpx.get(f"{base}/latencies").json())
        finally:
            stop_workers(procs)
    finally:
        drop_pg(server, url)
    return statistics.median(lat), lat[int(len(lat) * 0.99) - 1]


def pacing(server: str, base: str, channels: int, rate: float, seconds: int) -> float:
    url = fresh_pg(server)
    run = uuid.uuid4().hex[:8]
    try:
        add_targets(url, f"{base}/hook/{run}", channels)
        add_messages(url, int(channels * rate * seconds * 3), channels, prefix=f"{run}-")
        procs = start_workers(url, 1, rate=rate)
        try:
            time.sleep(4)  # start-up, then measure a steady window
            a = run_stats(base, run)["unique"]
            time.sleep(seconds)
            b = run_stats(base, run)["unique"]
        finally:
            stop_workers(procs)
    finally:
        drop_pg(server, url)
    return (b - a) / seconds


def sqlite_run(base: str, messages: int, tmp: Path) -> float:
    url = fresh_sqlite(tmp)
    run = uuid.uuid4().hex[:8]
    add_targets(url, f"{base}/hook/{run}", TARGETS)
    add_messages(url, messages, TARGETS, prefix=f"{run}-")
    procs = start_workers(url, 1)
    try:
        return first_to_last(base, run, messages)
    finally:
        stop_workers(procs)


def extras(which: set[str], args: argparse.Namespace, base: str) -> None:
    """papertide-only figures (issue 4's): no comparison, one run each."""
    if "outbox" in which:
        for n in (1, 4):
            rate = outbox_only(args.pg, n, args.messages)
            print(f"extra: outbox only (1 ms null channel), {n} workers: {rate:,.0f} msg/s")
    if "latency" in which:
        p50, p99 = latency(args.pg, base, workers=4, rate=200, seconds=10)
        print(f"extra: enqueue→delivery at 200 msg/s, 4 workers: p50 {p50:.3f} s p99 {p99:.3f} s")
    if "pacing" in which:
        got = pacing(args.pg, base, channels=20, rate=5.0, seconds=10)
        print(f"extra: pacing 20 channels × 5 msg/s, 1 worker: {got:.1f} msg/s of 100")
    if "sqlite" in which:
        rate = sqlite_run(base, args.messages // 4, Path(tempfile.mkdtemp()))
        print(f"extra: SQLite, 1 worker: {rate:,.0f} msg/s")
    if "pacing-scope" in which:
        pacing_scope(args.pg, args.messages // 2)


def pacing_scope(server: str, messages: int, rounds: int = 3) -> None:
    """Shared pacing's cost (issue 12): outbox only, 2 workers, every message paced at a
    rate that never binds; pacing in each process vs shared through the store."""
    got: dict[str, list[float]] = {"process": [], "store": []}
    for _ in range(rounds):
        for scope in ("process", "store"):
            got[scope].append(outbox_only(server, 2, messages, rate=100_000.0, scope=scope))
    for scope, rates in got.items():
        print(
            f"extra: pacing in {scope:7}, 2 workers, outbox only: min {min(rates):6.0f}"
            f"  median {statistics.median(rates):6.0f} msg/s  ({rounds} rounds)"
        )
    ratio = statistics.median(got["store"]) / statistics.median(got["process"])
    print(f"extra: shared pacing / in-process pacing (median): {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--workers", default="1,4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--extras", default="", help="outbox,latency,pacing,sqlite,pacing-scope")
    parser.add_argument("--quick", action="store_true", help="1,000 messages, 1 worker")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.workers = 1000, "1"
    rounds = rounds_arg(args.rounds)
    ports: mp.Queue = mp.get_context("spawn").Queue()  # type: ignore[type-arg]
    endpoint = mp.get_context("spawn").Process(target=run_endpoint, args=(ports,), daemon=True)
    endpoint.start()
    base = f"http://127.0.0.1:{ports.get(timeout=30)}"
    header(
        f"delivery, PostgreSQL: {args.messages:,} webhook posts, papertide workers vs pgqueuer",
        rounds,
        f"msg/s = messages / (last − first delivery at the endpoint); {TARGETS} targets",
    )
    try:
        for n in (int(w) for w in args.workers.split(",")):
            got = alternate(
                {
                    "papertide": lambda n=n: papertide_run(args.pg, base, n, args.messages),
                    "pgqueuer": lambda n=n: pgqueuer_run(args.pg, base, n, args.messages),
                },
                rounds,
            )
            report(
                f"{n} worker process{'es' if n > 1 else ''}, msg/s",
                Series("papertide", got["papertide"]),
                Series("pgqueuer", got["pgqueuer"]),
                higher_is_better=True,
            )
        if args.extras:
            extras(set(args.extras.split(",")), args, base)
    finally:
        endpoint.terminate()


if __name__ == "__main__":
    main()
