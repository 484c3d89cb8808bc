"""Mail under an unlucky operator (issue 12, items 15 and 17): a relay that refuses our
set-up is a configuration problem, retried later and shown to the operator, never a
bounce; long and non-ASCII headers are folded as RFC 5322 and RFC 2047 ask."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from email import message_from_bytes, policy
from pathlib import Path

import dkim
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from bot.cli import app
from bot.config import Settings
from bot.outbox.channel import CONFIG_PROBLEM, Delivered, Failed, Retry
from bot.outbox.queue import enqueue
from bot.outbox.targets import get_or_create_target
from bot.platforms.email.channel import EmailChannel
from bot.platforms.email.mailer import CONFIG_RETRY_SECONDS, SmtpMailer
from bot.platforms.email.mime import DkimKey, build_message
from bot.service.root import open_papertide
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef
from tests.support.smtp import smtp_sink

MAIL_FROM = "papertide digest <digest@pt.example.org>"
NOW = datetime(2026, 9, 28, 8, tzinfo=UTC)
PAYLOAD = {"to": "ann@example.org", "subject": "s", "text": "t", "html": "", "headers": {}}


def _outbound(to: str = "ann@example.org") -> OutboundMessage:
    target = TargetRef(7, Platform.EMAIL, TargetKind.EMAIL, "", to)
    return OutboundMessage(1, "t7:confirm:x", MessageKind.CONFIRM, target, PAYLOAD | {"to": to})


@pytest.mark.parametrize(
    ("step", "reply"),
    [
        ("mail", "530 5.7.0 Authentication required"),
        ("mail", "550 5.7.1 Relaying denied: authenticate first"),
        ("mail", "553 5.1.8 Sender address rejected: domain not found"),
        ("rcpt", "530 5.7.0 Must issue a STARTTLS command first"),
        ("rcpt", "554 5.7.1 <ann@example.org>: Relay access denied"),
        ("data", "535 5.7.8 Authentication credentials invalid"),
    ],
)
async def test_a_relay_refusing_our_set_up_is_a_configuration_retry_not_a_bounce(
    step: str, reply: str
) -> None:
    bounces: list[int] = []

    async def count_bounce(target_id: int) -> int:
        bounces.append(target_id)
        return len(bounces)

    async with smtp_sink() as (sink, port):
        ch = EmailChannel(
            mailer=SmtpMailer(host="127.0.0.1", port=port), mail_from=MAIL_FROM,
            hard_bounce_limit=1, count_bounce=count_bounce,
        )  # fmt: skip
        if step == "mail":
            sink.mail_reply = reply
        elif step == "rcpt":
            sink.rcpt_replies["ann@example.org"] = reply
        else:
            sink.data_reply = reply
        result = await ch.send(_outbound())
        await ch.close()
    assert isinstance(result, Retry), result
    assert result.after == CONFIG_RETRY_SECONDS  # long: the operator has to act first
    assert result.reason.startswith(CONFIG_PROBLEM)
    assert reply.split()[0] in result.reason
    assert bounces == []  # nobody's address pays for our set-up


@pytest.mark.parametrize(
    ("step", "reply", "expected"),
    [
        ("rcpt", "550 5.1.1 <ann@example.org>: no such user", "hard bounce: 550"),
        ("data", "554 5.7.1 message content rejected as spam", "rejected: 554"),
    ],
)
async def test_refusals_about_the_recipient_or_the_message_stay_failures(
    step: str, reply: str, expected: str
) -> None:
    async with smtp_sink() as (sink, port):
        ch = EmailChannel(mailer=SmtpMailer(host="127.0.0.1", port=port), mail_from=MAIL_FROM)
        if step == "rcpt":
            sink.rcpt_replies["ann@example.org"] = reply
        else:
            sink.data_reply = reply
        result = await ch.send(_outbound())
        await ch.close()
    assert isinstance(result, Failed)
    assert result.reason.startswith(expected)


def test_outbox_stats_and_status_show_the_configuration_problem(db_url: str) -> None:
    settings = Settings(
        database_url=db_url, sources=["sample"], secret_key=SecretStr("k" * 32),
        smtp_host="127.0.0.1",
    )  # fmt: skip

    async def scenario() -> None:
        async with smtp_sink() as (sink, port), open_papertide(settings, migrate=False) as root:
            sink.mail_reply = "530 5.7.0 Authentication required"
            async with root.store.sessions() as session, session.begin():
                box = await get_or_create_target(
                    session=session, platform=Platform.EMAIL, workspace="",
                    address="ann@example.org", kind=TargetKind.EMAIL,
                )  # fmt: skip
                assert box.id is not None
                await enqueue(
                    session=session, target_id=box.id, kind=MessageKind.CONFIRM,
                    key="t1:confirm:a", payload=PAYLOAD,
                )  # fmt: skip
            smtp = settings.model_copy(update={"smtp_port": port})
            channel = EmailChannel.from_settings(smtp)
            try:
                assert await root.deliver_until_idle({Platform.EMAIL: channel}) == 0
            finally:
                await channel.close()

    asyncio.run(scenario())
    env = {"PAPERTIDE_DATABASE_URL": db_url, "PAPERTIDE_SOURCES": "sample"}
    stats = CliRunner().invoke(app, ["outbox", "stats", "--json"], env=env)
    assert stats.exit_code == 0, stats.output
    problem = json.loads(stats.stdout)["configuration_problem"]
    assert problem == {"waiting": 1, "error": "530 5.7.0 Authentication required"}
    text = CliRunner().invoke(app, ["outbox", "stats"], env=env)
    assert "CONFIGURATION PROBLEM: 1 message(s)" in text.stdout
    status = CliRunner().invoke(app, ["status"], env=env)
    assert status.exit_code == 0, status.output
    assert "CONFIGURATION PROBLEM" in status.stdout
    assert "530 5.7.0 Authentication required" in status.stdout


SUBJECT = (
    "Votre digest papertide : « Réseaux de neurones graphiques » grimpe de 141 % — "
    "apprentissage par renforcement pour agents linguistiques, semaine 2026-W39 ✓"
)
ENCODED_WORD = re.compile(r"=\?utf-8\?b\?[A-Za-z0-9+/=]*\?=")


def test_long_and_non_ascii_headers_are_folded_within_the_rfc_limits(
    dkim_keys: tuple[Path, bytes],
) -> None:
    key_file, public = dkim_keys
    key = DkimKey("s1", "pt.example.org", key_file.read_bytes())
    long_ascii = " ".join(f"word{i}" for i in range(40))
    raw = build_message(
        {"to": "ann@example.org", "subject": SUBJECT, "text": "t", "html": "<p>t</p>",
         "headers": {"List-Id": long_ascii}},
        mail_from="Papertide Zürich — Forschungsgruppe für maschinelles Lernen <d@pt.example.org>",
        now=NOW, message_id="<a@pt.example.org>", dkim_key=key,
    )  # fmt: skip
    head = raw.split(b"\r\n\r\n", 1)[0].decode("ascii")
    for line in head.split("\r\n"):
        if line.startswith("DKIM-Signature") or line.startswith("\t"):
            continue  # dkimpy folds its own header
        assert len(line) <= 78, line
    words = ENCODED_WORD.findall(head)
    assert len(words) > 3
    assert all(len(w) <= 75 for w in words)
    mail = message_from_bytes(raw, policy=policy.default)
    assert mail["Subject"] == SUBJECT
    assert mail["List-Id"] == long_ascii
    assert mail["From"].addresses[0].display_name.startswith("Papertide Zürich — Forschung")

    def dns(name: bytes, timeout: int = 5) -> bytes:
        return b"v=DKIM1; k=rsa; p=" + public

    assert dkim.verify(raw, dnsfunc=dns)  # signed over the folded bytes


async def test_a_folded_subject_arrives_whole() -> None:
    async with smtp_sink() as (sink, port):
        ch = EmailChannel(mailer=SmtpMailer(host="127.0.0.1", port=port), mail_from=MAIL_FROM)
        message = _outbound()
        message = OutboundMessage(
            message.id, message.key, message.kind, message.target,
            message.payload | {"subject": SUBJECT},
        )  # fmt: skip
        assert isinstance(await ch.send(message), Delivered)
        await ch.close()
    assert sink.messages[0]["Subject"] == SUBJECT
