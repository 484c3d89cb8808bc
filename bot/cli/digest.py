"""`papertide digest preview|send`: look at a digest, or enqueue a week's digests.

`send` only enqueues (one outbox row per recipient per ISO week, keyed); the
workers (`papertide worker` / `serve`) deliver them through EmailChannel, like every
other message, so retries, pacing and dead letters stay in one place.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from sqlmodel import col, select

from bot.catalog.momentum import DigestError, last_complete_week, parse_iso_week
from bot.cli.common import fail, load_settings, run
from bot.config import Settings
from bot.service.root import open_app
from bot.store.models import Person
from bot.timeutil import utcnow
from digests.build import build_digest
from digests.links import DigestLinks, links_for
from digests.load import load_recipients, load_week
from digests.render import MailIdentity, render_digest
from digests.sample import sample_recipient, sample_week
from digests.schedule import WeekRun, enqueue_week


def make_links(settings: Settings) -> DigestLinks:
    """The links every digest carries; the composition root may pass its own."""
    return links_for(settings)


async def _preview(settings: Settings, email: str | None, week: str) -> dict[str, object]:
    links = make_links(settings)
    identity = MailIdentity(settings.mail_from)
    if email is None:
        data = sample_week(week)
        digest = build_digest(sample_recipient(data), data, papers_per_topic=8)
    else:
        async with open_app(settings) as ctx, ctx.sessions() as session:
            person = (
                await session.execute(select(Person).where(col(Person.email) == email))
            ).scalar_one_or_none()
            if person is None:
                raise DigestError(f"no recipient with email {email}")
            data = await load_week(session=session, week=week, settings=settings)
            people = await load_recipients(session=session, people=[person], week=data)
        # A preview always renders, even a quiet week the person chose not to receive.
        one = replace(people[0], recipient=replace(people[0].recipient, send_quiet_week=True))
        digest = build_digest(one, data, papers_per_topic=settings.digest_papers_per_topic)
    if digest is None:
        raise DigestError("nothing to preview")
    return render_digest(digest, links=links, identity=identity)


async def _send(settings: Settings, week: str | None, dry_run: bool) -> WeekRun:
    async with open_app(settings) as ctx, ctx.sessions() as session:
        return await enqueue_week(
            session=session, week=week, settings=settings, links=make_links(settings),
            dry_run=dry_run,
        )  # fmt: skip


def register(app: typer.Typer) -> None:
    digest = typer.Typer(help="Weekly email digests.", no_args_is_help=True)
    app.add_typer(digest, name="digest")

    @digest.command("preview")
    def preview_cmd(
        out: Annotated[Path, typer.Option("--out", help="Write the HTML part here.")],
        email: str | None = typer.Option(None, "--email", help="Recipient to preview."),
        sample: bool = typer.Option(False, "--sample", help="Built-in sample data, no store."),
        week: str | None = typer.Option(None, "--week", help="ISO week, e.g. 2026-W39."),
        text: bool = typer.Option(False, "--text", help="Also write the text part (FILE.txt)."),
    ) -> None:
        """Render one digest to a file, for a recipient (--email) or sample data (--sample)."""
        if (email is None) == (not sample):
            fail("give exactly one of --email ADDR or --sample")
        settings = load_settings()
        week = week or last_complete_week(utcnow())
        try:
            parse_iso_week(week)
        except DigestError as exc:
            fail(str(exc))
        payload = run(_preview(settings, email, week))
        out.write_text(str(payload["html"]), encoding="utf-8")
        typer.echo(
            f"wrote {out} ({len(str(payload['html']).encode())} bytes): {payload['subject']}"
        )
        if text:
            text_path = out.with_suffix(".txt")
            text_path.write_text(str(payload["text"]), encoding="utf-8")
            typer.echo(f"wrote {text_path}")

    @digest.command("send")
    def send_cmd(
        week: str | None = typer.Option(
            None, "--week", help="ISO week the digest covers; default: the last complete week."
        ),
        dry_run: bool = typer.Option(False, "--dry-run", help="Build and count, enqueue nothing."),
    ) -> None:
        """Enqueue the week's digest for every confirmed recipient who has not had it."""
        settings = load_settings()
        result = run(_send(settings, week, dry_run))
        verb = "would enqueue" if dry_run else "enqueued"
        typer.echo(
            f"{result.week}: {verb} {result.enqueued} of {result.recipients} recipients "
            f"({result.already} already had it, {result.quiet_skipped} quiet weeks skipped, "
            f"{result.disabled} disabled addresses)"
        )
        if not dry_run and result.enqueued:
            typer.echo("the workers (papertide worker / serve) deliver them")
