"""`/papers ask` in Slack, end to end: signed requests, a local Slack API stand-in."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ask.answer import Answer, TopicRef
from bot.ask.extract import Passage
from bot.chat.commands import Reply
from bot.chat.queue import CommandWork
from bot.platforms.slack.answer import answer_blocks, answer_response
from bot.platforms.slack.render import MAX_BLOCKS, MAX_SECTION
from tests.support.ask import made_answer
from tests.support.chat import add_topics, make_deps
from tests.support.servers import (
    FakeSlack,
    command_body,
    fake_slack,
    signed_headers,
)
from tests.support.slack_app import FORM, slack_routes


@dataclass
class Rig:
    url: str
    slack: FakeSlack
    http: aiohttp.ClientSession
    asked: list[tuple[TopicRef | None, str]]

    async def command(self, text: str) -> dict[str, Any]:
        body = command_body(text, base=self.slack.base)
        headers = {**FORM, **signed_headers(body)}
        async with self.http.post(f"{self.url}/slack/events", data=body, headers=headers) as r:
            assert r.status == 200
        return await self.slack.next_response()


@pytest.fixture
async def rig(
    sessions: async_sessionmaker[AsyncSession], command_work: CommandWork
) -> AsyncIterator[Rig]:
    await add_topics(sessions)
    asked: list[tuple[TopicRef | None, str]] = []

    async def ask(topic: TopicRef | None, question: str) -> Answer:
        asked.append((topic, question))
        return made_answer()

    async with fake_slack() as slack:
        routes = slack_routes(sessions, slack.base, command_work, make_deps(ask=ask))
        async with routes as url, aiohttp.ClientSession() as http:
            yield Rig(url=url, slack=slack, http=http, asked=asked)


def _texts(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)


async def test_private_answer_follows_the_acknowledgement(rig: Rig) -> None:
    ack = await rig.command("ask rl-for-llm-agents which papers use GRPO?")
    assert ack["response_type"] == "ephemeral"
    assert "Looking through RL for LLM Agents" in _texts(ack)
    answer = await rig.slack.next_response()
    assert answer["response_type"] == "ephemeral"
    text = _texts(answer)
    assert "*GRPO*" in text  # marked words in bold
    assert "<https://arxiv.org/abs/2609.00001|[1]>" in text  # citations link to the papers
    assert "4 more papers match on the topic page" in text
    for raw in ("<!channel>", "<!here>", "<@U123>", "<https://evil.example", "<!subteam"):
        assert raw not in text
    assert "&lt;!channel&gt;" in text
    assert rig.asked[0][1] == "which papers use GRPO?"
    assert rig.slack.posted() == []  # nothing posted in the channel


async def test_thread_answer_is_the_reply_to_the_question_posted_by_the_bot(rig: Rig) -> None:
    ack = await rig.command("ask rl-for-llm-agents --thread which papers use GRPO?")
    assert "in a thread" in _texts(ack)
    for _ in range(100):
        if len(rig.slack.posted()) == 2:
            break
        await asyncio.sleep(0.05)
    parent, reply = rig.slack.posted()
    assert parent["channel"] == reply["channel"] == "C1"
    assert "thread_ts" not in parent
    assert reply["thread_ts"] == "1700000000.000001"
    assert "Question about RL for LLM Agents" in _texts(parent)
    assert "&lt;!channel&gt;" in _texts(parent)
    assert "*GRPO*" in _texts(reply)


async def test_thread_where_the_bot_may_not_post_answers_privately(rig: Rig) -> None:
    rig.slack.post_results = [(200, {"ok": False, "error": "not_in_channel"}, {})]
    await rig.command("ask rl-for-llm-agents --thread GRPO")
    note = await rig.slack.next_response()
    assert "invite me first" in _texts(note)
    private = await rig.slack.next_response()
    assert private["response_type"] == "ephemeral"
    assert "*GRPO*" in _texts(private)


def test_a_long_answer_stays_within_block_kit_limits() -> None:
    answer = made_answer(papers=20, total=500)
    long = answer.papers[0]
    giant = replace(long, title=Passage("T" * 5000), passages=(Passage("x " * 3000),) * 2)
    answer = replace(answer, papers=(giant, *answer.papers[1:]))
    blocks = answer_blocks(answer)
    assert len(blocks) <= MAX_BLOCKS
    assert all(len(b.get("text", {}).get("text", "")) <= MAX_SECTION for b in blocks)
    body = answer_response(Reply(title="t", answer=answer))
    assert len(body["text"]) <= 300


async def test_an_answer_in_flight_at_shutdown_is_delivered_before_the_queue_closes(
    sessions: async_sessionmaker[AsyncSession], command_work: CommandWork
) -> None:
    """`serve` closes the command queue after the web server stops: an answer the
    acks' loop is still waiting for must reach the asker before the queue says done
    (the store and the loop close right after)."""
    await add_topics(sessions)
    release = asyncio.Event()

    async def slow_ask(topic: TopicRef | None, question: str) -> Answer:
        await release.wait()
        return made_answer()

    async with fake_slack() as slack:
        routes = slack_routes(sessions, slack.base, command_work, make_deps(ask=slow_ask))
        async with routes as url, aiohttp.ClientSession() as http:
            rig = Rig(url=url, slack=slack, http=http, asked=[])
            ack = await rig.command("ask rl-for-llm-agents which papers use GRPO?")
            assert "Looking through" in _texts(ack)
            closing = asyncio.create_task(command_work.queue.close())
            await asyncio.sleep(0.3)
            assert not closing.done()  # waiting for the answer, not gone without it
            release.set()
            await asyncio.wait_for(closing, 10)
            assert slack.responses, "the answer had not arrived when the queue closed"
            assert "*GRPO*" in _texts(slack.responses.pop(0))
