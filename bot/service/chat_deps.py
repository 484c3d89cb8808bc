"""What `/papers` and the topic page get from the packages below chat: the real query
validator and back-test, momentum, and the email double opt-in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.ask.answer import Answer, TopicRef
from bot.ask.service import Asker
from bot.catalog.stats import load_topic_momentum
from bot.chat.commands import CommandDeps
from bot.chat.queue import CAPACITY, WAIT_BUDGET, WORKERS, CommandQueue, CommandWork
from bot.config import Settings
from bot.ingest.safeurl import fetch_limited
from bot.matching.query import check_query
from bot.matching.trial import test_query
from bot.store.engine import create_engine, session_factory
from bot.subscriptions.chat_digest import chat_digest_hook
from bot.timeutil import utcnow
from bot.web.common import Momentum


async def try_query(session: AsyncSession, expr: str) -> tuple[int, Sequence[Mapping[str, Any]]]:
    """`alert test`: papers of the last four weeks a query would have matched."""
    trial = await test_query(session=session, expr=expr, weeks=4, limit=5)
    return trial.count, [{**hit.paper, "terms": list(hit.terms)} for hit in trial.hits]


def topic_momentum(settings: Settings) -> Momentum:
    """`(session, slug, now) -> dict | None` for the topic page's Momentum box."""

    async def momentum(session: AsyncSession, slug: str, now: datetime) -> dict[str, Any] | None:
        return await load_topic_momentum(session=session, slug=slug, as_of=now, settings=settings)

    return momentum


def command_deps(settings: Settings, *, asker: Asker | None = None) -> CommandDeps:
    """Everything `/papers` needs besides the store, for Slack and Discord alike."""
    momentum = topic_momentum(settings)

    async def momentum_line(session: AsyncSession, slug: str) -> str | None:
        found = await momentum(session, slug, utcnow())
        return str(found["line"]) if found else None

    async def ask(topic: TopicRef | None, question: str) -> Answer:
        assert asker is not None
        return await asker.ask(question, topic=topic)

    return CommandDeps(
        validate_query=check_query,
        test_query=try_query,
        request_digest=chat_digest_hook(settings),
        momentum_line=momentum_line,
        channel_changes=settings.channel_changes,
        max_alerts=settings.max_alerts_per_person,
        command=settings.slack_command,
        fetch_url=library_fetcher(settings),
        ask=ask if asker is not None else None,
        ask_per_hour=settings.ask_per_user_per_hour,
    )


def library_fetcher(settings: Settings) -> Callable[[str], Awaitable[bytes]]:
    """`/papers import <url>`: bounded in size and time, internal addresses refused."""

    async def fetch(url: str) -> bytes:
        return await fetch_limited(
            url, max_bytes=settings.import_max_bytes,
            time_limit=min(settings.http_timeout_seconds, 20.0),
            allow_private=settings.allow_private_urls,
            headers={"User-Agent": settings.user_agent},
        )  # fmt: skip

    return fetch


def build_command_work(
    database_url: str,
    *,
    workers: int = WORKERS,
    capacity: int = CAPACITY,
    wait_budget: float | None = WAIT_BUDGET,
) -> CommandWork:
    """The command queue with an engine of its own: the engine is only ever connected on
    the queue's thread (an engine's connections belong to the loop that opened them) and
    disposed there when the queue stops."""
    # No ping before each checkout (a round trip per command on PostgreSQL): the work
    # runs through `CommandWork.run`, which retries once when a connection is found dead.
    # On SQLite its statements run on the queue's own thread, hop-free (one connection
    # that every job waits for: hops bought nothing there but GIL waits).
    engine = create_engine(database_url, pool_pre_ping=False, sqlite_inline=True)
    queue = CommandQueue(
        workers=workers, capacity=capacity, wait_budget=wait_budget, on_stop=engine.dispose
    )
    return CommandWork(queue=queue, sessions=session_factory(engine))
