"""SQLite: `papertide serve` running while CLI commands and another process write."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from sqlalchemy import text

from bot.outbox.queue import enqueue, message_key
from bot.store.engine import create_engine, session_factory
from bot.store.models import Target
from bot.types import MessageKind
from tests.support.paths import REPO

CLI = (sys.executable, "-c", "from bot.cli import main; main()")
ROUNDS = 3
PER_ROUND = 40


async def _cli(env: dict[str, str], *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *CLI,
        *args,
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def test_serve_and_cli_writers_never_see_database_is_locked(
    sqlite_url: str, tmp_path: Path
) -> None:
    console = tmp_path / "console.out"
    env = {
        **os.environ,
        "PAPERTIDE_DATABASE_URL": sqlite_url,
        "PAPERTIDE_CONSOLE_OUT": str(console),
        "PAPERTIDE_SOURCES": "sample",
        "PAPERTIDE_OUTBOX_MAX_ATTEMPTS": "1",
    }
    engine = create_engine(sqlite_url)
    sessions = session_factory(engine)
    async with sessions() as session, session.begin():
        ok = Target(platform="console", kind="channel", address="general")
        # Nothing listens on port 9: every send fails and, with one attempt allowed, dies,
        # so `outbox retry --dead` below always has rows to rewrite.
        down = Target(platform="webhook", kind="channel", address="http://127.0.0.1:9/hook")
        session.add_all([ok, down])
        await session.flush()
    assert ok.id is not None
    assert down.id is not None
    serve_log = (tmp_path / "serve.log").open("w")
    serve = await asyncio.create_subprocess_exec(
        *CLI, "serve", cwd=REPO, env=env, stdout=serve_log, stderr=serve_log
    )
    outputs: list[str] = []
    try:
        for round_ in range(ROUNDS):
            async with sessions() as session, session.begin():
                for i in range(PER_ROUND):
                    for tid in (ok.id, down.id):
                        await enqueue(
                            session=session,
                            target_id=tid,
                            kind=MessageKind.PAPER,
                            key=message_key(tid, MessageKind.PAPER, f"2606.{round_:02d}{i:03d}"),
                            payload={"paper": {"title": f"Paper {round_}-{i}"}, "reasons": []},
                        )
            results = await asyncio.gather(
                _cli(env, "outbox", "retry", "--dead"),
                _cli(env, "outbox", "stats", "--json"),
            )
            for code, out in results:
                assert code == 0, out
                outputs.append(out)
        async with asyncio.timeout(30):
            while True:
                async with sessions() as session:
                    sent = (
                        await session.execute(
                            text("SELECT count(*) FROM outbox WHERE status = 'sent'")
                        )
                    ).scalar_one()
                if sent == ROUNDS * PER_ROUND:
                    break
                await asyncio.sleep(0.2)
    finally:
        serve.send_signal(signal.SIGTERM)
        code = await serve.wait()
        await engine.dispose()
    log = (tmp_path / "serve.log").read_text()
    assert code == 0, log
    everything = log + "".join(outputs)
    assert "database is locked" not in everything
    assert "adapter slack    off  (set PAPERTIDE_SLACK_BOT_TOKEN to turn it on)" in log
    assert console.read_text().count("--- to console:general [paper]") == ROUNDS * PER_ROUND
    requeued = [int(out.split()[0]) for out in outputs if "queued again" in out]
    assert len(requeued) == ROUNDS
    assert sum(requeued) > 0  # the CLI really wrote while serve was writing
