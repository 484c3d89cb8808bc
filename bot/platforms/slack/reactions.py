"""Slack's "More / Less like this" buttons under an alert, and the Undo of their answer."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat.commands import CommandContext, Reply
from bot.chat.queue import BUSY, CommandWork, person_key
from bot.chat.react_cmds import FORGED, Pressed, press
from bot.platforms.slack.commands import SOMETHING_WRONG, installed_team
from bot.platforms.slack.render import LESS_ACTION, UNDO_REACTION_ACTION, render_pressed
from bot.platforms.slack.respond import ThreadHttp, answerer
from bot.subscriptions.marking import leaning_word, parse_leaning
from bot.types import Leaning, Platform

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReactionHandlers:
    """The reaction buttons' listener: recorded on the command queue's thread, like commands."""

    work: CommandWork
    http: ThreadHttp  # the command thread's answers (response_url)

    async def on_reaction(self, ack: Any, body: dict[str, Any], respond: Any, context: Any) -> None:
        """ "More / Less like this" under an alert, and the Undo of its answer.

        Who reacts is the signed payload's user (and channel); the button's value only
        names the paper, and is checked, since anyone can post a crafted payload.
        """
        await ack()
        team = str((body.get("team") or {}).get("id", ""))
        if team != installed_team(context):
            log.warning("slack.foreign_team", extra={"team_id": team})
            await respond(
                text="This app is installed in another workspace.", response_type="ephemeral"
            )
            return
        answer = answerer(self.http, body, respond)
        action = (body.get("actions") or [{}])[0]
        value = str(action.get("value", ""))[:300]
        undo = action.get("action_id") == UNDO_REACTION_ACTION
        leaning: Leaning | None = (
            Leaning.LESS if action.get("action_id") == LESS_ACTION else Leaning.MORE
        )
        if undo:
            word, _, value = value.partition(":")
            leaning = parse_leaning(word)
        channel = str((body.get("channel") or {}).get("id", ""))
        ctx = CommandContext(
            platform=Platform.SLACK,
            workspace=team,
            channel=channel,
            user=str((body.get("user") or {}).get("id", "")),
            is_dm=channel.startswith("D") or not channel,
            can_manage_channel=False,
        )

        async def work() -> None:
            pressed = (
                Pressed(FORGED) if leaning is None else await self.press(ctx, value, leaning, undo)
            )
            shown = None
            if pressed.undo is not None:
                shown = (pressed.undo[0], leaning_word(pressed.undo[1]))
            message = render_pressed(pressed.reply, shown)
            message["replace_original"] = undo  # the Undo's answer takes the place of "Noted"
            await answer(**message)

        # The same bounded queue as commands: a click burst never starves the acks.
        if not self.work.queue.submit(person_key(team, ctx.user), work):
            await respond(text=BUSY, response_type="ephemeral", replace_original=False)

    async def press(self, ctx: CommandContext, value: str, leaning: Leaning, undo: bool) -> Pressed:
        """Run one reaction button in its own transaction; one line if the store fails."""
        try:

            async def pressed_in(session: AsyncSession) -> Pressed:
                done = await press(session, ctx, value, leaning, undo=undo)
                await session.commit()
                return done

            pressed = await self.work.run(pressed_in)
        except Exception:
            log.exception("slack.reaction_failed", extra={"team_id": ctx.workspace})
            return Pressed(Reply(title=SOMETHING_WRONG, error=True))
        return pressed
