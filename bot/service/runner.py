"""Running long-lived pieces together until a signal, one failure stopping them all."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Iterator, Sequence
from typing import Any


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set `stop` while the block runs."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


async def run_until_stopped(pieces: Sequence[Awaitable[None]], stop: asyncio.Event) -> None:
    """Run until `stop`; one piece failing stops the others cleanly, then its error propagates."""
    tasks: list[asyncio.Future[Any]] = [asyncio.ensure_future(p) for p in pieces]
    tasks.append(asyncio.ensure_future(stop.wait()))
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        stop.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, Exception):
                raise result
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
