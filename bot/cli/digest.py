"""`papertide digest preview|send`: look at a digest, or enqueue a week's digests.

`send` only enqueues (one outbox row per recipient per ISO week, keyed); the workers
(`papertide worker` / `serve`) deliver them through the email channel, like every
other message, so retries, pacing and dead letters stay in one place.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import fail, load_settings, with_root

if TYPE_CHECKING:
    from bot.outbox.payloads import EmailPayload
    from bot.service.root import Papertide
    from digests.schedule import WeekRun

digest = typer.Typer(help="Weekly email digests.", no_args_is_help=True)


@digest.command("preview")
def preview(
    out: Annotated[Path, typer.Option("--out", help="Write the HTML part here.")],
    email: str | None = typer.Option(None, "--email", help="Recipient to preview."),
    sample: bool = typer.Option(False, "--sample", help="Built-in sample data, no store."),
    week: str | None = typer.Option(None, "--week", help="ISO week, e.g. 2026-W39."),
    text: bool = typer.Option(False, "--text", help="Also write the text part (FILE.txt)."),
) -> None:
    """Render one digest to a file, for a recipient (--email) or sample data (--sample)."""
    from bot.catalog.momentum import DigestError, last_complete_week, parse_iso_week
    from bot.timeutil import utcnow
    from digests.preview import preview_digest, preview_sample

    if (email is None) == (not sample):
        fail("give exactly one of --email ADDR or --sample")
    settings = load_settings()
    week = week or last_complete_week(utcnow())
    try:
        parse_iso_week(week)
        if email is None:
            payload = preview_sample(settings=settings, week=week)
        else:
            address = email

            async def go(root: Papertide) -> EmailPayload:
                async with root.store.read_sessions() as session:
                    return await preview_digest(
                        session=session, settings=settings, email=address, week=week
                    )

            payload = with_root(go, settings)
    except DigestError as exc:
        fail(str(exc))
    out.write_text(payload["html"], encoding="utf-8")
    typer.echo(f"wrote {out} ({len(payload['html'].encode())} bytes): {payload['subject']}")
    if text:
        text_path = out.with_suffix(".txt")
        text_path.write_text(payload["text"], encoding="utf-8")
        typer.echo(f"wrote {text_path}")


@digest.command("send")
def send(
    week: str | None = typer.Option(
        None, "--week", help="ISO week the digest covers; default: the last complete week."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Build and count, enqueue nothing."),
) -> None:
    """Enqueue the week's digest for every confirmed recipient who has not had it."""

    async def go(root: Papertide) -> WeekRun:
        from digests.links import links_for
        from digests.schedule import enqueue_week

        async with root.store.sessions() as session:
            return await enqueue_week(
                session=session, week=week, settings=root.settings,
                links=links_for(root.settings), dry_run=dry_run,
            )  # fmt: skip

    result = with_root(go)
    verb = "would enqueue" if dry_run else "enqueued"
    typer.echo(
        f"{result.week}: {verb} {result.enqueued} of {result.recipients} recipients "
        f"({result.already} already had it, {result.quiet_skipped} quiet weeks skipped, "
        f"{result.disabled} disabled addresses)"
    )
    if not dry_run and result.enqueued:
        typer.echo("the workers (papertide worker / serve) deliver them")
