"""Real arXiv announcement feeds and API answers, read field by field.

The feed formats are arXiv's documented RSS and Atom (tests/fixtures/arxiv/real, from
arXiv/arxiv-docs); the API answers are real captures. Announce types, DOI and journal
reference, the API repairing a feed's early copy without alerting again, and arXiv's
explanation of a refused query.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ingest.normalize import normalize
from bot.ingest.persist import ingest_batch
from bot.ingest.poll import run_poll
from bot.ingest.sources.arxiv_api import ArxivApiSource
from bot.ingest.sources.arxiv_atom import parse_page
from bot.ingest.sources.arxiv_rss import ArxivRssSource
from bot.ingest.sources.base import SourceContext, StoredState
from bot.matching.engine import MatchEngine
from bot.store.models import Alert, AlertMatch, Paper, Target
from bot.store.records import PAPER, record_from_row
from bot.types import AnnounceType, Author, Match, PaperRecord
from tests.support.ingest import (
    FIXTURES,
    Canned,
    FakeSource,
    http_deps,
    rss_feed,
    rss_item,
    running_source,
    source_settings,
)

REAL = FIXTURES / "real"
ANNOUNCED = datetime(2024, 8, 23, 4, tzinfo=UTC)  # Fri 23 Aug 2024 00:00 -0400
DOCS_ABSTRACT = (
    r"We consider first order local minimization problems of the form $\min \int_{\mathbb{R}^N}"
    r"f(u,\nabla u)$ under a mass constraint $\int_{\mathbb{R}^N}u=m$. We prove that the minimal"
    r" energy function $H(m)$ is always concave, and that relevant rescalings of the energy,"
    r" depending on a small parameter $\varepsilon$, $\Gamma$-converge towards the $H$-mass,"
    r" defined for atomic measures $\sum_i m_i\delta_{x_i}$ as $\sum_i H(m_i)$. We also consider"
    r" Lagrangians depending on $\varepsilon$, as well as space-inhomogeneous Lagrangians and"
    r" $H$-masses. Our result holds under mild assumptions on $f$, and covers in particular"
    r" $\alpha$-masses in any dimension $N\geq 2$ for exponents $\alpha$ above a critical"
    r" threshold, and all concave $H$-masses in dimension $N=1$. Our result yields in particular"
    r" the concentration of Cahn-Hilliard fluids into droplets, and is related to the"
    r" approximation of branched transport by elliptic energies."
)


@pytest.fixture
async def server() -> AsyncIterator[FakeSource]:
    async with running_source() as fake:
        yield fake


async def _feed_records(server: FakeSource, path: str, body: bytes, **kw: object) -> list:  # type: ignore[type-arg]
    server.script(path, Canned(body=body))
    base = path.rsplit("/", 1)[0] + "/"
    settings = source_settings("sqlite://", server, arxiv_rss_url=server.url(base), **kw)
    http = http_deps(settings)
    cats = (path.rsplit("/", 1)[1],)
    source = ArxivRssSource("arxiv-rss", SourceContext(settings, http, cats), now=ANNOUNCED)
    try:
        return [b async for b in source.fetch(StoredState())]
    finally:
        await http.client.aclose()


@pytest.mark.parametrize(
    ("fixture_name", "base"),
    [("rss_spec_2203.01250.xml", "/rss/"), ("atom_spec_2203.01250.xml", "/atom/")],
)
async def test_arxivs_documented_feed_items_are_read_field_by_field(
    server: FakeSource, fixture_name: str, base: str
) -> None:
    [batch] = await _feed_records(server, f"{base}math.OC", (REAL / fixture_name).read_bytes())
    assert batch.skipped == []
    [record] = batch.papers
    assert normalize(record) == PaperRecord(
        id="2203.01250",
        version=3,
        title="Mass concentration in rescaled first order integral functionals",
        abstract=DOCS_ABSTRACT,
        authors=(Author("Antonin Monteil"), Author("Paul Pegon")),
        categories=("math.AP", "math.OC"),
        published=ANNOUNCED,  # the announcement: the API repairs it to the submission
        updated=ANNOUNCED,
        source="arxiv-rss",
        comment="",
        journal_ref=(
            r"Journal de l'\'Ecole polytechnique - Math\'ematiques, Tome 11 (2024), pp. 431-472"
        ),
        doi="10.5802/jep.257",
        links={"abs": "https://arxiv.org/abs/2203.01250"},
        announce_type=AnnounceType.REPLACE_CROSS,
    )


def _known(paper_id: str, title: str) -> PaperRecord:
    when = datetime(2026, 6, 20, tzinfo=UTC)
    return PaperRecord(
        id=paper_id, version=1, title=title, abstract="Old abstract.",
        authors=(Author("Wei Zhang", ("Tsinghua University",)),), categories=("cs.LG",),
        published=when, updated=when, source="arxiv", authoritative=True,
    )  # fmt: skip


async def test_every_announce_type_arxiv_documents_and_unknown_ones_logged_once(
    db_url: str,
    sessions: async_sessionmaker[AsyncSession],
    server: FakeSource,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with sessions() as session, session.begin():
        known = [_known(f"2606.0010{i}", f"Known {i}") for i in range(4)]
        await ingest_batch(session=session, records=known, matcher=MatchEngine())
    items = [
        rss_item("2607.00001v1", title="Brand new", creators="Ann Lee (MIT)"),
        rss_item("2606.00100v1", title="Known 0", creators="Wei Zhang", announce="cross",
                 categories=("cs.AI",)),
        rss_item("2606.00101v2", title="Known 1, revised", creators="Wei Zhang", announce="replace",
                 abstract="Revised."),
        rss_item("2606.00102v2", title="Known 2, revised", creators="Wei Zhang",
                 announce="replace-cross", categories=("stat.ML",)),
        rss_item("2606.00103v1", title="Known 3, new title", creators="Wei Zhang",
                 announce="absonly", abstract="A corrected abstract.",
                 extra="<arxiv:journal_reference>J. Ex. 1 (2026)</arxiv:journal_reference>"),
        rss_item("2605.09999v3", title="Never stored", creators="X Y", announce="absonly"),
        *(rss_item(f"2607.0100{i}v1", title="?", creators="Z", announce="withdrawn")
          for i in range(3)),
        rss_item("2607.01010v1", title="?", creators="Z", announce="comment"),
    ]  # fmt: skip
    server.script("/rss/cs.LG", Canned(body=rss_feed(items)))
    settings = source_settings(db_url, server)
    http = http_deps(settings)
    source = ArxivRssSource("arxiv-rss", SourceContext(settings, http, ("cs.LG",)), now=ANNOUNCED)
    with caplog.at_level(logging.WARNING, logger="bot.ingest.poll"):
        try:
            result = await run_poll(
                settings=settings, sessions=sessions, source_name="arxiv-rss", source=source,
                http=http, matcher=MatchEngine(),
            )  # fmt: skip
        finally:
            await http.client.aclose()
    assert result.error is None
    assert (result.new, result.updated, result.ignored, result.skipped) == (1, 4, 1, 4)
    unknown = [r for r in caplog.records if "unknown announce_type" in getattr(r, "reason", "")]
    assert len(unknown) == 1  # once per poll, not per item
    assert "'comment' x1, 'withdrawn' x3" in unknown[0].reason  # type: ignore[attr-defined]
    async with sessions() as session:
        papers = {p.id: p for p in (await session.execute(select(Paper))).scalars()}
    assert set(papers) == {"2607.00001", *(r.id for r in known)}
    assert papers["2607.00001"].authors == [{"name": "Ann Lee", "affiliations": ["MIT"]}]
    assert papers["2606.00100"].categories == ["cs.LG", "cs.AI"]
    assert (papers["2606.00101"].version, papers["2606.00101"].abstract) == (2, "Revised.")
    assert papers["2606.00102"].categories == ["cs.LG", "stat.ML"]
    absonly = papers["2606.00103"]
    assert (absonly.version, absonly.title) == (1, "Known 3, new title")
    assert (absonly.abstract, absonly.journal_ref) == ("A corrected abstract.", "J. Ex. 1 (2026)")
    assert absonly.authors[0]["affiliations"] == ["Tsinghua University"]  # the API's, kept


async def test_the_api_repairs_the_feeds_early_copy_without_alerting_again(
    db_url: str, sessions: async_sessionmaker[AsyncSession], server: FakeSource
) -> None:
    """astro-ph/0601001: announced by the feed first, then returned by the API (real capture)."""
    async with sessions() as session, session.begin():
        target = Target(platform="slack", kind="user", workspace="T1", address="U1")
        session.add(target)
        await session.flush()
        session.add(Alert(target_id=target.id, query="au:Gould"))
    announced = "Tue, 03 Jan 2006 00:00:00 -0500"
    feed = rss_feed(
        [
            rss_item(
                "astro-ph/0601001v1",
                title="Frequency of Hot Jupiters and Very Hot Jupiters from the OGLE-III"
                " Transit Surveys Toward the Galactic Bulge and Carina",
                creators="Andrew Gould, Susan Dorsher (Ohio State), B. Scott Gaudi (CfA),"
                " Andrzej Udalski",
                categories=("astro-ph",),
                pub_date=announced,
            )
        ],
        categories="astro-ph",
    )
    api_body = (REAL / "api_astro-ph_0601001.xml").read_bytes()
    server.script("/rss/astro-ph", Canned(body=feed))
    server.script("/api/query", Canned(body=api_body), Canned(body=api_body))
    settings = source_settings(db_url, server, arxiv_categories=["astro-ph"])
    http = http_deps(settings)
    ctx = SourceContext(settings, http, ("astro-ph",))
    alerted: list[Match] = []

    async def fan_out(session: AsyncSession, matches: list[Match]) -> None:
        alerted.extend(matches)

    async def poll(name: str, source: object) -> object:
        return await run_poll(
            settings=settings, sessions=sessions, source_name=name, source=source,  # type: ignore[arg-type]
            http=http, on_new_matches=fan_out,
        )  # fmt: skip

    since, now = datetime(2006, 1, 1, tzinfo=UTC), datetime(2006, 1, 10, tzinfo=UTC)
    try:
        from_feed = await poll("arxiv-rss", ArxivRssSource("arxiv-rss", ctx, now=now))
        async with sessions() as session:
            early = (await session.execute(select(Paper))).scalar_one()
        repaired = await poll("arxiv", ArxivApiSource("arxiv", ctx, since=since, now=now))
        again = await poll("arxiv", ArxivApiSource("arxiv", ctx, since=since, now=now))
    finally:
        await http.client.aclose()
    assert (from_feed.new, from_feed.new_matches) == (1, 1)  # type: ignore[attr-defined]
    assert early.published == datetime(2006, 1, 3, 5, tzinfo=UTC)  # the announcement
    assert early.authors[0] == {"name": "Andrew Gould", "affiliations": []}
    assert (repaired.updated, repaired.new_matches) == (1, 0)  # type: ignore[attr-defined]
    assert (again.updated, again.unchanged) == (0, 1)  # type: ignore[attr-defined]
    assert len(alerted) == 1  # the feed's alert, never a second one
    async with sessions() as session:
        row = (await session.execute(select(PAPER))).mappings().one()
        matches = (await session.execute(select(AlertMatch))).scalars().all()
    assert len(matches) == 1
    # Every field is the API's now: authors and affiliations, journal reference, comment,
    # links, and the first version's submission instead of the announcement.
    [api] = parse_page(api_body, source="arxiv", url="u").papers
    expected = normalize(api)
    stored = record_from_row(row)
    assert stored == PaperRecord(
        **{f: getattr(expected, f) for f in PaperRecord.__dataclass_fields__}
        | {"authoritative": False}
    )
    assert stored.authors[0] == Author("Andrew Gould", ("Ohio State",))
    assert stored.journal_ref == "ActaAstron.56:1-50,2006"
    assert stored.published == datetime(2006, 1, 2, 14, 57, 58, tzinfo=UTC)


@pytest.mark.parametrize("fixture_name", ["api_error_400_id_abc.xml", "api_error_incorrect_id.xml"])
async def test_a_refused_api_query_shows_arxivs_explanation(
    db_url: str, sessions: async_sessionmaker[AsyncSession], server: FakeSource, fixture_name: str
) -> None:
    body = (REAL / fixture_name).read_bytes()
    server.script("/api/query", Canned(status=400, body=body))
    settings = source_settings(db_url, server)
    http = http_deps(settings)
    source = ArxivApiSource("arxiv", SourceContext(settings, http, ("cs.LG",)))
    try:
        result = await run_poll(
            settings=settings, sessions=sessions, source_name="arxiv", source=source,
            http=http, matcher=MatchEngine(),
        )  # fmt: skip
    finally:
        await http.client.aclose()
    wanted = "abc" if "abc" in fixture_name else "1234.12345"
    assert result.error is not None
    assert f"arxiv: HTTP 400: incorrect id format for {wanted} (" in result.error


async def test_a_real_api_page_is_stored_field_by_field(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # Its totalResults (214,881) would page on: the page itself goes through ingest.
    page = parse_page((REAL / "api_q_testing_10.xml").read_bytes(), source="arxiv", url="u")
    assert (page.total, len(page.papers), page.skipped) == (214_881, 10, [])
    async with sessions() as session, session.begin():
        report = await ingest_batch(session=session, records=page.papers, matcher=MatchEngine())
    assert (len(report.new), report.rejected) == (10, [])
    async with sessions() as session:
        rows = {r["id"]: r for r in (await session.execute(select(PAPER))).mappings()}
    assert sum(1 for r in rows.values() if r["doi"]) == 6
    assert sum(1 for r in rows.values() if r["journal_ref"]) == 6
    first = record_from_row(rows["2202.12139"])
    assert first.title == (
        "Testing Deep Learning Models: A First Comparative Study of Multiple Testing Techniques"
    )
    assert first.abstract.startswith("Deep Learning (DL) has revolutionized the capabilities")
    assert first.abstract.endswith("discuss its results.")
    assert first.authors == (
        Author("Mohit Kumar Ahuja"), Author("Arnaud Gotlieb"), Author("Helge Spieker"))  # fmt: skip
    assert (first.version, first.categories) == (1, ("cs.SE", "cs.LG"))
    assert first.published == first.updated == datetime(2022, 2, 24, 15, 5, 19, tzinfo=UTC)
    assert first.doi == "10.1109/icstw55395.2022.00035"
    assert first.comment == "Artificial Intelligence in Software Testing 2022 workshop @ ICST 2022"
    assert first.journal_ref.startswith("Artificial Intelligence in Software Testing @ 2022 IEEE")
    assert first.links == {
        "abs": "https://arxiv.org/abs/2202.12139v1",
        "pdf": "https://arxiv.org/pdf/2202.12139v1",
        "doi": "https://doi.org/10.1109/ICSTW55395.2022.00035",
    }
    assert record_from_row(rows["2405.13786"]).authors[0] == Author("Aurora Ramírez")
