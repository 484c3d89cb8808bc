"""Shared CLI plumbing: settings, running coroutines, JSON output, one-line errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError

from bot.config import Settings
from bot.errors import PapertideError

T = TypeVar("T")


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        name = "PAPERTIDE_" + str(err["loc"][0]).upper() if err["loc"] else "settings"
        fail(f"{name}: {err['msg']}")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine; a PapertideError becomes one line on stderr and exit 1.

    Unlike `asyncio.run`, shutdown is bounded: a task that ignores cancellation (a
    library's background task, say) is named on stderr instead of hanging the command.
    """
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
