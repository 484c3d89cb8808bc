"""`papertide topics emerging` and `papertide topics add`: from a rising phrase to a topic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import JSON_OPTION, load_settings, print_json, with_root

if TYPE_CHECKING:
    from bot.catalog.emerging_store import EmergingReport
    from bot.catalog.sync import SyncReport
    from bot.service.root import Papertide


def emerging(
    as_json: bool = JSON_OPTION,
    week: str | None = typer.Option(
        None, "--week", help="ISO week, e.g. 2026-W39 (default: this week)."
    ),
    refresh: bool = typer.Option(
        False, "--refresh", help="Compute again now instead of reading the stored result."
    ),
) -> None:
    """Words and phrases rising significantly this week that no topic covers yet."""
    from bot.catalog.emerging import add_command
    from bot.catalog.emerging_store import ensure_emerging, refresh_emerging
    from bot.catalog.momentum import iso_week_of, parse_iso_week
    from bot.timeutil import utcnow

    now = utcnow()
    wanted = week or iso_week_of(now)

    async def go(root: Papertide) -> EmergingReport:
        parse_iso_week(wanted)
        await root.sync_catalog()
        sessions, settings = root.store.sessions, root.settings
        if refresh:
            return await refresh_emerging(
                sessions=sessions, now=now, settings=settings, week=wanted
            )
        return await ensure_emerging(sessions=sessions, week=wanted, now=now, settings=settings)

    report = with_root(go)
    if as_json:
        print_json(report.to_json())
        return
    state = "final" if report.complete else "so far"
    typer.echo(
        f"Emerging in {report.week} ({report.papers} papers {state}, "
        f"computed {report.computed_at:%Y-%m-%d %H:%M} UTC)"
    )
    if not report.phrases:
        typer.echo("No phrase rose significantly beyond what the topics already cover.")
    for item in report.phrases:
        typer.echo(f"* {item.line}")
        typer.echo(f"  query: {item.query}")
        typer.echo(f"  add:   {add_command(item)}")


def add(
    slug: Annotated[str, typer.Argument(help="The topic's slug: lowercase words joined by '-'.")],
    name: Annotated[str, typer.Option("--name", help="The topic's name as readers see it.")],
    query: Annotated[str, typer.Option("--query", help="Its query (papertide's query language).")],
    category: Annotated[
        list[str], typer.Option("--category", help="An arXiv category it lives in (repeatable).")
    ],
    description: Annotated[str, typer.Option("--description", help="One optional sentence.")] = "",
) -> None:
    """Add a topic to the catalog file (PAPERTIDE_TOPICS_FILE) and sync it into the store.

    The file, not the database, is the catalog: a topic only in the store would go
    inactive at the next start. Stored papers are filed into the new topic (no alerts).
    """
    from bot.catalog.file import TopicSpec, append_topic

    settings = load_settings()
    spec = TopicSpec(slug.strip(), name.strip(), tuple(category), query.strip(), (), description)

    async def go(root: Papertide) -> SyncReport:
        append_topic(settings.topics_file, spec)
        return await root.sync_catalog()

    report = with_root(go, settings)
    typer.echo(
        f"added topic {spec.slug} to {settings.topics_file}; "
        f"synced ({report.added} new), stored papers filed"
    )
