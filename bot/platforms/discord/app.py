"""Discord adapter: one `app_commands.Group` named `papers`, handlers thin over bot.commands.

Dependencies (sessions, CommandDeps, the command queue) are built by the composition
root and passed to the constructor. A command's work runs on the command queue's
thread (bot.chat.queue); this loop awaits its Reply and answers (Discord's HTTP client
lives here). A full queue is answered "busy, try again" at once. Personal answers are
ephemeral; commands that may pass Discord's 3-second window (`alert test`, `topics`)
defer first, and so does any command whose work is not done within DEFER_AFTER s.
Changing a channel needs the Manage Channels permission (resolved for the member in that
channel) unless PAPERTIDE_CHANNEL_CHANGES=everyone. Every reply sets allowed_mentions to none.
Clicks on the alerts' "More / Less like this" buttons arrive as component interactions
and go to `buttons.answer_button` (`PapersBot.on_interaction`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

import discord
from discord import app_commands
from discord.http import Route
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.catalog.lookup import search_topics
from bot.chat.commands import CommandContext, CommandDeps, Reply, run_command
from bot.chat.queue import BUSY, CommandWork
from bot.chat.text import cut_text, show_mentions
from bot.config import Settings
from bot.errors import ConfigError
from bot.platforms.discord.answer import deliver_answer
from bot.platforms.discord.buttons import answer_button, is_ours
from bot.platforms.discord.render import DESCRIPTION_MAX, TITLE_MAX, clean
from bot.platforms.stop import InFlight, until_stopped
from bot.types import Platform

log = logging.getLogger(__name__)

SLOW_COMMANDS = ("alert test", "topics", "import", "ask", "suggest")
MAX_UPLOAD_BYTES = 5_000_000
DEFER_AFTER = 1.5  # seconds: a queued command's answer would risk the 3-second window


def _attachment_reader(file: discord.Attachment | None) -> Any:
    """Read an attached export on demand, refusing one larger than MAX_UPLOAD_BYTES."""
    if file is None:
        return None

    async def read() -> bytes | None:
        if file.size > MAX_UPLOAD_BYTES:
            return None
        return await file.read()

    return read


def _bytes_reader(data: bytes | None) -> Any:
    async def read() -> bytes | None:
        return data

    return read


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


class PapersGroup(app_commands.Group):
    """`/papers …`: every command builds the text our one grammar parses."""

    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession] | None,
        deps: CommandDeps | None,
        work: CommandWork | None,
        in_flight: InFlight | None = None,
    ) -> None:
        super().__init__(name="papers", description="Follow research-paper topics and alerts")
        self.sessions = sessions  # this loop's: topic autocomplete
        self.deps = deps
        self.work = work
        self.in_flight = in_flight or InFlight()

    async def run(
        self, interaction: discord.Interaction[Any], text: str, upload: Any = None
    ) -> None:
        """Parse → act (on the command queue) → reply; defer first when the work may pass
        3 seconds. Counted in flight until answered: at shutdown the client waits for it."""
        async with self.in_flight.track():
            await self._run(interaction, text, upload)

    async def _run(self, interaction: discord.Interaction[Any], text: str, upload: Any) -> None:
        assert self.work is not None
        assert self.deps is not None
        work, deps = self.work, self.deps
        slow = text.startswith(SLOW_COMMANDS)
        if slow:
            await interaction.response.defer(ephemeral=True, thinking=True)
        if upload is not None:  # read here: the attachment comes through this loop's client
            data = await upload()
            upload = _bytes_reader(data)
        ctx = replace(context_for(interaction), upload=upload)

        async def act() -> Reply:
            async with work.sessions() as session:
                reply = await run_command(session=session, ctx=ctx, text=text, deps=deps)
                await session.commit()
            return reply

        # Stopping: the gateway may still hand us commands; none is taken that the
        # shutdown would not wait for.
        key = f"{ctx.workspace}:{ctx.user}"
        queued = None if self.in_flight.closing else work.queue.call(key, act)
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

    async def topic_choices(
        self, _interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        """At most 25 topics matching what was typed; the value is re-validated on use."""
        assert self.sessions is not None
        async with self.sessions() as session:
            topics = await search_topics(session=session, words=current[:100])
        return [
            app_commands.Choice(name=cut_text(f"{t.name} ({t.slug})", 100), value=t.slug[:100])
            for t in topics[:25]
        ]

    @app_commands.command(name="follow", description="Send new papers of a topic here")
    @app_commands.describe(topic="Topic slug or name", me="Follow for yourself (DMs)")
    async def follow(
        self, interaction: discord.Interaction[Any], topic: str, me: bool = False
    ) -> None:
        await self.run(interaction, f"follow {topic}" + (" me" if me else ""))

    @app_commands.command(name="unfollow", description="Stop following a topic")
    @app_commands.describe(topic="Topic slug or name", me="Stop it for yourself, not the channel")
    async def unfollow(
        self, interaction: discord.Interaction[Any], topic: str, me: bool = False
    ) -> None:
        await self.run(interaction, f"unfollow {topic}" + (" me" if me else ""))

    @app_commands.command(name="list", description="What this channel and you follow")
    async def list_(self, interaction: discord.Interaction[Any]) -> None:
        await self.run(interaction, "list")

    @app_commands.command(name="topics", description="The topic catalog")
    @app_commands.describe(words="Only topics whose name or description has these words")
    async def topics(self, interaction: discord.Interaction[Any], words: str = "") -> None:
        await self.run(interaction, f"topics {words}")

    @app_commands.command(
        name="suggest", description="Papers you may like this week, from your marks"
    )
    async def suggest(self, interaction: discord.Interaction[Any]) -> None:
        await self.run(interaction, "suggest")

    @app_commands.command(name="alerts", description="Your keyword alerts")
    async def alerts(self, interaction: discord.Interaction[Any]) -> None:
        await self.run(interaction, "alerts")

    @app_commands.command(name="digest", description="Weekly email digest: an address, or off")
    @app_commands.describe(email="Your address (we mail it a link to confirm), or off")
    async def digest(self, interaction: discord.Interaction[Any], email: str) -> None:
        await self.run(interaction, f"digest {email}")

    @app_commands.command(name="mute", description="Hold a topic for a while, e.g. 2h, 3d, 1w")
    @app_commands.describe(
        topic="Topic slug or name",
        duration="How long, e.g. 2h, 3d or 1w",
        me="Mute it for yourself, not the channel",
    )
    async def mute(
        self, interaction: discord.Interaction[Any], topic: str, duration: str, me: bool = False
    ) -> None:
        await self.run(interaction, f"mute {topic} {duration}" + (" me" if me else ""))

    @app_commands.command(
        name="quiet-hours", description="Hold alerts overnight, e.g. 22-07, or off"
    )
    @app_commands.describe(
        hours="From-to hours, e.g. 22-07, or off",
        timezone="Time zone, e.g. Europe/Berlin (default UTC)",
        me="For your own alerts, not the channel",
    )
    async def quiet_hours(
        self,
        interaction: discord.Interaction[Any],
        hours: str,
        timezone: str = "",
        me: bool = False,
    ) -> None:
        await self.run(interaction, f"quiet-hours {hours} {timezone}" + (" me" if me else ""))

    @app_commands.command(name="who", description="Channels and people here following a topic")
    @app_commands.describe(topic="Topic slug or name")
    async def who(self, interaction: discord.Interaction[Any], topic: str) -> None:
        await self.run(interaction, f"who {topic}")

    @app_commands.command(name="visible", description="Show yourself in /papers who: on or off")
    @app_commands.describe(on="True: others see you follow; False: hidden (the default)")
    async def visible(self, interaction: discord.Interaction[Any], on: bool) -> None:
        await self.run(interaction, f"visible {'on' if on else 'off'}")

    @app_commands.command(name="import", description="Alerts from your BibTeX, RIS or CSL-JSON")
    @app_commands.describe(
        file="Your library export", url="Or where to fetch it", accept="Accept proposal n"
    )
    async def import_(
        self,
        interaction: discord.Interaction[Any],
        file: discord.Attachment | None = None,
        url: str = "",
        accept: int = 0,
    ) -> None:
        if accept:
            await self.run(interaction, f"import accept {accept}")
            return
        await self.run(interaction, f"import {url}".strip(), upload=_attachment_reader(file))

    @app_commands.command(name="ask", description="Ask about a topic: an answer from its papers")
    @app_commands.describe(
        topic="Topic slug or name",
        question="Your question, e.g. which papers train agents with GRPO on ALFWorld?",
        post="Only you see the answer (default), or a thread in this channel",
        all_papers="Search every paper, not only the topic's",
    )
    @app_commands.choices(
        post=[
            app_commands.Choice(name="only me", value="private"),
            app_commands.Choice(name="thread in this channel", value="thread"),
        ]
    )
    async def ask(
        self,
        interaction: discord.Interaction[Any],
        topic: str,
        question: str,
        post: str = "private",
        all_papers: bool = False,
    ) -> None:
        flags = ("--thread " if post == "thread" else "") + ("--all " if all_papers else "")
        await self.run(interaction, f"ask {flags}{'' if all_papers else topic + ' '}{question}")

    @app_commands.command(name="more", description="More papers like this one")
    @app_commands.describe(paper="Its arXiv id or abs link, e.g. 2611.01234")
    async def more(self, interaction: discord.Interaction[Any], paper: str) -> None:
        await self.run(interaction, f"more {paper}")

    @app_commands.command(name="less", description="Fewer papers like this one")
    @app_commands.describe(paper="Its arXiv id or abs link, e.g. 2611.01234")
    async def less(self, interaction: discord.Interaction[Any], paper: str) -> None:
        await self.run(interaction, f"less {paper}")

    @app_commands.command(name="unmark", description="Take back a more or less")
    @app_commands.describe(paper="Its arXiv id or abs link, e.g. 2611.01234")
    async def unmark(self, interaction: discord.Interaction[Any], paper: str) -> None:
        await self.run(interaction, f"unmark {paper}")

    @app_commands.command(name="help", description="What /papers can do")
    async def help_(self, interaction: discord.Interaction[Any]) -> None:
        await self.run(interaction, "help")

    alert = app_commands.Group(name="alert", description="Your keyword alerts")

    @alert.command(name="add", description='DM me papers matching a query, e.g. au:"Yi Wu"')
    @app_commands.describe(query='arXiv search syntax, e.g. au:"Yi Wu" AND abs:agent')
    async def alert_add(self, interaction: discord.Interaction[Any], query: str) -> None:
        await self.run(interaction, f"alert add {query}")

    @alert.command(name="remove", description="Delete one of your alerts")
    @app_commands.describe(id="The alert's number, as /papers alerts lists it")
    async def alert_remove(self, interaction: discord.Interaction[Any], id: int) -> None:
        await self.run(interaction, f"alert remove {id}")

    @alert.command(name="test", description="What a query matched in the last four weeks")
    @app_commands.describe(query="arXiv search syntax, e.g. ti:agent AND cat:cs.LG")
    async def alert_test(self, interaction: discord.Interaction[Any], query: str) -> None:
        await self.run(interaction, f"alert test {query}")

    @follow.autocomplete("topic")
    async def _follow_topic(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        return await self.topic_choices(interaction, current)

    @unfollow.autocomplete("topic")
    async def _unfollow_topic(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        return await self.topic_choices(interaction, current)

    @ask.autocomplete("topic")
    async def _ask_topic(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        return await self.topic_choices(interaction, current)

    @mute.autocomplete("topic")
    async def _mute_topic(
        self, interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        return await self.topic_choices(interaction, current)


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
