"""Discord's "More / Less like this" buttons under an alert, and the Undo of their answer.

A click arrives as a component interaction (type 3) whose `data.custom_id` we wrote
(`papertide:more:<paper id>`, see render.py). Who reacts comes from the interaction
itself (the gateway's user and guild), never from the custom_id, which only names the
paper and is checked against the store. We defer at once (Discord's 3-second window),
record (on the command queue's thread, like commands), then answer privately with an
Undo button; every answer mentions nobody. A full queue is answered "busy" at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import discord
from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat.commands import CommandContext, Reply
from bot.chat.queue import BUSY, CommandWork, person_key
from bot.chat.react_cmds import FORGED, Pressed, press
from bot.platforms.discord.render import TITLE_MAX, clean, read_custom_id, undo_row
from bot.subscriptions.marking import leaning_word, parse_leaning

log = logging.getLogger(__name__)

SOMETHING_WRONG = "Something went wrong on our side: try again in a minute."
BUSY_REPLY = Reply(title=BUSY, error=True)


def is_ours(interaction: discord.Interaction[Any]) -> bool:
    """A click on one of our buttons (not a slash command, not another bot's component)."""
    data: Any = interaction.data or {}
    return interaction.type == discord.InteractionType.component and str(
        data.get("custom_id", "")
    ).startswith("papertide:")


def _undo_view(rows: list[dict[str, Any]]) -> discord.ui.View | None:
    """The Undo button as a discord.py View (its clicks come back through `answer_button`,
    so the view is stopped: discord.py need not keep it)."""
    if not rows:
        return None
    view = discord.ui.View(timeout=None)
    for spec in rows[0]["components"]:
        view.add_item(
            discord.ui.Button(
                style=discord.ButtonStyle.secondary,
                label=spec["label"],
                custom_id=spec["custom_id"],
            )
        )
    view.stop()
    return view


def pressed_embed(reply: Reply) -> discord.Embed:
    """A button's answer: the title escaped for Discord (it quotes a paper's title)."""
    return discord.Embed(
        title=clean(reply.title, TITLE_MAX),
        colour=discord.Colour.red() if reply.error else discord.Colour.blurple(),
    )


async def answer_button(
    interaction: discord.Interaction[Any],
    ctx: CommandContext,
    work: CommandWork,
) -> None:
    """Defer, record the click for `ctx.user` (and the channel), answer with an Undo."""
    await interaction.response.defer(ephemeral=True, thinking=True)
    data: Any = interaction.data or {}
    found = read_custom_id(str(data.get("custom_id", "")))
    undo = found is not None and found.verb.startswith("undo-")
    leaning = parse_leaning(found.verb.removeprefix("undo-")) if found is not None else None
    if found is None or leaning is None:
        pressed = Pressed(FORGED)
    else:
        paper_id = found.paper_id

        async def recorded(session: AsyncSession) -> Pressed:
            done = await press(session, ctx, paper_id, leaning, undo=undo)
            await session.commit()
            return done

        async def record() -> Pressed:
            return await work.run(recorded)

        queued = work.queue.call(person_key(ctx.workspace, ctx.user), record)
        try:
            pressed = Pressed(BUSY_REPLY) if queued is None else await asyncio.wrap_future(queued)
        except Exception:
            log.exception("discord.reaction_failed", extra={"guild_id": ctx.workspace})
            pressed = Pressed(Reply(title=SOMETHING_WRONG, error=True))
    rows = [] if pressed.undo is None else undo_row(leaning_word(pressed.undo[1]), pressed.undo[0])
    view = _undo_view(rows)
    extra: dict[str, Any] = {"view": view} if view is not None else {}
    await interaction.followup.send(
        embed=pressed_embed(pressed.reply),
        ephemeral=True,
        allowed_mentions=discord.AllowedMentions.none(),
        **extra,
    )
