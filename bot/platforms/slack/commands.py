"""Slack's `/papers` command and the Unfollow / Mute buttons under an alert.

The slash command hands its work to the bounded command queue (bot.chat.queue, a thread
with its own loop and database engine) and acks at once with an empty body; the work
answers through `response_url` from that thread. When the queue is full the ack itself
says "busy, try again" (an ephemeral line) and nothing runs.

Channel permission: Slack only offers the message composer (and so slash commands) to
members of a channel, so a command typed in a channel is proof of membership; we do not
page through `conversations.members`. What we do check before a channel follow is
that the BOT can post there (`conversations.info` → `is_member`; `channel_not_found`
for private channels it was never invited to) and answer "invite me first" otherwise.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat.commands import (
    CommandContext,
    CommandDeps,
    Reply,
    checked_first,
    needs_platform_check,
    run_command,
)
from bot.chat.events import claim_event, event_seen
from bot.chat.queue import BUSY, CommandWork, person_key
from bot.platforms.slack.ask import deliver_answer
from bot.platforms.slack.channel import slack_error
from bot.platforms.slack.render import UNFOLLOW_ACTION, render_reply
from bot.platforms.slack.respond import ThreadHttp, answerer
from bot.platforms.slack.route import REQUEST_DIGEST
from bot.types import Platform

log = logging.getLogger(__name__)

INVITE_FIRST = "Invite me to this channel first (`/invite @papertide`), then follow again."
FOREIGN_TEAM = "This app is installed in another workspace."
SOMETHING_WRONG = "Something went wrong on our side: try again in a minute."


def installed_team(context: Mapping[str, Any]) -> str | None:
    """The workspace this app is installed in (Bolt's `auth.test` result)."""
    result = context.get("authorize_result")
    return getattr(result, "team_id", None)


def channel_checker(http: ThreadHttp) -> Any:
    """Can the bot post in the channel? Asked from the command thread, over its session."""

    async def check(ctx: CommandContext) -> str | None:
        try:
            info = await http.web_client().conversations_info(channel=ctx.channel)
        except SlackApiError as exc:
            if slack_error(exc) in ("channel_not_found", "not_in_channel"):
                return INVITE_FIRST
            return "Slack did not answer about this channel: try again in a minute."
        channel = info.get("channel") or {}
        return None if channel.get("is_member") or channel.get("is_im") else INVITE_FIRST

    return check


@dataclass(frozen=True, slots=True)
class CommandHandlers:
    """The command and alert-button listeners Bolt calls, over what the root injected."""

    deps: CommandDeps
    # Work after the ack runs on the command queue's thread, bounded, with its own
    # sessions, so a burst of commands never holds up the acks' loop (Slack: 3 s).
    work: CommandWork
    http: ThreadHttp  # the command thread's answers (response_url) and Web API calls
    client: AsyncWebClient | None = None  # posts threaded answers of `/papers ask`
    ask_limit: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(4))

    async def run_for(
        self, ctx: CommandContext, text: str, digest: str | None = None
    ) -> Reply | None:
        """Run one command in one transaction; None when `digest` was claimed before (a
        replayed request: it must not act, and gets no answer).

        Read, check, write: a channel follow's check is a Web API call, made before the
        transaction opens (on SQLite it would hold the one write connection meanwhile);
        the claim and the command's writes then commit together, as before."""
        try:
            deps = self.deps
            if needs_platform_check(ctx, text, deps):
                if digest is not None and await self.seen(digest):
                    log.warning("slack.replay_ignored", extra={"team_id": ctx.workspace})
                    return None
                deps = await checked_first(ctx, deps)

            async def claimed_and_run(session: AsyncSession) -> Reply | None:
                if digest is not None and not await claim_event(
                    session=session, platform=Platform.SLACK, event_id=digest
                ):
                    log.warning("slack.replay_ignored", extra={"team_id": ctx.workspace})
                    return None
                reply = await run_command(session=session, ctx=ctx, text=text, deps=deps)
                await session.commit()
                return reply

            return await self.work.run(claimed_and_run)
        except Exception:
            # The ack is long gone: the user still gets one line instead of silence.
            log.exception("slack.command_failed", extra={"team_id": ctx.workspace})
            return Reply(title=SOMETHING_WRONG, error=True)

    async def seen(self, digest: str) -> bool:
        """A replayed request, known before any Web API call (read only; the claim in
        the command's transaction still decides)."""
        return await self.work.run(lambda session: event_seen(session=session, event_id=digest))

    async def on_command(self, ack: Any, body: dict[str, Any], respond: Any, context: Any) -> None:
        """`/papers …`: queue the work and ack at once; the work answers via response_url."""
        team = str(body.get("team_id", ""))
        if team != installed_team(context):
            log.warning("slack.foreign_team", extra={"team_id": team})

            async def refuse() -> None:
                await answerer(self.http, body, respond)(
                    text=FOREIGN_TEAM, response_type="ephemeral"
                )

            if self.work.queue.submit(team, refuse):
                await ack()
            else:
                await ack(text=FOREIGN_TEAM, response_type="ephemeral")
            return
        channel = str(body.get("channel_id", ""))
        is_dm = body.get("channel_name") == "directmessage" or channel.startswith("D")
        ctx = CommandContext(
            platform=Platform.SLACK,
            workspace=team,
            channel=channel,
            user=str(body.get("user_id", "")),
            is_dm=is_dm,
            can_manage_channel=not is_dm,  # typing in a channel proves membership (see above)
        )
        text, digest = str(body.get("text", "")), context.get(REQUEST_DIGEST)
        home = asyncio.get_running_loop()
        answer = answerer(self.http, body, respond)

        async def work() -> None:
            reply = await self.run_for(ctx, text, digest)
            if reply is None:
                return
            await answer(**render_reply(reply))
            if reply.followup is not None and self.client is not None:
                # `/papers ask`: acknowledged above; the answer follows when it is ready,
                # on the acks' loop (the asker's clients live there), so this person's
                # next command need not wait for it.
                self.work.queue.home(
                    deliver_answer(client=self.client, limit=self.ask_limit, ctx=ctx,
                                   pending=reply, respond=respond),
                    home,
                )  # fmt: skip

        if self.work.queue.submit(person_key(team, ctx.user), work):
            await ack()
        else:
            await ack(text=BUSY, response_type="ephemeral")

    async def on_button(self, ack: Any, body: dict[str, Any], respond: Any, context: Any) -> None:
        """The Unfollow and Mute buttons under an alert: the same grammar as typed commands."""
        await ack()
        team = str((body.get("team") or {}).get("id", ""))
        action = (body.get("actions") or [{}])[0]
        if team != installed_team(context):
            return
        ctx = CommandContext(
            platform=Platform.SLACK,
            workspace=team,
            channel=str((body.get("channel") or {}).get("id", "")),
            user=str((body.get("user") or {}).get("id", "")),
            is_dm=False,
            can_manage_channel=True,  # the button is in the channel's own history
        )
        if action.get("action_id") == UNFOLLOW_ACTION:
            value = json.loads(str(action.get("value", "{}")))
            text = f"unfollow {value.get('slug', '')}" + (" me" if value.get("k") == "user" else "")
        else:
            text = f"alert mute {action.get('value', '')} 1w"

        answer = answerer(self.http, body, respond)

        async def work() -> None:
            reply = await self.run_for(ctx, text)  # the route claimed this request already
            if reply is not None:
                await answer(**render_reply(replace(reply, ephemeral=True)))

        if not self.work.queue.submit(person_key(team, ctx.user), work):
            await respond(text=BUSY, response_type="ephemeral", replace_original=False)
