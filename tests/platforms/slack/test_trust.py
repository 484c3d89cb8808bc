"""/slack/events under attack (issue 12, items 5, 13, 16): replays, unsigned junk, junk
that is signed, link buttons, private channels, an empty signing secret."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.queue import CommandWork
from bot.config import Settings
from bot.errors import ConfigError
from bot.platforms.slack.app import CHANNEL_GONE_EVENTS, GONE_EVENTS, build_slack_app
from bot.platforms.slack.render import OPEN_ABSTRACT_ACTION
from bot.store.models import Target
from tests.conftest import count_rows
from tests.platforms.slack.conftest import Rig
from tests.support.chat import make_deps
from tests.support.paths import REPO
from tests.support.servers import action_body, command_body, signed_headers

FORM = "application/x-www-form-urlencoded"


async def _raw(rig: Rig, body: bytes, headers: dict[str, str], content_type: str = FORM) -> int:
    async with rig.http.post(
        f"{rig.url}/slack/events", data=body, headers={"Content-Type": content_type, **headers}
    ) as response:
        return response.status


async def test_a_replayed_signed_command_acts_once(
    rig: Rig, sessions: async_sessionmaker[AsyncSession]
) -> None:
    body = command_body('alert add au:"Yi Wu"', base=rig.slack.base)
    headers = signed_headers(body)  # captured once, sent again within the five minutes
    for _ in range(3):
        assert await rig.post(body, headers=headers) == 200
    await rig.slack.next_response()
    assert await count_rows(sessions, "alert") == 1
    assert rig.slack.responses == []  # the replays got no answer either
    # The same words typed again are a new command (Slack gives it a new trigger_id).
    await rig.command('alert add au:"Yi Wu"')
    assert await count_rows(sessions, "alert") == 2


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


STALE = str(int(time.time()) - 3600)
JUNK = [
    # (name, body, headers, content type, status)
    ("text timestamp", b"payload=%7Bbad", {"X-Slack-Request-Timestamp": "abc",
     "X-Slack-Signature": "v0=00"}, FORM, 401),
    ("unicode digits", b"payload=x", {"X-Slack-Request-Timestamp": "\u0661\u0662\u0663",
     "X-Slack-Signature": "v0=00"}, FORM, 401),
    ("no headers", b"payload=" + _deep(50_000).encode(), {}, FORM, 401),
    ("stale", b"payload=%7B%7D", {"X-Slack-Request-Timestamp": STALE,
     "X-Slack-Signature": "v0=00"}, FORM, 401),
    ("unsigned json", _deep(100_000).encode(), {"X-Slack-Request-Timestamp": "1",
     "X-Slack-Signature": "x"}, "application/json", 401),
]  # fmt: skip
SIGNED_JUNK = [
    ("bad payload json", b"payload=%7Bnot-json", FORM),
    ("deep nesting", b"payload=" + _deep(100_000).encode(), FORM),
    ("deep json", _deep(100_000).encode(), "application/json"),
    ("not utf-8", b"payload=\xff\xfe\xfd", FORM),
    ("a list", b"[1, 2]", "application/json"),
]


@pytest.mark.parametrize(("name", "body", "headers", "content_type", "status"), JUNK)
async def test_unsigned_junk_is_refused_before_parsing_with_one_log_line(
    rig: Rig,
    caplog: pytest.LogCaptureFixture,
    name: str,
    body: bytes,
    headers: dict[str, str],
    content_type: str,
    status: int,
) -> None:
    with caplog.at_level(logging.INFO):
        assert await _raw(rig, body, headers, content_type) == status, name
    _one_refusal(caplog, status)


@pytest.mark.parametrize(("name", "body", "content_type"), SIGNED_JUNK)
async def test_signed_junk_is_a_400_with_one_log_line(
    rig: Rig, caplog: pytest.LogCaptureFixture, name: str, body: bytes, content_type: str
) -> None:
    signature = signed_headers(body)  # over the raw bytes: these are Slack's own junk
    with caplog.at_level(logging.INFO):
        assert await _raw(rig, body, signature, content_type) == 400, name
    _one_refusal(caplog, 400)


def _one_refusal(caplog: pytest.LogCaptureFixture, status: int) -> None:
    refusals = [r for r in caplog.records if r.getMessage() == "slack.request_refused"]
    assert len(refusals) == 1
    assert refusals[0].status == status  # type: ignore[attr-defined]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_link_buttons_are_acknowledged_old_and_new(rig: Rig) -> None:
    # The "Abstract" button opens arxiv.org in the browser; Slack still posts the click.
    assert await rig.post(action_body(OPEN_ABSTRACT_ACTION, "", base=rig.slack.base)) == 200
    # Messages sent before it had an action id carry one Slack made up.
    assert await rig.post(action_body("Xq9=", "", base=rig.slack.base)) == 200
    assert rig.slack.responses == []  # acknowledged, nothing said


@pytest.mark.parametrize("event", ["group_archive", "group_deleted"])
async def test_a_private_channel_archived_or_deleted_is_disabled(
    rig: Rig, sessions: async_sessionmaker[AsyncSession], event: str
) -> None:
    rig.slack.bot_channels.add("G1")
    answer = await rig.command("follow rl-for-llm-agents", channel="G1")
    assert "now follows" in json.dumps(answer)
    body = json.dumps(
        {
            "type": "event_callback", "team_id": "T1", "api_app_id": "A1",
            "event_id": f"Ev{event}", "event_time": int(time.time()),
            "event": {"type": event, "channel": "G1", "user": "U1"},
        }
    )  # fmt: skip
    assert await rig.post(body, json_body=True) == 200
    async with asyncio.timeout(10):  # events are handled after the ack
        while True:
            async with sessions() as session:
                target = (await session.execute(select(Target))).scalar_one()
            if target.disabled_at is not None:
                break
            await asyncio.sleep(0.02)
    assert target.disabled_reason == event


def test_the_manifest_subscribes_to_exactly_the_events_the_app_handles() -> None:
    manifest = yaml.safe_load((REPO / "deploy" / "slack-manifest.yaml").read_text())
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    assert events == set(GONE_EVENTS) | set(CHANNEL_GONE_EVENTS)
    assert {"group_archive", "group_deleted"} <= events
    assert "groups:read" in manifest["oauth_config"]["scopes"]["bot"]


def test_an_empty_signing_secret_is_refused(
    sessions: async_sessionmaker[AsyncSession], command_work: CommandWork
) -> None:
    for secret in ("", "   "):
        settings = Settings(slack_bot_token="xoxb-1", slack_signing_secret=secret)
        with pytest.raises(ConfigError, match="PAPERTIDE_SLACK_SIGNING_SECRET"):
            build_slack_app(
                settings=settings, sessions=sessions, deps=make_deps(), work=command_work
            )


def test_serve_with_an_empty_signing_secret_stops_at_start_with_one_line(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PAPERTIDE_DATABASE_URL": f"sqlite:///{tmp_path / 'never.db'}",
        "PAPERTIDE_SLACK_BOT_TOKEN": "xoxb-1",
        "PAPERTIDE_SLACK_SIGNING_SECRET": "",
    }
    out = subprocess.run(
        [sys.executable, "-m", "bot.cli", "serve", "--port", "1"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0, out.stderr
    assert "PAPERTIDE_SLACK_SIGNING_SECRET" in out.stderr
    assert not (tmp_path / "never.db").exists()  # refused before touching the store
