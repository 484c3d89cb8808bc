"""`papertide interests import FILE`: alerts proposed from a BibTeX, RIS or CSL-JSON export,
each with its `alert test` count for the last four weeks; `--target ID --accept N`
adds the chosen ones to a target (a person's DM or mailbox)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bot.cli.common import JSON_OPTION, fail, print_json, with_root

if TYPE_CHECKING:
    from bot.service.root import Papertide

interests = typer.Typer(help="Alerts proposed from a reference library.", no_args_is_help=True)
MAX_FILE_BYTES = 50_000_000


@interests.command("import")
def import_library(
    file: Annotated[Path, typer.Argument(help="A BibTeX, RIS or CSL-JSON export.")],
    target: Annotated[int | None, typer.Option("--target", help="Target to add alerts to.")] = None,
    accept: Annotated[
        list[int] | None, typer.Option("--accept", help="Proposal to add (repeat).")
    ] = None,
    as_json: bool = JSON_OPTION,
) -> None:
    """Print numbered proposals; with --target and --accept, add those alerts."""
    from bot.subscriptions import interests as core
    from bot.subscriptions.library import read_library
    from bot.subscriptions.operate import get_target

    if accept and target is None:
        fail("--accept needs --target ID (see papertide targets list)")
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            fail(f"{file} is larger than {MAX_FILE_BYTES:,} bytes")
        data = file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc}")

    async def go(root: Papertide) -> dict[str, Any]:
        library = read_library(data)
        async with root.store.sessions() as session, session.begin():
            proposals = await core.propose(session=session, library=library)
            added = []
            if target is not None:
                row = await get_target(session=session, target_id=target)
                await core.keep_proposals(session=session, target=row, proposals=proposals)
                for n in accept or []:
                    try:
                        _, alert = await core.accept(session=session, target=row, n=n)
                    except core.NoSuchProposal:
                        fail(f"no proposal {n}: there are {len(proposals)}")
                    if alert is not None:
                        added.append({"n": n, "alert_id": alert.id, "query": alert.query})
        return {"format": str(library.format), "entries": len(library.entries),
                "skipped": library.skipped, "proposals": proposals, "added": added}  # fmt: skip

    result = with_root(go)
    if as_json:
        print_json(result)
        return
    typer.echo(f"{result['entries']} {result['format']} entries ({result['skipped']} skipped)")
    for p in result["proposals"]:
        typer.echo(f"{p['n']}. {p['query']}  — {p['why']}; {p['count']} papers in 4 weeks")
    for a in result["added"]:
        typer.echo(f"added alert #{a['alert_id']}: {a['query']}")
