"""Ingest commands: poll, papers list, topics list, backfill, status."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bot.catalog.listing import list_papers, list_topics
from bot.catalog.momentum import momentum_line
from bot.catalog.stats import load_momentum_and_universe
from bot.cli.common import fail, load_settings, print_json, run
from bot.ingest.dates import DateParseError, parse_date
from bot.ingest.poll import PollResult, prepare_store, run_backfill, run_poll
from bot.ingest.status import collect_status, describe
from bot.service.root import open_app
from bot.timeutil import utcnow

_SOURCES_OPTION = typer.Option(None, "--source", help="Source name (repeatable).")


def register(app: typer.Typer) -> None:
    papers = typer.Typer(help="Stored papers.", no_args_is_help=True)
    topics = typer.Typer(help="The topic catalog.", no_args_is_help=True)
    app.add_typer(papers, name="papers")
    app.add_typer(topics, name="topics")

    @app.command("poll")
    def poll_cmd(
        once: bool = typer.Option(False, "--once", help="Poll each source once and exit."),
        source: list[str] | None = _SOURCES_OPTION,
    ) -> None:
        """Poll sources into the store (continuous polling runs in `papertide serve`)."""
        if not once:
            fail("continuous polling runs in `papertide serve`; use `papertide poll --once`")
        settings = load_settings()
        names = source or settings.sources
        results = run(_poll_all(names))
        for result in results:
            typer.echo(_summary(result))
        if not any(r.read_anything for r in results):
            fail("nothing could be read: " + "; ".join(r.error or r.source for r in results))

    @papers.command("list")
    def papers_list(
        topic: str | None = typer.Option(None, "--topic", help="Only papers of this topic slug."),
        since: str | None = typer.Option(None, "--since", help="Published on or after DATE."),
        limit: int | None = typer.Option(None, "--limit", min=1, help="At most N papers."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    ) -> None:
        """List stored papers, newest first (all matching papers unless --limit)."""
        since_at = _parse_since(since)

        async def go() -> list[dict[str, Any]]:
            async with open_app(load_settings()) as ctx, ctx.sessions() as session:
                return await list_papers(session=session, topic=topic, since=since_at, limit=limit)

        rows = run(go())
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
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
        as_of: str | None = typer.Option(
            None, "--as-of", help="Momentum as of this date (default: now)."
        ),
    ) -> None:
        """List the topics with their paper counts and momentum (last four weeks)."""
        try:
            when = parse_date(as_of) if as_of else utcnow()
        except DateParseError as exc:
            fail(f"--as-of: {exc}")
        settings = load_settings()

        async def go() -> tuple[list[dict[str, Any]], str]:
            async with open_app(settings) as ctx:
                await prepare_store(ctx)
                async with ctx.sessions() as session:
                    rows = await list_topics(session=session)
                    momentum, universe = await load_momentum_and_universe(
                        session=session, as_of=when, settings=settings
                    )
            for row in rows:
                found = momentum.get(row["slug"])
                row["momentum"] = found.to_json() if found else None
                row["momentum_line"] = momentum_line(found, universe) if found else ""
            return rows, universe

        rows, _universe = run(go())
        if as_json:
            print_json(rows)
            return
        table = Table("slug", "name", "papers", "momentum", box=None)
        for row in rows:
            spiking = row["momentum"] and row["momentum"]["spiking"]
            line = ("[bold red]spiking[/] " if spiking else "") + escape(row["momentum_line"])
            table.add_row(row["slug"], escape(row["name"]), str(row["papers"]), line)
        Console().print(table)

    @app.command("backfill")
    def backfill_cmd(
        weeks: int = typer.Option(12, "--weeks", min=1, max=520, help="Weeks of history."),
        source: str = typer.Option("arxiv", "--source", help="arxiv, or sample offline."),
    ) -> None:
        """Fetch history for momentum (the arXiv API, split into date windows)."""
        result = run(_backfill(weeks, source))
        typer.echo(_summary(result))
        if not result.read_anything:
            fail(f"nothing could be read: {result.error}")

    @app.command("status")
    def status_cmd(
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    ) -> None:
        """Per source: last poll, last announcement and its size, the next one, stale feeds."""
        settings = load_settings()

        async def go() -> list[dict[str, Any]]:
            async with open_app(settings) as ctx, ctx.sessions() as session:
                return await collect_status(session=session, names=settings.sources, now=utcnow())

        rows = run(go())
        if as_json:
            print_json(rows)
            return
        for row in rows:
            typer.echo(describe(row))


async def _poll_all(names: list[str]) -> list[PollResult]:
    settings = load_settings()
    async with open_app(settings) as ctx:
        await prepare_store(ctx)
        return [
            await run_poll(settings=settings, sessions=ctx.sessions, source_name=name)
            for name in names
        ]


async def _backfill(weeks: int, source: str) -> PollResult:
    settings = load_settings()
    async with open_app(settings) as ctx:
        await prepare_store(ctx)
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, transient=False) as progress:
            task = progress.add_task(f"backfill {source}, {weeks} weeks", total=None)

            def advance(done: int, total: int) -> None:
                progress.update(task, completed=done, total=max(total, done))

            return await run_backfill(
                settings=settings,
                sessions=ctx.sessions,
                weeks=weeks,
                source_name=source,
                on_progress=advance,
            )


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_date(value)
    except DateParseError as exc:
        fail(f"--since: {exc}")


def _summary(result: PollResult) -> str:
    line = (
        f"{result.source}: read {result.read}, new {result.new}, updated {result.updated}, "
        f"unchanged {result.unchanged}, skipped {result.skipped}, new matches {result.new_matches}"
    )
    return line + (f"; failed: {result.error}" if result.error else "")
