"""`/papers follow|unfollow|list|topics|mute|quiet-hours`: what a channel or person follows."""

from __future__ import annotations

import logging
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy.ext.asyncio import AsyncSession

from bot.catalog.lookup import search_topics
from bot.chat import alert_cmds
from bot.chat.context import (
    CommandContext,
    CommandDeps,
    Refusal,
    Reply,
    may_change_channel,
    split_me,
    target_for,
    topic_named,
    where,
)
from bot.chat.text import format_duration, parse_duration
from bot.outbox.quiet_hours import QuietHoursError, parse_quiet_hours
from bot.outbox.targets import enable_target, find_targets
from bot.subscriptions import follows

log = logging.getLogger(__name__)


def checks_channel(ctx: CommandContext, args: list[str], deps: CommandDeps) -> bool:
    """Would `follow <args>` ask the platform whether the bot may post in the channel?"""
    _, personal = split_me(args, ctx)
    if personal:
        return False
    try:
        may_change_channel(ctx, deps)
    except Refusal:
        return False  # refused before any check
    return True


async def follow(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    args, personal = split_me(args, ctx)
    if not personal:
        may_change_channel(ctx, deps)
        # Before the first query: the check asks the platform (an HTTP call), and the
        # session's transaction would hold the store meanwhile (SQLite: its write lock).
        problem = await deps.check_channel(ctx)
        if problem:
            raise Refusal(problem)
    topic = await topic_named(session, " ".join(args), deps, "follow <topic>")
    target = await target_for(session, ctx, deps, personal=personal, change=True)
    created = await follows.follow_topic(session=session, target=target, topic=topic)
    await enable_target(session=session, target=target)
    who = where(personal)
    if not created:
        return Reply(title=f"{who} already follow{'s' if not personal else ''} {topic.name}.")
    log.info("chat.follow", extra={"target_id": target.id, "topic": topic.slug})
    return Reply(
        title=f"{who} now follow{'s' if not personal else ''} {topic.name}.",
        lines=(f"New papers arrive as they appear; `{deps.command} unfollow {topic.slug}` stops.",),
        ephemeral=personal,
    )


async def unfollow(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    args, personal = split_me(args, ctx)
    topic = await topic_named(session, " ".join(args), deps, "unfollow <topic>")
    target = await target_for(session, ctx, deps, personal=personal, change=True)
    if not await follows.unfollow_topic(session=session, target=target, topic=topic):
        raise Refusal(f"{where(personal)} did not follow {topic.name}: see `{deps.command} list`.")
    return Reply(title=f"{where(personal)} no longer follow{'' if personal else 's'} {topic.name}.")


async def list_follows(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    lines: list[str] = []
    now = deps.now()
    places = [("You", ctx.user)] + ([] if ctx.is_dm else [("This channel", ctx.channel)])
    # Three queries whatever is followed: the targets, their follows, the person's alerts.
    targets = await find_targets(
        session=session, platform=ctx.platform, workspace=ctx.workspace,
        addresses=[address for _, address in places],
    )  # fmt: skip
    ids = [t.id for t in targets.values() if t.id is not None]
    follows_of = await follows.subscriptions_of(session=session, target_ids=ids)
    for label, address in reversed(places):
        target = targets.get(address)
        followed = [] if target is None or target.id is None else follows_of[target.id]
        names = []
        for sub, topic in followed:
            muted = sub.muted_until is not None and sub.muted_until > now
            names.append(f"{topic.name} (`{topic.slug}`)" + (" — muted" if muted else ""))
        lines.append(
            f"{label} follow{'s' if label != 'You' else ''}: " + ("; ".join(names) or "nothing yet")
        )
    lines.extend(await alert_cmds.alert_lines(session, targets.get(ctx.user), deps))
    return Reply(title="Follows and alerts", lines=tuple(lines))


async def topics(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    topics = await search_topics(session=session, words=" ".join(args))
    if not topics:
        raise Refusal(f"No topic matches `{' '.join(args)[:80]}`: try fewer words.")
    lines = []
    for topic in topics:
        momentum = await deps.momentum_line(session, topic.slug)
        lines.append(f"{topic.name} (`{topic.slug}`)" + (f": {momentum}" if momentum else ""))
    return Reply(title=f"{len(topics)} topics", lines=tuple(lines))


async def mute(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    args, personal = split_me(args, ctx)
    if len(args) < 2:
        raise Refusal(
            f"Type `{deps.command} mute <topic> <duration>`, e.g. `mute rl-for-llm-agents 3d`."
        )
    span = parse_duration(args[-1])
    topic = await topic_named(session, " ".join(args[:-1]), deps, "mute <topic> <duration>")
    target = await target_for(session, ctx, deps, personal=personal, change=True)
    try:
        await follows.mute_topic(
            session=session, target=target, topic=topic, until=deps.now() + span
        )
    except follows.NotFollowing as exc:
        raise Refusal(
            f"{where(personal)} does not follow {topic.name}: see `{deps.command} list`."
        ) from exc
    return Reply(title=f"{topic.name} muted for {format_duration(span)}.")


async def quiet_hours(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    args, personal = split_me(args, ctx)
    if not args or len(args) > 2:
        raise Refusal(
            f"Type `{deps.command} quiet-hours 22-07 [Europe/Berlin]`, or `quiet-hours off`."
        )
    target = await target_for(session, ctx, deps, personal=personal, change=True)
    if args[0].lower() == "off":
        await follows.set_quiet_hours(session=session, target=target, hours=None, timezone=None)
        return Reply(title="Quiet hours off.")
    try:
        hours = parse_quiet_hours(args[0])
    except QuietHoursError as exc:
        raise Refusal(str(exc)) from exc
    zone = args[1] if len(args) > 1 else None
    if zone is not None:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise Refusal(
                f"Unknown time zone `{zone[:60]}`: type e.g. `Europe/Berlin` or `UTC`."
            ) from exc
    await follows.set_quiet_hours(session=session, target=target, hours=hours, timezone=zone)
    shown_zone = target.settings.get("timezone", "UTC")
    return Reply(
        title=f"Quiet hours {hours[0]:%H:%M}–{hours[1]:%H:%M} ({shown_zone}).",
        lines=("Alerts in that time are held, then sent as one summary.",),
    )
