"""Slack's registry entry: the channel, the `/slack/events` route, Socket Mode."""

from __future__ import annotations

import asyncio

from aiohttp import web

from bot.outbox.queue import progress_saver
from bot.platforms.registry import Parts, PlatformContext
from bot.platforms.slack.app import build_slack_app, install_slack_routes, run_socket_mode
from bot.platforms.slack.channel import SlackChannel
from bot.platforms.stop import until_stopped


def build_channel(ctx: PlatformContext) -> SlackChannel:
    return SlackChannel.from_settings(ctx.settings, save_progress=progress_saver(ctx.sessions))


def build_parts(ctx: PlatformContext) -> Parts:
    """HTTP mode always (commands, buttons and events on /slack/events); Socket Mode too
    when an app-level token is set."""
    assert ctx.command_deps is not None
    assert ctx.commands is not None
    commands = ctx.commands
    bolt = build_slack_app(
        settings=ctx.settings, sessions=ctx.sessions, deps=ctx.command_deps, work=ctx.commands
    )

    async def socket_mode(stop: asyncio.Event) -> None:
        await until_stopped(run_socket_mode(ctx.settings, bolt), stop)

    services = [socket_mode] if ctx.settings.slack_app_token is not None else []
    assert ctx.settings.slack_signing_secret is not None  # build_slack_app checked it
    secret = ctx.settings.slack_signing_secret.get_secret_value()

    def routes(app: web.Application) -> None:
        install_slack_routes(
            app, bolt, signing_secret=secret, sessions=ctx.sessions, commands=commands.queue
        )

    return Parts(routes=[routes], services=services)
