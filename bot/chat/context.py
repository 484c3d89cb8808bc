"""What every `/papers` handler shares: who typed it, what to answer, what is injected,
and the lookups of a command's target and topic."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.ask.answer import Answer, TopicRef
from bot.catalog.lookup import TopicNotFound, find_topic
from bot.matching.query import CheckedQuery
from bot.outbox.targets import get_or_create_target
from bot.store.models import Target
from bot.subscriptions.chat_digest import RequestDigest
from bot.timeutil import utcnow
from bot.types import Platform, TargetKind

log = logging.getLogger(__name__)

ValidateQuery = Callable[[str], CheckedQuery]
TestQuery = Callable[[AsyncSession, str], Awaitable[tuple[int, Sequence[Mapping[str, Any]]]]]
MomentumLine = Callable[[AsyncSession, str], Awaitable[str | None]]
# (topic or None for every paper, question) -> the answer; raises QuestionError.
AskFn = Callable[[TopicRef | None, str], Awaitable[Answer]]


@dataclass(frozen=True, slots=True)
class CommandContext:
    """Who typed the command, where. `workspace` scopes every row the command may touch."""

    platform: Platform
    workspace: str
    channel: str
    user: str
    is_dm: bool
    can_manage_channel: bool
    # A file the person attached (`/papers import`), read on demand; None: nothing attached.
    upload: Callable[[], Awaitable[bytes | None]] | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """What to answer; adapters escape and render it (Block Kit, an embed…)."""

    title: str
    lines: tuple[str, ...] = ()
    ephemeral: bool = True
    error: bool = False
    mentions: tuple[str, ...] = ()  # placeholders (chat.text.mention) shown as mentions
    # `/papers ask`: the acknowledgement carries `followup`, which the adapter awaits
    # after answering (outside its session); the reply it returns carries `answer`,
    # posted in a thread when `thread` is set.
    answer: Answer | None = None
    followup: Callable[[], Awaitable[Reply]] | None = None
    thread: bool = False


async def _no_momentum(_session: AsyncSession, _slug: str) -> str | None:
    return None


async def _channel_ok(_ctx: CommandContext) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class CommandDeps:
    """Pieces other areas own, injected (the lead wires the real ones)."""

    validate_query: ValidateQuery  # canonical text and hints, or QueryError
    test_query: TestQuery  # (count in the last four weeks, top papers as payload dicts)
    request_digest: RequestDigest
    momentum_line: MomentumLine = _no_momentum
    # Can the bot post in ctx.channel? An error line ("invite me first") or None.
    check_channel: Callable[[CommandContext], Awaitable[str | None]] = _channel_ok
    channel_changes: str = "managers"  # or "everyone"
    max_alerts: int = 50  # per person; settings.max_alerts_per_person
    command: str = "/papers"
    now: Callable[[], datetime] = field(default=utcnow)
    # `/papers import <url>`: the export's bytes, bounded, internal addresses refused.
    fetch_url: Callable[[str], Awaitable[bytes]] | None = None
    ask: AskFn | None = None  # None: `/papers ask` says it is not set up
    ask_per_hour: int = 20


class Refusal(Exception):
    """A one-line error reply raised anywhere below `run_command`."""


def split_me(args: list[str], ctx: CommandContext) -> tuple[list[str], bool]:
    personal = bool(args) and args[-1].lower() == "me"
    return (args[:-1] if personal else args), personal or ctx.is_dm


def may_change_channel(ctx: CommandContext, deps: CommandDeps) -> None:
    """Refusal unless this person may change what the channel follows."""
    if not ctx.can_manage_channel and deps.channel_changes != "everyone":
        raise Refusal(
            "Only people who can manage this channel may change its topics: add `me` to do it "
            "for yourself."
        )


async def target_for(
    session: AsyncSession, ctx: CommandContext, deps: CommandDeps, *, personal: bool, change: bool
) -> Target:
    if personal:
        return await get_or_create_target(
            session=session,
            platform=ctx.platform,
            workspace=ctx.workspace,
            address=ctx.user,
            kind=TargetKind.USER,
        )
    if change:
        may_change_channel(ctx, deps)
    return await get_or_create_target(
        session=session,
        platform=ctx.platform,
        workspace=ctx.workspace,
        address=ctx.channel,
        kind=TargetKind.CHANNEL,
    )


async def topic_named(session: AsyncSession, text: str, deps: CommandDeps, usage: str) -> Any:
    if not text:
        raise Refusal(f"Name a topic: `{deps.command} {usage}` (see `{deps.command} topics`).")
    try:
        return await find_topic(session=session, text=text)
    except TopicNotFound as exc:
        if exc.suggestions:
            hint = ", ".join(f"`{s}`" for s in exc.suggestions)
            raise Refusal(f"No topic `{text[:80]}`. Did you mean {hint}?") from exc
        raise Refusal(f"No topic `{text[:80]}`: type `{deps.command} topics` to browse.") from exc


def where(personal: bool) -> str:
    return "You" if personal else "This channel"
