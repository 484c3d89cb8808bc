"""One Apprise service from its URL: loading it, its limits, and the checks an operator's
URL must pass before it becomes a target.

Apprise's own behaviour we switch off, because the outbox owns it: its retries
(`?retry=` in a URL), its per-service politeness delay (`request_rate_per_sec`, a
`time.sleep` between requests; papertide paces per target instead) and the icon
image it would ask some services to fetch.
"""

from __future__ import annotations

from typing import Any

import apprise
from apprise import NotifyFormat

from bot.ingest.safeurl import MAX_URL_CHARS, UnsafeUrl, check_host
from bot.platforms.apprise.render import Limits

# Markdown these services render even where Apprise sends "text" (a title with
# `[x](y)` would otherwise become a link there), so their text is escaped as markdown.
RENDERS_MARKDOWN = {
    "mmost", "mmosts", "rocket", "rockets", "zulip", "msteams", "workflows", "workflow",
    "discord", "guilded", "revolt", "ryver", "mastodon", "toot", "matrix", "matrixs",
}  # fmt: skip
# Plugins that act on this machine itself (desktop pop-ups, local syslog), not a chat.
LOCAL_SCHEMES = {
    "dbus", "kde", "qt", "glib", "gio", "gnome", "windows", "macosx", "syslog", "blink1",
}  # fmt: skip
# One readable chat message, and under ntfy's 8,000-byte JSON limit for most text.
MAX_BODY = 4000
SAFETY = 0.95  # services count some characters as two (UTF-16 units); keep a margin


def _asset() -> apprise.AppriseAsset:
    # In-memory persistent store: no files written next to the service.
    return apprise.AppriseAsset(
        app_id="papertide", app_desc="papertide", storage_mode="memory", async_mode=True
    )


ASSET = _asset()


def load_service(url: str) -> Any | None:
    """The Apprise service (plugin instance) for `url`, or None if Apprise refuses it."""
    service: Any
    try:
        service = apprise.Apprise.instantiate(url, asset=ASSET, suppress_exceptions=True)
    except Exception:
        return None
    if service is None:
        return None
    service.retry = 0  # the outbox retries, with backoff and dead letters
    service.request_rate_per_sec = 0  # the outbox paces per target
    service.include_image = False
    return service


def service_format(service: Any) -> NotifyFormat:
    """The one body format a service takes (some declare several: prefer markdown)."""
    declared = service.notify_format
    if isinstance(declared, list | tuple | set):
        options = list(declared)
        return NotifyFormat.MARKDOWN if NotifyFormat.MARKDOWN in options else options[0]
    return NotifyFormat(declared)


def limits_of(service: Any) -> Limits:
    """What our renderer must stay within for this service."""
    fmt = service_format(service)
    scheme = str(getattr(service, "secure_protocol", "") or "")
    schemes = {str(getattr(service, "protocol", "") or ""), scheme}
    body = int(getattr(service, "body_maxlen", 0) or 32768)
    return Limits(
        body=max(40, int(min(body, MAX_BODY) * SAFETY)),
        title=int(getattr(service, "title_maxlen", 0) or 0),
        lines=int(getattr(service, "body_max_line_count", 0) or 0),
        markdown=fmt == NotifyFormat.MARKDOWN or bool(schemes & RENDERS_MARKDOWN),
    )


def body_format(service: Any) -> NotifyFormat:
    """The format we declare: the service's own (Apprise converts nothing), except HTML
    services, which get our plain text and let Apprise escape it into HTML."""
    fmt = service_format(service)
    return NotifyFormat.TEXT if fmt == NotifyFormat.HTML else fmt


def privacy_url(url: str) -> str:
    """The URL with its secrets masked (Apprise's own privacy form), for listings."""
    service = load_service(url)
    return str(service.url(privacy=True)) if service is not None else "(not an Apprise URL)"


def _host_is_network(service: Any) -> bool:
    # A plugin whose URL templates spell `{host}` connects to that host; the others
    # (tgram://bot_token/…) keep a token in the host slot and call their cloud API.
    templates = " ".join(str(t) for t in getattr(service, "templates", ()))
    return "{host}" in templates


async def check_apprise_url(url: str, *, allow_private: bool) -> str:
    """The URL, stripped, when Apprise accepts it and its host is public (or allowed);
    UnsafeUrl with a one-line reason otherwise."""
    url = url.strip()
    if not url or len(url) > MAX_URL_CHARS:
        raise UnsafeUrl(f"an Apprise URL must have 1 to {MAX_URL_CHARS} characters")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise UnsafeUrl("a URL cannot contain spaces or control characters")
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in LOCAL_SCHEMES:
        raise UnsafeUrl(f"{scheme}:// notifies this machine itself, not a chat")
    service = load_service(url)
    if service is None:
        raise UnsafeUrl(
            f"Apprise does not accept this URL (scheme {scheme or 'none'}://): "
            "see https://appriseit.com/services/ for the form of each service"
        )
    host = str(getattr(service, "host", "") or "")
    if host and _host_is_network(service):
        port = int(getattr(service, "port", 0) or (443 if getattr(service, "secure", 0) else 80))
        await check_host(host, port, allow_private=allow_private, must_resolve=False)
    return url
