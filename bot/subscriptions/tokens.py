"""Signed email tokens: one person, one address, one purpose.

A token is `itsdangerous.URLSafeTimedSerializer` output (HMAC-SHA1 over the payload and
a timestamp, keyed with `settings.secret_key`). The payload names the person id, the
address and the purpose, so a token cannot be replayed for another address or purpose:
the signature covers all three, and callers check the address still belongs to the
person. Confirmation tokens expire after `confirm_ttl_hours`; unsubscribe and manage
tokens do not, because they sit in mails people open months later.

Form tokens (CSRF) are a second, independent HMAC bound to the page's own token.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from itsdangerous import BadSignature, URLSafeTimedSerializer

from bot.config import Settings
from bot.errors import PapertideError

Purpose = Literal["confirm", "unsubscribe", "manage"]
PURPOSES: tuple[str, ...] = ("confirm", "unsubscribe", "manage")
_SALT = "papertide.email-token.v1"
_FORM_SALT = b"papertide.form-token.v1:"


class TokenError(PapertideError):
    """A link token is tampered, expired, for another purpose or for another address.

    `reason` is one of "invalid", "expired", "purpose", "recipient"; the message tells
    the reader what to do next.
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TokenData:
    person_id: int
    email: str
    purpose: str
    issued_at: datetime
    topic_slug: str | None = None  # a confirmation may carry the topic to follow


def _serializer(settings: Settings) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(settings.secret_key.get_secret_value(), salt=_SALT)


def make_token(
    settings: Settings,
    *,
    person_id: int,
    email: str,
    purpose: str,
    topic_slug: str | None = None,
) -> str:
    """Sign a URL-safe token for `person_id` + `email` + `purpose`."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown token purpose {purpose!r}")
    payload: dict[str, Any] = {"p": person_id, "e": email, "u": purpose}
    if topic_slug:
        payload["t"] = topic_slug
    return str(_serializer(settings).dumps(payload))


def read_token(
    settings: Settings,
    token: str,
    *,
    purpose: str,
    max_age: int | None = None,
    now: datetime | None = None,
) -> TokenData:
    """Verify `token` and return what it names; raise TokenError otherwise.

    `max_age` (seconds) defaults to `confirm_ttl_hours` for confirmation tokens and to
    no limit for the others. `now` is for tests and benchmarks that fix the clock.
    """
    if max_age is None and purpose == "confirm":
        max_age = settings.confirm_ttl_hours * 3600
    serializer = _serializer(settings)
    try:
        payload, signed_at = serializer.loads(token, return_timestamp=True)
    except BadSignature as exc:
        raise TokenError(
            "This link is damaged or was not made by us; copy the whole link from the mail.",
            reason="invalid",
        ) from exc
    issued_at = signed_at.astimezone(UTC)
    if max_age is not None:
        age = ((now or datetime.now(UTC)) - issued_at).total_seconds()
        if age > max_age:
            raise TokenError(
                "This link has expired; ask for a new one from the topic page.",
                reason="expired",
            )
    if not isinstance(payload, dict) or payload.get("u") != purpose:
        raise TokenError(
            f"This link is not a {purpose} link; use the matching link from the mail.",
            reason="purpose",
        )
    person_id, email = payload.get("p"), payload.get("e")
    if not isinstance(person_id, int) or not isinstance(email, str):
        raise TokenError(
            "This link is damaged; copy the whole link from the mail.", reason="invalid"
        )
    topic = payload.get("t")
    return TokenData(
        person_id=person_id,
        email=email,
        purpose=purpose,
        issued_at=issued_at,
        topic_slug=topic if isinstance(topic, str) else None,
    )


def make_form_token(settings: Settings, *, bound_to: str, form: str) -> str:
    """CSRF token for one form, bound to the page's own token (e.g. the manage token)."""
    key = _FORM_SALT + settings.secret_key.get_secret_value().encode()
    message = f"{form}\x00{bound_to}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def check_form_token(settings: Settings, *, bound_to: str, form: str, value: str) -> bool:
    """True when `value` is the form token for `form` on the page bound to `bound_to`."""
    expected = make_form_token(settings, bound_to=bound_to, form=form)
    return hmac.compare_digest(expected, value or "")
