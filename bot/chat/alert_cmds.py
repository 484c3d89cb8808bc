"""`/papers alert add|remove|mute|test`, `alerts` and `digest`: a person's alerts and mail."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat.context import CommandContext, CommandDeps, Refusal, Reply, target_for
from bot.chat.text import format_duration, parse_duration
from bot.errors import PapertideError, QueryError
from bot.matching.query import CheckedQuery, query_problem
from bot.outbox.targets import find_target
from bot.store.models import Target
from bot.subscriptions import alerts as stored
from bot.subscriptions.addresses import AddressError, normalize_address
from bot.subscriptions.chat_digest import request_digest, stop_digest


def _shown_query(query: str) -> str:
    # A backtick inside would end the code span early; show a look-alike instead.
    return "`" + query.replace("`", "ˋ") + "`"


async def alerts(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    target = await find_target(
        session=session, platform=ctx.platform, workspace=ctx.workspace, address=ctx.user
    )
    return Reply(title="Your alerts", lines=await alert_lines(session, target, deps))


async def alert_lines(
    session: AsyncSession, target: Target | None, deps: CommandDeps
) -> tuple[str, ...]:
    """One line per alert of the person's own `target` (None: they have none yet)."""
    found = [] if target is None else await stored.list_alerts(session=session, target=target)
    if not found:
        return (f"No alerts: `{deps.command} alert add <query>`.",)
    now = deps.now()
    return tuple(_alert_line(a.id, a.query, a.muted_until, now, deps) for a in found)


def _alert_line(
    alert_id: int | None, query: str, muted_until: datetime | None, now: datetime, deps: CommandDeps
) -> str:
    line = f"#{alert_id} {_shown_query(query)}"
    # An alert stored under older rules may no longer load: it never fires, and this
    # list is where its owner learns it (the engine only logs it).
    problem = query_problem(query)
    if problem is not None:
        return (
            f"{line} — not running ({problem}): `{deps.command} alert remove {alert_id}` "
            "and add it again, fixed"
        )
    return line + (" — muted" if muted_until is not None and muted_until > now else "")


def _alert_id(args: list[str], deps: CommandDeps, usage: str) -> int:
    if not args or not args[0].lstrip("#").isdigit() or len(args[0]) > 12:
        raise Refusal(
            f"Type the alert's number: `{deps.command} {usage}` (see `{deps.command} alerts`)."
        )
    return int(args[0].lstrip("#"))


def _valid_query(text: str, deps: CommandDeps, usage: str) -> CheckedQuery:
    if not text:
        raise Refusal(f'Add a query: `{deps.command} {usage}`, e.g. `au:"Yi Wu"`.')
    try:
        return deps.validate_query(text)
    except QueryError as exc:
        raise Refusal(
            f"That query does not parse ({exc}): fix it, e.g. `ti:agent AND cat:cs.LG`."
        ) from exc


async def alert(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    verb, rest = (args[0].lower(), args[1:]) if args else ("", [])
    personal = dict(personal=True, change=True)
    if verb == "add":
        checked = _valid_query(" ".join(rest), deps, "alert add <query>")
        target = await target_for(session, ctx, deps, **personal)
        try:
            alert = await stored.add_alert(
                session=session, target=target, query=checked.text, limit=deps.max_alerts
            )
        except QueryError as exc:  # the stored form must load too
            raise Refusal(f"That query cannot be stored ({exc}).") from exc
        except stored.TooManyAlerts as exc:
            raise Refusal(
                f"{exc} Remove one first: `{deps.command} alerts`, then"
                f" `{deps.command} alert remove <id>`."
            ) from exc
        return Reply(
            title=f"Alert #{alert.id} added: {_shown_query(alert.query)}",
            lines=(
                *checked.hints,
                f"Matching papers arrive by DM; `{deps.command} alert remove {alert.id}` stops it.",
            ),
        )
    if verb in ("remove", "mute"):
        alert_id = _alert_id(rest, deps, f"alert {verb} <id>")
        target = await target_for(session, ctx, deps, **personal)
        try:
            if verb == "remove":
                await stored.remove_alert(session=session, target=target, alert_id=alert_id)
                return Reply(title=f"Alert #{alert_id} removed.")
            span = parse_duration(rest[1]) if len(rest) > 1 else parse_duration("1w")
            await stored.mute_alert(
                session=session, target=target, alert_id=alert_id, until=deps.now() + span
            )
            return Reply(title=f"Alert #{alert_id} muted for {format_duration(span)}.")
        except stored.NoSuchAlert as exc:
            raise Refusal(f"You have no alert #{alert_id}: see `{deps.command} alerts`.") from exc
    if verb == "test":
        checked = _valid_query(" ".join(rest), deps, "alert test <query>")
        count, top = await deps.test_query(session, checked.text)
        lines = tuple(
            f"{p.get('title', '')} ({p.get('url') or p.get('id', '')})" for p in list(top)[:5]
        )
        return Reply(
            title=f"{count} papers in the last four weeks match {_shown_query(checked.text)}",
            lines=(*checked.hints, *lines),
        )
    raise Refusal(
        f"Type `{deps.command} alert add <query>`, `alert remove <id>` or `alert test <query>`."
    )


async def digest(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    target = await target_for(session, ctx, deps, personal=True, change=True)
    if len(args) == 1 and args[0].lower() == "off":
        stopped = await stop_digest(session=session, target=target)
        return Reply(title="Weekly digest stopped." if stopped else "You had no weekly digest.")
    usage = f"Type `{deps.command} digest you@example.org`, or `{deps.command} digest off`."
    if len(args) != 1:
        raise Refusal(usage)
    try:
        address = normalize_address(args[0])
    except AddressError as exc:
        raise Refusal(f"{exc} {usage}") from exc
    try:
        text = await request_digest(
            session=session, target=target, email=address, hook=deps.request_digest
        )
    except PapertideError as exc:  # a refused address: say why, in one line
        raise Refusal(str(exc)) from exc
    return Reply(title=text)
