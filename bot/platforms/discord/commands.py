"""Discord's `/papers` group: one `app_commands.Group`, each subcommand building the text
our one grammar parses (bot.chat.commands), answered by reply.answer_command."""

from __future__ import annotations

from typing import Any

import discord
from discord import app_commands
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.catalog.lookup import search_topics
from bot.chat.commands import CommandDeps
from bot.chat.queue import CommandWork
from bot.chat.text import cut_text
from bot.platforms.discord.reply import answer_command, attachment_reader
from bot.platforms.stop import InFlight


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
        """Parse → act (on the command queue) → reply. Counted in flight until answered:
        at shutdown the client waits for it."""
        assert self.work is not None
        assert self.deps is not None
        async with self.in_flight.track():
            await answer_command(
                interaction, text, upload, work=self.work, deps=self.deps, in_flight=self.in_flight
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
        await self.run(interaction, f"import {url}".strip(), upload=attachment_reader(file))

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
