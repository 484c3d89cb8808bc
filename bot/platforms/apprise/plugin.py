"""Apprise's registry entry: always on; targets with platform=apprise name their URL
(`papertide targets add apprise URL`)."""

from __future__ import annotations

from bot.outbox.queue import progress_saver
from bot.platforms.apprise.channel import AppriseChannel
from bot.platforms.registry import PlatformContext


def build_channel(ctx: PlatformContext) -> AppriseChannel:
    """The channel, saving multi-part progress in the outbox row."""
    return AppriseChannel(
        timeout=ctx.settings.apprise_timeout_seconds,
        save_progress=progress_saver(ctx.sessions),
    )
