"""Shared CLI plumbing: settings, running a coroutine on the composition root, JSON
output, one-line errors. Imports stay light: `papertide --help` loads no store, no SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.service.root import Papertide

T = TypeVar("T")
JSON_OPTION = typer.Option(False, "--json", help="Print one JSON document.")


def load_settings() -> Settings:
    """Settings from the environment and papertide.toml; a bad value is one line, exit 1."""
    from pydantic import ValidationError

    from bot.config import Settings

    try:
        return Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        name = "PAPERTIDE_" + str(err["loc"][0]).upper() if err["loc"] else "settings"
        fail(f"{name}: {err['msg']}")


def with_root(op: Callable[[Papertide], Awaitable[T]], settings: Settings | None = None) -> T:
    """Open the composition root, run `op` on it, close everything: one CLI command."""

    async def go() -> T:
        from bot.service.root import open_papertide

        async with open_papertide(settings or load_settings()) as root:
            return await op(root)

    return run(go())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine; a PapertideError becomes one line on stderr and exit 1.

    Unlike `asyncio.run`, shutdown is bounded: a task that ignores cancellation (a
    library's background task, say) is named on stderr instead of hanging the command.
    """
    from bot.errors import PapertideError

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    except PapertideError as exc:
        fail(str(exc))
    finally:
        _shutdown(loop)


def _shutdown(loop: asyncio.AbstractEventLoop, grace: float = 5.0) -> None:
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        _, late = loop.run_until_complete(asyncio.wait(pending, timeout=grace))
        for task in late:
            sys.stderr.write(f"warning: still running at exit, abandoned: {task!r}\n")
    loop.run_until_complete(loop.shutdown_asyncgens())
    with contextlib.suppress(TimeoutError):
        loop.run_until_complete(asyncio.wait_for(loop.shutdown_default_executor(), grace))
    loop.close()


def fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")


def config_problem_line(problem: dict[str, Any]) -> str:
    """One line for an operator: delivery is stuck on our own set-up, not on recipients."""
    return (
        f"CONFIGURATION PROBLEM: {problem['waiting']} message(s) wait because the mail relay"
        f" refused our set-up ({problem['error']}); check PAPERTIDE_SMTP_* and"
        " PAPERTIDE_MAIL_FROM"
    )
