"""`papertide worker --health-port` (issue 12, item 21): a worker answers its own
/healthz, so containers of workers are not judged by serve's port."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import aiohttp
from aiohttp.test_utils import TestClient, TestServer

from bot.config import Settings
from bot.outbox.outage import StoreHealth
from bot.web.app import build_health_app
from tests.support.paths import REPO
from tests.support.web import free_socket


async def test_a_worker_serves_its_own_healthz(sqlite_url: str, tmp_path: Path) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "PAPERTIDE_DATABASE_URL": sqlite_url,
           "PAPERTIDE_CONSOLE_OUT": str(tmp_path / "console.out")}  # fmt: skip
    log = (tmp_path / "worker.log").open("w")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "worker", "--health-port", str(port),
        cwd=REPO, env=env, stdout=log, stderr=log,
    )  # fmt: skip
    body: dict[str, object] = {}
    try:
        async with asyncio.timeout(60), aiohttp.ClientSession() as http:
            while True:
                try:
                    async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                        status, body = response.status, await response.json()
                        server = response.headers.get("Server", "")
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)
            async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
                assert response.status == 404  # no token set: metrics are off
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await proc.wait()
    assert status == 200, body
    assert body["status"] == "ok"
    assert body["role"] == "worker"
    assert body["store"] == "ok"
    assert "aiohttp" not in server.lower()
    assert code == 0


async def test_a_worker_whose_store_is_down_is_unhealthy() -> None:
    health = StoreHealth()

    def state() -> dict[str, object]:
        return {"status": "ok" if health.ok else "unhealthy", **health.state()}

    app = build_health_app(settings=Settings(), state=state)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        assert (await client.get("/healthz")).status == 200
        health.failed("claim", ConnectionRefusedError("connection refused"))
        response = await client.get("/healthz")
        assert response.status == 503
        body = await response.json()
        assert body["store"] == "unreachable"
        assert "connection refused" in body["error"]
        health.succeeded()
        assert (await client.get("/healthz")).status == 200
