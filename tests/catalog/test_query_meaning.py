"""Topic catalogs under arXiv's reading of queries: the bundled ones mean what they
meant, and a catalog written for the old reading is named at start, with the fix."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.catalog.file import load_topics
from bot.catalog.sync import warn_changed_meanings
from bot.matching.legacy import parse_legacy
from bot.matching.query import parse_query
from tests.support.paths import REPO

CATALOGS = [REPO / "bot" / "data" / "topics.toml", REPO / "deploy" / "topics.toml"]


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: str(p.relative_to(REPO)))
def test_bundled_catalogs_keep_their_meaning(path: Path) -> None:
    topics = load_topics(path)
    assert topics
    for spec in topics:
        assert parse_query(spec.query) == parse_legacy(spec.query), spec.slug
    assert warn_changed_meanings(topics, path) == []


def test_a_catalog_written_for_the_old_reading_is_named_with_its_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "topics.toml"
    path.write_text(
        "[[topic]]\n"
        'slug = "memory"\nname = "Memory"\ncategories = ["cs.CL"]\n'
        "query = 'abs:(memory agent*)'\n"
        "[[topic]]\n"
        'slug = "fine"\nname = "Fine"\ncategories = ["cs.CL"]\n'
        "query = 'abs:(memory AND agent*)'\n",
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="bot.catalog.sync"):
        assert warn_changed_meanings(load_topics(path), path) == ["memory"]
    [record] = [r for r in caplog.records if r.msg == "topics.query_meaning_changed"]
    assert record.topic == "memory"  # type: ignore[attr-defined]
    assert record.keep == "abs:memory AND abs:agent*"  # type: ignore[attr-defined]
