"""`papertide discord sync` and `papertide discord invite`."""

from __future__ import annotations

import typer

from bot.cli.common import JSON_OPTION, fail, load_settings, print_json, run

discord = typer.Typer(help="Discord set-up.", no_args_is_help=True)


@discord.command("sync")
def sync(as_json: bool = JSON_OPTION) -> None:
    """Register the /papers commands with Discord (run once per change, not at every start)."""
    from bot.platforms.discord.app import sync_commands

    names = run(sync_commands(load_settings()))
    if as_json:
        print_json({"synced": names})
        return
    typer.echo(f"synced: {', '.join('/' + n for n in names)}")


@discord.command("invite")
def invite() -> None:
    """Print the URL that adds the bot with the least permissions it needs."""
    from bot.errors import PapertideError
    from bot.platforms.discord.app import invite_url

    try:
        typer.echo(invite_url(load_settings()))
    except PapertideError as exc:
        fail(str(exc))
