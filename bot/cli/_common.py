"""Shared CLI plumbing: settings, running coroutines, JSON output, one-line errors."""

from __future__ import annotations

import asyncio
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
    """Run one coroutine; a PapertideError becomes one line on stderr and exit 1."""
    try:
        return asyncio.run(coro)
    except PapertideError as exc:
        fail(str(exc))


def fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")
