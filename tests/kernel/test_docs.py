"""The README's configuration table and deploy/.env.example are generated from Settings."""

from __future__ import annotations

from bot import settings_doc
from bot.config import Settings
from tests.support.paths import REPO

ROOT = REPO


def test_readme_settings_table_matches_the_settings_class() -> None:
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index(settings_doc.BEGIN), readme.index(settings_doc.END)
    in_readme = readme[start : end + len(settings_doc.END)]
    assert in_readme == settings_doc.markdown_table(), "run: papertide config --markdown"


def test_env_example_lists_every_setting() -> None:
    text = (ROOT / "deploy" / ".env.example").read_text()
    assert text == settings_doc.env_example() + "\n", "run: papertide config --env-example"
    for name in Settings.model_fields:
        assert f"PAPERTIDE_{name.upper()}=" in text


def test_example_topics_file_in_deploy_loads() -> None:
    from bot.catalog.file import load_topics

    topics = load_topics(ROOT / "deploy" / "topics.toml")
    assert {t.slug for t in topics} >= {"rl-for-llm-agents", "our-lab"}
