"""Settings that keep papertide trustworthy (issue 12, items 2 and 17): no signing key
anyone could know, and `papertide config` never prints a credential."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from itsdangerous import URLSafeTimedSerializer
from pydantic import SecretStr

from bot.config import OLD_DEFAULT_KEY, Settings, mask_database_url, mask_url
from bot.errors import ConfigError
from bot.service.checks import is_loopback_url, require_secret_key
from bot.subscriptions.tokens import TokenError, read_token
from tests.support.paths import REPO


def _cli(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "HOME": str(tmp_path),
            "PAPERTIDE_DATABASE_URL": f"sqlite:///{tmp_path / 'never.db'}"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        capture_output=True, text=True, env={**base, **env}, cwd=tmp_path, timeout=60,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize("command", [["serve", "--port", "1"], ["worker"]])
@pytest.mark.parametrize("key", [None, "", OLD_DEFAULT_KEY])
def test_serve_and_worker_refuse_to_start_without_a_key_on_a_public_url(
    tmp_path: Path, command: list[str], key: str | None
) -> None:
    env = {"PAPERTIDE_PUBLIC_URL": "https://papers.example.org"}
    if key is not None:
        env["PAPERTIDE_SECRET_KEY"] = key
    out = _cli(command, env, tmp_path)
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0, out.stderr  # one line
    assert "PAPERTIDE_SECRET_KEY" in out.stderr
    assert not (tmp_path / "never.db").exists()  # before touching anything


def test_a_loopback_url_may_run_on_a_random_per_process_key() -> None:
    for url in ("http://127.0.0.1:8080", "http://localhost:8080/", "http://[::1]:8080",
                "http://127.8.9.1"):  # fmt: skip
        assert is_loopback_url(url), url
        require_secret_key(Settings(public_url=url))
    for url in ("https://papers.example.org", "http://10.0.0.5:8080", "http://0.0.0.0:8080",
                "http://localhost.example.org"):  # fmt: skip
        assert not is_loopback_url(url), url
        with pytest.raises(ConfigError, match="PAPERTIDE_SECRET_KEY"):
            require_secret_key(Settings(public_url=url))
    require_secret_key(Settings(public_url="https://p.example.org", secret_key=SecretStr("k" * 32)))


def test_without_a_key_links_cannot_be_forged_with_a_known_one() -> None:
    unset = Settings()
    assert unset.secret_key is None
    assert unset.signing_key() != OLD_DEFAULT_KEY
    assert len(unset.signing_key()) >= 32
    # Whatever key an attacker reads in the source, the old built-in one included,
    # signs nothing papertide accepts: unset, or set to the old default, means random.
    for settings in (unset, Settings(secret_key=SecretStr(OLD_DEFAULT_KEY))):
        old = URLSafeTimedSerializer(OLD_DEFAULT_KEY, salt="papertide.link-token.v2")
        forged = str(old.dumps({"p": 1, "v": 1, "u": "manage"}))
        with pytest.raises(TokenError):
            read_token(settings, forged, purpose="manage")
    assert Settings(secret_key=SecretStr("")).secret_key is None


def test_the_key_is_read_from_a_secret_file(tmp_path: Path) -> None:
    (tmp_path / "papertide_secret_key").write_text("from-a-file-0123456789abcdef\n")
    out = _cli(["config", "--json"], {"CREDENTIALS_DIRECTORY": str(tmp_path)}, tmp_path)
    assert json.loads(out.stdout)["PAPERTIDE_SECRET_KEY"] == "********"
    out = _cli(["config", "--json"], {}, tmp_path)
    assert json.loads(out.stdout)["PAPERTIDE_SECRET_KEY"] == "default"


def test_config_masks_every_credential(tmp_path: Path) -> None:
    env = {
        "PAPERTIDE_DATABASE_URL": "postgresql://pt:db%2Fp%40ss@db:5432/pt?sslpassword=sslsecret",
        "PAPERTIDE_SOURCES": "arxiv,feed:https://alice:hunter2@feeds.example.org/rss?token=tok123"
        "&page=2,feed:https://ghp_abcdef@example.org/x.atom?api_key=k9&Signature=s9",
        "PAPERTIDE_SECRET_KEY": "sk-very-secret",
        "PAPERTIDE_SMTP_PASSWORD": "smtp-secret",
    }
    out = _cli(["config", "--json"], env, tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for secret in ("db%2Fp%40ss", "sslsecret", "hunter2", "tok123", "ghp_abcdef", "k9", "s9",
                   "sk-very-secret", "smtp-secret"):  # fmt: skip
        assert secret not in text, secret
    shown = json.loads(text)
    assert shown["PAPERTIDE_DATABASE_URL"].startswith("postgresql://pt:****@db:5432/pt?")
    assert "feeds.example.org/rss?token=****&page=2" in shown["PAPERTIDE_SOURCES"]
    assert shown["PAPERTIDE_SOURCES"].startswith("arxiv,feed:https://alice:****@feeds.")


@pytest.mark.parametrize(
    ("url", "hidden"),
    [
        ("postgresql://u:p@ss/w@h/db", "p@ss/w"),
        ("postgresql+psycopg://u:secret@h:5432/db", "secret"),
        ("postgresql://h/db?password=secret&sslmode=require", "secret"),
    ],
)
def test_database_url_passwords_are_masked(url: str, hidden: str) -> None:
    assert hidden not in mask_database_url(url)
    assert "****" in mask_database_url(url)


def test_urls_without_credentials_are_shown_as_they_are() -> None:
    for url in ("https://export.arxiv.org/api/query", "feed:https://h.org/rss?page=2",
                "sqlite:///subscriptions.db", "arxiv-rss"):  # fmt: skip
        assert mask_url(url) == url
