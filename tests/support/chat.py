"""Shared bits of the chat tests: stand-ins at our own seams, topics, nasty papers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.commands import CommandContext, CommandDeps
from bot.errors import QueryError
from bot.matching.query import CheckedQuery, Term
from bot.store.models import Target, Topic
from bot.types import Platform

TOPICS = [
    ("rl-for-llm-agents", "RL for LLM Agents", "Reinforcement learning for language-model agents"),
    ("diffusion-models", "Diffusion Models", "Score-based generative models"),
    ("graph-neural-networks", "Graph Neural Networks", "Message passing on graphs"),
]


def stand_in_validate(expr: str) -> CheckedQuery:
    """Stand-in for bot.matching's validator: rejects unbalanced quotes and parentheses."""
    if expr.count('"') % 2 or expr.count("(") != expr.count(")"):
        raise QueryError("unbalanced quote or parenthesis", position=0)
    text = " ".join(expr.split())
    return CheckedQuery(Term("all", text), text)


async def stand_in_test_query(
    _session: AsyncSession, expr: str
) -> tuple[int, Sequence[Mapping[str, Any]]]:
    """Stand-in for bot.matching's back-test: a fixed answer naming the query."""
    papers = [
        {
            "id": f"2606.0000{i}",
            "title": f"Paper {i} on {expr}",
            "url": f"https://arxiv.org/abs/2606.0000{i}",
        }
        for i in range(7)
    ]
    return 7, papers


async def stand_in_momentum(_session: AsyncSession, slug: str) -> str | None:
    return "70 papers in the last four weeks, up 141%" if slug == "rl-for-llm-agents" else None


REQUESTED_DIGESTS: list[tuple[int, str]] = []


async def stand_in_request_digest(_session: AsyncSession, target: Target, email: str) -> str:
    """Stand-in for the link mail: notes (chat target id, address), links nothing."""
    assert target.id is not None
    REQUESTED_DIGESTS.append((target.id, email))
    return f"Noted: a link is on its way to {email}."


def make_deps(**overrides: Any) -> CommandDeps:
    values: dict[str, Any] = {
        "validate_query": stand_in_validate,
        "test_query": stand_in_test_query,
        "request_digest": stand_in_request_digest,
        "momentum_line": stand_in_momentum,
    }
    values.update(overrides)
    return CommandDeps(**values)


def make_ctx(**overrides: Any) -> CommandContext:
    values: dict[str, Any] = {
        "platform": Platform.SLACK,
        "workspace": "T1",
        "channel": "C1",
        "user": "U1",
        "is_dm": False,
        "can_manage_channel": True,
    }
    values.update(overrides)
    return CommandContext(**values)


async def add_topics(sessions: async_sessionmaker[AsyncSession]) -> dict[str, int]:
    async with sessions() as session:
        rows = [Topic(slug=s, name=n, description=d, query=f"ti:{s}") for s, n, d in TOPICS]
        session.add_all(rows)
        await session.commit()
        return {row.slug: int(row.id or 0) for row in rows}


def paper(pid: str = "2606.01234", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": pid,
        "version": 1,
        "title": "Scaling RL for LLM Agents",
        "abstract": "We study agents. They learn. Results are good.",
        "authors": [{"name": "Yi Wu", "affiliations": []}, {"name": "Ann Lee", "affiliations": []}],
        "categories": ["cs.LG", "cs.AI"],
        "published": "2026-06-30T12:00:00+00:00",
        "updated": "2026-06-30T12:00:00+00:00",
        "url": f"https://arxiv.org/abs/{pid}",
        "pdf_url": f"https://arxiv.org/pdf/{pid}",
        "comment": "",
        "journal_ref": "",
        "doi": "",
    }
    base.update(overrides)
    return base


TOPIC_REASON = {
    "kind": "topic",
    "id": 1,
    "slug": "rl-for-llm-agents",
    "name": "RL for LLM Agents",
    "terms": ["reinforcement learning", "agent"],
}
ALERT_REASON = {"kind": "alert", "id": 12, "query": 'au:"Yi Wu"', "terms": ["Yi Wu"]}

RTL = "تعلم معزز للوكلاء اللغويين " * 4
NASTY_PAPERS = [
    paper("2606.00001", abstract=("A very long sentence about agents " * 20 + ". ") * 8),
    paper("2606.00002", authors=[{"name": f"Author {i}", "affiliations": []} for i in range(300)]),
    paper("2606.00003", title="<!channel> @everyone <@U123> <https://evil.example|click> & more"),
    paper("2606.00004", title="@everyone @here look", abstract="@everyone please <!here>"),
    paper(
        "2606.00005",
        title=r"$\mathcal{O}(n \log n)$ bounds for \textbf{RL} with $x_{i}^{2}$ *bold* _it_",
    ),
    paper(
        "2606.00006",
        title=RTL,
        abstract=RTL * 30,
        authors=[{"name": "محمد علي", "affiliations": []}],
    ),
    paper(
        "2606.00007",
        title="T" * 2000,
        abstract="x" * 5000,
        categories=[f"cs.C{i}" for i in range(200)],
    ),
]
