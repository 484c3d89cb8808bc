"""The hand-built MIME reads back whole under the stdlib's strict and default parsers."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest

from bot.platforms.email.mime import HeaderInjectionError, build_message
from digests.build import build_digest
from digests.links import PublicLinks
from digests.render import MailIdentity, render_digest
from digests.sample import sample_recipient, sample_week

MAIL_FROM = "Papertide Zürich <digest@pt.example.org>"
NOW = datetime(2026, 9, 28, 8, 0, 0, 123456, tzinfo=UTC)
SUBJECT = "papertide weekly, 2026-W39: “Réseaux de neurones” and 3 more are spiking — " * 2


def digest_payload() -> dict[str, object]:
    week = sample_week("2026-W39")
    first = week.papers_by_topic["rl-for-llm-agents"][0]
    paper = week.papers[first]
    # Non-ASCII in the body (an author) and a title with HTML in it.
    week.papers = dict(week.papers) | {
        first: replace(
            paper, title="Graphes & <b>Zoë</b> – über alles", authors=("Zoë Ñúñez",), topic_count=5
        )
    }
    digest = build_digest(sample_recipient(week), week, papers_per_topic=8)
    assert digest is not None
    links = PublicLinks("https://pt.example.org", lambda r, p: f"{p}-tok", mail_from=MAIL_FROM)
    payload = dict(render_digest(digest, links=links, identity=MailIdentity(MAIL_FROM)))
    payload["subject"] = SUBJECT.strip()
    return payload


def parse(raw: bytes, which: policy.Policy) -> EmailMessage:
    mail = message_from_bytes(raw, policy=which)
    assert isinstance(mail, EmailMessage)
    return mail


@pytest.mark.parametrize("which", [policy.strict, policy.default], ids=["strict", "default"])
def test_digest_reads_back_whole(which: policy.Policy) -> None:
    payload = digest_payload()
    raw = build_message(payload, mail_from=MAIL_FROM, now=NOW, message_id="<m1@pt.example.org>")
    mail = parse(raw, which)  # policy.strict raises on any defect
    assert not mail.defects
    assert mail["Subject"] == payload["subject"]
    assert mail["From"].addresses[0].display_name == "Papertide Zürich"
    assert mail["To"] == "ada@example.org"
    assert mail["Date"] == "Mon, 28 Sep 2026 08:00:00 +0000"  # whole seconds
    assert mail["Message-ID"] == "<m1@pt.example.org>"
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    headers = payload["headers"]
    assert isinstance(headers, dict)
    assert mail["List-Unsubscribe"] == headers["List-Unsubscribe"]
    assert mail["List-Id"] == headers["List-Id"]
    text, html = list(mail.iter_parts())
    assert not text.defects
    assert not html.defects
    assert (text.get_content_type(), html.get_content_type()) == ("text/plain", "text/html")
    assert text.get_content_charset() == "utf-8"
    # Text in its canonical form: every line break CRLF inside the encoding.
    assert text.get_content() == str(payload["text"]).replace("\n", "\r\n")
    assert html.get_content() == str(payload["html"]).replace("\n", "\r\n")
    assert "Zoë Ñúñez" in text.get_content()
    assert "Graphes &amp; &lt;b&gt;Zo&#235;&lt;/b&gt; &#8211; &#252;ber alles" in html.get_content()


def test_wire_form_is_7bit_crlf_and_within_the_line_limits() -> None:
    raw = build_message(
        digest_payload(), mail_from=MAIL_FROM, now=NOW, message_id="<m1@pt.example.org>"
    )
    assert raw.isascii()
    assert b"\n" not in raw.replace(b"\r\n", b"")  # no bare LF (or CR)
    head, body = raw.split(b"\r\n\r\n", 1)
    for line in head.decode().split("\r\n"):
        assert len(line) <= 78, line
    assert len(re.findall(r"=\?utf-8\?b\?", head.decode())) > 2  # the subject, encoded
    base64_line = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
    lines = body.split(b"\r\n")
    content = [ln for ln in lines if ln and not ln.startswith(b"--") and b":" not in ln]
    assert content
    assert all(len(ln) <= 76 and base64_line.fullmatch(ln) for ln in content)


@pytest.mark.parametrize("size", [0, 1, 56, 57, 58, 114, 1000])
def test_text_of_any_length_survives_base64_lines(size: int) -> None:
    text = ("é\n" * size)[:size]
    payload = {"to": "a@example.org", "subject": "s", "text": text, "headers": {}}
    mail = parse(build_message(payload, mail_from=MAIL_FROM, now=NOW, message_id="<x@y>"),
                 policy.strict)  # fmt: skip
    assert mail.get_content_type() == "text/plain"
    assert mail.get_content() == text.replace("\n", "\r\n")


@pytest.mark.parametrize("name", ["X-Tëst", "Bad Name", "X:Injected", ""])
def test_header_names_must_be_rfc5322_field_names(name: str) -> None:
    payload = {"to": "a@example.org", "subject": "s", "text": "t", "headers": {name: "v"}}
    with pytest.raises(HeaderInjectionError, match="header name"):
        build_message(payload, mail_from=MAIL_FROM, now=NOW, message_id="<x@y>")
