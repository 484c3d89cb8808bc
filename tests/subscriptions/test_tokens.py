"""Signed link tokens: one person, one token version, one purpose; tamper-proof, and
the address is nowhere inside."""

from __future__ import annotations

import base64
import zlib
from datetime import timedelta

import pytest
from itsdangerous import URLSafeTimedSerializer
from pydantic import SecretStr

from bot.config import Settings
from bot.errors import PapertideError
from bot.subscriptions.tokens import (
    TokenError,
    check_form_token,
    make_form_token,
    make_token,
    read_token,
)

SETTINGS = Settings(secret_key=SecretStr("k1"), confirm_ttl_hours=48)


def _payload_bytes(token: str) -> bytes:
    """What anyone can read off a token without the key (itsdangerous: base64, maybe zlib)."""
    compressed = token.startswith(".")
    body = token.lstrip(".").split(".")[0]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    return zlib.decompress(raw) if compressed else raw


def test_a_token_names_its_person_version_and_purpose_not_the_address() -> None:
    token = make_token(SETTINGS, person_id=7, version=123456, purpose="manage")
    data = read_token(SETTINGS, token, purpose="manage")
    assert (data.person_id, data.version, data.purpose) == (7, 123456, "manage")
    assert data.email is None
    assert b"@" not in _payload_bytes(token)


@pytest.mark.parametrize("position", [0, 10, -3])
def test_a_tampered_token_is_refused(position: int) -> None:
    token = make_token(SETTINGS, person_id=7, version=1, purpose="unsubscribe")
    flipped = "A" if token[position] != "A" else "B"
    tampered = token[:position] + flipped + token[position + 1 :]
    with pytest.raises(TokenError) as info:
        read_token(SETTINGS, tampered, purpose="unsubscribe")
    assert info.value.reason == "invalid"
    assert isinstance(info.value, PapertideError)
    assert "\n" not in str(info.value)


def test_a_token_for_one_purpose_does_not_work_for_another() -> None:
    for made, read in (("confirm", "unsubscribe"), ("manage", "link"), ("link", "confirm")):
        token = make_token(SETTINGS, person_id=7, version=1, purpose=made)
        with pytest.raises(TokenError) as info:
            read_token(SETTINGS, token, purpose=read)
        assert info.value.reason == "purpose"


def test_another_secret_key_refuses_the_token() -> None:
    token = make_token(SETTINGS, person_id=7, version=1, purpose="manage")
    other = Settings(secret_key=SecretStr("k2"))
    with pytest.raises(TokenError, match="damaged"):
        read_token(other, token, purpose="manage")


def test_confirm_and_link_tokens_expire_after_the_ttl_others_do_not() -> None:
    token = make_token(SETTINGS, person_id=1, version=1, purpose="confirm", topic_slug="rl")
    issued = read_token(SETTINGS, token, purpose="confirm").issued_at
    fresh = read_token(SETTINGS, token, purpose="confirm", now=issued + timedelta(hours=47))
    assert fresh.topic_slug == "rl"
    for purpose in ("confirm", "link"):
        made = make_token(SETTINGS, person_id=1, version=1, purpose=purpose, chat_target_id=3)
        with pytest.raises(TokenError) as info:
            read_token(SETTINGS, made, purpose=purpose, now=issued + timedelta(hours=49))
        assert info.value.reason == "expired"
    link = make_token(SETTINGS, person_id=1, version=1, purpose="link", chat_target_id=3)
    assert read_token(SETTINGS, link, purpose="link").chat_target_id == 3
    unsub = make_token(SETTINGS, person_id=1, version=1, purpose="unsubscribe")
    later = issued + timedelta(days=400)
    assert read_token(SETTINGS, unsub, purpose="unsubscribe", now=later).person_id == 1


def test_old_format_tokens_still_unsubscribe_but_do_nothing_else() -> None:
    # Mails sent before this format carried {"p", "e", "u"} under the v1 salt.
    v1 = URLSafeTimedSerializer("k1", salt="papertide.email-token.v1")
    unsub = v1.dumps({"p": 7, "e": "ann@lab.org", "u": "unsubscribe"})
    data = read_token(SETTINGS, str(unsub), purpose="unsubscribe")
    assert (data.person_id, data.version, data.email) == (7, None, "ann@lab.org")
    manage = v1.dumps({"p": 7, "e": "ann@lab.org", "u": "manage"})
    with pytest.raises(TokenError, match="damaged"):
        read_token(SETTINGS, str(manage), purpose="manage")


def test_unknown_purpose_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="purpose"):
        make_token(SETTINGS, person_id=1, version=1, purpose="admin")


def test_form_tokens_are_bound_to_the_page_and_the_form() -> None:
    value = make_form_token(SETTINGS, bound_to="page-a", form="save")
    assert check_form_token(SETTINGS, bound_to="page-a", form="save", value=value)
    assert not check_form_token(SETTINGS, bound_to="page-b", form="save", value=value)
    assert not check_form_token(SETTINGS, bound_to="page-a", form="delete", value=value)
    assert not check_form_token(SETTINGS, bound_to="page-a", form="save", value="")
