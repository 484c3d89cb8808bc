"""`papertide people list|show|forget` and `papertide export` / `papertide import`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bot.cli.common import JSON_OPTION, fail, print_json, with_root
from bot.cli.targets import check_address, mask

if TYPE_CHECKING:
    from bot.service.root import Papertide
    from bot.subscriptions.operate import Forgotten
    from bot.subscriptions.transfer import ImportReport
    from bot.types import Platform

people = typer.Typer(help="People: digest recipients and linked chat users.", no_args_is_help=True)
MAX_IMPORT_BYTES = 200_000_000


@people.command("list")
def people_list(as_json: bool = JSON_OPTION) -> None:
    """Every person: address, digest status and schedule, linked targets."""
    from bot.subscriptions.directory import person_rows

    async def go(root: Papertide) -> list[Any]:
        async with root.store.read_sessions() as session:
            return list(await person_rows(session=session))

    rows = with_root(go)
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo("nobody yet")
    for r in rows:
        typer.echo(f"{r['id']}  {r['email']}  {r['email_status']}  {r['digest']} {r['timezone']}  "
                   f"{r['targets']} targets")  # fmt: skip


@people.command("show")
def people_show(email: str = typer.Argument(...), as_json: bool = JSON_OPTION) -> None:
    """One person: digest settings, linked targets with their follows, alerts."""
    from bot.subscriptions.directory import person_detail

    async def go(root: Papertide) -> Any:
        async with root.store.read_sessions() as session:
            return await person_detail(session=session, email=email.strip().lower(), mask=mask)

    detail = with_root(go)
    if as_json:
        print_json(detail)
        return
    typer.echo(f"{detail['email']}  {detail['email_status']}  digest {detail['digest']} "
               f"{detail['timezone']}")  # fmt: skip
    for t in detail["linked_targets"]:
        follows = ", ".join(t["follows"]) or "nothing"
        typer.echo(f"  target #{t['id']} {t['platform']} {t['kind']} {t['address']}: {follows}")
    for a in detail["alerts"]:
        typer.echo(f"  alert #{a['id']} {a['query']}" + ("" if a["active"] else " (off)"))


@people.command("forget")
def people_forget(
    email: str = typer.Argument(...),
    yes: bool = typer.Option(False, "--yes", help="Really erase them."),
) -> None:
    """Erase a person and everything linked to them: mailbox, DM targets, follows,
    alerts, messages (a data-protection request)."""
    from bot.subscriptions.operate import forget_person

    if not yes:
        fail(f"this erases {email} and everything linked to them: add --yes")

    async def go(root: Papertide) -> Forgotten:
        async with root.store.sessions() as session, session.begin():
            return await forget_person(session=session, email=email.strip().lower())

    gone = with_root(go)
    typer.echo(f"forgot {gone.email}: {gone.targets} targets, {gone.follows} follows, "
               "their alerts and messages")  # fmt: skip


def export(
    out: Annotated[
        Path | None, typer.Option("--out", help="Write here (mode 0600); default stdout.")
    ] = None,
) -> None:
    """Topics, people, targets with follows and alerts, as one JSON document.

    It holds webhook and Apprise URLs in full (their tokens): keep it private."""
    from bot.subscriptions.transfer import export_document

    async def go(root: Papertide) -> dict[str, Any]:
        async with root.store.read_sessions() as session:
            return await export_document(session=session)

    document = with_root(go)
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
        return
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    typer.echo(f"wrote {out}: {len(document['targets'])} targets, {len(document['people'])} people",
               err=True)  # fmt: skip


def import_(
    file: str = typer.Argument(..., help="An export file, or - for stdin."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Add what an export holds and this store lacks; never changes or deletes rows."""
    from bot.subscriptions.transfer import import_document

    try:
        raw = sys.stdin.read(MAX_IMPORT_BYTES + 1) if file == "-" else _read(Path(file))
        document = json.loads(raw)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {file}: {exc}")
    except json.JSONDecodeError as exc:
        fail(f"{file} is not JSON: {exc}")

    async def go(root: Papertide) -> ImportReport:
        async def check(platform: Platform, address: str) -> None:
            await check_address(root.settings, platform, address)

        async with root.store.sessions() as session, session.begin():
            return await import_document(session=session, document=document, check_address=check)

    report = with_root(go)
    if as_json:
        print_json({"added": report.added, "skipped": report.skipped})
        return
    typer.echo("added: " + ", ".join(f"{n} {k}" for k, n in report.added.items()))
    for line in report.skipped:
        typer.echo(f"skipped {line}", err=True)


def _read(path: Path) -> str:
    if path.stat().st_size > MAX_IMPORT_BYTES:
        fail(f"{path} is larger than {MAX_IMPORT_BYTES:,} bytes")
    return path.read_text(encoding="utf-8")
