"""Discord's registry entry: the channel and the gateway connection for `/papers`."""

from __future__ import annotations

import asyncio

from bot.outbox.queue import progress_saver
from bot.platforms.discord.app import run_discord
from bot.platforms.discord.channel import DiscordChannel
from bot.platforms.registry import Parts, PlatformContext


def build_channel(ctx: PlatformContext) -> DiscordChannel:
    return DiscordChannel.from_settings(ctx.settings, save_progress=progress_saver(ctx.sessions))


def build_parts(ctx: PlatformContext) -> Parts:
    assert ctx.command_deps is not None
    assert ctx.commands is not None
    deps, work = ctx.command_deps, ctx.commands

    async def gateway(stop: asyncio.Event) -> None:
        await run_discord(ctx.settings, ctx.sessions, deps, work, stop)

    return Parts(services=[gateway])
