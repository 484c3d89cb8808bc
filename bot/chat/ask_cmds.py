"""`/papers ask <topic> <question>`: an answer drawn from a topic's papers, cited.

The handler only checks and plans (the question's length and words, the topic, the
person's hourly quota) and answers at once with an acknowledgement; the answer itself is
the reply's `followup`, which the adapter awaits after the command's session is closed,
so a slow model never holds the store. Flags anywhere in the text: `--thread` posts the
answer in a thread of the channel (visible to all), `--private` (the default) only to the
asker; `--all` searches every paper instead of one topic's.
"""

from __future__ import annotations

import logging
import math

from sqlalchemy.ext.asyncio import AsyncSession

from bot.ask.answer import TopicRef
from bot.ask.question import MAX_QUESTION, QuestionError, parse_question
from bot.ask.quota import take
from bot.chat.context import CommandContext, CommandDeps, Refusal, Reply, topic_named

log = logging.getLogger(__name__)

FLAGS = ("--thread", "--private", "--all")


def usage(deps: CommandDeps) -> str:
    return (
        f"Type `{deps.command} ask <topic> <question>`, e.g. "
        f"`{deps.command} ask rl-for-llm-agents which papers train agents with GRPO?`"
    )


def _split_flags(args: list[str], deps: CommandDeps) -> tuple[list[str], set[str]]:
    flags = {a.lower() for a in args if a.startswith("--")}
    unknown = sorted(flags - set(FLAGS))
    if unknown:
        raise Refusal(
            f"Unknown option `{unknown[0][:20]}`: use `--thread`, `--private` or `--all`."
        )
    return [a for a in args if not a.startswith("--")], flags


async def ask(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    """Check the question, take one from the asker's quota, acknowledge; answer later."""
    if deps.ask is None:
        raise Refusal("Asking about topics is not set up on this papertide.")
    answer_fn = deps.ask
    words, flags = _split_flags(args, deps)
    if "--all" in flags:
        topic, rest = None, words
    else:
        if not words:
            raise Refusal(usage(deps))
        topic = await topic_named(session, words[0], deps, "ask <topic> <question>")
        rest = words[1:]
    question = " ".join(rest)
    if not question:
        raise Refusal(usage(deps))
    if len(question) > MAX_QUESTION:
        raise Refusal(f"Keep the question under {MAX_QUESTION} characters.")
    try:
        parse_question(question, deps.now())  # a question with no words fails here, free
    except QuestionError as exc:
        raise Refusal(str(exc)) from exc
    quota = await take(
        session=session,
        platform=str(ctx.platform),
        workspace=ctx.workspace,
        user=ctx.user,
        now=deps.now(),
        limit=deps.ask_per_hour,
    )
    if not quota.allowed:
        minutes = max(1, math.ceil(quota.retry_after.total_seconds() / 60))
        raise Refusal(
            f"You asked {deps.ask_per_hour} questions in the last hour, the most allowed: "
            f"ask again in {minutes} minute{'s' if minutes != 1 else ''}."
        )
    thread = "--thread" in flags and "--private" not in flags and not ctx.is_dm
    ref = TopicRef(int(topic.id), topic.slug, topic.name) if topic is not None else None
    where = ref.name if ref else "all papers"
    log.info("chat.ask", extra={"topic": ref.slug if ref else None, "thread": thread})

    async def answer() -> Reply:
        try:
            found = await answer_fn(ref, question)
        except QuestionError as exc:
            return Reply(title=str(exc), error=True)
        return Reply(
            title=f"{where}: {question}", answer=found, ephemeral=not thread, thread=thread
        )

    then = "in a thread here" if thread else "here, only to you"
    return Reply(
        title=f"Looking through {where} for: {question}",
        lines=(f"The answer follows {then} in a moment.",),
        followup=answer,
        thread=thread,
    )
