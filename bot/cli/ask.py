"""`papertide ask <topic> "<question>" [--json]`: an answer from a topic's papers, cited.

`--all` searches every paper (the topic may then be left out: `papertide ask --all
"<question>"`). The model answers when PAPERTIDE_LLM_URL and PAPERTIDE_LLM_MODEL are
set, unless `--no-model`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import JSON_OPTION, fail, print_json, with_root

if TYPE_CHECKING:
    from bot.ask.answer import Answer
    from bot.service.root import Papertide


def ask(
    words: Annotated[
        list[str],
        typer.Argument(metavar='TOPIC "QUESTION"', help="A topic slug or name, then the question."),
    ],
    everything: bool = typer.Option(False, "--all", help="Search every paper, not one topic's."),
    papers: int = typer.Option(4, "--papers", min=1, max=20, help="How many papers to cite."),
    no_model: bool = typer.Option(False, "--no-model", help="Answer from passages only."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Ask about a topic: the best papers, their matching sentences, and (with a model) a
    short answer citing them."""
    if everything and len(words) == 1:
        topic_text, question = None, words[0]
    elif len(words) == 2:
        topic_text, question = words
    else:
        fail('give a topic and a question: papertide ask rl-for-llm-agents "which papers …?"')

    async def go(root: Papertide) -> tuple[Answer, str]:
        from bot.ask.answer import TopicRef
        from bot.ask.index import index_lag
        from bot.ask.question import QuestionError
        from bot.catalog.lookup import TopicNotFound, find_topic
        from bot.timeutil import utcnow

        async with root.store.read_sessions() as session:
            lag = (await index_lag(session)).describe(utcnow())
        topic = None
        if topic_text is not None:
            async with root.store.read_sessions() as session:
                try:
                    found = await find_topic(session=session, text=topic_text)
                except TopicNotFound as exc:
                    fail(str(exc))
            topic = TopicRef(int(found.id or 0), found.slug, found.name)
        try:
            answer = await root.asker().ask(
                question,
                topic=None if everything else topic,
                papers=papers,
                use_model=not no_model,
            )
        except QuestionError as exc:
            fail(str(exc))
        return answer, lag

    answer, lag = with_root(go)
    if lag:  # papers stored but not indexed yet: the answer may miss the newest
        typer.echo(lag, err=True)
    if as_json:
        print_json(answer.to_json())
        return
    from bot.ask.plain import render_text

    typer.echo(render_text(answer), nl=False)
