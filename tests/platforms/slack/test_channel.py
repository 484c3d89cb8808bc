"""Slack delivery: Block Kit within limits for nasty papers; chat.postMessage on a local server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.outbox.channel import Delivered, Failed, Retry
from bot.platforms.slack.channel import SlackChannel
from bot.platforms.slack.render import to_messages
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef
from tests.support.chat import ALERT_REASON, NASTY_PAPERS, TOPIC_REASON, paper
from tests.support.servers import fake_slack


def _texts(blocks: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for block in blocks:
        if "text" in block:
            found.append(block["text"]["text"])
        for element in block.get("elements", []):
            if isinstance(element.get("text"), str):
                found.append(element["text"])
    return found


def _assert_within_slack_limits(message: dict[str, Any]) -> None:
    blocks = message["blocks"]
    assert len(blocks) <= 50
    for block in blocks:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= 3000
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= 150
    assert len(json.dumps(blocks, ensure_ascii=False)) <= 12000 + 4000  # markup around the text
    assert sum(len(t) for t in _texts(blocks)) + len(message["text"]) <= 12000
    raw = " ".join(_texts(blocks)) + message["text"]
    for forbidden in ("<!channel>", "<!here>", "<@U123>", "<https://evil"):
        assert forbidden not in raw


@pytest.mark.parametrize("nasty", NASTY_PAPERS, ids=lambda p: p["id"])
def test_every_nasty_paper_fits_slack(nasty: dict[str, Any]) -> None:
    item = {"paper": nasty, "reasons": [TOPIC_REASON, ALERT_REASON]}
    for message in to_messages(MessageKind.PAPER, item, TargetKind.USER):
        _assert_within_slack_limits(message)


def test_groups_and_summaries_list_every_paper_within_limits() -> None:
    items = [{"paper": p, "reasons": [TOPIC_REASON]} for p in NASTY_PAPERS * 30]  # 210 papers
    for kind in (MessageKind.PAPER_GROUP, MessageKind.QUIET_SUMMARY):
        messages = to_messages(kind, {"items": items})
        for message in messages:
            _assert_within_slack_limits(message)
        links = " ".join(" ".join(_texts(m["blocks"])) for m in messages[1:])
        for i, nasty in enumerate(NASTY_PAPERS):
            assert links.count(f"arxiv.org/abs/{nasty['id']}") >= 30, (kind, i)
        assert "more" not in messages[0]["text"]


def test_paper_message_shape() -> None:
    blocks = to_messages(
        MessageKind.PAPER, {"paper": paper(), "reasons": [TOPIC_REASON, ALERT_REASON]}
    )[0]["blocks"]
    texts = _texts(blocks)
    assert texts[0] == "*<https://arxiv.org/abs/2606.01234|Scaling RL for LLM Agents>*"
    assert texts[1] == "Yi Wu, Ann Lee · cs.LG, cs.AI · 2606.01234"
    assert "topic RL for LLM Agents · matched *reinforcement learning*, *agent*" in texts[2]
    assert 'alert #12 au:"Yi Wu" · matched *Yi Wu*' in texts[2]
    actions = [e.get("action_id") for e in blocks[-1]["elements"]]
    assert actions == [
        "papertide_open_abstract",
        "papertide_more",
        "papertide_less",
        "papertide_unfollow",
        "papertide_mute_alert",
    ]


def _message(kind: MessageKind, payload: dict[str, Any], address: str = "C1") -> OutboundMessage:
    target = TargetRef(
        id=1, platform=Platform.SLACK, kind=TargetKind.CHANNEL, workspace="T1", address=address
    )
    return OutboundMessage(id=7, key="k", kind=kind, target=target, payload=payload)


async def test_delivery_posts_and_threads_a_group_resuming_after_a_rate_limit() -> None:
    async with fake_slack() as slack:
        saved: list[dict[str, Any]] = []

        async def save(message_id: int, progress: dict[str, Any]) -> None:
            saved.append(progress)

        client = AsyncWebClient(token="xoxb-t", base_url=f"{slack.base}/api/", retry_handlers=[])
        channel = SlackChannel(client, save_progress=save)
        single = await channel.send(
            _message(MessageKind.PAPER, {"paper": paper(), "reasons": [TOPIC_REASON]})
        )
        assert single == Delivered(remote_id="1700000000.000001")
        items = [{"paper": paper(f"2606.0{i:04d}"), "reasons": [TOPIC_REASON]} for i in range(4)]
        slack.post_results = [
            (200, {"ok": True, "ts": "1700000001.000000"}, {}),
            (200, {"ok": True, "ts": "2.0"}, {}),
        ]
        slack.post_results.append(
            (429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "7"})
        )
        first = await channel.send(_message(MessageKind.PAPER_GROUP, {"items": items}))
        assert first == Retry(reason="ratelimited", after=7.0)
        assert saved[-1] == {"parent_ts": "1700000001.000000", "sent": 2}
        second = await channel.send(
            _message(MessageKind.PAPER_GROUP, {"items": items, "_progress": saved[-1]})
        )
        assert second == Delivered(remote_id="1700000001.000000")
        posts = slack.posted()
        assert len(posts) == 1 + 5 + 1  # single, parent + 4 replies, the rate-limited try
        replies = [p for p in posts if p.get("thread_ts") == "1700000001.000000"]
        tried = [next(i for i in range(4) if f"2606.0{i:04d}" in str(r["blocks"])) for r in replies]
        assert tried == [0, 1, 1, 2, 3]  # paper 1 was rate-limited once, resent; none repeated


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            200,
            {"ok": False, "error": "channel_not_found"},
            Failed(reason="channel_not_found", disable_target=True),
        ),
        (
            200,
            {"ok": False, "error": "is_archived"},
            Failed(reason="is_archived", disable_target=True),
        ),
        (
            200,
            {"ok": False, "error": "invalid_auth"},
            Failed(reason="invalid_auth", disable_target=True),
        ),
        (200, {"ok": False, "error": "msg_too_long"}, Failed(reason="msg_too_long")),
        (503, {"ok": False, "error": "service_unavailable"}, Retry(reason="service_unavailable")),
        (500, {}, Retry(reason="http_500")),
    ],
)
async def test_slack_errors_map_to_results(
    status: int, body: dict[str, Any], expected: object
) -> None:
    async with fake_slack() as slack:
        slack.post_results = [(status, body, {})]
        client = AsyncWebClient(token="xoxb-t", base_url=f"{slack.base}/api/", retry_handlers=[])
        result = await SlackChannel(client).send(
            _message(MessageKind.PAPER, {"paper": paper(), "reasons": []})
        )
    assert result == expected


async def test_unreachable_slack_is_a_retry() -> None:
    client = AsyncWebClient(
        token="xoxb-t", base_url="http://127.0.0.1:9/api/", retry_handlers=[], timeout=2
    )
    result = await SlackChannel(client).send(
        _message(MessageKind.PAPER, {"paper": paper(), "reasons": []})
    )
    assert isinstance(result, Retry)
