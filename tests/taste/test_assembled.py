"""One renderer for a whole run assembles ranked sections and "You may have missed"
from frames and rows it rendered for earlier readers (digests/rows.py): every mail
must be byte for byte what a fresh renderer makes of it alone."""

from __future__ import annotations

from dataclasses import replace

from digests.build import Digest, MissedPaper, RecipientData, Taste, WeekData, build_digest
from digests.fragments import REACT_SLOT, render_fragment
from digests.links import PublicLinks
from digests.render import DigestRenderer, MailIdentity
from digests.sample import sample_recipient, sample_week

LINKS = PublicLinks("https://pt.example.org", lambda r, p: f"{p}-{r.id}", mail_from="d@x.org")
IDENTITY = MailIdentity("papertide <d@x.org>")
REASONS = ("like 2611.01234 that you marked <x>", "about “a” & 'b', \"c\"", "close to you")


def _reader_digest(
    week: WeekData,
    data: RecipientData,
    reader: int,
    scores: dict[str, float],
    missed: tuple[MissedPaper, ...],
    per_topic: int,
) -> Digest:
    """Reader number `reader`'s digest of `week`: their own id, scores and missed papers."""
    reader_data = replace(
        data,
        recipient=replace(data.recipient, id=data.recipient.id + reader),
        taste=Taste(scores, missed),
    )
    digest = build_digest(reader_data, week, papers_per_topic=per_topic)
    assert digest is not None
    return digest


def test_assembled_mails_equal_mails_rendered_alone() -> None:
    week = sample_week("2026-W39")
    data = sample_recipient(week)
    slug = sorted(week.papers_by_topic)[0]
    ids = list(week.papers_by_topic[slug])[:6]
    papers = list(week.papers.values())
    tricky = replace(papers[0], title="<b>Rigged & bold</b>")
    shared = DigestRenderer(links=LINKS, identity=IDENTITY)
    assembled = 0
    for reader in range(8):
        # Each reader ranks the same papers differently and misses other papers.
        scores = {p: float((i * (reader + 3)) % 7) for i, p in enumerate(ids)}
        missed = tuple(
            MissedPaper(tricky if (reader + k) % 3 == 0 else papers[reader + k], REASONS[k % 3])
            for k in range(1 + reader % 3)
        )
        digest = _reader_digest(week, data, reader, scores, missed, per_topic=3)
        before = len(shared._fragments)
        got = shared.render(digest)
        alone = DigestRenderer(links=LINKS, identity=IDENTITY).render(digest)
        assert got == alone
        # The reasons filled into the slots read as the template itself writes them.
        token = LINKS.react_token(digest.recipient)
        for ext, part in (("html", "html"), ("txt", "text")):
            context = shared._data.missed(missed)
            direct = render_fragment("_missed", ext, context).replace(REACT_SLOT, token)
            assert direct in got[part]  # type: ignore[literal-required]
        assembled += len(shared._fragments) == before  # nothing new rendered: assembled
    assert assembled > 0


def test_rows_rendered_ahead_for_a_batch_give_the_same_mails() -> None:
    week = sample_week("2026-W39")
    data = sample_recipient(week)
    slug = sorted(week.papers_by_topic)[0]
    ids = list(week.papers_by_topic[slug])
    papers = list(week.papers.values())
    digests = []
    for reader in range(8):
        scores = {p: float((i * (reader + 5)) % 11) for i, p in enumerate(ids)}
        missed = tuple(
            MissedPaper(papers[(reader * 7 + k) % len(papers)], REASONS[(reader + k) % 3])
            for k in range(1 + reader % 5)
        )
        digests.append(_reader_digest(week, data, reader, scores, missed, per_topic=4))
    warm = DigestRenderer(links=LINKS, identity=IDENTITY)
    warm.warm(digests)
    assert warm._fragments.rows  # the rows are there before the first mail
    for digest in digests:
        assert warm.render(digest) == DigestRenderer(links=LINKS, identity=IDENTITY).render(digest)
