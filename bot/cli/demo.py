"""`papertide demo`: what `make run` shows a newcomer, offline, in well under two minutes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from bot.catalog.listing import list_topics
from bot.catalog.momentum import momentum_line
from bot.catalog.stats import load_momentum_and_universe
from bot.cli.common import load_settings, run
from bot.config import Settings
from bot.demo.mailcatcher import catch_mail
from bot.demo.preview import discord_preview, slack_preview
from bot.demo.run import CHANNEL, PERSON_ALERT, PERSON_EMAIL, DemoRun, run_demo
from bot.platforms.discord.channel import to_payloads
from bot.platforms.email.channel import EmailChannel
from bot.platforms.slack.channel import to_messages
from bot.service.root import open_app
from bot.timeutil import utcnow
from bot.types import MessageKind


async def _demo(settings: Settings, out_dir: Path, console: Console) -> tuple[DemoRun, Any, Path]:
    mailbox = out_dir / "mailbox"
    async with catch_mail(mailbox) as catcher, open_app(settings) as ctx:
        smtp = settings.model_copy(
            update={"smtp_host": catcher.host, "smtp_port": catcher.port, "smtp_starttls": False}
        )
        email = EmailChannel.from_settings(smtp)
        with Progress(
            TextColumn("ingesting the bundled sample"),
            BarColumn(),
            MofNCompleteColumn(),
            console=console,
            transient=False,
        ) as progress:
            task = progress.add_task("sample", total=None)

            def on_progress(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            try:
                result = await run_demo(
                    ctx, out_dir=out_dir, email_channel=email, on_progress=on_progress
                )
            finally:
                await email.close()
        async with ctx.sessions() as session:
            rows = await list_topics(session=session)
            momentum, universe = await load_momentum_and_universe(
                session=session, as_of=utcnow(), settings=settings
            )
        table = Table("topic", "papers", "momentum (as of now)", box=None, show_lines=False)
        for row in sorted(rows, key=lambda r: -(momentum[r["slug"]].count_4w)):
            m = momentum[row["slug"]]
            flag = "[bold red]▲ spiking[/] " if m.spiking else ""
            table.add_row(escape(row["name"]), str(row["papers"]), flag + escape(momentum_line(m)))
        note = f"(the sample's universe: {universe})" if universe else ""
        return result, (table, note), mailbox


def _show_alerts(console: Console, result: DemoRun) -> None:
    if not result.channel_rows:
        console.print(f"No alerts queued for {CHANNEL}.")
        return
    row = result.channel_rows[0]
    kind = MessageKind(row.kind)
    payload = {k: v for k, v in row.payload.items() if not k.startswith("_")}
    console.print(
        Panel(
            escape(slack_preview(to_messages(kind, payload))),
            title=f"Slack · {CHANNEL} (as Block Kit renders it)",
            border_style="magenta",
        )
    )
    console.print(
        Panel(
            escape(discord_preview(to_payloads(kind, payload))),
            title=f"Discord · {CHANNEL} (embeds, mentions off)",
            border_style="blue",
        )
    )


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(
        out: Annotated[Path, typer.Option("--out", help="Where the demo writes its files.")] = Path(
            "out"
        ),
    ) -> None:
        """Run the whole product offline on the bundled sample (what `make run` does)."""
        out.mkdir(parents=True, exist_ok=True)
        settings = load_settings().model_copy(update={"sources": ["sample"]})
        console = Console()
        result, (table, note), mailbox = run(_demo(settings, out, console))
        poll = result.poll
        if result.reused_store:
            console.print(
                f"Reusing the store at {settings.database_url} "
                f"({result.papers_before} papers already there)."
            )
        if poll is not None:
            console.print(
                f"Sample source: {poll.new} new papers, {poll.new_matches} new topic/alert matches."
            )
        console.rule("Topics and their momentum")
        console.print(table)
        if note:
            console.print(note)
        console.rule(f"Instant alerts for the demo channel {CHANNEL}")
        _show_alerts(console, result)
        console.rule("Weekly digest")
        files = [out / "console.txt"]
        if result.digest is not None:
            html_path, text_path = out / "digest.html", out / "digest.txt"
            html_path.write_text(str(result.digest["html"]), encoding="utf-8")
            text_path.write_text(str(result.digest["text"]), encoding="utf-8")
            files = [html_path, text_path, *files]
            console.print(
                f"Digest for {PERSON_EMAIL} (follows 3 topics, alert {escape(PERSON_ALERT)}), "
                f"week {result.digest_week}: {escape(str(result.digest['subject']))}"
            )
        eml = sorted(mailbox.glob("*.eml")) if mailbox.exists() else []
        console.print(
            f"Delivered through the outbox this run: {result.delivered} messages "
            f"(console channel and the local SMTP catcher)."
        )
        console.rule("Files")
        for path in [*files, *eml[-1:]]:
            console.print(f"  {path}")
        if not eml:
            console.print(
                f"  (no mail in {mailbox} yet: this week's digest was sent on a run before)"
            )
        console.print(
            "Next: README.md walks you to a real Slack workspace, Discord server and SMTP relay."
        )
