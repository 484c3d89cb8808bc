"""Slack adapter: slack-bolt AsyncApp for `/papers`, its buttons and events.

Bolt verifies every HTTP request (signing secret, 5-minute replay window → 401). The
slash command hands its work to the bounded command queue (bot.chat.queue, a thread
with its own loop and database engine) and acks at once with an empty body; the work
answers through `response_url` from that thread. Bolt's listener
runner returns the HTTP 200 as soon as `ack()` is called, so Slack's 3-second limit
never depends on the database. When the queue is full the ack itself says "busy, try
again" (an ephemeral line) and nothing runs.

Tenancy: the app is installed in one workspace; a request whose `team_id` differs from
the installation's (from `auth.test`) is refused, and every row a command touches is
keyed by the request's own team id.

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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.commands import (
    CommandContext,
    CommandDeps,
    Reply,
    checked_first,
    needs_platform_check,
    run_command,
)
from bot.chat.events import claim_event, event_seen
from bot.chat.queue import BUSY, CommandWork
from bot.chat.react_cmds import FORGED, Pressed, press
from bot.config import Settings
from bot.errors import ConfigError
from bot.outbox.targets import disable_workspace_targets
from bot.platforms.slack.ask import deliver_answer
from bot.platforms.slack.channel import slack_error
from bot.platforms.slack.render import (
    LESS_ACTION,
    MORE_ACTION,
    MUTE_ALERT_ACTION,
    OPEN_ABSTRACT_ACTION,
    UNDO_REACTION_ACTION,
    UNFOLLOW_ACTION,
    render_pressed,
    render_reply,
)
from bot.platforms.slack.respond import Respond, ThreadHttp, web_client
from bot.platforms.slack.route import EVENTS_PATH, REQUEST_DIGEST, install_slack_routes
from bot.subscriptions.marking import leaning_word, parse_leaning
from bot.types import Leaning, Platform

log = logging.getLogger(__name__)

__all__ = ["EVENTS_PATH", "build_slack_app", "install_slack_routes", "run_socket_mode"]

INVITE_FIRST = "Invite me to this channel first (`/invite @papertide`), then follow again."
GONE_EVENTS = ("app_uninstalled", "tokens_revoked")
# Public channels, and private ones ("groups" in Slack's events; groups:read asks for them).
CHANNEL_GONE_EVENTS = ("channel_archive", "channel_deleted", "group_archive", "group_deleted")
FOREIGN_TEAM = "This app is installed in another workspace."
SOMETHING_WRONG = "Something went wrong on our side: try again in a minute."


def _installed_team(context: Mapping[str, Any]) -> str | None:
    result = context.get("authorize_result")
    return getattr(result, "team_id", None)


def _channel_checker(http: ThreadHttp) -> Any:
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
class SlackHandlers:
    """The listeners Bolt calls, one method each, over what the root injected."""

    sessions: async_sessionmaker[AsyncSession]  # the acks' loop: events, uninstalls
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
            async with self.work.sessions() as session:
                if digest is not None and not await claim_event(
                    session=session, platform=Platform.SLACK, event_id=digest
                ):
                    log.warning("slack.replay_ignored", extra={"team_id": ctx.workspace})
                    return None
                reply = await run_command(session=session, ctx=ctx, text=text, deps=deps)
                await session.commit()
        except Exception:
            # The ack is long gone: the user still gets one line instead of silence.
            log.exception("slack.command_failed", extra={"team_id": ctx.workspace})
            return Reply(title=SOMETHING_WRONG, error=True)
        return reply

    async def seen(self, digest: str) -> bool:
        """A replayed request, known before any Web API call (read only; the claim in
        the command's transaction still decides)."""
        async with self.work.sessions() as session:
            return await event_seen(session=session, event_id=digest)

    def answerer(self, body: dict[str, Any], respond: Respond) -> Respond:
        """How work on the command thread answers: over that thread's session to the
        request's response_url (Bolt's `respond` when there is none)."""
        url = body.get("response_url")
        return self.http.respond(str(url)) if url else respond

    async def skip_seen_events(self, body: dict[str, Any], next: Any) -> BoltResponse | None:
        """Slack retries an event up to three times; the processed_event table answers once."""
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id:
            async with self.sessions() as session, session.begin():
                fresh = await claim_event(
                    session=session, platform=Platform.SLACK, event_id=str(event_id)[:128]
                )
            if not fresh:
                log.info("slack.event_duplicate", extra={"event_id": event_id})
                return BoltResponse(status=200, body="")
        return await next()

    async def on_command(self, ack: Any, body: dict[str, Any], respond: Any, context: Any) -> None:
        """`/papers …`: queue the work and ack at once; the work answers via response_url."""
        team = str(body.get("team_id", ""))
        if team != _installed_team(context):
            log.warning("slack.foreign_team", extra={"team_id": team})

            async def refuse() -> None:
                await self.answerer(body, respond)(text=FOREIGN_TEAM, response_type="ephemeral")

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
        answer = self.answerer(body, respond)

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

        if self.work.queue.submit(f"{team}:{ctx.user}", work):
            await ack()
        else:
            await ack(text=BUSY, response_type="ephemeral")

    async def on_button(self, ack: Any, body: dict[str, Any], respond: Any, context: Any) -> None:
        """The Unfollow and Mute buttons under an alert: the same grammar as typed commands."""
        await ack()
        team = str((body.get("team") or {}).get("id", ""))
        action = (body.get("actions") or [{}])[0]
        if team != _installed_team(context):
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

        answer = self.answerer(body, respond)

        async def work() -> None:
            reply = await self.run_for(ctx, text)  # the route claimed this request already
            if reply is not None:
                await answer(**render_reply(replace(reply, ephemeral=True)))

        if not self.work.queue.submit(f"{team}:{ctx.user}", work):
            await respond(text=BUSY, response_type="ephemeral", replace_original=False)

    async def on_reaction(self, ack: Any, body: dict[str, Any], respond: Any, context: Any) -> None:
        """ "More / Less like this" under an alert, and the Undo of its answer.

        Who reacts is the signed payload's user (and channel); the button's value only
        names the paper, and is checked, since anyone can post a crafted payload.
        """
        await ack()
        team = str((body.get("team") or {}).get("id", ""))
        if team != _installed_team(context):
            log.warning("slack.foreign_team", extra={"team_id": team})
            await respond(
                text="This app is installed in another workspace.", response_type="ephemeral"
            )
            return
        answer = self.answerer(body, respond)
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
        if not self.work.queue.submit(f"{team}:{ctx.user}", work):
            await respond(text=BUSY, response_type="ephemeral", replace_original=False)

    async def press(self, ctx: CommandContext, value: str, leaning: Leaning, undo: bool) -> Pressed:
        """Run one reaction button in its own transaction; one line if the store fails."""
        try:
            async with self.work.sessions() as session:
                pressed = await press(session, ctx, value, leaning, undo=undo)
                await session.commit()
        except Exception:
            log.exception("slack.reaction_failed", extra={"team_id": ctx.workspace})
            return Pressed(Reply(title=SOMETHING_WRONG, error=True))
        return pressed

    async def on_gone(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        """App uninstalled, token revoked, channel archived or deleted: stop sending there."""
        team = str(body.get("team_id", ""))
        kind = str(event.get("type", ""))
        address = None if kind in GONE_EVENTS else str(event.get("channel", ""))
        async with self.sessions() as session, session.begin():
            ids = await disable_workspace_targets(
                session=session, platform=Platform.SLACK, workspace=team, address=address,
                reason=kind,
            )  # fmt: skip
        # Their queued messages are buried by the workers' upkeep.
        log.info(
            "slack.targets_disabled", extra={"team_id": team, "event": kind, "count": len(ids)}
        )


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
    handlers = SlackHandlers(
        sessions=sessions,
        deps=replace(deps, check_channel=_channel_checker(http), command=settings.slack_command),
        work=work,
        http=http,
        client=client,
    )
    app.middleware(handlers.skip_seen_events)
    app.command(settings.slack_command)(handlers.on_command)
    app.action(UNFOLLOW_ACTION)(handlers.on_button)
    app.action(MUTE_ALERT_ACTION)(handlers.on_button)
    for reaction_action in (MORE_ACTION, LESS_ACTION, UNDO_REACTION_ACTION):
        app.action(reaction_action)(handlers.on_reaction)
    # A link button opens its URL in the browser, yet Slack still posts the click here
    # and shows an error icon unless it is acknowledged. The catch-all (registered last:
    # Bolt runs the first listener that matches) does the same for the link buttons of
    # messages sent before they had an action id, which Slack names at random.
    app.action(OPEN_ABSTRACT_ACTION)(_ack_only)
    app.action(re.compile(".+"))(_ack_only)
    for name in (*GONE_EVENTS, *CHANNEL_GONE_EVENTS):
        app.event(name)(handlers.on_gone)
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
