"""Mailing against a real aiosmtpd server: MIME shape, RFC 8058 headers, DKIM, SMTP codes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dkim
import pytest

from bot.config import Settings
from bot.outbox.channel import Delivered, Failed, Retry
from bot.platforms.email.channel import EmailChannel
from bot.platforms.email.mailer import SmtpMailer
from bot.platforms.email.mime import DkimKey, HeaderInjectionError, build_message
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef
from digests.build import DigestPaper, build_digest
from digests.links import PublicLinks
from digests.render import MailIdentity, render_digest
from digests.sample import sample_recipient, sample_week
from tests.support.smtp import smtp_sink

MAIL_FROM = "papertide digest <digest@pt.example.org>"
NOW = datetime(2026, 9, 28, 8, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script> R&D <!channel> <b>bold</b>"


def links() -> PublicLinks:
    return PublicLinks(
        "https://pt.example.org", lambda r, p: f"{p}-tok-{r.id}", mail_from=MAIL_FROM
    )


def digest_payload(*, hostile: bool = False) -> dict[str, object]:
    week = sample_week("2026-W39")
    if hostile:
        first = week.papers_by_topic["rl-for-llm-agents"][0]
        paper = week.papers[first]
        week.papers = dict(week.papers) | {
            first: DigestPaper(
                paper.id, HOSTILE, ("Eve <eve@evil>",), paper.url, paper.published, "cs.LG", 5
            )
        }
    digest = build_digest(sample_recipient(week), week, papers_per_topic=8)
    assert digest is not None
    return render_digest(digest, links=links(), identity=MailIdentity(MAIL_FROM))


def outbound(payload: dict[str, object], *, key: str = "t7:digest:2026-W39") -> OutboundMessage:
    target = TargetRef(7, Platform.EMAIL, TargetKind.EMAIL, "", str(payload["to"]))
    return OutboundMessage(1, key, MessageKind.DIGEST, target, dict(payload))


def channel(port: int, **kw: object) -> EmailChannel:
    return EmailChannel(
        mailer=SmtpMailer(host="127.0.0.1", port=port),
        mail_from=MAIL_FROM,
        clock=lambda: NOW,
        **kw,  # type: ignore[arg-type]
    )


async def test_digest_arrives_as_multipart_alternative_with_rfc8058_headers() -> None:
    async with smtp_sink() as (sink, port):
        ch = channel(port)
        result = await ch.send(outbound(digest_payload(hostile=True)))
        await ch.close()
    assert isinstance(result, Delivered)
    (mail,) = sink.messages
    assert sink.envelopes[0].mail_from == "digest@pt.example.org"
    assert sink.envelopes[0].rcpt_tos == ["ada@example.org"]
    assert mail.get_content_type() == "multipart/alternative"
    parts = [p.get_content_type() for p in mail.iter_parts()]
    assert parts == ["text/plain", "text/html"]  # text first, HTML last
    assert mail["From"] == MAIL_FROM
    assert mail["To"] == "ada@example.org"
    assert mail["Date"] == "Mon, 28 Sep 2026 08:00:00 +0000"
    assert mail["Message-ID"].endswith("@pt.example.org>")
    assert mail["List-Id"] == "papertide weekly digest <digest.pt.example.org>"
    assert mail["List-Unsubscribe"] == (
        "<https://pt.example.org/unsubscribe/unsubscribe-tok-1>, "
        "<mailto:digest@pt.example.org?subject=unsubscribe%20unsubscribe-tok-1>"
    )
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    raw = sink.envelopes[0].original_content
    # Folded as RFC 5322 asks: no header line beyond 78 characters unless one word is.
    head = raw.split(b"\r\n\r\n", 1)[0].decode("ascii")
    for line in head.split("\r\n"):
        assert len(line) <= 78 or " " not in line.strip(), line
    text = mail.get_body(("plain",)).get_content()
    html = mail.get_body(("html",)).get_content()
    assert "https://pt.example.org/unsubscribe/unsubscribe-tok-1" in text
    assert 'href="https://pt.example.org/unsubscribe/unsubscribe-tok-1"' in html
    assert 'href="https://pt.example.org/manage/manage-tok-1"' in html
    assert 'href="https://pt.example.org/topics/rl-for-llm-agents"' in html
    assert 'href="https://arxiv.org/abs/2609.00000"' in html
    # Hostile paper text is escaped in HTML, and left as plain text in the text part.
    assert "<script>" not in html
    assert "<!channel>" not in html
    assert "<b>bold" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; R&amp;D &lt;!channel&gt;" in html
    assert "Eve &lt;eve@evil&gt;" in html
    assert HOSTILE in text
    assert 'style="' in html
    assert "<style>" in html


async def test_dkim_signature_covers_list_unsubscribe_and_verifies(
    dkim_keys: tuple[Path, bytes],
) -> None:
    key_file, public = dkim_keys
    settings = Settings(
        dkim_selector="s1", dkim_domain="pt.example.org", dkim_private_key_file=key_file
    )
    key = DkimKey.from_settings(settings)
    assert key is not None
    async with smtp_sink() as (sink, port):
        ch = channel(port, dkim_key=key)
        assert isinstance(await ch.send(outbound(digest_payload(hostile=True))), Delivered)
        await ch.close()
    raw = sink.envelopes[0].original_content
    mail = sink.messages[0]
    signed = [
        h.strip().lower()
        for h in "".join(mail["DKIM-Signature"].split()).split("h=")[1].split(";")[0].split(":")
    ]
    assert "list-unsubscribe" in signed
    assert "list-unsubscribe-post" in signed

    def dns(name: bytes, timeout: int = 5) -> bytes:
        assert name == b"s1._domainkey.pt.example.org."
        return b"v=DKIM1; k=rsa; p=" + public

    assert dkim.verify(raw, dnsfunc=dns)
    tampered = raw.replace(b"unsubscribe-tok-1>,", b"unsubscribe-tok-2>,", 1)
    assert not dkim.verify(tampered, dnsfunc=dns)


async def test_temporary_refusal_is_retry_and_hard_bounce_disables_at_the_limit() -> None:
    counts: dict[int, int] = {}

    async def count_bounce(target_id: int) -> int:
        counts[target_id] = counts.get(target_id, 0) + 1
        return counts[target_id]

    payload = {"to": "gone@example.org", "subject": "s", "text": "t", "html": "", "headers": {}}
    async with smtp_sink() as (sink, port):
        ch = channel(port, hard_bounce_limit=2, count_bounce=count_bounce)
        sink.rcpt_replies["gone@example.org"] = "450 4.2.1 mailbox busy"
        first = await ch.send(outbound(payload))
        sink.rcpt_replies["gone@example.org"] = "550 5.1.1 no such user"
        second = await ch.send(outbound(payload))
        third = await ch.send(outbound(payload))
        sink.data_reply = "554 5.7.1 content rejected"
        content = await ch.send(outbound(payload | {"to": "ok@example.org"}))
        sink.data_reply = None
        fine = await ch.send(outbound(payload | {"to": "ok@example.org"}))  # same connection
        await ch.close()
    assert isinstance(first, Retry)
    assert first.reason.startswith("450")
    assert isinstance(second, Failed)
    assert not second.disable_target
    assert "hard bounce: 550" in second.reason
    assert isinstance(third, Failed)
    assert third.disable_target
    assert isinstance(content, Failed)
    assert not content.disable_target
    assert content.reason.startswith("rejected: 554")
    assert isinstance(fine, Delivered)
    assert len(sink.protocols) == 1  # one connection reused throughout


async def test_mailer_reuses_one_connection_and_reconnects_after_a_drop() -> None:
    payload = {
        "to": "a@example.org",
        "subject": "s",
        "text": "t",
        "html": "<p>h</p>",
        "headers": {},
    }
    async with smtp_sink() as (sink, port):
        ch = channel(port)
        for i in range(3):
            assert isinstance(await ch.send(outbound(payload, key=f"k{i}")), Delivered)
        assert len(sink.protocols) == 1
        sink.drop_connections()
        assert isinstance(await ch.send(outbound(payload, key="k3")), Delivered)
        await ch.close()
    assert len(sink.protocols) == 2
    assert len(sink.envelopes) == 4


async def test_unreachable_server_is_a_retry() -> None:
    async with smtp_sink() as (_, port):
        pass  # the port is closed now
    ch = channel(port)
    result = await ch.send(outbound({"to": "a@example.org", "subject": "s", "text": "t"}))
    assert isinstance(result, Retry)
    assert "connection" in result.reason.lower()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("subject", "Hi\r\nBcc: victim@example.org"),
        ("to", "a@example.org\nBcc: victim@example.org"),
        ("to", "not an address"),
    ],
)
async def test_header_injection_is_refused_with_a_clear_error(field: str, value: str) -> None:
    payload = {"to": "a@example.org", "subject": "s", "text": "t", "html": "", "headers": {}}
    payload[field] = value
    with pytest.raises(HeaderInjectionError, match=r"^header (Subject|To) "):
        build_message(payload, mail_from=MAIL_FROM, now=NOW, message_id="<x@y>")
    async with smtp_sink() as (sink, port):
        result = await channel(port).send(outbound(payload))
    assert isinstance(result, Failed)
    assert "bad email payload" in result.reason
    assert sink.envelopes == []


def test_extra_headers_with_line_breaks_are_refused() -> None:
    payload = {"to": "a@example.org", "subject": "s", "text": "t",
               "headers": {"List-Id": "x\r\nBcc: v@example.org"}}  # fmt: skip
    with pytest.raises(HeaderInjectionError, match="List-Id"):
        build_message(payload, mail_from=MAIL_FROM, now=NOW, message_id="<x@y>")


async def test_confirm_mail_without_html_and_non_ascii_subject() -> None:
    payload = {
        "to": "zoë@example.org".replace("ë", "e"),
        "subject": "Bestätigen Sie Ihre Adresse — papertide “weekly” digest für Forschende",
        "text": "Klicken Sie: https://pt.example.org/email/confirm/abc\nDanke & bis bald.\n",
        "headers": {},
    }
    async with smtp_sink() as (sink, port):
        ch = EmailChannel(
            mailer=SmtpMailer(host="127.0.0.1", port=port),
            mail_from="Papertide Zürich <digest@pt.example.org>",
            clock=lambda: NOW,
        )
        msg = OutboundMessage(
            2, "t7:confirm:1", MessageKind.CONFIRM,
            TargetRef(7, Platform.EMAIL, TargetKind.EMAIL, "", payload["to"]), payload,
        )  # fmt: skip
        assert isinstance(await ch.send(msg), Delivered)
        await ch.close()
    (mail,) = sink.messages
    assert mail.get_content_type() == "text/plain"
    assert mail["Subject"] == payload["subject"]
    assert mail["From"].addresses[0].display_name == "Papertide Zürich"
    assert mail.get_content().replace("\r\n", "\n") == payload["text"]  # CRLF on the wire
    raw = sink.envelopes[0].original_content
    assert all(len(line) <= 998 for line in raw.split(b"\r\n"))
    assert raw.isascii()
