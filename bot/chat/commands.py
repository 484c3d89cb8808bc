"""The platform-neutral `/papers` command layer: parse the text → act on the store → a Reply.

Slack and Discord adapters build a CommandContext from their request, call
`run_command`, and render the Reply. No SDK is imported here; everything slow or
owned by another area (query validation, query testing, momentum, digest mail) is
injected through CommandDeps.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy.ext.asyncio import AsyncSession

from bot.catalog.lookup import TopicNotFound, find_topic, search_topics
from bot.chat.text import BadInput, clean_text, format_duration, parse_duration
from bot.errors import PapertideError, QueryError
from bot.outbox.quiet_hours import QuietHoursError, parse_quiet_hours
from bot.outbox.targets import enable_target, find_target, get_or_create_target
from bot.store.models import Target
from bot.subscriptions import alerts, follows
from bot.subscriptions.addresses import AddressError, normalize_address
from bot.subscriptions.chat_digest import RequestDigest, request_digest, stop_digest
from bot.timeutil import utcnow
from bot.types import Platform, TargetKind

log = logging.getLogger(__name__)

ValidateQuery = Callable[[str], str]
TestQuery = Callable[[AsyncSession, str], Awaitable[tuple[int, Sequence[Mapping[str, Any]]]]]
MomentumLine = Callable[[AsyncSession, str], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class CommandContext:
    """Who typed the command, where. `workspace` scopes every row the command may touch."""

    platform: Platform
    workspace: str
    channel: str
    user: str
    is_dm: bool
    can_manage_channel: bool


@dataclass(frozen=True, slots=True)
class Reply:
    """What to answer; adapters escape and render it (Block Kit, an embed…)."""

    title: str
    lines: tuple[str, ...] = ()
    ephemeral: bool = True
    error: bool = False


async def _no_momentum(_session: AsyncSession, _slug: str) -> str | None:
    return None


async def _channel_ok(_ctx: CommandContext) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class CommandDeps:
    """Pieces other areas own, injected (the lead wires the real ones)."""

    validate_query: ValidateQuery  # normalized query text, or QueryError
    test_query: TestQuery  # (count in the last four weeks, top papers as payload dicts)
    request_digest: RequestDigest
    momentum_line: MomentumLine = _no_momentum
    # Can the bot post in ctx.channel? An error line ("invite me first") or None.
    check_channel: Callable[[CommandContext], Awaitable[str | None]] = _channel_ok
    channel_changes: str = "managers"  # or "everyone"
    command: str = "/papers"
    now: Callable[[], datetime] = field(default=utcnow)


class _Refusal(Exception):
    """A one-line error reply raised anywhere below `run_command`."""


HELP = (
    ("follow <topic> [me]", "send this channel (or you, with `me`) each new paper of a topic"),
    ("unfollow <topic> [me]", "stop following a topic"),
    ("list", "what this channel and you follow, and your alerts"),
    ("topics [words]", "the topic catalog, optionally filtered"),
    ("alert add <query>", 'DM me papers matching a query, e.g. `au:"Yi Wu" AND abs:agent`'),
    ("alert remove <id>", "delete one of your alerts"),
    ("alert test <query>", "what a query would have matched in the last four weeks"),
    ("alerts", "your alerts"),
    ("digest <email>", "a weekly email digest of what you follow; `digest off` stops it"),
    ("mute <topic> <duration> [me]", "pause a topic's papers for e.g. `2h`, `3d`, `1w`"),
    ("quiet-hours 22-07 [time zone] [me]", "hold alerts overnight, then one summary; `off`"),
)


async def run_command(
    *, session: AsyncSession, ctx: CommandContext, text: str, deps: CommandDeps
) -> Reply:
    """Run one `/papers …` command for `ctx`; the caller commits the session."""
    try:
        words = clean_text(text).split(" ")
        name, args = words[0].lower(), [w for w in words[1:] if w]
        handler = _HANDLERS.get(name)
        if handler is None:
            if name in ("", "help"):
                return _help(deps)
            raise _Refusal(f"Unknown command `{name[:40]}`: type `{deps.command} help`.")
        return await handler(session, ctx, args, deps)
    except (BadInput, _Refusal) as exc:
        return Reply(title=str(exc), error=True)


def _help(deps: CommandDeps) -> Reply:
    lines = tuple(f"`{deps.command} {usage}`: {what}" for usage, what in HELP)
    return Reply(title="papertide commands", lines=lines)


def _split_me(args: list[str], ctx: CommandContext) -> tuple[list[str], bool]:
    personal = bool(args) and args[-1].lower() == "me"
    return (args[:-1] if personal else args), personal or ctx.is_dm


async def _target(
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
    if change and not ctx.can_manage_channel and deps.channel_changes != "everyone":
        raise _Refusal(
            "Only people who can manage this channel may change its topics: add `me` to do it "
            "for yourself."
        )
    return await get_or_create_target(
        session=session,
        platform=ctx.platform,
        workspace=ctx.workspace,
        address=ctx.channel,
        kind=TargetKind.CHANNEL,
    )


async def _topic(session: AsyncSession, text: str, deps: CommandDeps, usage: str) -> Any:
    if not text:
        raise _Refusal(f"Name a topic: `{deps.command} {usage}` (see `{deps.command} topics`).")
    try:
        return await find_topic(session=session, text=text)
    except TopicNotFound as exc:
        if exc.suggestions:
            hint = ", ".join(f"`{s}`" for s in exc.suggestions)
            raise _Refusal(f"No topic `{text[:80]}`. Did you mean {hint}?") from exc
        raise _Refusal(f"No topic `{text[:80]}`: type `{deps.command} topics` to browse.") from exc


def _where(personal: bool) -> str:
    return "You" if personal else "This channel"


async def _follow(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    args, personal = _split_me(args, ctx)
    topic = await _topic(session, " ".join(args), deps, "follow <topic>")
    target = await _target(session, ctx, deps, personal=personal, change=True)
    if not personal:
        problem = await deps.check_channel(ctx)
        if problem:
            raise _Refusal(problem)
    created = await follows.follow_topic(session=session, target=target, topic=topic)
    await enable_target(session=session, target=target)
    who = _where(personal)
    if not created:
        return Reply(title=f"{who} already follow{'s' if not personal else ''} {topic.name}.")
    log.info("chat.follow", extra={"target_id": target.id, "topic": topic.slug})
    return Reply(
        title=f"{who} now follow{'s' if not personal else ''} {topic.name}.",
        lines=(f"New papers arrive as they appear; `{deps.command} unfollow {topic.slug}` stops.",),
        ephemeral=personal,
    )


async def _unfollow(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    args, personal = _split_me(args, ctx)
    topic = await _topic(session, " ".join(args), deps, "unfollow <topic>")
    target = await _target(session, ctx, deps, personal=personal, change=True)
    if not await follows.unfollow_topic(session=session, target=target, topic=topic):
        raise _Refusal(
            f"{_where(personal)} did not follow {topic.name}: see `{deps.command} list`."
        )
    return Reply(
        title=f"{_where(personal)} no longer follow{'' if personal else 's'} {topic.name}."
    )


async def _list(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    lines: list[str] = []
    now = deps.now()
    places = [("You", ctx.user)] + ([] if ctx.is_dm else [("This channel", ctx.channel)])
    for label, address in reversed(places):
        target = await find_target(
            session=session, platform=ctx.platform, workspace=ctx.workspace, address=address
        )
        followed = (
            []
            if target is None
            else await follows.list_subscriptions(session=session, target=target)
        )
        names = []
        for sub, topic in followed:
            muted = sub.muted_until is not None and sub.muted_until > now
            names.append(f"{topic.name} (`{topic.slug}`)" + (" — muted" if muted else ""))
        lines.append(
            f"{label} follow{'s' if label != 'You' else ''}: " + ("; ".join(names) or "nothing yet")
        )
    lines.extend((await _alerts(session, ctx, [], deps)).lines)
    return Reply(title="Follows and alerts", lines=tuple(lines))


async def _topics(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    topics = await search_topics(session=session, words=" ".join(args))
    if not topics:
        raise _Refusal(f"No topic matches `{' '.join(args)[:80]}`: try fewer words.")
    lines = []
    for topic in topics:
        momentum = await deps.momentum_line(session, topic.slug)
        lines.append(f"{topic.name} (`{topic.slug}`)" + (f": {momentum}" if momentum else ""))
    return Reply(title=f"{len(topics)} topics", lines=tuple(lines))


def _shown_query(query: str) -> str:
    # A backtick inside would end the code span early; show a look-alike instead.
    return "`" + query.replace("`", "ˋ") + "`"


async def _alerts(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    target = await find_target(
        session=session, platform=ctx.platform, workspace=ctx.workspace, address=ctx.user
    )
    found = [] if target is None else await alerts.list_alerts(session=session, target=target)
    if not found:
        return Reply(
            title="Your alerts", lines=(f"No alerts: `{deps.command} alert add <query>`.",)
        )
    now = deps.now()
    lines = tuple(
        f"#{a.id} {_shown_query(a.query)}"
        + (" — muted" if a.muted_until is not None and a.muted_until > now else "")
        for a in found
    )
    return Reply(title="Your alerts", lines=lines)


def _alert_id(args: list[str], deps: CommandDeps, usage: str) -> int:
    if not args or not args[0].lstrip("#").isdigit() or len(args[0]) > 12:
        raise _Refusal(
            f"Type the alert's number: `{deps.command} {usage}` (see `{deps.command} alerts`)."
        )
    return int(args[0].lstrip("#"))


def _valid_query(text: str, deps: CommandDeps, usage: str) -> str:
    if not text:
        raise _Refusal(f'Add a query: `{deps.command} {usage}`, e.g. `au:"Yi Wu"`.')
    try:
        return deps.validate_query(text)
    except QueryError as exc:
        raise _Refusal(
            f"That query does not parse ({exc}): fix it, e.g. `ti:agent AND cat:cs.LG`."
        ) from exc


async def _alert(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    verb, rest = (args[0].lower(), args[1:]) if args else ("", [])
    personal = dict(personal=True, change=True)
    if verb == "add":
        query = _valid_query(" ".join(rest), deps, "alert add <query>")
        target = await _target(session, ctx, deps, **personal)
        alert = await alerts.add_alert(session=session, target=target, query=query)
        return Reply(
            title=f"Alert #{alert.id} added: {_shown_query(query)}",
            lines=(
                f"Matching papers arrive by DM; `{deps.command} alert remove {alert.id}` stops it.",
            ),
        )
    if verb in ("remove", "mute"):
        alert_id = _alert_id(rest, deps, f"alert {verb} <id>")
        target = await _target(session, ctx, deps, **personal)
        try:
            if verb == "remove":
                await alerts.remove_alert(session=session, target=target, alert_id=alert_id)
                return Reply(title=f"Alert #{alert_id} removed.")
            span = parse_duration(rest[1]) if len(rest) > 1 else parse_duration("1w")
            await alerts.mute_alert(
                session=session, target=target, alert_id=alert_id, until=deps.now() + span
            )
            return Reply(title=f"Alert #{alert_id} muted for {format_duration(span)}.")
        except alerts.NoSuchAlert as exc:
            raise _Refusal(f"You have no alert #{alert_id}: see `{deps.command} alerts`.") from exc
    if verb == "test":
        query = _valid_query(" ".join(rest), deps, "alert test <query>")
        count, top = await deps.test_query(session, query)
        lines = tuple(
            f"{p.get('title', '')} ({p.get('url') or p.get('id', '')})" for p in list(top)[:5]
        )
        return Reply(
            title=f"{count} papers in the last four weeks match {_shown_query(query)}", lines=lines
        )
    raise _Refusal(
        f"Type `{deps.command} alert add <query>`, `alert remove <id>` or `alert test <query>`."
    )


async def _digest(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    target = await _target(session, ctx, deps, personal=True, change=True)
    if len(args) == 1 and args[0].lower() == "off":
        stopped = await stop_digest(session=session, target=target)
        return Reply(title="Weekly digest stopped." if stopped else "You had no weekly digest.")
    usage = f"Type `{deps.command} digest you@example.org`, or `{deps.command} digest off`."
    if len(args) != 1:
        raise _Refusal(usage)
    try:
        address = normalize_address(args[0])
    except AddressError as exc:
        raise _Refusal(f"{exc} {usage}") from exc
    try:
        text = await request_digest(
            session=session, target=target, email=address, hook=deps.request_digest
        )
    except PapertideError as exc:  # a refused address: say why, in one line
        raise _Refusal(str(exc)) from exc
    return Reply(title=text)


async def _mute(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    args, personal = _split_me(args, ctx)
    if len(args) < 2:
        raise _Refusal(
            f"Type `{deps.command} mute <topic> <duration>`, e.g. `mute rl-for-llm-agents 3d`."
        )
    span = parse_duration(args[-1])
    topic = await _topic(session, " ".join(args[:-1]), deps, "mute <topic> <duration>")
    target = await _target(session, ctx, deps, personal=personal, change=True)
    try:
        await follows.mute_topic(
            session=session, target=target, topic=topic, until=deps.now() + span
        )
    except follows.NotFollowing as exc:
        raise _Refusal(
            f"{_where(personal)} does not follow {topic.name}: see `{deps.command} list`."
        ) from exc
    return Reply(title=f"{topic.name} muted for {format_duration(span)}.")


async def _quiet_hours(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    args, personal = _split_me(args, ctx)
    if not args or len(args) > 2:
        raise _Refusal(
            f"Type `{deps.command} quiet-hours 22-07 [Europe/Berlin]`, or `quiet-hours off`."
        )
    target = await _target(session, ctx, deps, personal=personal, change=True)
    if args[0].lower() == "off":
        await follows.set_quiet_hours(session=session, target=target, hours=None, timezone=None)
        return Reply(title="Quiet hours off.")
    try:
        hours = parse_quiet_hours(args[0])
    except QuietHoursError as exc:
        raise _Refusal(str(exc)) from exc
    zone = args[1] if len(args) > 1 else None
    if zone is not None:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise _Refusal(
                f"Unknown time zone `{zone[:60]}`: type e.g. `Europe/Berlin` or `UTC`."
            ) from exc
    await follows.set_quiet_hours(session=session, target=target, hours=hours, timezone=zone)
    shown_zone = target.settings.get("timezone", "UTC")
    return Reply(
        title=f"Quiet hours {hours[0]:%H:%M}–{hours[1]:%H:%M} ({shown_zone}).",
        lines=("Alerts in that time are held, then sent as one summary.",),
    )


Handler = Callable[[AsyncSession, CommandContext, list[str], CommandDeps], Awaitable[Reply]]
_HANDLERS: dict[str, Handler] = {
    "follow": _follow,
    "unfollow": _unfollow,
    "list": _list,
    "topics": _topics,
    "alert": _alert,
    "alerts": _alerts,
    "digest": _digest,
    "mute": _mute,
    "quiet-hours": _quiet_hours,
}
