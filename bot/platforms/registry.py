"""The one registry of delivery platforms: a new platform is one folder (or module)
under bot/platforms/ plus one line here.

Each entry names the module that holds its plugin; the module is imported only when
the platform is on, so commands that never deliver never load an SDK. A plugin module
has `build_channel(ctx) -> Channel` and, for chat apps, `build_parts(ctx) -> Parts`
(web routes and long-running services such as a gateway connection).
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bot.config import Settings
from bot.types import Platform

if TYPE_CHECKING:
    import httpx
    from aiohttp import web
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    from bot.chat.commands import CommandDeps
    from bot.chat.queue import CommandWork
    from bot.outbox.channel import Channel
    from bot.platforms.transport import AiohttpTransport

# A long-running piece (Slack Socket Mode, the Discord gateway): runs until `stop` is set.
Service = Callable[[asyncio.Event], Awaitable[None]]
RouteInstaller = Callable[["web.Application"], None]


@dataclass(frozen=True, slots=True)
class PlatformContext:
    """What the composition root hands a plugin: never the root itself."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    http: httpx.AsyncClient  # the delivery client every channel shares
    # Its aiohttp transport, for the hottest sender (webhooks) to post through directly.
    direct_http: AiohttpTransport | None = None
    command_deps: CommandDeps | None = None  # set when chat apps run (serve)
    commands: CommandWork | None = None  # the command queue and its thread's sessions (serve)


@dataclass(frozen=True, slots=True)
class Parts:
    """A chat app's pieces beside its channel."""

    routes: Sequence[RouteInstaller] = ()
    services: Sequence[Service] = ()


class Plugin(Protocol):
    def build_channel(self, ctx: PlatformContext) -> Channel: ...


@dataclass(frozen=True, slots=True)
class Entry:
    platform: Platform
    module: str
    turned_on_by: str  # what the `serve` banner tells an operator to set
    is_on: Callable[[Settings], bool] = field(default=lambda _settings: True)


def _smtp_set(settings: Settings) -> bool:
    return "smtp_host" in settings.model_fields_set


PLATFORMS: tuple[Entry, ...] = (
    Entry(Platform.CONSOLE, "bot.platforms.console", "PAPERTIDE_CONSOLE_OUT"),
    Entry(Platform.WEBHOOK, "bot.platforms.webhook", "(always on: targets with platform=webhook)"),
    Entry(
        Platform.SLACK,
        "bot.platforms.slack.plugin",
        "PAPERTIDE_SLACK_BOT_TOKEN",
        lambda s: s.slack_bot_token is not None,
    ),
    Entry(
        Platform.DISCORD,
        "bot.platforms.discord.plugin",
        "PAPERTIDE_DISCORD_TOKEN",
        lambda s: s.discord_token is not None,
    ),
    Entry(Platform.EMAIL, "bot.platforms.email.plugin", "PAPERTIDE_SMTP_HOST", _smtp_set),
    Entry(Platform.APPRISE, "bot.platforms.apprise.plugin", "(always on: `papertide targets add`)"),
)


def status(settings: Settings) -> list[tuple[str, bool, str]]:
    """(platform, on?, what turns it on) for `papertide serve`'s banner."""
    return [(str(e.platform), e.is_on(settings), e.turned_on_by) for e in PLATFORMS]


def plugins(settings: Settings) -> dict[Platform, Any]:
    """The plugin modules of the platforms that are on (imported now, not before)."""
    return {e.platform: importlib.import_module(e.module) for e in PLATFORMS if e.is_on(settings)}


def build_channels(ctx: PlatformContext) -> dict[Platform, Channel]:
    """One channel per platform that is on."""
    return {p: m.build_channel(ctx) for p, m in plugins(ctx.settings).items()}


def build_parts(ctx: PlatformContext) -> list[Parts]:
    """Routes and services of the chat apps that are on."""
    return [m.build_parts(ctx) for m in plugins(ctx.settings).values() if hasattr(m, "build_parts")]
