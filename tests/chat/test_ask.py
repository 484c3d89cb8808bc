"""`/papers ask`: checks, the quota, the acknowledgement and the answer that follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ask.answer import Answer, TopicRef
from bot.chat.commands import CommandDeps, Reply, run_command
from tests.conftest import count_rows
from tests.support.chat import add_topics, make_ctx, make_deps

NOW = datetime(2026, 7, 1, 12, tzinfo=UTC)


@dataclass
class StandInAsker:
    """Records what it was asked and answers with no papers (our own seam)."""

    calls: list[tuple[TopicRef | None, str]] = field(default_factory=list)

    async def __call__(self, topic: TopicRef | None, question: str) -> Answer:
        self.calls.append((topic, question))
        return Answer(question, topic, (), None, None, (), 0)


@pytest.fixture
async def stored(sessions: async_sessionmaker[AsyncSession]) -> async_sessionmaker[AsyncSession]:
    await add_topics(sessions)
    return sessions


async def _run(
    sessions: async_sessionmaker[AsyncSession], text: str, deps: CommandDeps, **ctx: object
) -> Reply:
    async with sessions() as session:
        reply = await run_command(session=session, ctx=make_ctx(**ctx), text=text, deps=deps)
        await session.commit()
    return reply


async def test_ask_acknowledges_then_answers_privately_or_in_a_thread(
    stored: async_sessionmaker[AsyncSession],
) -> None:
    asker = StandInAsker()
    deps = make_deps(ask=asker, now=lambda: NOW)
    ack = await _run(stored, "ask rl-for-llm-agents which papers use GRPO?", deps)
    assert not ack.error
    assert ack.title == "Looking through RL for LLM Agents for: which papers use GRPO?"
    assert "only to you" in ack.lines[0]
    assert ack.followup is not None
    assert asker.calls == []  # nothing slow happens before the acknowledgement
    final = await ack.followup()
    assert final.answer is not None
    assert final.ephemeral
    assert not final.thread
    topic, question = asker.calls[0]
    assert topic is not None
    assert topic.slug == "rl-for-llm-agents"
    assert question == "which papers use GRPO?"

    threaded = await _run(stored, "ask RL-for-LLM-agents --thread GRPO agents", deps)
    assert threaded.thread
    assert "in a thread" in threaded.lines[0]
    assert threaded.followup is not None
    posted = await threaded.followup()
    assert posted.thread
    assert not posted.ephemeral
    in_dm = await _run(stored, "ask rl-for-llm-agents --thread GRPO", deps, is_dm=True)
    assert not in_dm.thread  # a DM has no channel to thread in

    everything = await _run(stored, "ask --all diffusion sampling", deps)
    assert everything.followup is not None
    await everything.followup()
    assert asker.calls[-1] == (None, "diffusion sampling")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ask", "ask <topic> <question>"),
        ("ask rl-for-llm-agents", "ask <topic> <question>"),
        ("ask rl-for-llm-agnts GRPO", "Did you mean `rl-for-llm-agents`"),
        ("ask rl-for-llm-agents " + "word " * 70, "under 300 characters"),
        ("ask rl-for-llm-agents which of the", "a few words that say what you look for"),
        ("ask rl-for-llm-agents GRPO --verbose", "Unknown option `--verbose`"),
        ("ask rl-for-llm-agents GRPO since 2026-13", "is not a date"),
    ],
)
async def test_bad_questions_get_one_clear_line_and_cost_nothing(
    stored: async_sessionmaker[AsyncSession], text: str, expected: str
) -> None:
    reply = await _run(stored, text, make_deps(ask=StandInAsker()))
    assert reply.error
    assert expected in reply.title
    assert reply.followup is None
    assert await count_rows(stored, "quota") == 0


async def test_the_hourly_quota_is_per_person_and_says_when_to_come_back(
    stored: async_sessionmaker[AsyncSession],
) -> None:
    clock = {"now": NOW}
    deps = make_deps(ask=StandInAsker(), ask_per_hour=2, now=lambda: clock["now"])
    for _ in range(2):
        assert not (await _run(stored, "ask rl-for-llm-agents GRPO", deps)).error
    clock["now"] = NOW + timedelta(minutes=20)
    refused = await _run(stored, "ask rl-for-llm-agents GRPO", deps)
    assert refused.error
    assert refused.title == (
        "You asked 2 questions in the last hour, the most allowed: ask again in 40 minutes."
    )
    other = await _run(stored, "ask rl-for-llm-agents GRPO", deps, user="U2")
    assert not other.error
    elsewhere = await _run(stored, "ask rl-for-llm-agents GRPO", deps, workspace="T9")
    assert not elsewhere.error
    clock["now"] = NOW + timedelta(minutes=61)
    assert not (await _run(stored, "ask rl-for-llm-agents GRPO", deps)).error
    assert await count_rows(stored, "quota") == 3  # one counter per person, none left over


async def test_ask_without_an_asker_says_so_and_help_lists_it(
    stored: async_sessionmaker[AsyncSession],
) -> None:
    off = await _run(stored, "ask rl-for-llm-agents GRPO", make_deps())
    assert off.error
    assert "not set up" in off.title
    helped = await _run(stored, "help", make_deps())
    assert any("ask <topic> <question>" in line for line in helped.lines)
