"""`papertide demo`: what `make run` shows a newcomer, offline, in well under two minutes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import load_settings, run

if TYPE_CHECKING:
    from rich.console import Console

    from bot.catalog.stats import TopicReport
    from bot.config import Settings
    from bot.demo.run import DemoRun


async def _demo(
    settings: Settings, out_dir: Path, console: Console
) -> tuple[DemoRun, list[TopicReport], str]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from bot.catalog.stats import topic_reports
    from bot.demo.mailcatcher import catch_mail
    from bot.demo.run import run_demo
    from bot.platforms.email.channel import EmailChannel
    from bot.service.root import open_papertide
    from bot.timeutil import utcnow

    async with catch_mail(out_dir / "mailbox") as catcher, open_papertide(settings) as root:
        smtp = settings.model_copy(
            update={"smtp_host": catcher.host, "smtp_port": catcher.port, "smtp_starttls": False}
        )
        email = EmailChannel.from_settings(smtp)
        columns = (TextColumn("ingesting the bundled sample"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("sample", total=None)

            def on_progress(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            try:
                result = await run_demo(
                    root, out_dir=out_dir, email_channel=email, on_progress=on_progress
                )
            finally:
                await email.close()
        async with root.store.read_sessions() as session:
            rows, universe = await topic_reports(session=session, as_of=utcnow(), settings=settings)
    return result, rows, universe


def demo(
    out: Annotated[Path, typer.Option("--out", help="Where the demo writes its files.")] = Path(
        "out"
    ),
) -> None:
    """Run the whole product offline on the bundled sample (what `make run` does)."""
    from rich.console import Console

    out.mkdir(parents=True, exist_ok=True)
    settings = load_settings().model_copy(update={"sources": ["sample"]})
    console = Console()
    result, rows, universe = run(_demo(settings, out, console))
    if result.reused_store:
        console.print(
            f"Reusing the store at {settings.database_url} "
            f"({result.papers_before} papers already there)."
        )
    if result.poll is not None:
        console.print(
            f"Sample source: {result.poll.new} new papers, "
            f"{result.poll.new_matches} new topic/alert matches."
        )
    _show_topics(console, rows, universe)
    _show_alerts(console, result)
    _show_answer(console, result)
    _show_digest_and_files(console, result, out)


def _show_topics(console: Console, rows: list[TopicReport], universe: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    console.rule("Topics and their momentum")
    table = Table("topic", "papers", "momentum (as of now)", box=None, show_lines=False)
    for row in sorted(rows, key=lambda r: -(r.momentum.count_4w if r.momentum else 0)):
        flag = "[bold red]▲ spiking[/] " if row.momentum and row.momentum.spiking else ""
        table.add_row(escape(row.summary.name), str(row.summary.papers), flag + escape(row.line))
    console.print(table)
    if universe:
        console.print(f"(the sample's universe: {universe})")


def _show_alerts(console: Console, result: DemoRun) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    from bot.demo.preview import alert_previews
    from bot.demo.run import CHANNEL

    console.rule(f"Instant alerts for the demo channel {CHANNEL}")
    if not result.channel_rows:
        console.print(f"No alerts queued for {CHANNEL}.")
        return
    message = result.channel_rows[0]
    slack, discord = alert_previews(message.kind, message.payload)
    title = f"Slack · {CHANNEL} (as Block Kit renders it)"
    console.print(Panel(escape(slack), title=title, border_style="magenta"))
    title = f"Discord · {CHANNEL} (embeds, mentions off)"
    console.print(Panel(escape(discord), title=title, border_style="blue"))


def _show_answer(console: Console, result: DemoRun) -> None:
    from rich.markup import escape

    from bot.ask.plain import render_text

    if result.answer is None:
        return
    where = result.answer.topic.name if result.answer.topic else "all papers"
    console.rule(f"Ask about this topic: {escape(where)}")
    console.print(escape(render_text(result.answer)), end="")
    console.print('Try your own: papertide ask rl-for-llm-agents "<question>" [--json]')


def _show_digest_and_files(console: Console, result: DemoRun, out: Path) -> None:
    from rich.markup import escape

    from bot.demo.run import PERSON_ALERT, PERSON_EMAIL

    console.rule("Weekly digest")
    mailbox = out / "mailbox"
    files = [out / "console.txt"]
    if result.digest is not None:
        html_path, text_path = out / "digest.html", out / "digest.txt"
        html_path.write_text(result.digest["html"], encoding="utf-8")
        text_path.write_text(result.digest["text"], encoding="utf-8")
        files = [html_path, text_path, *files]
        console.print(
            f"Digest for {PERSON_EMAIL} (follows 3 topics, alert {escape(PERSON_ALERT)}), "
            f"week {result.digest_week}: {escape(result.digest['subject'])}"
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
        console.print(f"  (no mail in {mailbox} yet: this week's digest was sent on a run before)")
    console.print(
        "Next: README.md walks you to a real Slack workspace, Discord server and SMTP relay."
    )
