"""The builder with a taste (pure): sections follow the scores, equal scores keep
today's order, and the missed papers reach both parts of the mail, escaped."""

from __future__ import annotations

from dataclasses import replace

from digests.build import MissedPaper, Taste, build_digest
from digests.links import PublicLinks
from digests.render import MailIdentity, render_digest
from digests.sample import sample_recipient, sample_week

LINKS = PublicLinks("https://pt.example.org", lambda r, p: f"{p}-{r.id}", mail_from="d@x.org")
IDENTITY = MailIdentity("papertide <d@x.org>")


def test_scores_order_sections_and_ties_keep_todays_order() -> None:
    week = sample_week("2026-W39")
    data = sample_recipient(week)
    today = build_digest(data, week, papers_per_topic=3)
    flat = build_digest(replace(data, taste=Taste(scores={})), week, papers_per_topic=3)
    assert today is not None
    assert flat is not None
    assert flat.sections == today.sections
    section = today.sections[0]
    last = week.papers_by_topic[section.slug][5]  # not among today's first three
    assert last not in {p.id for p in section.papers}
    ranked = build_digest(replace(data, taste=Taste(scores={last: 2.0})), week, papers_per_topic=3)
    assert ranked is not None
    assert ranked.sections[0].papers[0].id == last
    assert ranked.sections[0].total == section.total


def test_missed_papers_are_rendered_and_escaped_in_both_parts() -> None:
    week = sample_week("2026-W39")
    data = sample_recipient(week)
    paper = replace(week.papers["2609.05001"], title="<b>Rigged & bold</b>")
    taste = Taste({}, (MissedPaper(paper, "like 2611.01234 that you marked <x>"),))
    digest = build_digest(replace(data, taste=taste), week, papers_per_topic=3)
    assert digest is not None
    payload = render_digest(digest, links=LINKS, identity=IDENTITY)
    assert "YOU MAY HAVE MISSED" in payload["text"]
    assert "- <b>Rigged & bold</b>" in payload["text"]
    assert "why: like 2611.01234 that you marked <x>" in payload["text"]
    html = payload["html"]
    assert "&lt;b&gt;Rigged &amp; bold&lt;/b&gt;" in html
    assert "like 2611.01234 that you marked &lt;x&gt;" in html
    assert "<b>Rigged" not in html
