"""Email's registry entry: the SMTP channel, counting hard bounces on the target."""

from __future__ import annotations

from bot.outbox.targets import bounce_counter
from bot.platforms.email.channel import EmailChannel
from bot.platforms.registry import PlatformContext


def build_channel(ctx: PlatformContext) -> EmailChannel:
    return EmailChannel.from_settings(
        ctx.settings, count_bounce=bounce_counter(ctx.sessions), connections=2
    )
