"""`/papers who|visible|import`: who here follows a topic, and alerts from a library.

`who <topic>` lists this workspace's channels that follow the topic and the people who
follow it AND said `/papers visible on` (hidden is the default: a follow is private
until its owner says otherwise). `import` reads a BibTeX, RIS or CSL-JSON export, from
a URL or a file the platform hands over, and proposes numbered alerts that the person
accepts one by one with `import accept <n>`.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat.context import CommandContext, CommandDeps, Refusal, Reply, target_for, topic_named
from bot.chat.text import mention
from bot.errors import PapertideError
from bot.outbox.targets import find_target
from bot.subscriptions import interests
from bot.subscriptions.library import read_library
from bot.subscriptions.team import followers_here, set_visible


async def who(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    topic = await topic_named(session, " ".join(args), deps, "who <topic>")
    channels, people = await followers_here(
        session=session, platform=ctx.platform, workspace=ctx.workspace, topic=topic
    )
    shown = [mention("channel", c) for c in channels] + [mention("user", p) for p in people]
    lines = [
        "Channels: " + (", ".join(shown[: len(channels)]) or "none"),
        "People: " + (", ".join(shown[len(channels) :]) or "nobody who shows it"),
    ]
    if ctx.user not in people:
        lines.append(f"People are listed once they type `{deps.command} visible on`.")
    return Reply(title=f"Who follows {topic.name} here", lines=tuple(lines),
                 mentions=tuple(shown))  # fmt: skip


async def visible(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    if len(args) != 1 or args[0].lower() not in ("on", "off"):
        raise Refusal(f"Type `{deps.command} visible on` or `{deps.command} visible off`.")
    on = args[0].lower() == "on"
    target = await target_for(session, ctx, deps, personal=True, change=True)
    await set_visible(session=session, target=target, visible=on)
    if on:
        return Reply(title=f"`{deps.command} who` now lists you with the topics you follow.")
    return Reply(title=f"`{deps.command} who` no longer lists you.")


def _proposal_lines(proposals: list[interests.Proposal], deps: CommandDeps) -> tuple[str, ...]:
    lines = [
        f"{p['n']}. `{p['query']}` — {p['why']} · {p['count']} papers in the last four weeks"
        + (f" (alert #{p['alert_id']})" if p["alert_id"] else "")
        for p in proposals
    ]
    lines.append(f"Accept one with `{deps.command} import accept <n>`.")
    return tuple(lines)


async def _library_bytes(ctx: CommandContext, args: list[str], deps: CommandDeps) -> bytes:
    if args:
        if deps.fetch_url is None:
            raise Refusal("Importing from a URL is not available here.")
        return await deps.fetch_url(args[0])
    data = await ctx.upload() if ctx.upload is not None else None
    if data is None:
        raise Refusal(
            f"Attach your BibTeX, RIS or CSL-JSON export, or type `{deps.command} import <url>`."
        )
    return data


async def import_(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    verb = args[0].lower() if args else ""
    target = await target_for(session, ctx, deps, personal=True, change=True)
    if verb == "accept":
        if len(args) != 2 or not args[1].isdigit() or len(args[1]) > 3:
            raise Refusal(f"Type `{deps.command} import accept <n>` with a number from the list.")
        try:
            proposal, alert = await interests.accept(session=session, target=target, n=int(args[1]))
        except interests.NoSuchProposal as exc:
            raise Refusal(f"No proposal {args[1]}: see `{deps.command} import list`.") from exc
        if alert is None:
            return Reply(title=f"Already accepted as alert #{proposal['alert_id']}.")
        return Reply(title=f"Alert #{alert.id} added: `{proposal['query']}`",
                     lines=(f"`{deps.command} alert remove {alert.id}` stops it.",))  # fmt: skip
    if verb == "list":
        found = await find_target(session=session, platform=ctx.platform,
                                  workspace=ctx.workspace, address=ctx.user)  # fmt: skip
        proposals = interests.stored_proposals(found)
        if not proposals:
            raise Refusal(f"No proposals yet: `{deps.command} import <url>` or attach a file.")
        return Reply(title="Your proposed alerts", lines=_proposal_lines(proposals, deps))
    try:
        library = read_library(await _library_bytes(ctx, args, deps))
        proposals = await interests.propose(session=session, library=library)
    except PapertideError as exc:
        raise Refusal(str(exc)) from exc
    if not proposals:
        raise Refusal("Nothing to propose: no co-author or term recurs in that library.")
    await interests.keep_proposals(session=session, target=target, proposals=proposals)
    title = f"{len(proposals)} alerts proposed from {len(library.entries)} {library.format} entries"
    return Reply(title=title, lines=_proposal_lines(proposals, deps))
