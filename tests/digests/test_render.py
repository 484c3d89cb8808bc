"""Rendering: the golden text part, size limits, quiet weeks, the builder's ranking."""

from __future__ import annotations

import re
from dataclasses import replace

from digests.build import AlertInfo, Recipient, RecipientData, build_digest
from digests.links import PublicLinks
from digests.render import MAX_HTML_BYTES, MailIdentity, render_digest
from digests.sample import sample_recipient, sample_week
from tests.support.paths import GOLDEN as GOLDEN_DIR

GOLDEN = GOLDEN_DIR / "digest_sample.txt"
MAIL_FROM = "papertide <digest@pt.example.org>"
LINKS = PublicLinks("https://pt.example.org", lambda r, p: f"{p}-{r.id}", mail_from=MAIL_FROM)
IDENTITY = MailIdentity(MAIL_FROM)


def normalize(text: str) -> str:
    # Tokens differ per deployment; dates are fixed by the sample week already.
    return re.sub(r"/(unsubscribe|manage|react)-\d+", r"/\1-TOKEN", text)


def test_text_part_matches_golden_file() -> None:
    week = sample_week("2026-W39")
    digest = build_digest(sample_recipient(week), week, papers_per_topic=3)
    assert digest is not None
    text = normalize(render_digest(digest, links=LINKS, identity=IDENTITY)["text"])
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_thirty_topics_stay_under_the_gmail_clip_with_view_all_links() -> None:
    week = sample_week("2026-W39", topics=30, papers_per_topic=40)
    data = sample_recipient(week, follows=30)
    digest = build_digest(data, week, papers_per_topic=8)
    assert digest is not None
    payload = render_digest(digest, links=LINKS, identity=IDENTITY)
    html = payload["html"]
    assert len(html.encode()) <= MAX_HTML_BYTES
    assert "View all" in html
    assert html.count("https://pt.example.org/topics/") >= 30  # every topic still linked
    assert 'href="https://pt.example.org/unsubscribe/unsubscribe-1"' in html
    assert "Papers per week, Jul 6 to Sep 21:" in html  # chart alt text
    # The text part is not clipped: every topic with its "and N more" link.
    assert payload["text"].count("and 32 more: https://pt.example.org/topics/") == 30


def test_quiet_week_is_short_or_none_by_choice() -> None:
    week = sample_week("2026-W39")
    nobody = RecipientData(Recipient(9, "q@example.org", True), frozenset({"topic-x"}))
    quiet = build_digest(nobody, week, papers_per_topic=8)
    assert quiet is not None
    assert quiet.quiet
    payload = render_digest(quiet, links=LINKS, identity=IDENTITY)
    assert payload["subject"] == "papertide weekly, 2026-W39: a quiet week"
    assert "A quiet week" in payload["text"]
    assert "Unsubscribe:" in payload["text"]
    # Spiking topics still show up as suggestions in a quiet week.
    assert "YOU MAY WANT TO FOLLOW" in payload["text"]
    opted_out = replace(nobody, recipient=replace(nobody.recipient, send_quiet_week=False))
    assert build_digest(opted_out, week, papers_per_topic=8) is None


def test_ranking_alert_matches_first_then_topic_count_then_recency() -> None:
    week = sample_week("2026-W39")
    slug = "agent-memory"
    ids = list(week.papers_by_topic[slug])
    caught = week.papers[ids[7]]
    data = RecipientData(
        Recipient(1, "a@example.org"), frozenset({slug}), (AlertInfo(3, "ti:memory", (caught,)),)
    )
    digest = build_digest(data, week, papers_per_topic=4)
    assert digest is not None
    (section,) = digest.sections
    assert section.papers[0].id == caught.id
    rest = section.papers[1:]
    keys = [(-p.topic_count, -p.published.timestamp()) for p in rest]
    assert keys == sorted(keys)
    assert section.more == len(ids) - 4
    assert [s.slug for s in digest.spikes] == ["rl-for-llm-agents"]  # a suggestion
    assert not digest.spikes[0].followed


def test_suggestions_are_at_most_three_and_followed_spikes_come_first() -> None:
    week = sample_week("2026-W39", topics=6)
    week.momentum = {s: replace(m, spiking=True, p_value=0.001) for s, m in week.momentum.items()}
    follows = frozenset({"world-models"})
    digest = build_digest(
        RecipientData(Recipient(1, "a@example.org"), follows), week, papers_per_topic=2
    )
    assert digest is not None
    assert [s.followed for s in digest.spikes] == [True, False, False, False]
    assert digest.spikes[0].slug == "world-models"


def test_every_paper_has_reaction_links_signed_for_its_own_recipient() -> None:
    """Fragments are shared between recipients; the react token in them never is."""
    from digests.render import DigestRenderer

    week = sample_week("2026-W39")
    renderer = DigestRenderer(links=LINKS, identity=IDENTITY)
    payloads = []
    for person in (1, 2):
        data = sample_recipient(week)
        data = replace(data, recipient=replace(data.recipient, id=person))
        digest = build_digest(data, week, papers_per_topic=3)
        assert digest is not None
        payloads.append(renderer.render(digest))
    first, second = payloads
    shown = sum(len(s.papers) for s in digest.sections) + sum(
        len(a.papers[:5]) for a in digest.alerts
    )
    for payload, person, other in ((first, 1, 2), (second, 2, 1)):
        html, text = payload["html"], payload["text"]
        more = (
            f'href="https://pt.example.org/react/react-{person}?paper=2609.00011&amp;leaning=more"'
        )
        assert more in html
        assert html.count(f"/react/react-{person}?") == 2 * shown
        assert text.count(f"/react/react-{person}?") == 2 * shown
        assert f"/react/react-{other}?" not in html + text
        assert "ptslot" not in html + text


def test_emerging_section_is_escaped_and_links_the_page() -> None:
    week = sample_week("2026-W39")
    hostile = replace(week.emerging[0], phrase="<b>x</b> & y")
    week = replace(week, emerging=(hostile,))
    digest = build_digest(sample_recipient(week), week, papers_per_topic=3)
    assert digest is not None
    payload = render_digest(digest, links=LINKS, identity=IDENTITY)
    assert "<b>x</b>" not in payload["html"]
    assert "&lt;b&gt;x&lt;/b&gt; &amp; y" in payload["html"]
    assert 'href="https://pt.example.org/emerging"' in payload["html"]
    assert (
        "* Emerging: '<b>x</b> & y', 9 papers this week, none in the 11 weeks before"
        in (payload["text"])
    )
