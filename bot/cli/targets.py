"""`papertide targets list|add|disable|enable|remove` and
`papertide subscriptions list|add|remove`: operators in control of who gets what.

Webhook and Apprise targets are created here (their URL checked first: http(s) or a
URL Apprise accepts, and a public host unless PAPERTIDE_ALLOW_PRIVATE_URLS); Slack,
Discord and email targets are created by their apps and only listed, enabled or
disabled here. Listings mask secrets in URLs; `papertide export` has them in full.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from bot.cli.common import JSON_OPTION, fail, print_json, with_root

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.service.root import Papertide
    from bot.types import Platform

targets = typer.Typer(help="Where messages go: list, add webhook/Apprise, disable.",
                      no_args_is_help=True)  # fmt: skip
subscriptions = typer.Typer(help="Which target follows which topic.", no_args_is_help=True)
ENDPOINTS = ("webhook", "apprise")


def mask(platform: str, address: str) -> str:
    """What a listing shows of an address: Apprise's privacy form, a webhook's host."""
    if platform == "apprise":
        from bot.platforms.apprise.service import privacy_url

        return privacy_url(address)
    if platform == "webhook":
        from bot.platforms.webhook import mask_webhook_url

        return mask_webhook_url(address)
    return address


async def check_address(settings: Settings, platform: Platform, address: str) -> str:
    """The checked URL for a webhook or Apprise target (UnsafeUrl says why not)."""
    allow = settings.allow_private_urls
    if str(platform) == "apprise":
        from bot.platforms.apprise.service import check_apprise_url

        return await check_apprise_url(address, allow_private=allow)
    from bot.platforms.webhook import check_webhook_url

    return await check_webhook_url(address, allow_private=allow)


def _show(rows: list[Any], as_json: bool, columns: tuple[str, ...], empty: str) -> None:
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo(empty)
        return
    for row in rows:
        typer.echo("  ".join(_cell(row[c]) for c in columns))


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value)) or "-"
    if isinstance(value, bool):
        return "disabled" if value else "on"
    return "-" if value is None or value == "" else str(value)


@targets.command("list")
def targets_list(
    platform: str | None = typer.Option(None, "--platform", help="Only this platform."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Every target: id, platform, kind, workspace, address, person, follows, alerts."""
    from bot.subscriptions.directory import target_rows

    async def go(root: Papertide) -> list[Any]:
        async with root.store.read_sessions() as session:
            return list(await target_rows(session=session, platform=platform, mask=mask))

    try:
        rows = with_root(go)
    except ValueError:
        fail(f"unknown platform {platform!r}")
    columns = ("id", "platform", "kind", "workspace", "address", "person", "follows", "alerts",
               "disabled")  # fmt: skip
    _show(rows, as_json, columns, "no targets yet")


@targets.command("add")
def targets_add(
    platform: str = typer.Argument(..., help="webhook or apprise"),
    url: str = typer.Argument(
        ...,
        help="https://… for a webhook; an Apprise URL, e.g. "
        "mmost://host/token, ntfy://host/topic, tgram://token/chat",
    ),
    topics: Annotated[
        list[str] | None, typer.Option("--follow", help="Also follow this topic (repeat).")
    ] = None,
    as_json: bool = JSON_OPTION,
) -> None:
    """Create a webhook or Apprise target (the URL is checked first)."""
    from bot.subscriptions import operate
    from bot.types import Platform

    if platform not in ENDPOINTS:
        fail(f"targets add takes webhook or apprise, not {platform!r}")

    async def go(root: Papertide) -> tuple[int, bool]:
        kind = Platform(platform)
        checked = await check_address(root.settings, kind, url)
        async with root.store.sessions() as session, session.begin():
            target, created = await operate.add_endpoint_target(
                session=session, platform=kind, address=checked
            )
            assert target.id is not None
            for topic in topics or []:
                await operate.follow(session=session, target_id=target.id, topic=topic)
            return target.id, created

    target_id, created = with_root(go)
    if as_json:
        print_json({"id": target_id, "created": created, "follows": topics or []})
        return
    verb = "added" if created else "already there:"
    typer.echo(f"{verb} target #{target_id} ({platform})")


def _toggle(target_id: int, enabled: bool, reason: str) -> None:
    from bot.subscriptions.operate import set_target_enabled

    async def go(root: Papertide) -> bool:
        async with root.store.sessions() as session, session.begin():
            return await set_target_enabled(
                session=session, target_id=target_id, enabled=enabled, reason=reason
            )

    changed = with_root(go)
    state = "enabled" if enabled else "disabled"
    typer.echo(f"target #{target_id} {state}" if changed else f"target #{target_id} was {state}")


@targets.command("disable")
def targets_disable(
    target_id: int = typer.Argument(..., help="Target id (see targets list)."),
    reason: str = typer.Option("disabled by operator", "--reason"),
) -> None:
    """Stop sending to a target; what is queued for it is dropped."""
    _toggle(target_id, False, reason)


@targets.command("enable")
def targets_enable(target_id: int = typer.Argument(..., help="Target id.")) -> None:
    """Send to a target again (new messages; dropped ones stay dropped)."""
    _toggle(target_id, True, "")


@targets.command("remove")
def targets_remove(
    target_id: int = typer.Argument(..., help="Target id."),
    yes: bool = typer.Option(False, "--yes", help="Really delete it, follows and alerts too."),
) -> None:
    """Delete a target with its follows, alerts and messages."""
    from bot.subscriptions.operate import remove_target

    if not yes:
        fail(f"this deletes target #{target_id} with its follows and alerts: add --yes")

    async def go(root: Papertide) -> None:
        async with root.store.sessions() as session, session.begin():
            await remove_target(session=session, target_id=target_id)

    with_root(go)
    typer.echo(f"removed target #{target_id}")


@subscriptions.command("list")
def subscriptions_list(
    topic: str | None = typer.Option(None, "--topic", help="Only followers of this topic."),
    target: int | None = typer.Option(None, "--target", help="Only this target's follows."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Who follows what: one row per (target, topic)."""
    from bot.subscriptions.directory import follow_rows

    async def go(root: Papertide) -> list[Any]:
        async with root.store.read_sessions() as session:
            return list(
                await follow_rows(session=session, topic=topic, target_id=target, mask=mask)
            )

    rows = with_root(go)
    columns = ("target_id", "platform", "workspace", "address", "topic", "muted_until")
    _show(rows, as_json, columns, "no subscriptions match")


def _change_follow(target: int, topic: str, add: bool) -> None:
    from bot.subscriptions import operate

    async def go(root: Papertide) -> bool:
        async with root.store.sessions() as session, session.begin():
            change = operate.follow if add else operate.unfollow
            return await change(session=session, target_id=target, topic=topic)

    changed = with_root(go)
    if add:
        typer.echo(f"target #{target} {'now follows' if changed else 'already followed'} {topic}")
    else:
        typer.echo(
            f"target #{target} {'no longer follows' if changed else 'did not follow'} {topic}"
        )


@subscriptions.command("add")
def subscriptions_add(
    target: int = typer.Option(..., "--target", help="Target id."),
    topic: str = typer.Option(..., "--topic", help="Topic slug or name."),
) -> None:
    """Make a target follow a topic."""
    _change_follow(target, topic, True)


@subscriptions.command("remove")
def subscriptions_remove(
    target: int = typer.Option(..., "--target", help="Target id."),
    topic: str = typer.Option(..., "--topic", help="Topic slug or name."),
) -> None:
    """Stop a target following a topic."""
    _change_follow(target, topic, False)
