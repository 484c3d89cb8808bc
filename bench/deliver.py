"""Delivery benchmark: outbox → workers → a local HTTP endpoint.

    .venv/bin/python bench/deliver.py [--pg postgresql://postgres@127.0.0.1:5432/test]
                                      [--messages 20000] [--only throughput,latency,pacing]

Prints
  1. throughput (messages/s) with 1, 2 and 4 worker processes on PostgreSQL and 1 on SQLite;
  2. enqueue→delivery latency p50/p99 when the queue is not backlogged (steady 200 msg/s);
  3. with per-channel pacing on: total throughput vs (channels × allowed rate);
  4. "outbox only": the same workers with a 1 ms null channel instead of HTTP, which shows
     what claim/lease/settle sustain apart from the HTTP client's own CPU cost;
  5. "pacing-scope": outbox only, 2 workers, every target paced at a rate that never binds,
     pacing in each process vs shared through the store (issue 12): alternating, 3 rounds,
     min and median of each and the ratio, i.e. what the shared pacing's statements cost.
Goal (issue 4): ≥ 1,000 msg/s with 4 workers on a 2-core machine; p99 < 2 s; paced
throughput within 10% of channels × rate.

Workers are child processes running `bot.workers.Worker` exactly as `papertide worker`
does; the endpoint is an aiohttp server in its own process.
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

from bot.store.migrate import upgrade_sync

TARGETS = 50


# --- the endpoint (own process) ------------------------------------------------------------


def run_endpoint(port_out: mp.Queue) -> None:  # type: ignore[type-arg]
    keys: set[str] = set()
    state = {"count": 0, "lat": []}

    async def hook(request: web.Request) -> web.Response:
        body = await request.json()
        state["count"] += 1  # type: ignore[operator]
        keys.add(body["key"])
        sent_at = body["payload"].get("t")
        if sent_at:
            state["lat"].append(time.time() - sent_at)  # type: ignore[union-attr]
        return web.Response(text="ok")

    async def stats(_: web.Request) -> web.Response:
        return web.json_response({"count": state["count"], "unique": len(keys)})

    async def latencies(_: web.Request) -> web.Response:
        lat, state["lat"] = state["lat"], []
        return web.json_response(lat)

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/hook/{n}", hook)
        app.router.add_get("/stats", stats)
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
    url: str, rate: float | None, concurrency: int, null: bool = False, scope: str = "process"
) -> None:
    from bot.config import Settings
    from bot.outbox.pacing import Pacer, SharedPacer, rates_from_settings
    from bot.outbox.worker import Worker
    from bot.service.root import open_papertide
    from bot.types import Platform

    async def main() -> None:
        settings = Settings(
            database_url=url, worker_concurrency=concurrency, console_out=os.devnull
        )
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
                pacer=SharedPacer(rates, root.store.sessions) if scope == "store" else Pacer(rates),
                idle_seconds=0.1,
            )
            await worker.run(stop)

    asyncio.run(main())


# --- helpers ----------------------------------------------------------------------------------


def conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(False)


def fresh_pg(server: str) -> str:
    name = f"papertide_deliverbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(conninfo(server), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(server).set(database=name).render_as_string(hide_password=False)
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
            (f"{base}/hook/{i}",),
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
    scope: str = "process",
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


def endpoint_stats(base: str) -> dict[str, int]:
    return httpx.get(f"{base}/stats").json()  # type: ignore[no-any-return]


def wait_for(base: str, target_count: int, timeout: float = 300) -> float:
    """Seconds from the first delivery until `target_count` unique messages arrived."""
    start = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = endpoint_stats(base)
        if start is None and s["count"] > 0:
            start = time.monotonic()
        if s["unique"] >= target_count:
            return time.monotonic() - (start or time.monotonic())
        time.sleep(0.25)
    raise SystemExit(f"timed out: {endpoint_stats(base)}")


# --- scenarios -----------------------------------------------------------------------------


def throughput(url: str, base: str, workers: int, messages: int) -> float:
    add_targets(url, base, TARGETS)
    add_messages(url, messages, TARGETS, prefix=f"x{uuid.uuid4().hex[:6]}-")
    before = endpoint_stats(base)["unique"]
    procs = start_workers(url, workers)
    try:
        seconds = wait_for(base, before + messages)
    finally:
        stop_workers(procs)
    return messages / seconds


def sent_count(url: str) -> int:
    with psycopg.connect(conninfo(url), autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM outbox WHERE status = 'sent'").fetchone()
    return int(row[0]) if row else 0


def outbox_only(
    url: str, workers: int, messages: int, rate: float | None = None, scope: str = "process"
) -> float:
    """Same workers, no HTTP: what the outbox (claim, lease, settle) sustains by itself."""
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


def latency(url: str, base: str, workers: int, rate: int, seconds: int) -> tuple[float, float]:
    add_targets(url, base, TARGETS)
    procs = start_workers(url, workers)
    try:
        time.sleep(3)  # workers up
        httpx.get(f"{base}/latencies")
        for tick in range(seconds * 10):
            add_messages(
                url, rate // 10, TARGETS, prefix=f"l{tick}-{uuid.uuid4().hex[:4]}-", stamp=True
            )
            time.sleep(0.1)
        time.sleep(2)
        lat = sorted(httpx.get(f"{base}/latencies").json())
    finally:
        stop_workers(procs)
    p99 = lat[int(len(lat) * 0.99) - 1]
    return statistics.median(lat), p99


def pacing(url: str, base: str, channels: int, rate: float, seconds: int, workers: int) -> float:
    add_targets(url, base, channels)
    add_messages(url, int(channels * rate * seconds * 3), channels, prefix="p-")
    procs = start_workers(url, workers, rate=rate)
    try:
        time.sleep(4)  # start-up, then measure a steady window
        a = endpoint_stats(base)["count"]
        time.sleep(seconds)
        b = endpoint_stats(base)["count"]
    finally:
        stop_workers(procs)
    return (b - a) / seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--only", default="throughput,outbox,latency,pacing,pacing-scope")
    args = parser.parse_args()
    only = set(args.only.split(","))
    ports: mp.Queue = mp.get_context("spawn").Queue()  # type: ignore[type-arg]
    endpoint = mp.get_context("spawn").Process(target=run_endpoint, args=(ports,), daemon=True)
    endpoint.start()
    base = f"http://127.0.0.1:{ports.get(timeout=30)}"
    print(f"cpus: {os.cpu_count()}  messages per run: {args.messages}  targets: {TARGETS}")
    tmp = Path(tempfile.mkdtemp())
    try:
        if "throughput" in only:
            for n in (1, 2, 4):
                url = fresh_pg(args.pg)
                try:
                    rate = throughput(url, base, n, args.messages)
                finally:
                    drop_pg(args.pg, url)
                print(f"postgresql  workers={n}  {rate:8.0f} msg/s")
            rate = throughput(fresh_sqlite(tmp), base, 1, args.messages // 4)
            print(f"sqlite      workers=1  {rate:8.0f} msg/s")
        if "outbox" in only:
            for n in (1, 2, 4):
                url = fresh_pg(args.pg)
                try:
                    rate = outbox_only(url, n, args.messages)
                finally:
                    drop_pg(args.pg, url)
                print(
                    f"postgresql  workers={n}  {rate:8.0f} msg/s  (outbox only: 1 ms null channel)"
                )
        if "latency" in only:
            url = fresh_pg(args.pg)
            try:
                p50, p99 = latency(url, base, workers=4, rate=200, seconds=10)
            finally:
                drop_pg(args.pg, url)
            print(
                f"latency enqueue→delivery at 200 msg/s, 4 workers:"
                f" p50 {p50:.3f} s  p99 {p99:.3f} s"
            )
        if "pacing" in only:
            channels, rate = 20, 5.0
            url = fresh_pg(args.pg)
            try:
                got = pacing(url, base, channels, rate, seconds=10, workers=1)
            finally:
                drop_pg(args.pg, url)
            want = channels * rate
            print(
                f"pacing {channels} channels × {rate:g} msg/s, 1 worker: {got:.1f} msg/s"
                f" = {100 * got / want:.1f}% of {want:g}"
            )
        if "pacing-scope" in only:
            pacing_scope(args.pg, args.messages)
    finally:
        endpoint.terminate()


def pacing_scope(server: str, messages: int, rounds: int = 3) -> None:
    """Shared pacing's cost: outbox-only throughput, process vs store, alternating."""
    got: dict[str, list[float]] = {"process": [], "store": []}
    for _ in range(rounds):
        for scope in ("process", "store"):
            url = fresh_pg(server)
            try:
                # 100,000 msg/s per target: every message is paced, no slot ever waits.
                got[scope].append(outbox_only(url, 2, messages, rate=100_000.0, scope=scope))
            finally:
                drop_pg(server, url)
    for scope, rates in got.items():
        print(
            f"pacing in {scope:7}  2 workers, outbox only: min {min(rates):6.0f}"
            f"  median {statistics.median(rates):6.0f} msg/s  ({rounds} rounds)"
        )
    ratio = statistics.median(got["store"]) / statistics.median(got["process"])
    print(f"shared pacing / in-process pacing (median): {ratio:.2f}")


if __name__ == "__main__":
    main()
