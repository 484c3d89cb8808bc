"""Ingest commands: poll, backfill, status, papers list, topics list."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from bot.cli.common import (
    JSON_OPTION,
    config_problem_line,
    fail,
    load_settings,
    print_json,
    with_root,
)

if TYPE_CHECKING:
    from bot.ingest.poll import PollResult
    from bot.service.root import Papertide

papers = typer.Typer(help="Stored papers.", no_args_is_help=True)
topics = typer.Typer(help="The topic catalog.", no_args_is_help=True)
_SOURCES_OPTION = typer.Option(None, "--source", help="Source name (repeatable).")


def poll(
    once: bool = typer.Option(False, "--once", help="Poll each source once and exit."),
    source: list[str] | None = _SOURCES_OPTION,
) -> None:
    """Poll sources into the store, alerts included (continuous polling runs in `serve`).

    New papers' alerts go to the outbox; a running `papertide serve` or `worker` sends them.
    """
    if not once:
        fail("continuous polling runs in `papertide serve`; use `papertide poll --once`")
    settings = load_settings()

    async def poll_all(root: Papertide) -> list[PollResult]:
        await root.sync_catalog()
        return [await root.poll(name) for name in source or settings.sources]

    results = with_root(poll_all, settings)
    for result in results:
        typer.echo(_summary(result))
    if not any(r.read_anything for r in results):
        fail("nothing could be read: " + "; ".join(r.error or r.source for r in results))


def backfill(
    weeks: int = typer.Option(12, "--weeks", min=1, max=520, help="Weeks of history."),
    source: str = typer.Option("arxiv", "--source", help="arxiv, or sample offline."),
) -> None:
    """Fetch history for momentum (the arXiv API, in date windows); history sends no alerts."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    async def go(root: Papertide) -> PollResult:
        await root.sync_catalog()
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())  # fmt: skip
        with Progress(*columns, transient=False) as progress:
            task = progress.add_task(f"backfill {source}, {weeks} weeks", total=None)

            def advance(done: int, total: int) -> None:
                progress.update(task, completed=done, total=max(total, done))

            return await root.backfill(weeks, source, on_progress=advance)

    result = with_root(go)
    typer.echo(_summary(result))
    if not result.read_anything:
        fail(f"nothing could be read: {result.error}")


def status(as_json: bool = JSON_OPTION) -> None:
    """Per source: last poll, failing or stalled polls, the last announcement and the next."""
    from bot.ingest.status import collect_status, describe, stall_after
    from bot.timeutil import utcnow

    settings = load_settings()

    async def go(root: Papertide) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str]:
        from bot.ask.index import index_lag
        from bot.outbox.reads import configuration_problem

        async with root.store.read_sessions() as session:
            rows = await collect_status(
                session=session, names=settings.sources, now=utcnow(),
                stalled_after=stall_after(settings.fetch_deadline_seconds),
            )  # fmt: skip
            lag = (await index_lag(session)).describe(utcnow())
            return rows, await configuration_problem(session=session), lag

    rows, problem, lag = with_root(go, settings)
    if problem:  # on stderr too with --json: the document on stdout keeps its shape
        typer.echo(config_problem_line(problem), err=as_json)
    if lag:  # the indexer is behind ingest (it catches up within seconds in `serve`)
        typer.echo(lag, err=as_json)
    if as_json:
        print_json(rows)
        return
    for row in rows:
        typer.echo(describe(row))


@papers.command("list")
def papers_list(
    topic: str | None = typer.Option(None, "--topic", help="Only papers of this topic slug."),
    since: str | None = typer.Option(None, "--since", help="Published on or after DATE."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most N papers."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List stored papers, newest first (all matching papers unless --limit)."""
    since_at = _date(since, "--since") if since else None

    async def go(root: Papertide) -> list[dict[str, Any]]:
        from bot.catalog.papers import list_papers

        async with root.store.read_sessions() as session:
            return await list_papers(session=session, topic=topic, since=since_at, limit=limit)

    rows = with_root(go)
    if as_json:
        print_json(rows)
        return
    for row in rows:
        cats = ",".join(row["categories"])
        typer.echo(
            f"{row['published'][:10]}  {row['id']}v{row['version']}  [{cats}]  {row['title']}"
        )
    typer.echo(f"{len(rows)} paper(s)")


@topics.command("list")
def topics_list(
    as_json: bool = JSON_OPTION,
    as_of: str | None = typer.Option(
        None, "--as-of", help="Momentum as of this date (default: now)."
    ),
) -> None:
    """List the topics with their paper counts and momentum (last four weeks)."""
    from bot.catalog.stats import TopicReport, topic_reports
    from bot.timeutil import utcnow

    when = _date(as_of, "--as-of") if as_of else utcnow()

    async def go(root: Papertide) -> list[TopicReport]:
        await root.sync_catalog()
        async with root.store.read_sessions() as session:
            rows, _universe = await topic_reports(
                session=session, as_of=when, settings=root.settings
            )
        return sorted(rows, key=lambda r: r.summary.slug)

    rows = with_root(go)
    if as_json:
        print_json([row.to_json() for row in rows])
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table("slug", "name", "papers", "momentum", box=None)
    for row in rows:
        spiking = "[bold red]spiking[/] " if row.momentum and row.momentum.spiking else ""
        summary = row.summary
        table.add_row(
            summary.slug, escape(summary.name), str(summary.papers), spiking + escape(row.line)
        )
    Console().print(table)


def _date(value: str, option: str) -> datetime:
    from bot.ingest.dates import DateParseError, parse_date

    try:
        return parse_date(value)
    except DateParseError as exc:
        fail(f"{option}: {exc}")


def _summary(result: PollResult) -> str:
    line = (
        f"{result.source}: read {result.read}, new {result.new}, updated {result.updated}, "
        f"unchanged {result.unchanged}, skipped {result.skipped}, new matches {result.new_matches}"
    )
    return line + (f"; failed: {result.error}" if result.error else "")
