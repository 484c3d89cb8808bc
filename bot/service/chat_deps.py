"""What `/papers` and the topic page get from the packages below chat: the real query
validator and back-test, momentum, and the email double opt-in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.catalog.stats import load_topic_momentum
from bot.chat.commands import CommandDeps
from bot.config import Settings
from bot.matching.query import format_query, parse_query
from bot.matching.trial import test_query
from bot.subscriptions.chat_digest import chat_digest_hook
from bot.timeutil import utcnow
from bot.web.common import Momentum


def validate_query(expr: str) -> str:
    """The canonical form of a query, or QueryError with its position."""
    return format_query(parse_query(expr))


async def try_query(session: AsyncSession, expr: str) -> tuple[int, Sequence[Mapping[str, Any]]]:
    """`alert test`: papers of the last four weeks a query would have matched."""
    trial = await test_query(session=session, expr=expr, weeks=4, limit=5)
    return trial.count, [{**hit.paper, "terms": list(hit.terms)} for hit in trial.hits]


def topic_momentum(settings: Settings) -> Momentum:
    """`(session, slug, now) -> dict | None` for the topic page's Momentum box."""

    async def momentum(session: AsyncSession, slug: str, now: datetime) -> dict[str, Any] | None:
        return await load_topic_momentum(session=session, slug=slug, as_of=now, settings=settings)

    return momentum


def command_deps(settings: Settings) -> CommandDeps:
    """Everything `/papers` needs besides the store, for Slack and Discord alike."""
    momentum = topic_momentum(settings)

    async def momentum_line(session: AsyncSession, slug: str) -> str | None:
        found = await momentum(session, slug, utcnow())
        return str(found["line"]) if found else None

    return CommandDeps(
        validate_query=validate_query,
        test_query=try_query,
        request_digest=chat_digest_hook(settings),
        momentum_line=momentum_line,
        channel_changes=settings.channel_changes,
        max_alerts=settings.max_alerts_per_person,
        command=settings.slack_command,
    )
