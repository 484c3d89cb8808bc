"""Migration 0004_query_semantics: stored alerts and topics keep the meaning they were
saved with, on SQLite and PostgreSQL, once queries are read as arXiv reads them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from bot.matching.legacy import parse_legacy
from bot.matching.query import parse_query
from bot.store.engine import driver_urls
from bot.store.migrate import alembic_config, current_revision, upgrade_sync
from tests.conftest import _admin_conninfo

REVISION = "0004_query_semantics"
WHEN = datetime(2026, 7, 1, tzinfo=UTC)

# (query as stored before, what it must be after)
ALERTS = [
    ("all:a AND all:b", "all:a AND all:b"),  # explicit already: untouched
    ("all:grpo OR all:ppo AND abs:agent*", "all:grpo OR (all:ppo AND abs:agent*)"),
    ("au:Wu_Y", "au:Wu_Y"),
    ("au:Wu_Yi", 'au:"Yi Wu"'),  # was surname Wu, given name Yi
    ("au:del_maestro", 'au:"maestro del"'),  # was surname Del, given name Maestro
    ('ti:"broken', 'ti:"broken'),  # never parsed: left for its owner to see
]
TOPICS = [
    ('abs:(memory "language model") agent*', 'abs:memory AND abs:"language model" AND all:agent*'),
    ('abs:("reinforcement learning" OR GRPO) AND abs:agent*', None),  # same meaning: kept
    ("", None),  # a topic of categories only
]


def _before(url: str) -> str:
    """The revision this one follows (whatever the lead chains it after)."""
    script = ScriptDirectory.from_config(alembic_config(url))
    down = script.get_revision(REVISION).down_revision
    assert isinstance(down, str)
    return down


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database of its own (migrations run step by step in it)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    server = request.getfixturevalue("pg_server_url")
    name = f"papertide_m_{uuid.uuid4().hex[:10]}"
    admin = _admin_conninfo(server)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _insert_old_rows(url: str) -> None:
    target = sa.table(
        "target",
        *(sa.column(c) for c in ("platform", "kind", "workspace", "address", "failure_count")),
        sa.column("settings", sa.JSON),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    alert = sa.table(
        "alert",
        sa.column("target_id"),
        sa.column("query"),
        sa.column("active"),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    topic = sa.table(
        "topic",
        *(sa.column(c) for c in ("slug", "name", "query", "description", "active")),
        sa.column("categories", sa.JSON),
        sa.column("related", sa.JSON),
        sa.column("updated_at", sa.DateTime(timezone=True)),
    )
    engine = sa.create_engine(driver_urls(url)[1])
    try:
        with engine.begin() as conn:
            conn.execute(
                target.insert(),
                {"platform": "slack", "kind": "user", "workspace": "T1", "address": "U1",
                 "failure_count": 0, "settings": {}, "created_at": WHEN},
            )  # fmt: skip
            target_id = conn.execute(sa.text("SELECT id FROM target")).scalar_one()
            conn.execute(
                alert.insert(),
                [
                    {"target_id": target_id, "query": q, "active": True, "created_at": WHEN}
                    for q, _ in ALERTS
                ],
            )
            conn.execute(
                topic.insert(),
                [
                    {"slug": f"t{i}", "name": f"T{i}", "query": q, "description": "",
                     "active": True, "categories": ["cs.LG"], "related": [], "updated_at": WHEN}
                    for i, (q, _) in enumerate(TOPICS)
                ],
            )  # fmt: skip
    finally:
        engine.dispose()


def _queries(url: str, table: str) -> list[str]:
    engine = sa.create_engine(driver_urls(url)[1])
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text(f"SELECT query FROM {table} ORDER BY id")).scalars())
    finally:
        engine.dispose()


def test_stored_queries_keep_the_meaning_they_were_saved_with(fresh_url: str) -> None:
    upgrade_sync(fresh_url, _before(fresh_url))
    _insert_old_rows(fresh_url)
    upgrade_sync(fresh_url, REVISION)
    assert current_revision(fresh_url) == REVISION
    alerts = _queries(fresh_url, "alert")
    assert alerts == [after for _, after in ALERTS]
    topics = _queries(fresh_url, "topic")
    assert topics == [after if after is not None else before for before, after in TOPICS]
    for (before, _), now in zip([*ALERTS, *TOPICS], [*alerts, *topics], strict=True):
        if before.strip() and before != 'ti:"broken':
            # Today's reading of the new text is the old reading of the old text.
            assert parse_query(now) == parse_legacy(before), before
    # Downgrading leaves the rewritten queries, which the old grammar reads the same way.
    upgrade_sync(fresh_url, "head")
    command.downgrade(alembic_config(fresh_url), _before(fresh_url))
    assert _queries(fresh_url, "alert") == alerts
    for (before, _), now in zip(ALERTS[:-1], alerts[:-1], strict=True):
        assert parse_legacy(now) == parse_legacy(before), before
