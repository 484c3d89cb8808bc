""" "More / Less like this" on Discord: rendered components, component interactions
(Discord's documented type-3 payload) through PapersBot, REST to a local server."""

from __future__ import annotations

import json
from typing import Any

import discord
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.chat.queue import CommandWork
from bot.config import Settings
from bot.outbox.targets import get_or_create_target
from bot.platforms.discord.app import PapersBot, use_discord_api_url
from bot.platforms.discord.render import (
    CUSTOM_ID_MAX,
    read_custom_id,
    to_payloads,
)
from bot.store.models import Paper, Reaction, Target
from bot.timeutil import utcnow
from bot.types import MessageKind, Platform, TargetKind
from tests.conftest import count_rows
from tests.platforms.discord.test_discord import (  # noqa: F401  (a fixture)
    MESSAGE,
    USER,
    FakeDiscord,
    _interaction_payload,
    _sub,
    discord_api,
)
from tests.support.chat import NASTY_PAPERS, TOPIC_REASON, make_deps, paper


def _components(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for row in body.get("components", []) for c in row["components"]]


def test_alerts_carry_buttons_within_discord_limits() -> None:
    one = to_payloads(MessageKind.PAPER, {"paper": paper("2611.01234"), "reasons": []})[0]
    ids = [c["custom_id"] for c in _components(one)]
    assert ids == ["papertide:more:2611.01234", "papertide:less:2611.01234"]
    items = [{"paper": p, "reasons": [TOPIC_REASON]} for p in NASTY_PAPERS * 3]
    for body in to_payloads(MessageKind.PAPER_GROUP, {"items": items}):
        assert len(body["components"]) <= 5
        for row in body["components"]:
            assert row["type"] == 1
            assert len(row["components"]) <= 5
            for button in row["components"]:
                assert len(button["custom_id"]) <= CUSTOM_ID_MAX
                assert len(button["label"]) <= 80
                # discord.py's own component model reads what we send.
                parsed = discord.ui.Button.from_component(
                    discord.components.Button(button)  # type: ignore[arg-type]
                )
                assert parsed.custom_id == button["custom_id"]
    assert read_custom_id("papertide:more:" + "9" * 200) is None
    assert read_custom_id("papertide:sideways:2611.01234") is None
    assert read_custom_id("papertide:undo-less:hep-th/9901001") == ("undo-less", "hep-th/9901001")


def _click(custom_id: str, *, user: str = "555", channel: str = "444") -> dict[str, Any]:
    data = _interaction_payload([], manage=False)
    data["type"] = 3  # MESSAGE_COMPONENT
    data["channel_id"] = channel
    data["member"]["user"] = {**USER, "id": user}
    data["data"] = {"custom_id": custom_id, "component_type": 2}
    data["message"] = {**MESSAGE, "flags": 0}
    return data


async def _rows(sessions: async_sessionmaker[AsyncSession]) -> list[tuple[str, int]]:
    async with sessions() as session:
        found = await session.execute(
            select(col(Target.address), col(Reaction.leaning))
            .join(Target, col(Target.id) == col(Reaction.target_id))
            .order_by(col(Target.address))
        )
        return [(a, n) for a, n in found.all()]


@pytest.fixture
async def bot(
    discord_api: tuple[FakeDiscord, str],  # noqa: F811
    sessions: async_sessionmaker[AsyncSession],
    command_work: CommandWork,
) -> Any:
    _fake, base = discord_api
    async with sessions() as session, session.begin():
        now = utcnow()
        session.add(Paper(id="2611.01234", title="@everyone *wins*", published=now,
                          updated=now, ingested_at=now))  # fmt: skip
        await get_or_create_target(
            session=session, platform=Platform.DISCORD, workspace="333", address="444",
            kind=TargetKind.CHANNEL,
        )  # fmt: skip
    settings = Settings(discord_token="tkn", discord_application_id="222", discord_api_url=base)
    use_discord_api_url(settings.discord_api_url)
    async with PapersBot(
        settings=settings, sessions=sessions, deps=make_deps(), work=command_work
    ) as client:
        await client.login("tkn")
        yield client


async def _press(client: PapersBot, custom_id: str, **kw: str) -> None:
    interaction = discord.Interaction(data=_click(custom_id, **kw), state=client._connection)  # type: ignore[arg-type]
    await client.on_interaction(interaction)


def _answers(fake: FakeDiscord) -> list[dict[str, Any]]:
    return [body for _m, path, body in fake.calls if path.startswith("/api/v10/webhooks/")]


async def test_click_defers_records_and_answers_privately_with_undo(
    bot: PapersBot,
    discord_api: tuple[FakeDiscord, str],  # noqa: F811
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    fake, _base = discord_api
    await _press(bot, "papertide:more:2611.01234")
    deferred = next(body for _m, path, body in fake.calls if path.endswith("/callback"))
    assert deferred["type"] == 5
    assert deferred["data"]["flags"] == 64  # ephemeral
    answer = _answers(fake)[-1]
    assert answer["embeds"][0]["title"] == "Noted: more like @\u200beveryone \\*wins\\*"
    assert answer["allowed_mentions"] == {"parse": []}
    assert answer["flags"] & 64
    undo = _components(answer)[0]
    assert (undo["label"], undo["custom_id"]) == ("Undo", "papertide:undo-more:2611.01234")
    assert await _rows(sessions) == [("444", 1), ("555", 1)]

    await _press(bot, "papertide:less:2611.01234", user="556")  # another member says less
    assert await _rows(sessions) == [("444", -1), ("555", 1), ("556", -1)]
    await _press(bot, "papertide:undo-more:2611.01234")  # only the first member's own row
    assert await _rows(sessions) == [("444", -1), ("556", -1)]
    assert _answers(fake)[-1]["embeds"][0]["title"].startswith("Undone")
    assert "components" not in _answers(fake)[-1] or not _components(_answers(fake)[-1])


@pytest.mark.parametrize(
    "custom_id",
    ["papertide:more:2611.99999", "papertide:more:" + "1" * 90, "papertide:sideways:2611.01234"],
)
async def test_a_forged_custom_id_gets_a_clear_private_error(
    bot: PapersBot,
    discord_api: tuple[FakeDiscord, str],  # noqa: F811
    sessions: async_sessionmaker[AsyncSession],
    custom_id: str,
) -> None:
    fake, _base = discord_api
    await _press(bot, custom_id)
    answer = _answers(fake)[-1]
    assert "names no paper we know" in answer["embeds"][0]["title"]
    assert answer["embeds"][0]["color"] == discord.Colour.red().value
    assert await count_rows(sessions, "reaction") == 0


async def test_more_less_unmark_subcommands(
    bot: PapersBot,
    discord_api: tuple[FakeDiscord, str],  # noqa: F811
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    fake, _base = discord_api
    for command in (
        _sub("more", paper="arXiv:2611.01234v2"),
        _sub("less", paper="https://arxiv.org/abs/2611.01234"),
    ):
        interaction = discord.Interaction(
            data=_interaction_payload(command, manage=False), state=bot._connection
        )  # type: ignore[arg-type]
        await bot.tree._call(interaction)
    assert await _rows(sessions) == [("555", -1)]  # typed: only the member, not the channel
    interaction = discord.Interaction(
        data=_interaction_payload(_sub("unmark", paper="2611.01234"), manage=False),
        state=bot._connection,
    )  # type: ignore[arg-type]
    await bot.tree._call(interaction)
    replies = [b for _m, p, b in fake.calls if p.endswith("/callback")]
    assert [r["data"]["embeds"][0]["title"] for r in replies] == [
        "Noted: more like 2611.01234",
        "Noted: less like 2611.01234",
        "Undone: no more or less like 2611.01234",
    ]
    assert "`@everyone *wins*`" in json.dumps(replies[0])
    assert await count_rows(sessions, "reaction") == 0
