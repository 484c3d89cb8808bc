"""Chat set-up: the Discord CLI commands and the Slack manifest."""

from __future__ import annotations

from typer.testing import CliRunner

from bot.cli import app
from tests.support.paths import REPO


def test_discord_invite_prints_least_permission_url() -> None:
    result = CliRunner().invoke(
        app, ["discord", "invite"], env={"PAPERTIDE_DISCORD_APPLICATION_ID": "222"}
    )
    assert result.exit_code == 0
    assert result.stdout.strip() == (
        "https://discord.com/oauth2/authorize?client_id=222&scope=bot+applications.commands&permissions=309237664768"
    )


def test_discord_invite_without_application_id_is_one_line_error() -> None:
    result = CliRunner().invoke(
        app, ["discord", "invite"], env={"PAPERTIDE_DISCORD_APPLICATION_ID": ""}
    )
    assert result.exit_code == 1
    assert "PAPERTIDE_DISCORD_APPLICATION_ID" in result.stderr


def test_slack_manifest_points_every_url_at_the_events_route() -> None:
    text = (REPO / "deploy" / "slack-manifest.yaml").read_text()
    assert text.count("https://papertide.example.org/slack/events") == 3  # command, events, buttons
    for scope in ("commands", "chat:write", "im:write", "channels:read"):
        assert f"- {scope}" in text
    assert "command: /papers" in text
