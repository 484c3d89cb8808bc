"""Discord adapter: the gateway client, `sync`, the invite URL.

Dependencies (sessions, CommandDeps, the command queue) are built by the composition
root and passed to the constructor. The `/papers` group is in commands.py, each
command answered by reply.answer_command: its work runs on the command queue's thread
(bot.chat.queue); this loop awaits its Reply and answers (Discord's HTTP client lives
here). Changing a channel needs the Manage Channels permission (resolved for the
member in that channel) unless PAPERTIDE_CHANNEL_CHANGES=everyone. Clicks on the
alerts' "More / Less like this" buttons arrive as component interactions and go to
`buttons.answer_button` (`PapersBot.on_interaction`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

import discord
from discord import app_commands
from discord.http import Route
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.commands import CommandDeps
from bot.chat.queue import CommandWork
from bot.config import Settings
from bot.errors import ConfigError
from bot.platforms.discord.buttons import answer_button, is_ours
from bot.platforms.discord.commands import PapersGroup
from bot.platforms.discord.render import clean
from bot.platforms.discord.reply import context_for
from bot.platforms.stop import InFlight, until_stopped

log = logging.getLogger(__name__)

# Threads: `/papers ask … post: thread` opens one on the question it posts.
INVITE_PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    embed_links=True,
    create_public_threads=True,
    send_messages_in_threads=True,
)


def use_discord_api_url(url: str) -> None:
    """Point discord.py's REST calls at `url` (PAPERTIDE_DISCORD_API_URL).

    discord.py keeps its base URL in the class constant `Route.BASE` and offers no
    per-client setting, so the composition root sets it once, before any client exists.
    """
    Route.BASE = url.rstrip("/")


class PapersBot(discord.Client):
    """The gateway client: guild intents only, one command tree holding the `papers` group."""

    def __init__(
        self,
        *,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession] | None,
        deps: CommandDeps | None,
        work: CommandWork | None = None,
    ) -> None:
        options: dict[str, Any] = {}
        if settings.discord_application_id:
            options["application_id"] = int(settings.discord_application_id)
        super().__init__(intents=discord.Intents(guilds=True), **options)
        self.tree = app_commands.CommandTree(self)
        self.in_flight = InFlight()  # commands and clicks taken and not answered yet
        self.group = PapersGroup(sessions=sessions, deps=deps, work=work, in_flight=self.in_flight)
        self.tree.add_command(self.group)
        self.work = work

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        """The "More / Less like this" buttons (the tree answers slash commands itself)."""
        if self.work is not None and is_ours(interaction):
            async with self.in_flight.track():
                await answer_button(interaction, context_for(interaction), self.work)

    async def serve_until(self, connection: Coroutine[Any, Any, None], stop: asyncio.Event) -> None:
        """Run `connection` (the gateway) until `stop`; then answer what was taken (at
        most DRAIN_SECONDS) before the caller closes this client: a command whose work
        is done must not lose its reply because the HTTP session closed under it."""
        await until_stopped(connection, stop, settle=self.in_flight.settle)


def _token(settings: Settings) -> str:
    if settings.discord_token is None:
        raise ConfigError(
            "Discord needs PAPERTIDE_DISCORD_TOKEN", variable="PAPERTIDE_DISCORD_TOKEN"
        )
    return settings.discord_token.get_secret_value()


async def run_discord(
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    deps: CommandDeps,
    work: CommandWork,
    stop: asyncio.Event,
) -> None:
    """Connect to the gateway and answer `/papers` until `stop`, then answer the commands
    already taken and close; never syncs commands."""
    use_discord_api_url(settings.discord_api_url)
    async with PapersBot(settings=settings, sessions=sessions, deps=deps, work=work) as bot:
        await bot.serve_until(bot.start(_token(settings)), stop)


async def sync_commands(settings: Settings) -> list[str]:
    """Register the command group with Discord (explicitly: creations are limited per day)."""
    use_discord_api_url(settings.discord_api_url)
    async with PapersBot(settings=settings, sessions=None, deps=None) as bot:
        await bot.login(_token(settings))
        synced = await bot.tree.sync()
    return [command.name for command in synced]


def invite_url(settings: Settings) -> str:
    """The OAuth2 URL that adds the bot with the least permissions it needs."""
    if not settings.discord_application_id:
        raise ConfigError(
            "set PAPERTIDE_DISCORD_APPLICATION_ID", variable="PAPERTIDE_DISCORD_APPLICATION_ID"
        )
    return discord.utils.oauth_url(
        settings.discord_application_id,
        permissions=INVITE_PERMISSIONS,
        scopes=("bot", "applications.commands"),
    )


__all__ = ["PapersBot", "PapersGroup", "clean", "invite_url", "run_discord", "sync_commands"]
