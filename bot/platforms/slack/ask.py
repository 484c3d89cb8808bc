"""Delivering a `/papers ask` answer in Slack, after the command's acknowledgement.

Private (the default): through the command's `response_url`, seen only by the asker.
Thread: the question as a channel message by the bot, the answer as its thread reply
(`chat.postMessage` twice); when the bot cannot post there, the asker gets the answer
privately with one line saying why. Answers are replies to a person's command, like
every other command reply, not notifications: they do not pass the outbox.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.chat.commands import CommandContext, Reply
from bot.platforms.slack.answer import answer_response, thread_parent, thread_reply
from bot.platforms.slack.render import render_reply

log = logging.getLogger(__name__)

SOMETHING_WRONG = "Something went wrong on our side: try again in a minute."
CANNOT_POST = "I could not post in this channel (invite me first); here is the answer for you."


async def deliver_answer(
    *,
    client: AsyncWebClient,
    limit: asyncio.Semaphore,
    ctx: CommandContext,
    pending: Reply,
    respond: Any,
) -> None:
    """Await the answer (at most `limit` at once) and post it where the asker chose."""
    assert pending.followup is not None
    async with limit:
        try:
            final = await pending.followup()
        except Exception:
            log.exception("slack.ask_failed", extra={"team_id": ctx.workspace})
            final = Reply(title=SOMETHING_WRONG, error=True)
    if final.answer is None:
        await respond(**render_reply(final))
        return
    if final.thread:
        try:
            parent = await client.chat_postMessage(channel=ctx.channel, **thread_parent(final))
            await client.chat_postMessage(
                channel=ctx.channel, thread_ts=parent["ts"], **thread_reply(final)
            )
            return
        except SlackApiError as exc:
            log.info("slack.ask_thread_refused", extra={"error": str(exc.response.get("error"))})
            await respond(text=CANNOT_POST, response_type="ephemeral", replace_original=False)
    private = Reply(title=final.title, answer=final.answer)
    await respond(**answer_response(private))
