"""`papertide query check|test`: a query's syntax, and what it matches in the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from bot.cli.common import JSON_OPTION, fail, print_json, with_root

if TYPE_CHECKING:
    from bot.matching.trial import QueryTrial
    from bot.service.root import Papertide

query = typer.Typer(help="The query language of topics and alerts.", no_args_is_help=True)


def _parse(expr: str) -> object:
    from bot.errors import QueryError
    from bot.matching.query import parse_query

    try:
        return parse_query(expr)
    except QueryError as exc:
        fail(str(exc))


@query.command("check")
def check_cmd(expr: str = typer.Argument(..., help="A query, e.g. 'ti:GRPO AND au:wu'.")) -> None:
    """Parse a query; print its normalized form and tree, or where it is wrong."""
    from bot.matching.query import format_query, format_tree

    node = _parse(expr)
    typer.echo(format_query(node))  # type: ignore[arg-type]
    for line in format_tree(node):  # type: ignore[arg-type]
        typer.echo(line)


@query.command("test")
def try_cmd(
    expr: str = typer.Argument(..., help="A query to try."),
    weeks: int = typer.Option(4, "--weeks", min=1, max=52, help="How far back to look."),
    limit: int = typer.Option(5, "--limit", min=0, help="How many papers to show."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Which papers in the store the query would have matched in the last weeks."""
    _parse(expr)  # a malformed query fails before the store is opened

    async def trial(root: Papertide) -> QueryTrial:
        from bot.matching.trial import test_query

        async with root.store.read_sessions() as session:
            return await test_query(session=session, expr=expr, weeks=weeks, limit=limit)

    found = with_root(trial)
    if as_json:
        print_json(
            {
                "query": found.query,
                "weeks": found.weeks,
                "since": found.since.isoformat(),
                "count": found.count,
                "scanned": found.scanned,
                "papers": [{**h.paper, "terms": list(h.terms)} for h in found.hits],
            }
        )
        return
    typer.echo(
        f"{found.count} of {found.scanned} papers since {found.since:%Y-%m-%d} match {found.query}"
    )
    for hit in found.hits:
        typer.echo(f"  {hit.paper['published'][:10]}  {hit.paper['id']}  {hit.paper['title']}")
        typer.echo(f"    matched: {', '.join(hit.terms)}")
