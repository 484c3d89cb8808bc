"""Taste from the store, on SQLite and PostgreSQL: `/papers suggest` and the digest's
"You may have missed" learn from marks made with `react`, and leave out what the
person follows, was sent or marked."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.catalog.momentum import digest_as_of, last_complete_week
from bot.chat.commands import run_command
from bot.config import Settings
from bot.outbox.queue import enqueue, message_key
from bot.platforms.slack.render import render_reply
from bot.store.models import (
    OutboxRow,
    Paper,
    PaperTopic,
    Person,
    Subscription,
    Target,
    TasteModel,
    Topic,
)
from bot.subscriptions.reactions import react
from bot.subscriptions.taste import paper_texts, people_to_train
from bot.taste.cache import Models
from bot.taste.features import Corpus, Vocabulary
from bot.types import Leaning, MessageKind
from digests.build import Taste
from digests.links import PublicLinks
from digests.load import load_recipients, load_week
from digests.schedule import enqueue_week
from digests.taste import with_tastes
from digests.training import train_marked
from tests.support.chat import make_ctx, make_deps

AS_OF = digest_as_of("2026-W39")
LINKS = PublicLinks("https://pt.example.org", lambda r, p: f"{p}-{r.id}", mail_from="d@x.org")
PROTEIN = "Protein folding: structure prediction of amino acid residues with molecular dynamics"
GALAXY = "Galaxy clusters: dark matter halos and cosmology from a redshift survey telescope"
AGENTS = "Language agents: tool use, planning and reward for web browsing policies"
ODD = "<i>Proteins & folding</i>"  # a title every medium must escape


def _paper(pid: str, text: str, published_days_ago: float, title: str = "") -> Paper:
    when = AS_OF - timedelta(days=published_days_ago)
    return Paper(id=pid, title=title or f"{text.split(':')[0]} {pid}", abstract=text,
                 published=when, updated=when, ingested_at=when, categories=["cs.LG"],
                 primary_category="cs.LG")  # fmt: skip


async def _seed(sessions: async_sessionmaker[AsyncSession]) -> dict[str, int]:
    """Ada follows `mine` (agents) and marked two old protein papers more, a galaxy one less."""
    async with sessions() as session, session.begin():
        mine = Topic(slug="mine", name="Agents", query="abs:agent")
        other = Topic(slug="other", name="Science", query="abs:matter")
        session.add_all([mine, other])
        papers = [
            _paper(f"2609.1000{i}", PROTEIN, 1 + i / 2, ODD if i == 3 else "") for i in range(6)
        ]
        papers += [_paper(f"2609.2000{i}", GALAXY, 1 + i / 2) for i in range(6)]
        # Her own topic: the two newest papers lean to galaxies, the two older to proteins.
        flavour = ("galaxy dark matter", "galaxy dark matter", "protein folding", "protein folding")
        papers += [_paper(f"2609.3000{i}", f"{AGENTS} {flavour[i]}", 1 + i / 2) for i in range(4)]
        old = [_paper("2608.10001", PROTEIN, 20), _paper("2608.10002", PROTEIN, 21)]
        old.append(_paper("2608.20001", GALAXY, 22))
        session.add_all(papers + old)
        await session.flush()
        for p in papers:
            topic = mine if p.id.startswith("2609.3") else other
            session.add(PaperTopic(paper_id=p.id, topic_id=topic.id or 0))
        ada = Person(email="ada@example.org", email_status="confirmed",
                     confirmed_at=AS_OF - timedelta(days=60))  # fmt: skip
        bob = Person(email="bob@example.org", email_status="confirmed",
                     confirmed_at=AS_OF - timedelta(days=60))  # fmt: skip
        session.add_all([ada, bob])
        await session.flush()
        slack = Target(platform="slack", kind="user", workspace="T1", address="U1",
                       person_id=ada.id)  # fmt: skip
        bob_mail = Target(platform="email", kind="email", address="bob@example.org",
                          person_id=bob.id)  # fmt: skip
        session.add_all([slack, bob_mail])
        await session.flush()
        assert slack.id is not None
        session.add_all([
            Subscription(target_id=slack.id, topic_id=mine.id or 0),
            Subscription(target_id=bob_mail.id or 0, topic_id=mine.id or 0),
        ])  # fmt: skip
        for pid, leaning in (("2608.10001", Leaning.MORE), ("2608.10002", Leaning.MORE),
                             ("2608.20001", Leaning.LESS)):  # fmt: skip
            await react(session=session, target_id=slack.id, paper_id=pid, leaning=leaning,
                        via="slack")  # fmt: skip
        # 2609.10000 reached Ada as an instant alert: suggest must not offer it again.
        await enqueue(session=session, target_id=slack.id, kind=MessageKind.PAPER,
                      key=message_key(slack.id, MessageKind.PAPER, "2609.10000"),
                      payload={"paper": {"id": "2609.10000"}})  # fmt: skip
        return {"slack": slack.id, "ada": ada.id or 0, "bob": bob.id or 0}


async def test_suggest_offers_unsent_papers_like_the_marks_with_reasons(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await _seed(sessions)
    deps = make_deps(now=lambda: AS_OF)
    async with sessions() as session:
        reply = await run_command(session=session, ctx=make_ctx(), text="suggest", deps=deps)
    assert not reply.error, reply.title
    assert reply.lines
    offered = [line.split("(https://arxiv.org/abs/")[1].split(")")[0] for line in reply.lines]
    # Protein papers of the week, never the one already sent, the followed topic's
    # papers (2609.3…), the disliked theme (2609.2…) or the marked papers themselves.
    assert set(offered) <= {f"2609.1000{i}" for i in range(1, 6)}
    assert "2609.10003" in offered
    for line in reply.lines:
        assert line.endswith(("like 2608.10001 that you marked", "like 2608.10002 that you marked"))
    # Escaped for the medium: Slack mrkdwn gets entities, not markup.
    slack = str(render_reply(reply)["blocks"])
    assert "&lt;i&gt;Proteins &amp; folding&lt;/i&gt;" in slack
    assert "<i>" not in slack


async def test_suggest_on_a_cold_start_says_how_to_teach_it(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await _seed(sessions)
    deps = make_deps(now=lambda: AS_OF)
    async with sessions() as session:
        reply = await run_command(
            session=session, ctx=make_ctx(user="U9"), text="suggest", deps=deps
        )
        wrong = await run_command(session=session, ctx=make_ctx(), text="suggest now", deps=deps)
    assert reply.title == "I don't know your taste yet."
    assert "`/papers more <arXiv id>`" in reply.lines[0]
    assert "`/papers less <arXiv id>`" in reply.lines[0]
    assert wrong.error


async def test_digest_orders_by_taste_and_adds_what_they_may_have_missed(
    sessions: async_sessionmaker[AsyncSession], settings: Settings
) -> None:
    ids = await _seed(sessions)
    async with sessions() as session:
        # Ada's digest needs a mailbox: her email target is created by the run.
        run = await enqueue_week(session=session, week="2026-W39", settings=settings, links=LINKS)
        assert run.enqueued == 2
        rows = (
            await session.execute(
                select(OutboxRow, col(Target.person_id))
                .join(Target, col(Target.id) == col(OutboxRow.target_id))
                .where(col(OutboxRow.kind) == MessageKind.DIGEST)
            )
        ).all()
    payloads = {person_id: row.payload for row, person_id in rows}
    ada, bob = payloads[ids["ada"]], payloads[ids["bob"]]
    text, html = ada["text"], ada["html"]
    assert "YOU MAY HAVE MISSED" in text
    missed = text.split("YOU MAY HAVE MISSED")[1]
    assert "Protein folding 2609.1000" in missed or ODD in missed
    assert "Galaxy clusters" not in missed
    assert "Language agents" not in missed
    assert "why: like 2608.1000" in missed
    assert "You may have missed" in html
    assert "&lt;i&gt;Proteins &amp; folding&lt;/i&gt;" in html
    assert "<i>Proteins" not in html
    # In the section of the topic they follow, Ada gets the protein-flavoured papers
    # first; Bob marked nothing: a cold start, today's order (newest first).
    assert set(_order(text, "== Agents ==")[:2]) == {"2609.30002", "2609.30003"}
    assert _order(bob["text"], "== Agents ==") == [f"2609.3000{i}" for i in range(4)]
    assert "YOU MAY HAVE MISSED" not in bob["text"]
    assert "You may have missed" not in bob["html"]


def _order(text: str, heading: str) -> list[str]:
    section = text.split(heading)[1].split("==")[0]
    return [w for w in section.split() if w.startswith("2609.3")]


async def _ada_taste(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, models: Models, ada: int
) -> Taste:
    """Ada's taste from a digest run of a process holding `models` (committed, as the
    digest run commits its batch)."""
    async with sessions() as session, session.begin():
        week = await load_week(session=session, week="2026-W39", settings=settings)
        person = await session.get(Person, ada)
        assert person is not None
        recipients = await load_recipients(session=session, people=[person], week=week)

        async def corpus_of() -> Corpus:
            texts = await paper_texts(session=session, paper_ids=list(week.papers))
            return Corpus(texts, models.vocabulary)

        [data] = await with_tastes(
            session=session, recipients=recipients, week=week, corpus_of=corpus_of, models=models
        )
    assert data.taste is not None
    return data.taste


async def test_a_model_is_stored_and_another_process_ranks_with_it_untrained(
    sessions: async_sessionmaker[AsyncSession], settings: Settings
) -> None:
    ids = await _seed(sessions)
    first = Models(Vocabulary())
    taste = await _ada_taste(sessions, settings, first, ids["ada"])
    assert first.trained == 1
    assert taste.missed
    async with sessions() as session:
        stored = (await session.execute(select(TasteModel))).scalars().all()
    assert [m.person_id for m in stored] == [ids["ada"]]
    # A restart (or another worker): a new vocabulary, nothing in memory. The stored
    # model is read, not trained, and ranks exactly as the one that was trained.
    restarted = Models(Vocabulary())
    again = await _ada_taste(sessions, settings, restarted, ids["ada"])
    assert restarted.trained == 0
    assert again.missed == taste.missed
    assert again.scores == taste.scores
    # Ada marks one more paper: her stored model no longer fits, she is trained again
    # and the new model replaces the old one.
    async with sessions() as session, session.begin():
        await react(session=session, target_id=ids["slack"], paper_id="2609.10004",
                    leaning=Leaning.MORE, via="slack")  # fmt: skip
    await _ada_taste(sessions, settings, restarted, ids["ada"])
    assert restarted.trained == 1
    async with sessions() as session:
        [kept] = (await session.execute(select(TasteModel))).scalars().all()
    assert kept.fingerprint != stored[0].fingerprint
    third = Models(Vocabulary())
    await _ada_taste(sessions, settings, third, ids["ada"])
    assert third.trained == 0


async def test_the_training_job_trains_who_reacted_so_the_digest_run_only_reads(
    sessions: async_sessionmaker[AsyncSession], settings: Settings
) -> None:
    ids = await _seed(sessions)
    now = AS_OF + timedelta(days=1)
    assert last_complete_week(now) == "2026-W39"
    async with sessions() as session:
        # Ada reacted (three marks), Bob did not: only she is due.
        assert await people_to_train(session=session) == [ids["ada"]]
        await train_marked(session=session, now=now, settings=settings)
        assert await people_to_train(session=session) == []
        [kept] = (await session.execute(select(TasteModel))).scalars().all()
    assert kept.person_id == ids["ada"]
    # The digest run of another process (or after a restart) trains nobody.
    restarted = Models(Vocabulary())
    taste = await _ada_taste(sessions, settings, restarted, ids["ada"])
    assert restarted.trained == 0
    assert taste.missed
    # A new reaction makes her due again; the job replaces her model.
    async with sessions() as session, session.begin():
        await react(session=session, target_id=ids["slack"], paper_id="2609.10004",
                    leaning=Leaning.MORE, via="slack")  # fmt: skip
    async with sessions() as session:
        assert await people_to_train(session=session) == [ids["ada"]]
        await train_marked(session=session, now=now, settings=settings)
        assert await people_to_train(session=session) == []
        [again] = (await session.execute(select(TasteModel))).scalars().all()
    assert again.fingerprint != kept.fingerprint
    await _ada_taste(sessions, settings, restarted, ids["ada"])
    assert restarted.trained == 0


async def test_a_reader_the_job_cannot_train_is_not_due_again_until_a_new_reaction(
    sessions: async_sessionmaker[AsyncSession], settings: Settings
) -> None:
    """Bob marks two papers "less" and follows nothing: cold, nothing to learn. The job
    notes it considered him, instead of loading the week for him on every run."""
    ids = await _seed(sessions)
    now = AS_OF + timedelta(days=1)
    async with sessions() as session, session.begin():
        bob_mail = (
            await session.execute(select(Target).where(col(Target.person_id) == ids["bob"]))
        ).scalar_one()
        assert bob_mail.id is not None
        await session.execute(
            delete(Subscription).where(col(Subscription.target_id) == bob_mail.id)
        )
        for pid in ("2608.20001", "2609.20001"):
            await react(session=session, target_id=bob_mail.id, paper_id=pid,
                        leaning=Leaning.LESS, via="email")  # fmt: skip
    async with sessions() as session:
        assert await people_to_train(session=session) == [ids["ada"], ids["bob"]]
        await train_marked(session=session, now=now, settings=settings)
        assert await people_to_train(session=session) == []
        rows = {r.person_id: r for r in (await session.execute(select(TasteModel))).scalars()}
    assert rows[ids["bob"]].model == b""  # considered, no model
    assert rows[ids["ada"]].model != b""
    # The digest run reads past the empty row: Bob keeps today's order, Ada her ranking.
    async with sessions() as session:
        week = await load_week(session=session, week="2026-W39", settings=settings)
        people = list((await session.execute(select(Person).order_by(col(Person.id)))).scalars())
        recipients = await load_recipients(session=session, people=people, week=week)
        fresh = Models(Vocabulary())

        async def corpus_of() -> Corpus:
            texts = await paper_texts(session=session, paper_ids=list(week.papers))
            return Corpus(texts, fresh.vocabulary)

        out = await with_tastes(
            session=session, recipients=recipients, week=week, models=fresh, corpus_of=corpus_of
        )
    tasted = {d.recipient.id: d.taste is not None for d in out}
    assert tasted == {ids["ada"]: True, ids["bob"]: False}
    assert fresh.trained == 0
    async with sessions() as session, session.begin():
        await react(session=session, target_id=bob_mail.id, paper_id="2609.20002",
                    leaning=Leaning.LESS, via="email")  # fmt: skip
    async with sessions() as session:
        assert await people_to_train(session=session) == [ids["bob"]]
