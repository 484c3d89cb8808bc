"""The composition root: builds settings, engine, channels, scheduler and worker, and runs them.

Everything papertide runs is wired here and nowhere else; modules receive what
they need as arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.config import Settings
from bot.outbox.channel import Channel
from bot.outbox.queue import progress_saver
from bot.outbox.worker import Worker
from bot.platforms.console import ConsoleChannel
from bot.platforms.transport import AiohttpTransport
from bot.platforms.webhook import WebhookChannel
from bot.service.leader import Leadership
from bot.service.scheduler import PollSource, RunDueDigests, build_scheduler
from bot.store.engine import create_engine, is_sqlite, session_factory
from bot.store.migrate import upgrade
from bot.types import Platform

log = logging.getLogger(__name__)

# A long-running piece (web server, Slack Socket Mode, Discord gateway…): runs until stop.
Service = Callable[["AppContext", asyncio.Event], Awaitable[None]]


@dataclass
class AppContext:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    leader: Leadership | None = None  # set by run_service; /healthz reads leader.state()
    channels: dict[Platform, Channel] = field(default_factory=dict)
    readers: async_sessionmaker[AsyncSession] | None = None  # read-only (SQLite: deferred)

    @property
    def read_sessions(self) -> async_sessionmaker[AsyncSession]:
        """Sessions for pure reads (public pages): never wait for SQLite's write lock."""
        return self.readers or self.sessions


@asynccontextmanager
async def open_app(settings: Settings, *, migrate: bool = True) -> AsyncIterator[AppContext]:
    """Open the store (migrating it first) and yield the wired context."""
    if migrate:
        await upgrade(settings.database_url)
    engine = create_engine(settings.database_url)
    # On SQLite, reads get their own engine that begins DEFERRED (a WAL snapshot);
    # PostgreSQL's MVCC needs no such split.
    reader = create_engine(settings.database_url, read_only=True) if is_sqlite(engine) else None
    try:
        yield AppContext(
            settings=settings,
            engine=engine,
            sessions=session_factory(engine),
            readers=session_factory(reader) if reader is not None else None,
        )
    finally:
        if reader is not None:
            await reader.dispose()
        await engine.dispose()


def build_channels(
    settings: Settings,
    *,
    http: httpx.AsyncClient,
    sessions: async_sessionmaker[AsyncSession] | None = None,
) -> dict[Platform, Channel]:
    """The delivery channels, registered explicitly by platform; each chat or mail
    adapter only when its credentials are set (see adapter_status). Adapters are
    imported here, lazily, so commands that never deliver do not load their SDKs."""
    channels: dict[Platform, Channel] = {
        Platform.CONSOLE: ConsoleChannel(settings.console_out),
        Platform.WEBHOOK: WebhookChannel(http),
    }
    on = {name for name, enabled, _ in adapter_status(settings) if enabled}
    if "slack" in on:
        from bot.platforms.slack.channel import SlackChannel

        saver = progress_saver(sessions) if sessions is not None else None
        channels[Platform.SLACK] = SlackChannel.from_settings(settings, save_progress=saver)
    if "discord" in on:
        from bot.platforms.discord.channel import DiscordChannel

        saver = progress_saver(sessions) if sessions is not None else None
        channels[Platform.DISCORD] = DiscordChannel.from_settings(settings, save_progress=saver)
    if "email" in on:
        from bot.outbox.bounces import store_bounce_counter
        from bot.platforms.email.channel import EmailChannel

        counter = store_bounce_counter(sessions) if sessions is not None else None
        channels[Platform.EMAIL] = EmailChannel.from_settings(
            settings, count_bounce=counter, connections=2
        )
    return channels


async def close_channels(channels: Mapping[Platform, Channel]) -> None:
    """Close what channels hold open (SMTP connections, HTTP clients)."""
    for channel in channels.values():
        closer = getattr(channel, "close", None) or getattr(channel, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()


def delivery_http_client(settings: Settings) -> httpx.AsyncClient:
    """The HTTP client channels share: httpx's API on aiohttp's cheaper engine."""
    transport = AiohttpTransport(max_connections=max(4, settings.worker_concurrency))
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(10.0, connect=5.0))


def adapter_status(settings: Settings) -> list[tuple[str, bool, str]]:
    """(adapter, on?, the variable that turns it on) for `papertide serve`'s banner."""
    smtp_set = "smtp_host" in settings.model_fields_set
    return [
        ("console", True, "PAPERTIDE_CONSOLE_OUT"),
        ("webhook", True, "(always on: targets with platform=webhook)"),
        ("slack", settings.slack_bot_token is not None, "PAPERTIDE_SLACK_BOT_TOKEN"),
        ("discord", settings.discord_token is not None, "PAPERTIDE_DISCORD_TOKEN"),
        ("email", smtp_set, "PAPERTIDE_SMTP_HOST"),
    ]


async def _poll_unwired(source: str) -> None:
    log.warning("scheduler.poll_unwired", extra={"source": source})


async def _digests_unwired(now: datetime) -> int:
    log.warning("scheduler.digests_unwired", extra={"now": now.isoformat()})
    return 0


async def run_service(
    ctx: AppContext,
    *,
    with_scheduler: bool,
    with_worker: bool,
    extra_services: Sequence[Service] = (),
    poll_source: PollSource | None = None,
    run_due_digests: RunDueDigests | None = None,
    channels: Mapping[Platform, Channel] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run the chosen pieces until SIGTERM/SIGINT (or `stop`), then shut down in order.

    Shutdown: the scheduler stops firing, the worker stops claiming and drains, extra
    services see `stop` and return, the leader lock is released.
    """
    settings = ctx.settings
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    scheduler = None
    try:
        async with delivery_http_client(settings) as http:
            ctx.channels = (
                dict(channels)
                if channels is not None
                else build_channels(settings, http=http, sessions=ctx.sessions)
            )
            ctx.leader = Leadership(ctx.engine)
            pieces: list[Awaitable[None]] = []
            if with_scheduler:
                pieces.append(ctx.leader.run(stop))
                scheduler = build_scheduler(
                    settings=settings,
                    leader=ctx.leader,
                    poll_source=poll_source or _poll_unwired,
                    run_due_digests=run_due_digests or _digests_unwired,
                )
                scheduler.start()
            if with_worker:
                worker = Worker(sessions=ctx.sessions, channels=ctx.channels, settings=settings)
                pieces.append(worker.run(stop))
            pieces.extend(service(ctx, stop) for service in extra_services)
            log.info("service.start", extra={"scheduler": with_scheduler, "worker": with_worker})
            await _run_until_stopped(pieces, stop)
    finally:
        await close_channels(ctx.channels)
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        log.info("service.stop")


async def _run_until_stopped(pieces: Sequence[Awaitable[None]], stop: asyncio.Event) -> None:
    # Runs until stop; one piece failing stops the others cleanly, then its error propagates.
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
