"""The `papertide` command line: parse arguments, call one function, print.

Every command and sub-app is registered here, explicitly. Command modules import
only typer at load time, so `papertide --help` and `papertide config` load no store,
no HTTP client and no chat or mail SDK.

May import: everything (typer and rich live only here).
"""

from __future__ import annotations

import typer

from bot.cli import (
    ask,
    chat,
    core,
    demo,
    digest,
    emerging,
    ingest,
    interests,
    people,
    query,
    service,
    targets,
)

app = typer.Typer(
    name="papertide",
    help="Follow research-paper topics in Slack, Discord and a weekly email digest.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("config")(core.config)
app.add_typer(core.db, name="db")
app.command("demo")(demo.demo)
app.command("poll")(ingest.poll)
app.command("backfill")(ingest.backfill)
app.command("status")(ingest.status)
app.add_typer(ingest.papers, name="papers")
ingest.topics.command("emerging")(emerging.emerging)
ingest.topics.command("add")(emerging.add)
app.add_typer(ingest.topics, name="topics")
app.add_typer(query.query, name="query")
app.command("ask")(ask.ask)
app.command("serve")(service.serve)
app.command("worker")(service.worker)
app.add_typer(service.outbox, name="outbox")
app.add_typer(digest.digest, name="digest")
app.add_typer(chat.discord, name="discord")
app.add_typer(targets.targets, name="targets")
app.add_typer(targets.subscriptions, name="subscriptions")
app.add_typer(people.people, name="people")
app.command("export")(people.export)
app.command("import")(people.import_)
app.add_typer(interests.interests, name="interests")


def main() -> None:
    app()
