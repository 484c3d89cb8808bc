"""`papertide query check|test`: a query's syntax, and what it matches in the store."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import typer

from bot.cli.common import JSON_OPTION, fail, print_json, with_root

if TYPE_CHECKING:
    from bot.matching.query import CheckedQuery
    from bot.matching.trial import QueryTrial
    from bot.service.root import Papertide

query = typer.Typer(help="The query language of topics and alerts.", no_args_is_help=True)
SINCE_OPTION = typer.Option(
    None, "--since", formats=["%Y-%m-%d"], help="Look at papers since this day instead."
)


def _check(expr: str) -> CheckedQuery:
    from bot.errors import QueryError
    from bot.matching.query import check_query

    try:
        return check_query(expr)
    except QueryError as exc:
        fail(str(exc))


@query.command("check")
def check_cmd(expr: str = typer.Argument(..., help="A query, e.g. 'ti:GRPO AND au:wu'.")) -> None:
    """Parse a query; print its normalized form, its tree and hints, or where it is wrong."""
    from bot.matching.query import format_tree

    checked = _check(expr)
    typer.echo(checked.text)
    for line in format_tree(checked.node):
        typer.echo(line)
    for hint in checked.hints:
        typer.echo(f"hint: {hint}")


@query.command("test")
def try_cmd(
    expr: str = typer.Argument(..., help="A query to try."),
    weeks: int = typer.Option(4, "--weeks", min=1, max=52, help="How far back to look."),
    since: datetime | None = SINCE_OPTION,
    limit: int = typer.Option(5, "--limit", min=0, help="How many papers to show."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Which papers in the store the query would have matched in the last weeks (or
    since a day, or in the range of its own submittedDate:[A TO B])."""
    _check(expr)  # a malformed query fails before the store is opened

    async def trial(root: Papertide) -> QueryTrial:
        from bot.matching.trial import test_query
        from bot.timeutil import as_utc

        start = as_utc(since) if since is not None else None
        async with root.store.read_sessions() as session:
            return await test_query(
                session=session, expr=expr, weeks=weeks, limit=limit, since=start, dated=True
            )

    found = with_root(trial)
    if as_json:
        print_json(
            {
                "query": found.query,
                "weeks": found.weeks,
                "since": found.since.isoformat(),
                "until": found.until.isoformat() if found.until else None,
                "count": found.count,
                "scanned": found.scanned,
                "hints": list(found.hints),
                "papers": [{**h.paper, "terms": list(h.terms)} for h in found.hits],
            }
        )
        return
    window = f"since {found.since:%Y-%m-%d}"
    if found.until is not None:
        window = f"submitted {found.since:%Y-%m-%d}..{found.until:%Y-%m-%d}"
    typer.echo(f"{found.count} of {found.scanned} papers {window} match {found.query}")
    for hint in found.hints:
        typer.echo(f"hint: {hint}")
    for hit in found.hits:
        typer.echo(f"  {hit.paper['published'][:10]}  {hit.paper['id']}  {hit.paper['title']}")
        typer.echo(f"    matched: {', '.join(hit.terms)}")
