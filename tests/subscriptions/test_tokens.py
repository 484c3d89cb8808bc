"""Signed email tokens: scoped to one person, one address, one purpose; tamper-proof."""

from __future__ import annotations

from datetime import timedelta

import pytest
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


def test_a_token_names_its_person_address_and_purpose() -> None:
    token = make_token(SETTINGS, person_id=7, email="ann@lab.org", purpose="manage")
    data = read_token(SETTINGS, token, purpose="manage")
    assert (data.person_id, data.email, data.purpose) == (7, "ann@lab.org", "manage")
    assert "ann" not in token.split(".")[-1]  # the signature is not the address


@pytest.mark.parametrize("position", [0, 10, -3])
def test_a_tampered_token_is_refused(position: int) -> None:
    token = make_token(SETTINGS, person_id=7, email="ann@lab.org", purpose="unsubscribe")
    flipped = "A" if token[position] != "A" else "B"
    tampered = token[:position] + flipped + token[position + 1 :]
    with pytest.raises(TokenError) as info:
        read_token(SETTINGS, tampered, purpose="unsubscribe")
    assert info.value.reason == "invalid"
    assert isinstance(info.value, PapertideError)
    assert "\n" not in str(info.value)


def test_a_token_for_one_purpose_does_not_work_for_another() -> None:
    token = make_token(SETTINGS, person_id=7, email="ann@lab.org", purpose="confirm")
    with pytest.raises(TokenError) as info:
        read_token(SETTINGS, token, purpose="unsubscribe")
    assert info.value.reason == "purpose"


def test_another_secret_key_refuses_the_token() -> None:
    token = make_token(SETTINGS, person_id=7, email="ann@lab.org", purpose="manage")
    other = Settings(secret_key=SecretStr("k2"))
    with pytest.raises(TokenError, match="damaged"):
        read_token(other, token, purpose="manage")


def test_confirmation_tokens_expire_after_the_ttl_others_do_not() -> None:
    token = make_token(SETTINGS, person_id=1, email="a@b.org", purpose="confirm", topic_slug="rl")
    issued = read_token(SETTINGS, token, purpose="confirm").issued_at
    fresh = read_token(SETTINGS, token, purpose="confirm", now=issued + timedelta(hours=47))
    assert fresh.topic_slug == "rl"
    with pytest.raises(TokenError) as info:
        read_token(SETTINGS, token, purpose="confirm", now=issued + timedelta(hours=49))
    assert info.value.reason == "expired"
    unsub = make_token(SETTINGS, person_id=1, email="a@b.org", purpose="unsubscribe")
    later = issued + timedelta(days=400)
    assert read_token(SETTINGS, unsub, purpose="unsubscribe", now=later).person_id == 1


def test_unknown_purpose_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="purpose"):
        make_token(SETTINGS, person_id=1, email="a@b.org", purpose="admin")


def test_form_tokens_are_bound_to_the_page_and_the_form() -> None:
    value = make_form_token(SETTINGS, bound_to="page-a", form="save")
    assert check_form_token(SETTINGS, bound_to="page-a", form="save", value=value)
    assert not check_form_token(SETTINGS, bound_to="page-b", form="save", value=value)
    assert not check_form_token(SETTINGS, bound_to="page-a", form="delete", value=value)
    assert not check_form_token(SETTINGS, bound_to="page-a", form="save", value="")
