"""Discord: real discord.py interactions through our command group; REST to a local server."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import discord
import httpx
import pytest
from aiohttp import web
from discord.http import Route
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.queue import BUSY, CommandWork
from bot.config import Settings
from bot.outbox.channel import Delivered, Failed, Retry
from bot.platforms.discord.app import PapersBot, invite_url, sync_commands, use_discord_api_url
from bot.platforms.discord.channel import DiscordChannel
from bot.platforms.discord.render import EMBED_TOTAL, embed_size, to_payloads
from bot.service.chat_deps import build_command_work
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef
from tests.conftest import count_rows
from tests.support.chat import (
    ALERT_REASON,
    NASTY_PAPERS,
    TOPIC_REASON,
    add_topics,
    make_deps,
    paper,
)
from tests.support.servers import serve

USER = {"id": "555", "username": "ann", "discriminator": "0", "avatar": None, "global_name": "Ann"}
MESSAGE = {
    "id": "900",
    "channel_id": "444",
    "type": 0,
    "content": "",
    "author": USER,
    "attachments": [],
    "embeds": [],
    "mentions": [],
    "mention_roles": [],
    "pinned": False,
    "mention_everyone": False,
    "tts": False,
    "timestamp": "2026-07-01T00:00:00+00:00",
    "edited_timestamp": None,
    "flags": 64,
}


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py reads JSON only when Content-Type is exactly application/json (no charset).
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


@dataclass
class FakeDiscord:
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    answers: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        self.calls.append((request.method, request.path, body))
        path = request.path.removeprefix("/api/v10")
        if self.answers:
            status, answer = self.answers.pop(0)
            return _json(answer, status=status, headers={"Via": "1.1 google"})
        if path == "/users/@me":
            return _json({**USER, "bot": True})
        if path == "/oauth2/applications/@me":
            return _json(
                {
                    "id": "222",
                    "name": "papertide",
                    "icon": None,
                    "description": "",
                    "bot_public": True,
                    "bot_require_code_grant": False,
                    "verify_key": "k",
                    "flags": 0,
                    "owner": USER,
                }
            )
        if path.endswith("/callback"):
            return _json({"interaction": {"id": "111", "type": 2}})
        if path.startswith("/webhooks/"):
            return _json(MESSAGE)
        if path == "/applications/222/commands":
            return _json([{**c, "id": "1", "application_id": "222", "version": "1"} for c in body])
        if path == "/users/@me/channels":
            return _json({"id": "DM555", "type": 1})
        return _json({**MESSAGE, "id": "901"})


@pytest.fixture
async def discord_api() -> AsyncIterator[tuple[FakeDiscord, str]]:
    fake = FakeDiscord()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    old = Route.BASE
    async with serve(app) as base:
        try:
            yield fake, f"{base}/api/v10"
        finally:
            Route.BASE = old  # discord.py keeps its base URL in this class constant


def _interaction_payload(
    command: list[dict[str, Any]], *, manage: bool, guild: str | None = "333"
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "111",
        "application_id": "222",
        "type": 2,
        "token": "tok",
        "version": 1,
        "attachment_size_limit": 10485760,
        "channel_id": "444",
        "locale": "en-US",
        "app_permissions": "0",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "context": 0 if guild else 1,
        "data": {"id": "999", "name": "papers", "type": 1, "options": command},
    }
    if guild:
        data.update(
            guild_id=guild,
            guild_locale="en-US",
            channel={
                "id": "444",
                "type": 0,
                "guild_id": guild,
                "name": "research",
                "position": 0,
                "permission_overwrites": [],
                "nsfw": False,
                "parent_id": None,
            },
            member={
                "user": USER,
                "roles": [],
                "joined_at": "2026-01-01T00:00:00+00:00",
                "deaf": False,
                "mute": False,
                "permissions": "16" if manage else "0",
                "flags": 0,
            },
        )
    else:
        data.update(user=USER, channel={"id": "444", "type": 1, "recipients": [USER]})
    return data


def _sub(name: str, **options: Any) -> list[dict[str, Any]]:
    opts = [
        {"name": k, "type": 5 if isinstance(v, bool) else 3, "value": v} for k, v in options.items()
    ]
    return [{"name": name, "type": 1, "options": opts}]


async def _invoke(bot: PapersBot, command: list[dict[str, Any]], *, manage: bool = True) -> None:
    interaction = discord.Interaction(
        data=_interaction_payload(command, manage=manage), state=bot._connection
    )  # type: ignore[arg-type]
    await bot.tree._call(interaction)


async def test_commands_run_through_app_commands_and_reply_without_mentions(
    discord_api: tuple[FakeDiscord, str],
    sessions: async_sessionmaker[AsyncSession],
    command_work: CommandWork,
) -> None:
    fake, base = discord_api
    await add_topics(sessions)
    settings = Settings(discord_token="tkn", discord_application_id="222", discord_api_url=base)
    use_discord_api_url(settings.discord_api_url)
    async with PapersBot(
        settings=settings, sessions=sessions, deps=make_deps(), work=command_work
    ) as bot:
        await bot.login("tkn")
        await _invoke(bot, _sub("follow", topic="rl-for-llm-agents"), manage=False)
        await _invoke(bot, _sub("follow", topic="rl-for-llm-agents"))
        await _invoke(
            bot, [{"name": "alert", "type": 2, "options": _sub("test", query="abs:agent")}]
        )
        choices = await bot.group.topic_choices(None, "diff")  # type: ignore[arg-type]
    callbacks = [body for method, path, body in fake.calls if path.endswith("/callback")]
    refused, followed, deferred = callbacks
    assert "Manage" in json.dumps(refused) or "manage this channel" in json.dumps(refused)
    assert refused["data"]["flags"] == 64  # ephemeral
    assert followed["data"]["embeds"][0]["title"] == "This channel now follows RL for LLM Agents."
    assert followed["data"]["allowed_mentions"] == {"parse": []}
    assert deferred["type"] == 5  # deferred: alert test may pass 3 s
    followup = next(
        body for method, path, body in fake.calls if path.startswith("/api/v10/webhooks/")
    )
    assert followup["embeds"][0]["title"].startswith("7 papers in the last four weeks")
    assert [c.value for c in choices] == ["diffusion-models"]
    assert await count_rows(sessions, "subscription") == 1


async def test_a_full_command_queue_answers_busy_at_once_and_does_nothing(
    discord_api: tuple[FakeDiscord, str], sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    fake, base = discord_api
    await add_topics(sessions)
    work = build_command_work(db_url, workers=1, capacity=1)
    gate = threading.Event()

    async def hold() -> None:
        await asyncio.to_thread(gate.wait)

    settings = Settings(discord_token="tkn", discord_application_id="222", discord_api_url=base)
    use_discord_api_url(settings.discord_api_url)
    bot = PapersBot(settings=settings, sessions=sessions, deps=make_deps(), work=work)
    try:
        async with bot:
            await bot.login("tkn")
            assert work.queue.submit("someone else", hold)  # fills the only slot
            await _invoke(bot, _sub("follow", topic="rl-for-llm-agents"))
            gate.set()
    finally:
        gate.set()
        await work.queue.close()
    (busy,) = [body for method, path, body in fake.calls if path.endswith("/callback")]
    assert busy["data"]["embeds"][0]["title"] == BUSY
    assert busy["data"]["flags"] == 64  # only the person who typed it sees it
    assert await count_rows(sessions, "subscription") == 0


async def test_sync_registers_the_group_at_the_configured_api(
    discord_api: tuple[FakeDiscord, str],
) -> None:
    fake, base = discord_api
    settings = Settings(discord_token="tkn", discord_application_id="222", discord_api_url=base)
    assert await sync_commands(settings) == ["papers"]
    put = next(body for method, path, body in fake.calls if method == "PUT")
    names = {o["name"] for o in put[0]["options"]}
    assert {"follow", "alert", "quiet-hours", "help"} <= names
    assert "permissions=309237664768" in invite_url(settings)
    assert "scope=bot+applications.commands" in invite_url(settings)


async def test_every_command_and_option_has_a_real_description(
    discord_api: tuple[FakeDiscord, str],
) -> None:
    """Discord shows an option's description under its name; "…" is discord.py's filler."""
    fake, base = discord_api
    settings = Settings(discord_token="tkn", discord_application_id="222", discord_api_url=base)
    await sync_commands(settings)
    put = next(body for method, path, body in fake.calls if method == "PUT")
    seen: list[str] = []

    def walk(node: dict[str, Any], path: str) -> None:
        described = str(node.get("description", ""))
        assert described.strip() not in ("", "…", "..."), path
        seen.append(path)
        for option in node.get("options", []):
            walk(option, f"{path} {option['name']}")

    walk(put[0], "/papers")
    assert "/papers alert add query" in seen
    assert "/papers quiet-hours timezone" in seen
    assert len(seen) > 25


def _message(
    kind: MessageKind, payload: dict[str, Any], kind_of: TargetKind = TargetKind.CHANNEL
) -> OutboundMessage:
    target = TargetRef(
        id=1, platform=Platform.DISCORD, kind=kind_of, workspace="333", address="444"
    )
    return OutboundMessage(id=3, key="k", kind=kind, target=target, payload=payload)


@pytest.mark.parametrize("nasty", NASTY_PAPERS, ids=lambda p: p["id"])
def test_every_nasty_paper_fits_discord(nasty: dict[str, Any]) -> None:
    for body in to_payloads(
        MessageKind.PAPER, {"paper": nasty, "reasons": [TOPIC_REASON, ALERT_REASON]}
    ):
        embed = body["embeds"][0]
        assert len(embed["title"]) <= 256
        assert len(embed["description"]) <= 4096
        assert len(embed["fields"]) <= 25
        assert all(len(f["value"]) <= 1024 for f in embed["fields"])
        assert embed_size(embed) <= EMBED_TOTAL
        assert body["allowed_mentions"] == {"parse": []}
        assert "@everyone" not in json.dumps(embed, ensure_ascii=False)


def test_group_messages_carry_every_paper_within_limits() -> None:
    items = [{"paper": p, "reasons": [TOPIC_REASON]} for p in NASTY_PAPERS * 10]
    bodies = to_payloads(MessageKind.PAPER_GROUP, {"items": items})
    assert sum(len(b["embeds"]) for b in bodies) == 70
    for body in bodies:
        assert len(body["embeds"]) <= 10
        assert sum(embed_size(e) for e in body["embeds"]) <= EMBED_TOTAL


async def test_delivery_through_local_rest_server(discord_api: tuple[FakeDiscord, str]) -> None:
    fake, base = discord_api
    channel = DiscordChannel.from_settings(Settings(discord_token="tkn", discord_api_url=base))
    item = {"paper": paper(title="@everyone look"), "reasons": [ALERT_REASON]}
    assert await channel.send(_message(MessageKind.PAPER, item, TargetKind.USER)) == Delivered(
        remote_id="901"
    )
    assert [p for _, p, _ in fake.calls] == [
        "/api/v10/users/@me/channels",
        "/api/v10/channels/DM555/messages",
    ]
    assert fake.calls[-1][2]["allowed_mentions"] == {"parse": []}
    fake.answers = [(429, {"message": "slow", "retry_after": 2.5, "global": False})]
    assert await channel.send(_message(MessageKind.PAPER, item)) == Retry(
        reason="ratelimited", after=2.5
    )
    fake.answers = [(404, {"message": "Unknown Channel", "code": 10003})]
    assert await channel.send(_message(MessageKind.PAPER, item)) == Failed(
        reason="http_404 code 10003", disable_target=True
    )
    fake.answers = [(403, {"message": "Missing Access", "code": 50001})]
    result = await channel.send(_message(MessageKind.PAPER, item))
    assert isinstance(result, Failed)
    assert result.disable_target
    fake.answers = [(502, {})]
    assert isinstance(await channel.send(_message(MessageKind.PAPER, item)), Retry)
    unreachable = DiscordChannel(httpx.AsyncClient(base_url="http://127.0.0.1:9/"))
    assert isinstance(await unreachable.send(_message(MessageKind.PAPER, item)), Retry)
