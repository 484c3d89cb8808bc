"""The platform-neutral `/papers` command layer: parse the text → act on the store → a Reply.

Slack and Discord adapters build a CommandContext from their request, call
`run_command`, and render the Reply. No SDK is imported here; everything slow or
owned by another area (query validation, query testing, momentum, digest mail) is
injected through CommandDeps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat import alert_cmds, ask_cmds, follow_cmds, react_cmds, suggest_cmds, team_cmds
from bot.chat.context import CommandContext, CommandDeps, Refusal, Reply
from bot.chat.text import BadInput, clean_text

__all__ = [
    "CommandContext",
    "CommandDeps",
    "Reply",
    "checked_first",
    "needs_platform_check",
    "run_command",
]

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
    ("who <topic>", "the channels and people here that follow a topic"),
    ("visible on|off", "show (or hide) yourself in `who`; hidden by default"),
    ("import [url]", "alerts proposed from your BibTeX, RIS or CSL-JSON export"),
    ("import accept <n>", "turn proposal n into an alert; `import list` shows them again"),
    (
        "ask <topic> <question> [--thread]",
        "an answer from the topic's papers, cited; `--all` papers",
    ),
    ("more <arXiv id>", "more papers like this one (`2611.01234`, `arXiv:…v2` or its abs link)"),
    ("less <arXiv id>", "fewer papers like this one"),
    ("unmark <arXiv id>", "take back a `more` or `less`"),
    ("suggest", "this week's papers you were not sent that you may like, learned from your marks"),
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
            raise Refusal(f"Unknown command `{name[:40]}`: type `{deps.command} help`.")
        return await handler(session, ctx, args, deps)
    except (BadInput, Refusal) as exc:
        return Reply(title=str(exc), error=True)


def needs_platform_check(ctx: CommandContext, text: str, deps: CommandDeps) -> bool:
    """Would `text` ask the platform (an HTTP call) before acting? A caller that holds a
    transaction around `run_command` asks it first instead (`checked_first`)."""
    try:
        words = clean_text(text).split(" ")
    except BadInput:
        return False
    args = [w for w in words[1:] if w]
    return words[0].lower() == "follow" and follow_cmds.checks_channel(ctx, args, deps)


async def checked_first(ctx: CommandContext, deps: CommandDeps) -> CommandDeps:
    """Ask the platform now (no transaction open) and return `deps` answering the
    command's channel check from that answer: the store is not held during the call."""
    problem = await deps.check_channel(ctx)

    async def known(_ctx: CommandContext) -> str | None:
        return problem

    return replace(deps, check_channel=known)


def _help(deps: CommandDeps) -> Reply:
    lines = tuple(f"`{deps.command} {usage}`: {what}" for usage, what in HELP)
    return Reply(title="papertide commands", lines=lines)


Handler = Callable[[AsyncSession, CommandContext, list[str], CommandDeps], Awaitable[Reply]]
_HANDLERS: dict[str, Handler] = {
    "follow": follow_cmds.follow,
    "unfollow": follow_cmds.unfollow,
    "list": follow_cmds.list_follows,
    "topics": follow_cmds.topics,
    "alert": alert_cmds.alert,
    "alerts": alert_cmds.alerts,
    "digest": alert_cmds.digest,
    "mute": follow_cmds.mute,
    "quiet-hours": follow_cmds.quiet_hours,
    "who": team_cmds.who,
    "visible": team_cmds.visible,
    "import": team_cmds.import_,
    "ask": ask_cmds.ask,
    "more": react_cmds.more,
    "less": react_cmds.less,
    "unmark": react_cmds.unmark,
    "suggest": suggest_cmds.suggest,
}
