"""Slack adapter: the slack-bolt AsyncApp for `/papers`, its buttons and events.

Bolt verifies every HTTP request (signing secret, 5-minute replay window → 401). The
listeners are in commands.py (the slash command, Unfollow / Mute), reactions.py (More /
Less like this) and events.py; their work after the ack runs on the bounded command
queue. Bolt's listener runner returns the HTTP 200 as soon as `ack()` is called, so
Slack's 3-second limit never depends on the database.

Tenancy: the app is installed in one workspace; a request whose `team_id` differs from
the installation's (from `auth.test`) is refused, and every row a command touches is
keyed by the request's own team id.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.commands import CommandDeps
from bot.chat.queue import CommandWork
from bot.config import Settings
from bot.errors import ConfigError
from bot.platforms.slack.commands import CommandHandlers, channel_checker
from bot.platforms.slack.events import CHANNEL_GONE_EVENTS, GONE_EVENTS, EventHandlers
from bot.platforms.slack.reactions import ReactionHandlers
from bot.platforms.slack.render import (
    LESS_ACTION,
    MORE_ACTION,
    MUTE_ALERT_ACTION,
    OPEN_ABSTRACT_ACTION,
    UNDO_REACTION_ACTION,
    UNFOLLOW_ACTION,
)
from bot.platforms.slack.respond import ThreadHttp, web_client
from bot.platforms.slack.route import EVENTS_PATH, install_slack_routes

__all__ = [
    "CHANNEL_GONE_EVENTS",
    "EVENTS_PATH",
    "GONE_EVENTS",
    "build_slack_app",
    "install_slack_routes",
    "run_socket_mode",
]


async def _ack_only(ack: Any) -> None:
    await ack()


def build_slack_app(
    *,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    deps: CommandDeps,
    work: CommandWork,
    client: AsyncWebClient | None = None,
) -> AsyncApp:
    """The Bolt app with the `/papers` command, the alert's buttons and the events we act on;
    commands and buttons run in `work`'s queue, events on `sessions`."""
    if settings.slack_bot_token is None or settings.slack_signing_secret is None:
        raise ConfigError(
            "Slack needs PAPERTIDE_SLACK_BOT_TOKEN and PAPERTIDE_SLACK_SIGNING_SECRET",
            variable="PAPERTIDE_SLACK_SIGNING_SECRET",
        )
    if not settings.slack_signing_secret.get_secret_value().strip():
        # An empty secret would make every forged signature verify with HMAC("").
        raise ConfigError(
            "PAPERTIDE_SLACK_SIGNING_SECRET is empty; copy the app's signing secret",
            variable="PAPERTIDE_SLACK_SIGNING_SECRET",
        )
    client = client or web_client(settings)
    app = AsyncApp(
        signing_secret=settings.slack_signing_secret.get_secret_value(),
        client=client,
        name="papertide",
        # Our listeners only queue work and ack, so Bolt may await them before answering
        # instead of running them in a task and polling for the ack every 10 ms.
        process_before_response=True,
    )
    http = ThreadHttp(settings)
    work.queue.at_stop(http.close)
    commands = CommandHandlers(
        deps=replace(deps, check_channel=channel_checker(http), command=settings.slack_command),
        work=work,
        http=http,
        client=client,
    )
    reactions = ReactionHandlers(work=work, http=http)
    events = EventHandlers(sessions=sessions)
    app.middleware(events.skip_seen_events)
    app.command(settings.slack_command)(commands.on_command)
    app.action(UNFOLLOW_ACTION)(commands.on_button)
    app.action(MUTE_ALERT_ACTION)(commands.on_button)
    for reaction_action in (MORE_ACTION, LESS_ACTION, UNDO_REACTION_ACTION):
        app.action(reaction_action)(reactions.on_reaction)
    # A link button opens its URL in the browser, yet Slack still posts the click here
    # and shows an error icon unless it is acknowledged. The catch-all (registered last:
    # Bolt runs the first listener that matches) does the same for the link buttons of
    # messages sent before they had an action id, which Slack names at random.
    app.action(OPEN_ABSTRACT_ACTION)(_ack_only)
    app.action(re.compile(".+"))(_ack_only)
    for name in (*GONE_EVENTS, *CHANNEL_GONE_EVENTS):
        app.event(name)(events.on_gone)
    return app


async def run_socket_mode(settings: Settings, bolt_app: AsyncApp) -> None:
    """Serve the same app over Socket Mode (no public URL) when an app-level token is set."""
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    if settings.slack_app_token is None:
        raise ConfigError(
            "Socket Mode needs PAPERTIDE_SLACK_APP_TOKEN", variable="PAPERTIDE_SLACK_APP_TOKEN"
        )
    handler = AsyncSocketModeHandler(bolt_app, settings.slack_app_token.get_secret_value())
    await handler.start_async()
