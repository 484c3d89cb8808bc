"""Delivery through Apprise to local stand-ins for a Mattermost incoming webhook and ntfy.

The stand-ins are real aiohttp servers on 127.0.0.1 speaking what Apprise's Mattermost
and ntfy plugins post (`POST /hooks/<token>` with `{"text": …}`; `POST /` with
`{"topic", "title", "message"}`); the channel, the worker and the outbox are real.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import select

from bot.config import Settings
from bot.outbox.channel import Delivered, Failed, Retry
from bot.outbox.pacing import rates_from_settings
from bot.outbox.queue import enqueue, message_key
from bot.platforms.apprise.channel import AppriseChannel
from bot.platforms.apprise.render import Limits, escape, to_parts
from bot.platforms.registry import build_channels
from bot.service.root import open_papertide
from bot.store.models import OutboxRow, Target
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef
from tests.support.chat import ALERT_REASON, NASTY_PAPERS, TOPIC_REASON, paper
from tests.support.servers import serve


@dataclass
class Stand:
    """Mattermost and ntfy on one local server; `fail` scripts answers per request."""

    base: str = ""
    mattermost: list[dict[str, Any]] = field(default_factory=list)
    ntfy: list[dict[str, Any]] = field(default_factory=list)
    fail: list[int] = field(default_factory=list)  # statuses for the next requests
    delay: float = 0.0

    @property
    def port(self) -> str:
        return self.base.rsplit(":", 1)[1]

    async def _answer(self, got: list[dict[str, Any]], body: dict[str, Any]) -> web.Response:
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail:
            return web.json_response({"error": "scripted"}, status=self.fail.pop(0))
        got.append(body)
        return web.Response(text="ok")

    async def hooks(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        body["_token"] = request.match_info["token"]
        return await self._answer(self.mattermost, body)

    async def root(self, request: web.Request) -> web.Response:
        return await self._answer(self.ntfy, json.loads(await request.read()))


@pytest.fixture
async def stand() -> AsyncIterator[Stand]:
    st = Stand()
    app = web.Application()
    app.router.add_post("/hooks/{token}", st.hooks)
    app.router.add_post("/", st.root)
    async with serve(app) as base:
        st.base = base
        yield st


def _message(address: str, kind: MessageKind, payload: dict[str, Any], mid: int = 1) -> Any:
    target = TargetRef(mid, Platform.APPRISE, TargetKind.CHANNEL, "", address)
    return OutboundMessage(id=mid, key=f"k{mid}", kind=kind, target=target, payload=payload)


def _item(i: int) -> dict[str, Any]:
    return {"paper": paper(f"2606.{i:05d}", title=f"Paper number {i} on agents"),
            "reasons": [TOPIC_REASON]}  # fmt: skip


async def test_a_paper_reaches_mattermost_escaped_and_ntfy_with_a_title(stand: Stand) -> None:
    channel = AppriseChannel(timeout=10)
    nasty = {"paper": NASTY_PAPERS[2], "reasons": [TOPIC_REASON, ALERT_REASON]}
    mm = _message(f"mmost://127.0.0.1:{stand.port}/tok3n", MessageKind.PAPER, nasty)
    assert isinstance(await channel.send(mm), Delivered)
    text = stand.mattermost[0]["text"]
    assert stand.mattermost[0]["_token"] == "tok3n"
    # Mattermost renders markdown: the title's link and mentions are inert.
    assert "@\u200beveryone" in text
    assert "@everyone" not in text
    assert "\\<https://evil\\.example\\|click\\>" in text
    assert stand.mattermost[0]["username"] == "papertide"
    assert "**[" in text
    assert "(https://arxiv.org/abs/2606.00003)" in text
    assert "Why" not in text
    assert "topic RL for LLM Agents" in text

    ntfy = _message(f"ntfy://127.0.0.1:{stand.port}/lab-papers", MessageKind.PAPER, _item(7))
    assert isinstance(await channel.send(ntfy), Delivered)
    posted = stand.ntfy[0]
    assert posted["topic"] == "lab-papers"
    assert posted["title"] == "New paper: Paper number 7 on agents"
    assert "https://arxiv.org/abs/2606.00007" in posted["message"]
    assert "\\" not in posted["message"]  # plain text: nothing escaped


async def test_a_group_is_split_within_mattermosts_limit_and_carries_every_paper(
    stand: Stand,
) -> None:
    items = [_item(i) for i in range(120)]
    saved: list[dict[str, Any]] = []

    async def save(_mid: int, progress: dict[str, Any]) -> None:
        saved.append(progress)

    channel = AppriseChannel(timeout=10, save_progress=save)
    msg = _message(f"mmost://127.0.0.1:{stand.port}/t", MessageKind.PAPER_GROUP, {"items": items})
    assert isinstance(await channel.send(msg), Delivered)
    texts = [m["text"] for m in stand.mattermost]
    assert len(texts) > 2
    assert all(len(t) <= 4000 for t in texts)
    joined = "\n".join(texts)
    assert all(f"abs/2606.{i:05d})" in joined for i in range(120))
    assert texts[0].startswith(f"**120 new papers \\(1/{len(texts)}\\)**") or texts[0].startswith(
        f"**120 new papers (1/{len(texts)})**"
    )
    assert saved[-1] == {"sent": len(texts)}


async def test_failures_are_retries_with_apprises_reason_and_a_retry_resumes(
    stand: Stand,
) -> None:
    items = [_item(i) for i in range(120)]
    channel = AppriseChannel(timeout=10)
    url = f"mmost://127.0.0.1:{stand.port}/t"
    full = to_parts(MessageKind.PAPER_GROUP, {"items": items}, Limits(body=3800, markdown=True))
    stand.fail = [503]
    result = await channel.send(_message(url, MessageKind.PAPER_GROUP, {"items": items}))
    assert isinstance(result, Retry)
    assert "503" in result.reason
    assert "Mattermost" in result.reason
    assert stand.mattermost == []
    # A retry that had two parts accepted sends only the rest.
    resumed = {"items": items, "_progress": {"sent": 2}}
    assert isinstance(
        await channel.send(_message(url, MessageKind.PAPER_GROUP, resumed)), Delivered
    )
    assert [m["text"] for m in stand.mattermost] == [p.body for p in full[2:]]


async def test_unknown_urls_fail_and_disable_and_slow_services_time_out(stand: Stand) -> None:
    channel = AppriseChannel(timeout=0.5)
    bad = await channel.send(_message("nosuchservice://x/y", MessageKind.PAPER, _item(1)))
    assert isinstance(bad, Failed)
    assert bad.disable_target
    stand.delay = 2.0
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    slow = await channel.send(
        _message(f"ntfy://127.0.0.1:{stand.port}/t", MessageKind.PAPER, _item(2))
    )
    task.cancel()
    assert isinstance(slow, Retry)
    assert "did not answer in time" in slow.reason
    assert ticks >= 10  # the event loop kept running while Apprise waited on its socket


def test_tiny_services_still_get_the_title_and_the_link() -> None:
    parts = to_parts(MessageKind.PAPER, _item(3), Limits(body=160, title=0))
    assert len(parts) == 1
    assert len(parts[0].body) <= 160
    assert "https://arxiv.org/abs/2606.00003" in parts[0].body
    many = to_parts(MessageKind.QUIET_SUMMARY, {"items": [_item(i) for i in range(9)], "until": ""},
                    Limits(body=500, title=100, lines=4))  # fmt: skip
    assert all(len(p.body) <= 500 and len(p.body.splitlines()) <= 4 for p in many)
    assert sum("2606.0000" in line for p in many for line in p.body.splitlines()) == 9
    assert escape("a *b* [c](d) @here", True) == "a \\*b\\* \\[c\\]\\(d\\) @\u200bhere"


async def test_the_worker_delivers_apprise_rows_from_the_outbox(
    stand: Stand, settings: Settings
) -> None:
    assert rates_from_settings(settings)[Platform.APPRISE] == settings.apprise_rate_per_second
    async with open_papertide(settings) as root:
        async with root.store.sessions() as session:
            target = Target(platform="apprise", kind="channel",
                            address=f"ntfy://127.0.0.1:{stand.port}/papers")  # fmt: skip
            session.add(target)
            await session.flush()
            assert target.id is not None
            for i in range(2):
                await enqueue(session=session, target_id=target.id, kind=MessageKind.PAPER,
                              key=message_key(target.id, MessageKind.PAPER, f"p{i}"),
                              payload=_item(i))  # fmt: skip
            await session.commit()
        channels = build_channels(root.platform_context())
        assert Platform.APPRISE in channels
        sent = await root.deliver_until_idle(channels, limit_seconds=30)
        async with root.store.sessions() as session:
            rows = (await session.execute(select(OutboxRow))).scalars().all()
    # Paced: one message now, the next one slot (1 / 0.33 s) later, not at once.
    assert sent == 1
    done = next(r for r in rows if r.status == "sent")
    later = next(r for r in rows if r.status == "pending")
    assert done.sent_at is not None
    assert (later.next_attempt_at - done.sent_at).total_seconds() > 2.0
    assert [m["title"] for m in stand.ntfy] == [f"New paper: {done.payload['paper']['title']}"]
