"""Slack end to end: signed HTTP requests to our aiohttp routes, a local Slack API stand-in."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.platforms.slack.render import MUTE_ALERT_ACTION, UNFOLLOW_ACTION
from bot.store.models import Alert, ProcessedEvent, Target
from tests.conftest import count_rows
from tests.platforms.slack.conftest import Rig
from tests.support.servers import action_body, command_body, signed_headers


async def test_slash_command_acks_then_answers_through_response_url(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    answer = await rig.command("follow rl-for-llm-agents")
    assert answer["response_type"] == "in_channel"
    assert "This channel now follows RL for LLM Agents" in json.dumps(answer)
    assert await count_rows(sessions, "subscription") == 1
    helped = await rig.command("help")
    assert "/papers follow &lt;topic&gt; [me]" in json.dumps(helped)
    assert helped["response_type"] == "ephemeral"


async def test_forged_signature_and_stale_timestamp_get_401(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    body = command_body("follow rl-for-llm-agents", base=rig.slack.base)
    assert await rig.post(body, headers=signed_headers(body, secret="not-the-secret")) == 401
    stale = int(time.time()) - 6 * 60
    assert await rig.post(body, headers=signed_headers(body, ts=stale)) == 401
    assert await rig.post(body + "&text=unfollow", headers=signed_headers(body)) == 401
    assert await count_rows(sessions, "target") == 0
    assert rig.slack.responses == []


async def test_crafted_request_for_another_team_changes_nothing(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    answer = await rig.command("follow rl-for-llm-agents", team="T2")
    assert "installed in another workspace" in json.dumps(answer)
    assert await count_rows(sessions, "target") == 0


async def test_follow_where_the_bot_is_not_invited_says_invite_me(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    for channel in ("C77", "G77"):  # public channel without the bot; private it never saw
        answer = await rig.command("follow diffusion-models", channel=channel)
        assert "Invite me to this channel first" in json.dumps(answer)
    assert await count_rows(sessions, "subscription") == 0
    dm = await rig.command("follow diffusion-models", channel="D1")
    assert "You now follow Diffusion Models" in json.dumps(dm)


async def test_buttons_unfollow_and_mute_alert(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await rig.command("follow rl-for-llm-agents")
    await rig.command('alert add au:"Yi Wu"')
    value = json.dumps({"slug": "rl-for-llm-agents", "k": "channel"})
    assert await rig.post(action_body(UNFOLLOW_ACTION, value, base=rig.slack.base)) == 200
    assert "no longer follows RL for LLM Agents" in json.dumps(await rig.slack.next_response())
    assert await count_rows(sessions, "subscription") == 0
    assert await rig.post(action_body(MUTE_ALERT_ACTION, "1", base=rig.slack.base)) == 200
    assert "Alert #1 muted for 1 week" in json.dumps(await rig.slack.next_response())
    async with sessions() as session:
        alert = (await session.execute(select(Alert))).scalar_one()
    assert alert.muted_until is not None
    assert alert.muted_until > datetime.now(UTC)
    # A click relayed for another workspace's button is ignored.
    assert (
        await rig.post(action_body(MUTE_ALERT_ACTION, "1", base=rig.slack.base, team="T2")) == 200
    )


async def test_events_are_deduplicated_on_event_id(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await rig.command("follow rl-for-llm-agents")
    event = {
        "type": "event_callback",
        "team_id": "T1",
        "api_app_id": "A1",
        "event_id": "Ev0001",
        "event_time": int(time.time()),
        "event": {"type": "channel_archive", "channel": "C1", "user": "U1"},
    }
    body = json.dumps(event)
    assert await rig.post(body, json_body=True) == 200
    await _wait_for(sessions, lambda t: t.disabled_at is not None)
    async with sessions() as session:
        target = (await session.execute(select(Target))).scalar_one()
        target.disabled_at = None
        await session.commit()
    assert (
        await rig.post(body, headers=signed_headers(body), json_body=True) == 200
    )  # Slack's retry
    async with sessions() as session:
        seen = (await session.execute(select(ProcessedEvent.event_id))).scalars().all()
    assert [e for e in seen if not e.startswith("req:")] == ["Ev0001"]  # claimed once
    async with sessions() as session:
        assert (await session.execute(select(Target))).scalar_one().disabled_at is None


async def _wait_for(sessions: async_sessionmaker[AsyncSession], check: object) -> None:
    import asyncio

    async with asyncio.timeout(10):
        while True:
            async with sessions() as session:
                target = (await session.execute(select(Target))).scalar_one()
            if check(target):  # type: ignore[operator]
                return
            await asyncio.sleep(0.02)
