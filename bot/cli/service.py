"""Service commands: serve, worker, and the outbox operator commands."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bot.cli.common import fail, load_settings, print_json, run
from bot.config import Settings
from bot.ingest.poll import prepare_store
from bot.logs import setup_logging
from bot.outbox.admin import count_by_status, list_messages, oldest_due_age, retry_dead
from bot.outbox.queue import STATUSES
from bot.service.root import adapter_status, open_app, run_service
from bot.service.wiring import scheduler_jobs, serve_services


def register(app: typer.Typer) -> None:
    outbox = typer.Typer(help="Inspect and repair the outbox.", no_args_is_help=True)
    app.add_typer(outbox, name="outbox")

    @app.command("serve")
    def serve_cmd(
        host: str = typer.Option("127.0.0.1", help="Address the web server listens on."),
        port: int = typer.Option(8080, help="Port the web server listens on."),
    ) -> None:
        """Run everything in one process: scheduler, a delivery worker, web and bots."""
        settings = load_settings()
        setup_logging()
        for name, on, variable in adapter_status(settings):
            state = "on " if on else "off"
            hint = "" if on else f"  (set {variable} to turn it on)"
            typer.echo(f"adapter {name:<8} {state}{hint}", err=True)
        run(_serve(settings, host, port))

    @app.command("worker")
    def worker_cmd(
        concurrency: int = typer.Option(
            None, "--concurrency", min=1, help="Messages sent at once (default from settings)."
        ),
    ) -> None:
        """Deliver outbox messages only; run as many as you like on PostgreSQL."""
        settings = load_settings()
        if concurrency:
            settings = settings.model_copy(update={"worker_concurrency": concurrency})
        setup_logging()
        run(_worker(settings))

    @outbox.command("list")
    def list_cmd(
        status: str = typer.Option(None, "--status", help="One of: " + ", ".join(STATUSES)),
        limit: int = typer.Option(50, "--limit", min=1, help="Rows to show, newest first."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    ) -> None:
        """List outbox messages, newest first."""
        if status is not None and status not in STATUSES:
            fail(f"unknown status {status!r}; use one of: {', '.join(STATUSES)}")
        rows = run(_list(load_settings(), status, limit))
        if as_json:
            print_json(rows)
            return
        table = Table(
            "id", "status", "kind", "target", "attempts", "next attempt", "error", box=None
        )
        for r in rows:
            table.add_row(
                str(r["id"]),
                r["status"],
                r["kind"],
                str(r["target_id"]),
                str(r["attempts"]),
                r["next_attempt_at"],
                # Errors quote remote servers: never let them be read as rich markup.
                escape((r["last_error"] or "")[:60]),
            )
        Console().print(table)

    @outbox.command("retry")
    def retry_cmd(
        message_id: int = typer.Argument(None, help="Outbox id of a dead message."),
        dead: bool = typer.Option(False, "--dead", help="Retry every dead message."),
    ) -> None:
        """Give dead messages a fresh set of attempts."""
        if (message_id is None) == (not dead):
            fail("give one message id or --dead")
        ids = None if dead else [message_id]
        n = run(_retry(load_settings(), ids))
        if message_id is not None and n == 0:
            fail(f"message {message_id} is not dead (or does not exist)")
        typer.echo(f"{n} message(s) queued again")

    @outbox.command("stats")
    def stats_cmd(
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    ) -> None:
        """Messages per status and the age of the oldest due message."""
        stats = run(_stats(load_settings()))
        if as_json:
            print_json(stats)
            return
        for status, n in stats["by_status"].items():
            typer.echo(f"{status:<8} {n}")
        typer.echo(f"oldest due message waiting: {stats['oldest_due_seconds']:.1f} s")


async def _serve(settings: Settings, host: str, port: int) -> None:
    async with open_app(settings) as ctx:
        await prepare_store(ctx)  # the topics catalog, synced at every start
        poll_source, run_due_digests = scheduler_jobs(ctx)
        await run_service(
            ctx,
            with_scheduler=True,
            with_worker=True,
            extra_services=serve_services(settings, host, port),
            poll_source=poll_source,
            run_due_digests=run_due_digests,
        )


async def _worker(settings: Settings) -> None:
    async with open_app(settings) as ctx:
        await run_service(ctx, with_scheduler=False, with_worker=True)


async def _list(settings: Settings, status: str | None, limit: int) -> list[dict[str, Any]]:
    async with open_app(settings) as ctx, ctx.sessions() as session:
        return await list_messages(session=session, status=status, limit=limit)


async def _retry(settings: Settings, ids: list[int] | None) -> int:
    async with open_app(settings) as ctx, ctx.sessions() as session, session.begin():
        return await retry_dead(session=session, ids=ids)


async def _stats(settings: Settings) -> dict[str, Any]:
    async with open_app(settings) as ctx, ctx.sessions() as session:
        by_status = await count_by_status(session=session)
        oldest = await oldest_due_age(session=session)
    return {"by_status": by_status, "oldest_due_seconds": round(oldest, 3)}
