"""The `papertide` command line. Each area registers its commands here, explicitly."""

from __future__ import annotations

import typer

from bot.cli import chat, core, demo, digest, ingest, query, service

app = typer.Typer(
    name="papertide",
    help="Follow research-paper topics in Slack, Discord and a weekly email digest.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

for module in (core, demo, ingest, query, service, digest, chat):
    module.register(app)


def main() -> None:
    app()
