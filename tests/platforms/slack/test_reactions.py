""" "More / Less like this" on Slack: signed clicks to the real Bolt route, a local Slack API."""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import Block
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.chat.commands import Reply
from bot.outbox.targets import get_or_create_target
from bot.platforms.slack.render import (
    LESS_ACTION,
    MORE_ACTION,
    UNDO_REACTION_ACTION,
    render_pressed,
    to_messages,
)
from bot.store.models import Paper, Reaction, Target
from bot.timeutil import utcnow
from bot.types import MessageKind, Platform, TargetKind
from tests.conftest import count_rows
from tests.platforms.slack.conftest import Rig
from tests.support.chat import ALERT_REASON, NASTY_PAPERS, TOPIC_REASON, paper
from tests.support.servers import action_body


def _validated(blocks: list[dict[str, Any]]) -> list[Block]:
    """Parse with slack_sdk's block models and run their validation (raises when invalid)."""
    parsed = [Block.parse(b) for b in blocks]
    for block in parsed:
        assert block is not None
        block.validate_json()
    return [b for b in parsed if b is not None]


def _buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_every_alert_carries_more_and_less_buttons_valid_for_slack() -> None:
    for nasty in [paper(), *NASTY_PAPERS]:
        for kind in (TargetKind.CHANNEL, TargetKind.USER):
            item = {"paper": nasty, "reasons": [TOPIC_REASON, ALERT_REASON]}
            blocks = to_messages(MessageKind.PAPER, item, kind)[0]["blocks"]
            _validated(blocks)
            found = {b["action_id"]: b for b in _buttons(blocks)}
            if len(nasty["id"]) <= 128:
                assert found[MORE_ACTION]["value"] == nasty["id"]
                assert found[LESS_ACTION]["text"]["text"] == "Less like this"
    group = to_messages(MessageKind.PAPER_GROUP, {"items": [{"paper": paper(), "reasons": []}]})
    assert MORE_ACTION in json.dumps(group[1]["blocks"])
    pressed = render_pressed(Reply(title="Noted: more like <b>"), ("2611.01234", "more"))
    _validated(pressed["blocks"])
    assert "&lt;b&gt;" in json.dumps(pressed)
    assert _buttons(pressed["blocks"])[0]["value"] == "more:2611.01234"


async def _setup(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session, session.begin():
        now = utcnow()
        session.add(Paper(id="2611.01234", title="<!channel> wins", published=now, updated=now,
                          ingested_at=now))  # fmt: skip
        await get_or_create_target(
            session=session, platform=Platform.SLACK, workspace="T1", address="C1",
            kind=TargetKind.CHANNEL,
        )  # fmt: skip


async def _rows(sessions: async_sessionmaker[AsyncSession]) -> list[tuple[str, str, int]]:
    async with sessions() as session:
        found = await session.execute(
            select(col(Target.workspace), col(Target.address), col(Reaction.leaning))
            .join(Target, col(Target.id) == col(Reaction.target_id))
            .order_by(col(Target.address))
        )
        return [(w, a, n) for w, a, n in found.all()]


async def test_click_records_user_and_channel_and_undo_takes_it_back(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await _setup(sessions)
    assert await rig.post(action_body(MORE_ACTION, "2611.01234", base=rig.slack.base)) == 200
    noted = await rig.slack.next_response()
    assert noted["response_type"] == "ephemeral"
    assert noted["text"] == "Noted: more like &lt;!channel&gt; wins"
    undo = _buttons(noted["blocks"])[0]
    assert (undo["action_id"], undo["value"]) == (UNDO_REACTION_ACTION, "more:2611.01234")
    assert await _rows(sessions) == [("T1", "C1", 1), ("T1", "U1", 1)]

    assert await rig.post(action_body(LESS_ACTION, "2611.01234", base=rig.slack.base)) == 200
    await rig.slack.next_response()
    assert await _rows(sessions) == [("T1", "C1", -1), ("T1", "U1", -1)]

    body = action_body(UNDO_REACTION_ACTION, "less:2611.01234", base=rig.slack.base)
    assert await rig.post(body) == 200
    undone = await rig.slack.next_response()
    assert undone["text"].startswith("Undone")
    assert undone["replace_original"] is True
    assert await count_rows(sessions, "reaction") == 0


async def test_another_user_changes_only_their_own_and_another_team_nothing(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await _setup(sessions)
    await rig.post(action_body(MORE_ACTION, "2611.01234", base=rig.slack.base))
    await rig.slack.next_response()
    # U2 undoes "their" more: their own row was never there, U1's stays.
    body = action_body(UNDO_REACTION_ACTION, "less:2611.01234", base=rig.slack.base, user="U2")
    await rig.post(body)
    await rig.slack.next_response()
    assert await _rows(sessions) == [("T1", "C1", 1), ("T1", "U1", 1)]
    foreign = action_body(LESS_ACTION, "2611.01234", base=rig.slack.base, team="T2")
    assert await rig.post(foreign) == 200
    assert "another workspace" in json.dumps(await rig.slack.next_response())
    assert await _rows(sessions) == [("T1", "C1", 1), ("T1", "U1", 1)]


async def test_a_forged_value_gets_a_clear_private_error(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await _setup(sessions)
    for action, value in (
        (MORE_ACTION, "2611.99999"),
        (LESS_ACTION, "y" * 5000),
        (UNDO_REACTION_ACTION, "sideways:2611.01234"),
    ):
        assert await rig.post(action_body(action, value, base=rig.slack.base)) == 200
        answer = await rig.slack.next_response()
        assert answer["response_type"] == "ephemeral"
        assert "names no paper we know" in answer["text"]
        assert not _buttons(answer["blocks"])
    assert await count_rows(sessions, "reaction") == 0
