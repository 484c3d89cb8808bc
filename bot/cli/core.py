"""`papertide config` and `papertide db upgrade`."""

from __future__ import annotations

import typer

from bot.cli.common import JSON_OPTION, load_settings, print_json, run

db = typer.Typer(help="Database schema.", no_args_is_help=True)


def config(
    as_json: bool = JSON_OPTION,
    markdown: bool = typer.Option(False, "--markdown", help="Print the README's table."),
    env_example: bool = typer.Option(False, "--env-example", help="Print .env.example."),
) -> None:
    """Print the effective settings, secrets masked."""
    from bot import settings_doc

    if markdown or env_example:
        typer.echo(settings_doc.markdown_table() if markdown else settings_doc.env_example())
        return
    shown = load_settings().effective()
    if as_json:
        print_json(shown)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table("variable", "value", box=None)
    for name, value in shown.items():
        table.add_row(name, escape(value))
    Console().print(table)


@db.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
    """Apply the database migrations (also done automatically at start)."""
    from bot.store.migrate import upgrade

    run(upgrade(load_settings().database_url, revision))
    typer.echo(f"database at {revision}")
