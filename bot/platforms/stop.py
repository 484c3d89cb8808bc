"""Running a bot's own loop until papertide stops."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any


async def until_stopped(work: Coroutine[Any, Any, None], stop: asyncio.Event) -> None:
    """Run `work` (a bot that runs until cancelled) until it ends or `stop` is set."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    if not task.done():
        task.cancel()
    waiter.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
