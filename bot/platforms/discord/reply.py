"""Answering one Discord `/papers` command: its work on the command queue, then its reply.

Personal answers are ephemeral; commands that may pass Discord's 3-second window
(`alert test`, `topics`) defer first, and so does any command whose work is not done
within DEFER_AFTER s. A full queue (or a bot that is stopping) is answered "busy, try
again" at once. Every reply sets allowed_mentions to none.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import discord
from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat.commands import CommandContext, CommandDeps, Reply, run_command
from bot.chat.queue import BUSY, CommandWork, person_key
from bot.chat.text import cut_text, show_mentions
from bot.platforms.discord.answer import deliver_answer
from bot.platforms.discord.render import DESCRIPTION_MAX, TITLE_MAX
from bot.platforms.stop import InFlight
from bot.types import Platform

SLOW_COMMANDS = ("alert test", "topics", "import", "ask", "suggest")
MAX_UPLOAD_BYTES = 5_000_000
DEFER_AFTER = 1.5  # seconds: a queued command's answer would risk the 3-second window


def attachment_reader(file: discord.Attachment | None) -> Any:
    """Read an attached export on demand, refusing one larger than MAX_UPLOAD_BYTES."""
    if file is None:
        return None

    async def read() -> bytes | None:
        if file.size > MAX_UPLOAD_BYTES:
            return None
        return await file.read()

    return read


def bytes_reader(data: bytes | None) -> Any:
    """An upload already read, offered as a reader again."""

    async def read() -> bytes | None:
        return data

    return read


def context_for(interaction: discord.Interaction[Any]) -> CommandContext:
    """Our CommandContext from a Discord interaction (guild scopes every row)."""
    return CommandContext(
        platform=Platform.DISCORD,
        workspace=str(interaction.guild_id or ""),
        channel=str(interaction.channel_id or ""),
        user=str(interaction.user.id),
        is_dm=interaction.guild_id is None,
        can_manage_channel=bool(interaction.permissions.manage_channels),
    )


def to_reply_embed(reply: Reply) -> discord.Embed:
    """A Reply as one embed within Discord's limits."""
    embed = discord.Embed(
        title=cut_text(reply.title, TITLE_MAX),
        description=cut_text(
            show_mentions("\n".join(reply.lines), reply.mentions, "<#{id}>", "<@{id}>"),
            DESCRIPTION_MAX,
        )
        or None,
        colour=discord.Colour.red() if reply.error else discord.Colour.blurple(),
    )
    return embed


async def answer_command(
    interaction: discord.Interaction[Any],
    text: str,
    upload: Any,
    *,
    work: CommandWork,
    deps: CommandDeps,
    in_flight: InFlight,
) -> None:
    """Parse → act (on the command queue) → reply; defer first when the work may pass
    3 seconds."""
    slow = text.startswith(SLOW_COMMANDS)
    if slow:
        await interaction.response.defer(ephemeral=True, thinking=True)
    if upload is not None:  # read here: the attachment comes through this loop's client
        data = await upload()
        upload = bytes_reader(data)
    ctx = replace(context_for(interaction), upload=upload)

    async def act() -> Reply:
        return await work.run(acted)

    async def acted(session: AsyncSession) -> Reply:
        reply = await run_command(session=session, ctx=ctx, text=text, deps=deps)
        await session.commit()
        return reply

    # Stopping: the gateway may still hand us commands; none is taken that the
    # shutdown would not wait for.
    key = person_key(ctx.workspace, ctx.user)
    queued = None if in_flight.closing else work.queue.call(key, act)
    if queued is None:
        reply = Reply(title=BUSY, error=True)
    else:
        result = asyncio.wrap_future(queued)
        if not slow:
            done, _ = await asyncio.wait({result}, timeout=DEFER_AFTER)
            if not done:
                slow = True
                await interaction.response.defer(ephemeral=True, thinking=True)
        reply = await result
    if reply.followup is not None:
        await deliver_answer(interaction, reply)  # `/papers ask`: deferred above
        return
    embed = to_reply_embed(reply)
    none = discord.AllowedMentions.none()
    if slow:
        await interaction.followup.send(embed=embed, ephemeral=True, allowed_mentions=none)
    else:
        await interaction.response.send_message(
            embed=embed, ephemeral=reply.ephemeral or reply.error, allowed_mentions=none
        )
