"""Signed link tokens: one person, one token version, one purpose.

A token is `itsdangerous.URLSafeTimedSerializer` output (HMAC-SHA1 over the payload and
a timestamp, keyed with `settings.signing_key()`). The payload names the person id, the
person's token version and the purpose, never the address: a token read off a screen or
a log reveals nobody's mail. Callers load the person and check the version still
matches (`bot.subscriptions.optin.load_owner`), so rotating a person's version revokes
every link ever mailed to them: on unsubscribe (an old confirm link can never undo it),
on "log out everywhere" and when they leave.

Lifetimes: confirm and link tokens expire after `confirm_ttl_hours`. Unsubscribe, manage
and react tokens do not expire, because they sit in mails people open months later and an
unsubscribe link must keep working; they are revoked instead (above). A react token (the
digest's "More like this" / "Less like this" links) can only record a reaction: the paper
and the leaning ride beside it in the link, the token only says whose.

Tokens made before this format (v1) carried the address in clear; those are honoured for
unsubscribing only, so the links in mails already sent still stop the digest.

Form tokens (CSRF) are a second, independent HMAC bound to the page's own token.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal

from itsdangerous import BadSignature, URLSafeTimedSerializer

from bot.config import Settings
from bot.errors import PapertideError
from bot.store.models import Person

Purpose = Literal["confirm", "unsubscribe", "manage", "link", "react"]
PURPOSES: tuple[str, ...] = ("confirm", "unsubscribe", "manage", "link", "react")
EXPIRING = ("confirm", "link")
_SALT = "papertide.link-token.v2"
_V1_SALT = "papertide.email-token.v1"
_FORM_SALT = b"papertide.form-token.v1:"


class TokenError(PapertideError):
    """A link token is tampered, expired, revoked, for another purpose or person.

    `reason` is one of "invalid", "expired", "purpose", "recipient", "revoked"; the
    message tells the reader what to do next.
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TokenData:
    person_id: int
    version: int | None  # None only for a v1 unsubscribe token (checked by `email`)
    purpose: str
    issued_at: datetime
    topic_slug: str | None = None  # a confirmation may carry the topic to follow
    chat_target_id: int | None = None  # a link token names the chat identity to link
    email: str | None = None  # v1 tokens only


def _serializer(settings: Settings, salt: str = _SALT) -> URLSafeTimedSerializer:
    return _serializer_for(settings.signing_key(), salt)


@lru_cache(maxsize=16)
def _serializer_for(key: str, salt: str) -> URLSafeTimedSerializer:
    # Built once per key: building one serialises a probe value to learn its output type,
    # which cost as much as signing the token itself. A serializer keeps no state per call.
    return URLSafeTimedSerializer(key, salt=salt)


def make_token(
    settings: Settings,
    *,
    person_id: int,
    version: int,
    purpose: str,
    topic_slug: str | None = None,
    chat_target_id: int | None = None,
) -> str:
    """Sign a URL-safe token for `person_id` at token `version`, for `purpose`."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown token purpose {purpose!r}")
    payload: dict[str, Any] = {"p": person_id, "v": version, "u": purpose}
    if topic_slug:
        payload["t"] = topic_slug
    if chat_target_id is not None:
        payload["c"] = chat_target_id
    return str(_serializer(settings).dumps(payload))


def person_token(
    settings: Settings,
    person: Person,
    purpose: str,
    *,
    topic_slug: str | None = None,
    chat_target_id: int | None = None,
) -> str:
    """A token for `person` at their current token version."""
    assert person.id is not None
    return make_token(
        settings,
        person_id=person.id,
        version=person.token_version,
        purpose=purpose,
        topic_slug=topic_slug,
        chat_target_id=chat_target_id,
    )


def _damaged() -> TokenError:
    return TokenError(
        "This link is damaged or was not made by us; copy the whole link from the mail.",
        reason="invalid",
    )


def _load(settings: Settings, token: str, purpose: str) -> tuple[Any, datetime]:
    try:
        payload, signed_at = _serializer(settings).loads(token, return_timestamp=True)
    except BadSignature as exc:
        if purpose != "unsubscribe":
            raise _damaged() from exc
        try:  # a link from a mail sent before tokens stopped carrying the address
            payload, signed_at = _serializer(settings, _V1_SALT).loads(token, return_timestamp=True)
        except BadSignature:
            raise _damaged() from exc
    return payload, signed_at.astimezone(UTC)


def read_token(
    settings: Settings,
    token: str,
    *,
    purpose: str,
    max_age: int | None = None,
    now: datetime | None = None,
) -> TokenData:
    """Verify `token` and return what it names; raise TokenError otherwise.

    `max_age` (seconds) defaults to `confirm_ttl_hours` for confirm and link tokens and
    to no limit for the others. `now` is for tests and benchmarks that fix the clock.
    Whether the version still matches is the caller's check (it needs the person).
    """
    if max_age is None and purpose in EXPIRING:
        max_age = settings.confirm_ttl_hours * 3600
    payload, issued_at = _load(settings, token, purpose)
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
    person_id, version, email = payload.get("p"), payload.get("v"), payload.get("e")
    if not isinstance(person_id, int) or not (isinstance(version, int) or isinstance(email, str)):
        raise _damaged()
    topic, chat = payload.get("t"), payload.get("c")
    return TokenData(
        person_id=person_id,
        version=version if isinstance(version, int) else None,
        purpose=purpose,
        issued_at=issued_at,
        topic_slug=topic if isinstance(topic, str) else None,
        chat_target_id=chat if isinstance(chat, int) else None,
        email=email if isinstance(email, str) and not isinstance(version, int) else None,
    )


def make_form_token(settings: Settings, *, bound_to: str, form: str) -> str:
    """CSRF token for one form, bound to the page's own token (e.g. the manage token)."""
    key = _FORM_SALT + settings.signing_key().encode()
    message = f"{form}\x00{bound_to}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def check_form_token(settings: Settings, *, bound_to: str, form: str, value: str) -> bool:
    """True when `value` is the form token for `form` on the page bound to `bound_to`."""
    expected = make_form_token(settings, bound_to=bound_to, form=form)
    return hmac.compare_digest(expected, value or "")
