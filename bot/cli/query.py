"""`papertide query`: check a query's syntax, try it on the papers in the store."""

from __future__ import annotations

import typer

from bot.cli.common import fail, load_settings, print_json, run
from bot.errors import QueryError
from bot.matching.engine import QueryTrial, test_query
from bot.matching.query import format_query, format_tree, parse_query
from bot.outbox.payloads import paper_payload
from bot.service.root import open_app


def register(app: typer.Typer) -> None:
    query = typer.Typer(help="The query language of topics and alerts.", no_args_is_help=True)
    app.add_typer(query, name="query")

    @query.command("check")
    def check_cmd(
        expr: str = typer.Argument(..., help="A query, e.g. 'ti:GRPO AND au:wu'."),
    ) -> None:
        """Parse a query; print its normalized form and tree, or where it is wrong."""
        try:
            node = parse_query(expr)
        except QueryError as exc:
            fail(str(exc))
        typer.echo(format_query(node))
        for line in format_tree(node):
            typer.echo(line)

    @query.command("test")
    def test_cmd(
        expr: str = typer.Argument(..., help="A query to try."),
        weeks: int = typer.Option(4, "--weeks", min=1, max=52, help="How far back to look."),
        limit: int = typer.Option(5, "--limit", min=0, help="How many papers to show."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    ) -> None:
        """Which papers in the store the query would have matched in the last weeks."""
        try:
            parse_query(expr)  # a malformed query fails before the store is opened
        except QueryError as exc:
            fail(str(exc))
        trial = run(_trial(expr, weeks, limit))
        if as_json:
            print_json(_as_document(trial))
            return
        typer.echo(
            f"{trial.count} of {trial.scanned} papers since {trial.since:%Y-%m-%d} "
            f"match {trial.query}"
        )
        for hit in trial.hits:
            terms = ", ".join(hit.terms)
            typer.echo(f"  {hit.paper.published:%Y-%m-%d}  {hit.paper.id}  {hit.paper.title}")
            typer.echo(f"    matched: {terms}")


async def _trial(expr: str, weeks: int, limit: int) -> QueryTrial:
    async with open_app(load_settings()) as ctx, ctx.sessions() as session:
        return await test_query(session=session, expr=expr, weeks=weeks, limit=limit)


def _as_document(trial: QueryTrial) -> dict[str, object]:
    return {
        "query": trial.query,
        "weeks": trial.weeks,
        "since": trial.since.isoformat(),
        "count": trial.count,
        "scanned": trial.scanned,
        "papers": [{**paper_payload(h.paper), "terms": list(h.terms)} for h in trial.hits],
    }
