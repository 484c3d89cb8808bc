"""The mails the subscription flow sends, as email payloads (bot.outbox.payloads).

Pure: returns data; the outbox and the email channel do the sending.
"""

from __future__ import annotations

from bot.outbox.payloads import EmailPayload
from bot.templating import render


def _one_line(text: str) -> str:
    # Header values must never carry CR/LF (header injection) or other controls.
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def confirm_mail(
    *, to: str, confirm_url: str, topic_name: str | None, ttl_hours: int
) -> EmailPayload:
    """The double opt-in mail: one link that confirms the address."""
    context = {"confirm_url": confirm_url, "topic_name": topic_name, "ttl_hours": ttl_hours}
    return {
        "to": to,
        "subject": _one_line("Confirm your papertide digest"),
        "text": render("email/confirm.txt", **context),
        "html": render("email/confirm.html", **context),
        "headers": {"Auto-Submitted": "auto-generated"},
    }


def already_mail(*, to: str, manage_url: str, topic_name: str | None) -> EmailPayload:
    """Sent instead of a confirmation when the address is already confirmed.

    The web page says the same thing either way, so nobody learns from the page
    whether an address subscribes; only the mailbox owner reads this.
    """
    context = {"manage_url": manage_url, "topic_name": topic_name}
    return {
        "to": to,
        "subject": _one_line("You already receive the papertide digest"),
        "text": render("email/already.txt", **context),
        "html": render("email/already.html", **context),
        "headers": {"Auto-Submitted": "auto-generated"},
    }


def link_mail(*, to: str, link_url: str, who: str, ttl_hours: int) -> EmailPayload:
    """Asks the mailbox owner whether a chat account may share their digest.

    Sent for `/papers digest <address>`; nothing is linked until the page's button is
    pressed, so a chat user cannot attach themselves to someone else's digest.
    """
    context = {"link_url": link_url, "who": who, "ttl_hours": ttl_hours}
    return {
        "to": to,
        "subject": _one_line("Link a chat account to your papertide digest?"),
        "text": render("email/link.txt", **context),
        "html": render("email/link.html", **context),
        "headers": {"Auto-Submitted": "auto-generated"},
    }
