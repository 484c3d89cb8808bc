"""Service commands: serve, worker, and the outbox operator commands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from bot.cli.common import (
    JSON_OPTION,
    config_problem_line,
    fail,
    load_settings,
    print_json,
    run,
    with_root,
)
from bot.types import OutboxStatus

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.service.root import Papertide

outbox = typer.Typer(help="Inspect and repair the outbox.", no_args_is_help=True)
STATUSES = tuple(OutboxStatus)


def serve(
    host: str = typer.Option("127.0.0.1", help="Address the web server listens on."),
    port: int = typer.Option(8080, help="Port the web server listens on."),
) -> None:
    """Run everything in one process: scheduler, a delivery worker, web and bots."""
    from bot.logs import setup_logging
    from bot.platforms.registry import status

    settings = _checked_settings(serve=True)
    setup_logging()
    for name, on, variable in status(settings):
        hint = "" if on else f"  (set {variable} to turn it on)"
        typer.echo(f"adapter {name:<8} {'on ' if on else 'off'}{hint}", err=True)
    _run_forever(settings, lambda root: root.serve(host, port))


def worker(
    concurrency: int = typer.Option(
        None, "--concurrency", min=1, help="Messages sent at once (default from settings)."
    ),
    health_port: int = typer.Option(
        None, "--health-port", min=1, max=65535, help="Serve /healthz (and /metrics) here."
    ),
    health_host: str = typer.Option("127.0.0.1", "--health-host", help="Address of /healthz."),
) -> None:
    """Deliver outbox messages only; run as many as you like on PostgreSQL."""
    from bot.logs import setup_logging

    settings = _checked_settings()
    if concurrency:
        settings = settings.model_copy(update={"worker_concurrency": concurrency})
    setup_logging()
    health = (health_host, health_port) if health_port else None
    _run_forever(settings, lambda root: root.run_worker(health=health))


def _checked_settings(*, serve: bool = False) -> Settings:
    """Settings a long-running process may start with (one line and exit 1 otherwise),
    checked before anything opens the store."""
    from bot.errors import ConfigError
    from bot.service.checks import require_secret_key, require_slack_secret

    settings = load_settings()
    try:
        require_secret_key(settings)
        if serve:
            require_slack_secret(settings)
    except ConfigError as exc:
        fail(str(exc))
    return settings


def _run_forever(settings: Settings, op: Any) -> None:
    async def go() -> None:
        from bot.service.root import open_papertide

        async with open_papertide(settings) as root:
            await op(root)

    run(go())


@outbox.command("list")
def outbox_list(
    status: str = typer.Option(None, "--status", help="One of: " + ", ".join(STATUSES)),
    limit: int = typer.Option(50, "--limit", min=1, help="Rows to show, newest first."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List outbox messages, newest first."""
    if status is not None and status not in STATUSES:
        fail(f"unknown status {status!r}; use one of: {', '.join(STATUSES)}")

    async def go(root: Papertide) -> list[dict[str, Any]]:
        from bot.outbox.reads import list_messages

        async with root.store.read_sessions() as session:
            return await list_messages(session=session, status=status, limit=limit)

    rows = with_root(go)
    if as_json:
        print_json(rows)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table("id", "status", "kind", "target", "attempts", "next attempt", "error", box=None)
    for r in rows:
        table.add_row(
            str(r["id"]), r["status"], r["kind"], str(r["target_id"]), str(r["attempts"]),
            r["next_attempt_at"],
            # Errors quote remote servers: never let them be read as rich markup.
            escape((r["last_error"] or "")[:60]),
        )  # fmt: skip
    Console().print(table)


@outbox.command("retry")
def outbox_retry(
    message_id: int = typer.Argument(None, help="Outbox id of a dead message."),
    dead: bool = typer.Option(False, "--dead", help="Retry every dead message."),
) -> None:
    """Give dead messages a fresh set of attempts."""
    if (message_id is None) == (not dead):
        fail("give one message id or --dead")

    async def go(root: Papertide) -> int:
        from bot.outbox.queue import retry_dead

        async with root.store.sessions() as session, session.begin():
            return await retry_dead(session=session, ids=None if dead else [message_id])

    n = with_root(go)
    if message_id is not None and n == 0:
        fail(f"message {message_id} is not dead (or does not exist)")
    typer.echo(f"{n} message(s) queued again")


@outbox.command("stats")
def outbox_stats(as_json: bool = JSON_OPTION) -> None:
    """Messages per status and the age of the oldest due message."""

    async def go(root: Papertide) -> dict[str, Any]:
        from bot.outbox.reads import configuration_problem, count_by_status, oldest_due_age

        async with root.store.read_sessions() as session:
            by_status = await count_by_status(session=session)
            oldest = await oldest_due_age(session=session)
            problem = await configuration_problem(session=session)
        return {
            "by_status": by_status,
            "oldest_due_seconds": round(oldest, 3),
            "configuration_problem": problem,
        }

    stats = with_root(go)
    if as_json:
        print_json(stats)
        return
    for state, n in stats["by_status"].items():
        typer.echo(f"{state:<8} {n}")
    typer.echo(f"oldest due message waiting: {stats['oldest_due_seconds']:.1f} s")
    if stats["configuration_problem"]:
        typer.echo(config_problem_line(stats["configuration_problem"]))
