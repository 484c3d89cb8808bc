"""The composition root's wiring: which real piece fills each seam.

Chat commands, web pages, the scheduler and `serve` take small callables rather than
importing their neighbours; this module is the one place that says which
implementation each gets (`bot.app` runs them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.catalog.stats import load_topic_momentum
from bot.chat.commands import CommandDeps
from bot.config import Settings
from bot.ingest.poll import OnNewMatches, build_http, run_poll
from bot.matching import engine as matching
from bot.matching.query import format_query, parse_query
from bot.outbox.fanout import enqueue_matches
from bot.outbox.payloads import paper_payload
from bot.service.root import AppContext, Service
from bot.service.scheduler import PollSource, RunDueDigests
from bot.subscriptions.optin import chat_digest_hook
from bot.timeutil import utcnow
from bot.types import Match
from bot.web.app import build_web_app, serve_web
from bot.web.common import Momentum
from digests.links import links_for
from digests.schedule import enqueue_due_digests


def validate_query(expr: str) -> str:
    """The canonical form of a query, or QueryError with its position."""
    return format_query(parse_query(expr))


async def try_query(session: AsyncSession, expr: str) -> tuple[int, Sequence[Mapping[str, Any]]]:
    """`alert test`: papers of the last four weeks a query would have matched."""
    trial = await matching.test_query(session=session, expr=expr, weeks=4, limit=5)
    hits = [{**paper_payload(hit.paper), "terms": list(hit.terms)} for hit in trial.hits]
    return trial.count, hits


def topic_momentum(settings: Settings) -> Momentum:
    """`(session, slug, now) -> dict | None` for the topic page's Momentum box."""

    async def momentum(session: AsyncSession, slug: str, now: datetime) -> dict[str, Any] | None:
        return await load_topic_momentum(session=session, slug=slug, as_of=now, settings=settings)

    return momentum


def command_deps(settings: Settings) -> CommandDeps:
    """Everything `/papers` needs besides the store, for Slack and Discord alike."""
    momentum = topic_momentum(settings)

    async def momentum_line(session: AsyncSession, slug: str) -> str | None:
        found = await momentum(session, slug, utcnow())
        return str(found["line"]) if found else None

    return CommandDeps(
        validate_query=validate_query,
        test_query=try_query,
        momentum_line=momentum_line,
        request_digest=chat_digest_hook(settings),
        channel_changes=settings.channel_changes,
        command=settings.slack_command,
    )


def web_service(host: str, port: int) -> Service:
    """The web server: topic pages, email flows, /healthz, /metrics and /slack/events."""

    async def serve(ctx: AppContext, stop: asyncio.Event) -> None:
        settings = ctx.settings
        routes = []
        if settings.slack_bot_token is not None:
            from bot.platforms.slack.app import build_slack_app, install_slack_routes

            bolt = build_slack_app(
                settings=settings, sessions=ctx.sessions, deps=command_deps(settings)
            )
            routes.append(lambda app: install_slack_routes(app, bolt))

        def leader_state() -> str:
            return str(ctx.leader.state()["role"]) if ctx.leader is not None else "unknown"

        app = build_web_app(
            ctx, momentum=topic_momentum(settings), extra_routes=routes, leader_state=leader_state
        )
        runner = await serve_web(app, host, port)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    return serve


async def _slack_socket_mode(ctx: AppContext, stop: asyncio.Event) -> None:
    from bot.platforms.slack.app import build_slack_app, run_socket_mode

    bolt = build_slack_app(
        settings=ctx.settings, sessions=ctx.sessions, deps=command_deps(ctx.settings)
    )
    await _until_stopped(run_socket_mode(ctx.settings, bolt), stop)


async def _discord_gateway(ctx: AppContext, stop: asyncio.Event) -> None:
    from bot.platforms.discord.app import run_discord

    await _until_stopped(run_discord(ctx.settings, ctx.sessions, command_deps(ctx.settings)), stop)


async def _until_stopped(work: Coroutine[Any, Any, None], stop: asyncio.Event) -> None:
    # A bot runs until cancelled; papertide stops it when the service stops.
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    if not task.done():
        task.cancel()
    waiter.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def serve_services(settings: Settings, host: str, port: int) -> list[Service]:
    """What `papertide serve` runs beside the scheduler and a worker."""
    services = [web_service(host, port)]
    if settings.slack_bot_token is not None and settings.slack_app_token is not None:
        services.append(_slack_socket_mode)
    if settings.discord_token is not None:
        services.append(_discord_gateway)
    return services


def fan_out_to(settings: Settings) -> OnNewMatches:
    """Ingest's hook: new matches become outbox rows, in the ingest batch's transaction."""

    async def fan_out(session: AsyncSession, matches: list[Match]) -> None:
        await enqueue_matches(session=session, matches=matches, settings=settings, now=utcnow())

    return fan_out


def scheduler_jobs(ctx: AppContext) -> tuple[PollSource, RunDueDigests]:
    """The scheduler's two jobs: poll one source (then fan out), enqueue due digests."""
    settings = ctx.settings
    http = build_http(settings)  # one client and ONE arXiv limiter for every source
    fan_out = fan_out_to(settings)

    async def poll_source(name: str) -> None:
        await run_poll(
            settings=settings,
            sessions=ctx.sessions,
            source_name=name,
            http=http,
            on_new_matches=fan_out,
        )

    links = links_for(settings)

    async def run_due_digests(now: datetime) -> int:
        async with ctx.sessions() as session:
            return await enqueue_due_digests(
                session=session, now=now, settings=settings, links=links
            )

    return poll_source, run_due_digests
