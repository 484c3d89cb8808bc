"""Checks a long-running process passes before it starts: `serve`, `worker`.

Each raises a ConfigError naming the one variable to set, so the CLI prints one line
and exits before anything touches the store.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from bot.config import Settings
from bot.errors import ConfigError


def is_loopback_url(url: str) -> bool:
    """True when `url`'s host is this machine only (127.0.0.0/8, ::1, localhost)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_secret_key(settings: Settings) -> None:
    """`serve` and `worker` refuse to sign links with a key anyone could know.

    Without PAPERTIDE_SECRET_KEY, person ids being small integers, confirm, manage and
    delete links could be forged; on a loopback public URL (a developer's machine) a
    random per-process key is used instead.
    """
    if settings.has_secret_key() or is_loopback_url(settings.public_url):
        return
    raise ConfigError(
        "PAPERTIDE_SECRET_KEY is not set: mailed links could be forged; set it to a long"
        " random value (e.g. `openssl rand -hex 32`)",
        variable="PAPERTIDE_SECRET_KEY",
    )


def require_slack_secret(settings: Settings) -> None:
    """`serve` with Slack on needs a signing secret that is not blank: with an empty one,
    HMAC("") would make every forged request look signed."""
    if settings.slack_bot_token is None:
        return
    secret = settings.slack_signing_secret
    if secret is None or not secret.get_secret_value().strip():
        raise ConfigError(
            "PAPERTIDE_SLACK_SIGNING_SECRET is empty or unset while Slack is on; copy the"
            " app's signing secret (Basic Information → App Credentials)",
            variable="PAPERTIDE_SLACK_SIGNING_SECRET",
        )
