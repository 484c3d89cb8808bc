"""The composition root: the ONE place that builds papertide's pieces and wires them.

Every entry point (the CLI's commands, `serve`, `worker`, the demo, bench/ and the
tests) opens `open_papertide(settings)` and calls its methods; lower layers receive
what they need as arguments (a session factory, settings, a callable), never the root.
What the root opens (the store, HTTP clients, channels) it closes at exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import httpx
from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from bot import collector
from bot.ask.service import Asker
from bot.catalog.emerging_store import EmergingReport, ensure_emerging, refresh_emerging
from bot.catalog.momentum import last_complete_week
from bot.catalog.sync import SyncReport, sync_catalog
from bot.chat.commands import CommandDeps
from bot.chat.queue import CommandWork
from bot.config import Settings
from bot.ingest.http import HttpDeps, build_http
from bot.ingest.poll import OnNewMatches, OnProgress, PollResult, run_backfill, run_poll
from bot.ingest.sources.base import Source
from bot.matching.live import LiveEngine
from bot.outbox.channel import Channel
from bot.outbox.drain import deliver_until_idle
from bot.outbox.fanout import enqueue_matches
from bot.outbox.pacing import build_pacing
from bot.outbox.worker import Worker
from bot.platforms.registry import PlatformContext, RouteInstaller, build_channels, build_parts
from bot.service.ask_deps import build_asker, model_client, model_config
from bot.service.chat_deps import build_command_work, command_deps, topic_momentum
from bot.service.checks import require_secret_key
from bot.service.indexer import Indexer
from bot.service.leader import Leadership
from bot.service.runner import run_until_stopped, stop_on_signals
from bot.service.scheduler import build_scheduler
from bot.service.web import serve_web_until
from bot.store.store import Store, open_store
from bot.timeutil import utcnow
from bot.types import Match, Platform
from bot.web.app import build_health_app, build_web_app
from digests.links import links_for
from digests.schedule import enqueue_due_digests
from digests.training import train_marked

if TYPE_CHECKING:
    from bot.platforms.transport import AiohttpTransport

log = logging.getLogger(__name__)


@dataclass
class Papertide:
    """One process's papertide: settings, the store, and the operations entry points run.

    Built by `open_papertide`; HTTP clients and channels are created on first use.
    """

    settings: Settings
    store: Store
    _stack: AsyncExitStack
    _sources_http: HttpDeps | None = None
    _delivery_http: httpx.AsyncClient | None = None
    _delivery_transport: AiohttpTransport | None = None
    _channels: dict[Platform, Channel] | None = None
    _asker: Asker | None = None
    _commands: CommandWork | None = None
    leader: Leadership | None = field(default=None)
    # Compiled once, then kept current before each poll from the store's change feed.
    matcher: LiveEngine = field(default_factory=LiveEngine)
    _indexer: Indexer | None = None

    # --- ingest ---------------------------------------------------------------------------

    def sources_http(self) -> HttpDeps:
        """The HTTP client and the ONE arXiv limiter every source of this process shares."""
        if self._sources_http is None:
            self._sources_http = build_http(self.settings)
            self._stack.push_async_callback(self._sources_http.client.aclose)
        return self._sources_http

    def fan_out(self) -> OnNewMatches:
        """Ingest's hook: new matches become outbox rows, in the ingest batch's transaction."""
        settings = self.settings

        async def fan_out(session: AsyncSession, matches: list[Match]) -> None:
            await enqueue_matches(session=session, matches=matches, settings=settings, now=utcnow())

        return fan_out

    def indexer(self) -> Indexer:
        """The full-text indexer: ingest queues papers, this indexes them after the commit."""
        if self._indexer is None:
            self._indexer = Indexer(self.store.sessions)
        return self._indexer

    async def sync_catalog(self) -> SyncReport:
        """Sync the topic catalog (PAPERTIDE_TOPICS_FILE) into the store; run at every start."""
        async with self.store.sessions() as session, session.begin():
            return await sync_catalog(session=session, path=self.settings.topics_file)

    async def poll(
        self,
        source_name: str,
        *,
        source: Source | None = None,
        on_progress: OnProgress | None = None,
    ) -> PollResult:
        """Poll one source once, fan-out included: the scheduler's job, `poll --once`, the demo."""
        await self.matcher.refresh(self.store.sessions)
        result = await run_poll(
            settings=self.settings,
            sessions=self.store.sessions,
            source_name=source_name,
            http=self.sources_http(),
            matcher=self.matcher,
            on_new_matches=self.fan_out(),
            source=source,
            on_progress=on_progress,
        )
        # Also what an earlier run queued and did not index (it crashed, or ran elsewhere).
        await self.indexer().after_ingest()
        return result

    async def backfill(
        self, weeks: int, source_name: str = "arxiv", *, on_progress: OnProgress | None = None
    ) -> PollResult:
        """Fill `weeks` of history for momentum. History is not news: no alerts are sent."""
        await self.matcher.refresh(self.store.sessions)
        result = await run_backfill(
            settings=self.settings,
            sessions=self.store.sessions,
            weeks=weeks,
            source_name=source_name,
            http=self.sources_http(),
            matcher=self.matcher,
            on_progress=on_progress,
        )
        await self.indexer().after_ingest()
        return result

    async def refresh_emerging(self, now: datetime | None = None) -> EmergingReport:
        """This week's emerging phrases, recomputed and stored; last week's made final
        once (the leader's job after polls that stored papers)."""
        now = now or utcnow()
        sessions, settings = self.store.sessions, self.settings
        await ensure_emerging(
            sessions=sessions, week=last_complete_week(now), now=now, settings=settings
        )
        return await refresh_emerging(sessions=sessions, now=now, settings=settings)

    # --- digests ----------------------------------------------------------------------------

    async def enqueue_due_digests(self, now: datetime) -> int:
        """The scheduler's digest job: everyone whose local weekday and hour has come."""
        async with self.store.sessions() as session:
            return await enqueue_due_digests(
                session=session, now=now, settings=self.settings, links=links_for(self.settings)
            )

    async def train_tastes(self, now: datetime) -> int:
        """The scheduler's training job: the ranking models of people who reacted."""
        async with self.store.sessions() as session:
            return await train_marked(session=session, now=now, settings=self.settings)

    # --- delivery ---------------------------------------------------------------------------

    def delivery_http(self) -> httpx.AsyncClient:
        """The HTTP client channels share: httpx's API on aiohttp's cheaper engine."""
        if self._delivery_http is None:
            from bot.platforms.transport import AiohttpTransport

            transport = AiohttpTransport(max_connections=max(4, self.settings.worker_concurrency))
            self._delivery_transport = transport
            self._delivery_http = httpx.AsyncClient(
                transport=transport, timeout=httpx.Timeout(10.0, connect=5.0)
            )
            self._stack.push_async_callback(self._delivery_http.aclose)
        return self._delivery_http

    def asker(self) -> Asker:
        """The one `Asker` (questions about topics), with the model's client when one is set."""
        if self._asker is None:
            http = None
            if model_config(self.settings) is not None:
                http = model_client(self.settings)
                self._stack.push_async_callback(http.aclose)
            self._asker = build_asker(self.settings, self.store.read_sessions, http)
        return self._asker

    def command_deps(self) -> CommandDeps:
        """Everything `/papers` needs besides the store, for Slack and Discord alike."""
        return command_deps(self.settings, asker=self.asker())

    def command_work(self) -> CommandWork:
        """The one command queue (its own thread, loop and engine); drained at exit."""
        if self._commands is None:
            self._commands = build_command_work(self.settings.database_url)
            self._stack.push_async_callback(self._commands.queue.close)
        return self._commands

    def platform_context(self, *, chat: bool = False) -> PlatformContext:
        return PlatformContext(
            settings=self.settings,
            sessions=self.store.sessions,
            http=self.delivery_http(),
            direct_http=self._delivery_transport,
            command_deps=self.command_deps() if chat else None,
            commands=self.command_work() if chat else None,
        )

    def channels(self) -> dict[Platform, Channel]:
        """One channel per platform that is on (registry order), closed at exit."""
        if self._channels is None:
            self._channels = build_channels(self.platform_context())
            self._stack.push_async_callback(_close_channels, self._channels)
        return self._channels

    def worker(self, channels: Mapping[Platform, Channel] | None = None) -> Worker:
        """A delivery worker; its pacing is shared through the store when settings say so."""
        return Worker(
            sessions=self.store.sessions,
            channels=channels if channels is not None else self.channels(),
            settings=self.settings,
            pacer=build_pacing(self.settings, self.store.sessions, self.store.dialect),
        )

    async def deliver_until_idle(
        self, channels: Mapping[Platform, Channel] | None = None, *, limit_seconds: float = 60.0
    ) -> int:
        """Deliver what is due now, then return (the demo, one-shot runs, tests)."""
        return await deliver_until_idle(
            sessions=self.store.sessions,
            settings=self.settings,
            channels=channels if channels is not None else self.channels(),
            limit_seconds=limit_seconds,
        )

    # --- long-running ----------------------------------------------------------------------

    async def run_worker(
        self, stop: asyncio.Event | None = None, *, health: tuple[str, int] | None = None
    ) -> None:
        """`papertide worker`: deliver outbox rows until SIGTERM/SIGINT (or `stop`).

        `health` (host, port) serves the worker's own /healthz there: 200 while its store
        answers, 503 while it backs off an outage (and no answer if its loop is stuck).
        """
        require_secret_key(self.settings)
        stop = stop or asyncio.Event()
        worker = self.worker()
        pieces: list[Awaitable[None]] = [worker.run(stop)]
        if health is not None:

            def state() -> dict[str, object]:
                return {
                    "status": "ok" if worker.health.ok else "unhealthy",
                    "role": "worker",
                    "owner": worker.owner,
                    "in_flight": worker.in_flight,
                    **worker.health.state(),
                }

            app = build_health_app(settings=self.settings, state=state)
            pieces.append(serve_web_until(app, health[0], health[1], stop))
        with stop_on_signals(stop):
            await run_until_stopped(pieces, stop)

    def web_app(
        self,
        routes: Sequence[RouteInstaller] = (),
        *,
        clock: Callable[[], datetime] = utcnow,
        page_cache_seconds: float = 30.0,
    ) -> web.Application:
        """Topic pages, email flows, /healthz and /metrics, plus the chat apps' routes."""

        def leader_state() -> str:
            # No Leadership: this process runs no scheduler (a test, or the web app alone).
            return str(self.leader.state()["role"]) if self.leader else "single-process"

        return build_web_app(
            settings=self.settings,
            store=self.store,
            momentum=topic_momentum(self.settings),
            asker=self.asker(),
            extra_routes=routes,
            leader_state=leader_state,
            clock=clock,
            page_cache_seconds=page_cache_seconds,
        )

    async def serve(self, host: str, port: int, stop: asyncio.Event | None = None) -> None:
        """`papertide serve`: the scheduler (as leader), the indexer, a worker, the web app
        and the bots.

        Shutdown: the scheduler stops firing, the worker stops claiming and drains, the
        web server and bots see `stop` and return, the leader lock is released. A bot that
        answers through its own client (Discord) refuses new commands and answers those it
        took before closing it (bot.platforms.stop.InFlight, at most DRAIN_SECONDS); then
        the command queue drains what is left (Slack's answers go over its own thread).
        """
        require_secret_key(self.settings)
        stop = stop or asyncio.Event()
        await self.sync_catalog()
        self.leader = Leadership(self.store.engine)
        parts = build_parts(self.platform_context(chat=True))
        scheduler = build_scheduler(
            settings=self.settings,
            leader=self.leader,
            poll_source=self._poll_job,
            run_due_digests=self.enqueue_due_digests,
            train_tastes=self.train_tastes,
        )
        pieces: list[Awaitable[None]] = [
            self.leader.run(stop),
            self.indexer().run(stop),
            self.worker().run(stop),
            serve_web_until(self.web_app([r for p in parts for r in p.routes]), host, port, stop),
        ]
        pieces += [service(stop) for p in parts for service in p.services]
        with stop_on_signals(stop):
            scheduler.start()
            try:
                log.info("service.start", extra={"host": host, "port": port})
                await run_until_stopped(pieces, stop)
            finally:
                scheduler.shutdown(wait=False)
                # The web server and bots are down: no new command. Those accepted are
                # answered (from the queue's thread) before the store closes.
                await self.command_work().queue.close()
                log.info("service.stop")

    async def _poll_job(self, source_name: str) -> None:
        result = await self.poll(source_name)
        if result.new or result.updated:
            try:
                await self.refresh_emerging()
            except Exception:  # the next poll tries again; the poll itself succeeded
                log.exception("emerging.refresh_failed", extra={"source": source_name})


async def _close_channels(channels: Mapping[Platform, Channel]) -> None:
    """Close what channels hold open (SMTP connections, HTTP clients)."""
    for channel in channels.values():
        closer = getattr(channel, "close", None) or getattr(channel, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()


@asynccontextmanager
async def open_papertide(settings: Settings, *, migrate: bool = True) -> AsyncIterator[Papertide]:
    """Open the store (migrating it first) and yield the root; close everything at exit."""
    collector.raise_thresholds()  # see bot/collector.py: ingest's young collections
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(settings.database_url, migrate=migrate))
        yield Papertide(settings=settings, store=store, _stack=stack)


__all__ = ["Papertide", "open_papertide"]
