"""The one check of an email address, for the web form and the chat command alike."""

from __future__ import annotations

import re

from bot.errors import PapertideError

_LOCAL = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


class AddressError(PapertideError):
    """An email address was refused; the message says why, on one line."""


def normalize_address(raw: str) -> str:
    """Validate a single bare mailbox and lower-case its domain; AddressError otherwise.

    No display names, comments or quoted local parts: nothing that could smuggle a
    second recipient or a header into a mail.
    """
    if "\r" in raw or "\n" in raw:
        raise AddressError("An email address is one line: remove the line break and what follows.")
    address = raw.strip()
    if not address:
        raise AddressError("Enter an email address, like name@example.org.")
    if any(not ch.isprintable() or ch.isspace() for ch in address):
        raise AddressError("An email address has no spaces or control characters.")
    if address.count("@") != 1:
        raise AddressError("An email address has exactly one @, like name@example.org.")
    local, domain = address.split("@")
    if not local or len(local) > 64 or not _LOCAL.match(local):
        raise AddressError("The part before the @ is not a valid mailbox name.")
    try:
        domain = domain.lower().encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise AddressError("The part after the @ is not a valid domain.") from exc
    labels = domain.split(".")
    if len(labels) < 2 or not all(_LABEL.match(lb) for lb in labels) or labels[-1].isdigit():
        raise AddressError("The part after the @ is not a valid domain, like example.org.")
    normalized = f"{local}@{domain}"
    if len(normalized) > 254:
        raise AddressError("That email address is too long.")
    return normalized


def address_key(address: str) -> str:
    """How a normalized address is compared: case-insensitively, local part included.

    RFC 5321 lets a server treat `Ann@` and `ann@` as two mailboxes, but none of the
    providers our users have does; comparing them as one keeps one person per mailbox
    and one per-address limit, whatever case someone types.
    """
    return address.lower()
