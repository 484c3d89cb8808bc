"""Core commands: config, db upgrade."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bot import settings_doc
from bot.cli.common import load_settings, print_json, run
from bot.store.migrate import upgrade


def register(app: typer.Typer) -> None:
    db = typer.Typer(help="Database schema.", no_args_is_help=True)
    app.add_typer(db, name="db")

    @app.command("config")
    def config_cmd(
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
        markdown: bool = typer.Option(False, "--markdown", help="Print the README's table."),
        env_example: bool = typer.Option(False, "--env-example", help="Print .env.example."),
    ) -> None:
        """Print the effective settings, secrets masked."""
        if markdown or env_example:
            typer.echo(settings_doc.markdown_table() if markdown else settings_doc.env_example())
            return
        shown = load_settings().effective()
        if as_json:
            print_json(shown)
            return
        table = Table("variable", "value", box=None)
        for name, value in shown.items():
            table.add_row(name, escape(value))
        Console().print(table)

    @db.command("upgrade")
    def db_upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
        """Apply the database migrations (also done automatically at start)."""
        settings = load_settings()
        run(upgrade(settings.database_url, revision))
        typer.echo(f"database at {revision}")
