"""Operators in control: targets, subscriptions, people, export/import, through the real CLI
on real stores (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner, Result

from bot.cli import app
from bot.outbox.queue import enqueue, message_key
from bot.outbox.targets import get_or_create_target, link_person, set_settings
from bot.store.engine import create_engine, session_factory
from bot.store.models import Alert, OutboxRow, Person, Subscription, Target, Topic
from bot.subscriptions import alerts, follows, people
from bot.types import EmailStatus, MessageKind, Platform, TargetKind
from tests.support.chat import TOPICS


async def cli(db_url: str, *args: str, allow_private: bool = True) -> Result:
    env = {"PAPERTIDE_DATABASE_URL": db_url,
           "PAPERTIDE_ALLOW_PRIVATE_URLS": "true" if allow_private else "false"}  # fmt: skip
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env=env)


async def seed(db_url: str) -> None:
    """Topics, a person with a mailbox and a Slack DM, a channel, follows, alerts, mail."""
    engine = create_engine(db_url)
    sessions = session_factory(engine)
    try:
        async with sessions() as session, session.begin():
            topics = [Topic(slug=s, name=n, description=d, query=f"ti:{s}") for s, n, d in TOPICS]
            session.add_all(topics)
            await session.flush()
            ada = Person(email="ada@lab.example.org", email_key="ada@lab.example.org",
                         email_status=EmailStatus.CONFIRMED,
                         timezone="Europe/Berlin", digest_weekday=2, digest_hour=7,
                         confirmed_at=datetime(2026, 5, 1, tzinfo=UTC))  # fmt: skip
            session.add(ada)
            await session.flush()
            mailbox = await people.mailbox_of(session=session, person=ada)
            dm = await get_or_create_target(
                session=session, platform=Platform.SLACK, workspace="T1", address="U1",
                kind=TargetKind.USER,
            )  # fmt: skip
            await link_person(session=session, target=dm, person_id=ada.id)
            await set_settings(session=session, target=dm, quiet_hours="22-07", visible=True)
            channel = await get_or_create_target(session=session, platform=Platform.SLACK,
                                                 workspace="T1", address="C1",
                                                 kind=TargetKind.CHANNEL)  # fmt: skip
            for target, topic in ((mailbox, 0), (dm, 1), (channel, 0), (channel, 2)):
                await follows.follow_topic(session=session, target=target, topic=topics[topic])
            await follows.mute_topic(session=session, target=channel, topic=topics[2],
                                     until=datetime(2027, 1, 1, tzinfo=UTC))  # fmt: skip
            await alerts.add_alert(session=session, target=dm, query='au:"Yi Wu"')
            await alerts.add_alert(session=session, target=mailbox, query="abs:agent*")
            assert dm.id is not None
            await enqueue(session=session, target_id=dm.id, kind=MessageKind.PAPER,
                          key=message_key(dm.id, MessageKind.PAPER, "x"), payload={})  # fmt: skip
    finally:
        await engine.dispose()


async def rows(db_url: str, model: Any) -> list[Any]:
    engine = create_engine(db_url)
    try:
        async with session_factory(engine)() as session:
            return list((await session.execute(select(model))).scalars())
    finally:
        await engine.dispose()


async def test_targets_are_added_listed_disabled_enabled_and_removed(db_url: str) -> None:
    await seed(db_url)
    added = await cli(db_url, "targets", "add", "apprise", "mmost://127.0.0.1:8065/s3cr3ttok3n",
                      "--follow", "rl-for-llm-agents", "--json")  # fmt: skip
    assert added.exit_code == 0, added.output
    apprise_id = json.loads(added.stdout)["id"]
    hook = await cli(db_url, "targets", "add", "webhook", "http://127.0.0.1:9/hooks/s3cr3t")
    assert hook.stdout.startswith("added target #")
    again = await cli(db_url, "targets", "add", "webhook", "http://127.0.0.1:9/hooks/s3cr3t")
    assert "already there" in again.stdout

    listed = await cli(db_url, "targets", "list", "--json")
    found = {r["id"]: r for r in json.loads(listed.stdout)}
    assert "s3cr3t" not in listed.stdout  # listings mask the URLs' secrets
    assert found[apprise_id]["platform"] == "apprise"
    assert found[apprise_id]["follows"] == ["rl-for-llm-agents"]
    assert {r["platform"] for r in found.values()} == {"email", "slack", "apprise", "webhook"}

    subs = await cli(db_url, "subscriptions", "list", "--topic", "rl-for-llm-agents", "--json")
    assert sorted(r["target_id"] for r in json.loads(subs.stdout)) == sorted(
        [
            apprise_id,
            *(i for i, r in found.items() if r["address"] in ("C1", "ada@lab.example.org")),
        ]
    )
    await cli(
        db_url, "subscriptions", "add", "--target", str(apprise_id), "--topic", "diffusion-models"
    )
    gone = await cli(db_url, "subscriptions", "remove", "--target", str(apprise_id), "--topic",
                     "rl-for-llm-agents")  # fmt: skip
    assert "no longer follows" in gone.stdout
    mine = await cli(db_url, "subscriptions", "list", "--target", str(apprise_id), "--json")
    assert [r["topic"] for r in json.loads(mine.stdout)] == ["diffusion-models"]

    assert "disabled" in (await cli(db_url, "targets", "disable", str(apprise_id))).stdout
    listed = json.loads(
        (await cli(db_url, "targets", "list", "--platform", "apprise", "--json")).stdout
    )
    assert listed[0]["disabled"] is True
    assert "enabled" in (await cli(db_url, "targets", "enable", str(apprise_id))).stdout
    refused = await cli(db_url, "targets", "remove", str(apprise_id))
    assert refused.exit_code == 1
    assert "--yes" in refused.stderr
    assert (await cli(db_url, "targets", "remove", str(apprise_id), "--yes")).exit_code == 0
    assert apprise_id not in [t.id for t in await rows(db_url, Target)]
    missing = await cli(db_url, "targets", "disable", "99999")
    assert missing.exit_code == 1
    assert missing.stderr.strip() == "error: no target #99999 (see `papertide targets list`)"


@pytest.mark.parametrize(
    ("platform", "url", "why"),
    [
        ("webhook", "http://127.0.0.1:9/hook", "internal address (127.0.0.1)"),
        ("webhook", "http://[::1]/hook", "internal address (::1)"),
        ("webhook", "http://169.254.169.254/latest/meta-data", "internal address"),
        ("webhook", "ftp://example.org/x", "only http:// and https://"),
        ("webhook", "http://localhost:8080/x", "local name"),
        ("apprise", "mmost://127.0.0.1:8065/token", "internal address"),
        ("apprise", "ntfy://10.1.2.3/topic", "internal address"),
        ("apprise", "nosuchservice://x/y", "Apprise does not accept"),
        ("apprise", "dbus://", "notifies this machine itself"),
        ("slack", "C123", "webhook or apprise"),
    ],
)
async def test_internal_and_malformed_urls_are_refused_in_one_line(
    sqlite_url: str, platform: str, url: str, why: str
) -> None:
    result = await cli(sqlite_url, "targets", "add", platform, url, allow_private=False)
    assert result.exit_code == 1
    assert why in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert await rows(sqlite_url, Target) == []


async def test_people_are_listed_shown_and_forgotten_with_everything_linked(db_url: str) -> None:
    await seed(db_url)
    listed = json.loads((await cli(db_url, "people", "list", "--json")).stdout)
    assert [(p["email"], p["digest"], p["targets"]) for p in listed] == [
        ("ada@lab.example.org", "Wed 07:00", 2)
    ]
    shown = json.loads(
        (await cli(db_url, "people", "show", "ada@lab.example.org", "--json")).stdout
    )
    assert sorted(t["platform"] for t in shown["linked_targets"]) == ["email", "slack"]
    assert sorted(a["query"] for a in shown["alerts"]) == ["abs:agent*", 'au:"Yi Wu"']
    assert (await cli(db_url, "people", "forget", "ada@lab.example.org")).exit_code == 1
    forgot = await cli(db_url, "people", "forget", "ada@lab.example.org", "--yes")
    assert forgot.stdout.startswith("forgot ada@lab.example.org: 2 targets, 2 follows")
    assert await rows(db_url, Person) == []
    assert [(t.platform, t.address) for t in await rows(db_url, Target)] == [("slack", "C1")]
    assert await rows(db_url, Alert) == []
    assert await rows(db_url, OutboxRow) == []
    assert len(await rows(db_url, Subscription)) == 2  # the channel's own follows stay
    unknown = await cli(db_url, "people", "show", "nobody@example.org")
    assert unknown.exit_code == 1


async def _round_trip(source: str, dest: str, tmp_path: Path) -> None:
    await seed(source)
    await cli(source, "targets", "add", "apprise", "ntfy://127.0.0.1:9/lab", "--follow",
              "graph-neural-networks")  # fmt: skip
    out = tmp_path / "backup.json"
    exported = await cli(source, "export", "--out", str(out))
    assert exported.exit_code == 0, exported.output
    assert out.stat().st_mode & 0o777 == 0o600
    first = json.loads(out.read_text())
    imported = await cli(dest, "import", str(out), "--json")
    assert json.loads(imported.stdout) == {
        "added": {"topics": 3, "people": 1, "targets": 4, "follows": 5, "alerts": 2},
        "skipped": [],
    }
    second = json.loads((await cli(dest, "export")).stdout)
    for doc in (first, second):
        doc.pop("exported_at")
    assert second == first
    again = json.loads((await cli(dest, "import", str(out), "--json")).stdout)
    assert set(again["added"].values()) == {0}


async def test_export_import_round_trips_on_each_store(db_url: str, tmp_path: Path) -> None:
    dest_dir = tmp_path / "dest"
    dest_dir.mkdir()
    if db_url.startswith("sqlite"):
        from bot.store.migrate import upgrade_sync

        dest = f"sqlite:///{dest_dir / 'restored.db'}"
        upgrade_sync(dest)
        await _round_trip(db_url, dest, tmp_path)
        return
    # PostgreSQL: back up, empty the store, restore into it.
    await seed(db_url)
    out = tmp_path / "pg.json"
    await cli(db_url, "export", "--out", str(out))
    from tests.conftest import _truncate_all

    _truncate_all(db_url)
    imported = json.loads((await cli(db_url, "import", str(out), "--json")).stdout)
    assert imported["added"] == {"topics": 3, "people": 1, "targets": 3, "follows": 4, "alerts": 2}
    after = json.loads((await cli(db_url, "export")).stdout)
    before = json.loads(out.read_text())
    for doc in (before, after):
        doc.pop("exported_at")
    assert after == before


async def test_sqlite_moves_to_postgresql(sqlite_url: str, pg_url: str, tmp_path: Path) -> None:
    await _round_trip(sqlite_url, pg_url, tmp_path)


async def test_bad_records_are_skipped_and_the_rest_imported(
    sqlite_url: str, tmp_path: Path
) -> None:
    document = {
        "format": "papertide-export", "version": 1,
        "topics": [{"slug": "t1", "name": "T1"}, {"slug": "", "name": "bad"}],
        "people": [{"email": "x@example.org", "email_status": "maybe"},
                   {"email": "y@example.org"}],
        "targets": [
            {"platform": "webhook", "kind": "channel", "address": "http://10.0.0.1/x"},
            {"platform": "slack", "kind": "channel", "workspace": "T1", "address": "C9",
             "follows": [{"topic": "t1"}, {"topic": "nope"}], "alerts": [{"query": "ti:x"}]},
        ],
    }  # fmt: skip
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document))
    result = await cli(sqlite_url, "import", str(path), "--json", allow_private=False)
    report = json.loads(result.stdout)
    assert report["added"] == {"topics": 1, "people": 1, "targets": 1, "follows": 1, "alerts": 1}
    assert [s.split(":")[0] for s in report["skipped"]] == [
        "topics[1]", "people[0]", "targets[0]", "targets[1].follows[1]",
    ]  # fmt: skip
    assert "internal address" in report["skipped"][2]
    not_json = tmp_path / "x.json"
    not_json.write_text("{")
    assert "is not JSON" in (await cli(sqlite_url, "import", str(not_json))).stderr
    not_ours = tmp_path / "y.json"
    not_ours.write_text("[]")
    assert "not a papertide export" in (await cli(sqlite_url, "import", str(not_ours))).stderr


async def test_interests_import_proposes_and_adds_the_accepted_alerts(sqlite_url: str) -> None:
    from tests.support.paths import FIXTURES

    await seed(sqlite_url)
    bib = str(FIXTURES / "library" / "zotero_leafac.bib")
    shown = await cli(sqlite_url, "interests", "import", bib)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("4 BibTeX entries (0 skipped)")
    assert '1. au:"Zachary Palmer"' in shown.stdout
    dm = next(t for t in await rows(sqlite_url, Target) if t.address == "U1")
    added = await cli(sqlite_url, "interests", "import", bib, "--target", str(dm.id),
                      "--accept", "1", "--accept", "2", "--json")  # fmt: skip
    result = json.loads(added.stdout)
    assert [a["query"] for a in result["added"]] == ['au:"Zachary Palmer"', 'au:"Scott F Smith"']
    queries = sorted(a.query for a in await rows(sqlite_url, Alert) if a.target_id == dm.id)
    assert queries == ['au:"Scott F Smith"', 'au:"Yi Wu"', 'au:"Zachary Palmer"']
    lonely = await cli(sqlite_url, "interests", "import", bib, "--accept", "1")
    assert lonely.exit_code == 1
