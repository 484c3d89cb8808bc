"""`papertide demo` (what `make run` runs) in a fresh directory, as a newcomer would."""

from __future__ import annotations

import email
import os
import re
import sqlite3
import subprocess
import sys
from email import policy
from html.parser import HTMLParser
from pathlib import Path

from tests.support.paths import REPO


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _run_demo(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERTIDE_")}
    env["COLUMNS"] = "160"
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "demo"],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_demo_shows_the_whole_product_offline_and_is_idempotent(tmp_path: Path) -> None:
    first = _run_demo(tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    out = first.stdout

    # The store, with the sample ingested and matched.
    db = tmp_path / "subscriptions.db"
    with sqlite3.connect(db) as conn:
        papers = conn.execute("select count(*) from paper").fetchone()[0]
        links = conn.execute("select count(*) from paper_topic").fetchone()[0]
        alerts = conn.execute("select count(*) from alert_match").fetchone()[0]
        sent = conn.execute("select count(*) from outbox where status = 'sent'").fetchone()[0]
    assert papers > 300
    assert links > papers / 2
    assert alerts > 0  # the demo person's au:"Yi Wu" alert fired
    assert sent > 0

    # Topics with momentum, the spiking one flagged, in the reference page's words.
    assert "RL for LLM Agents" in out
    assert "70 papers in the last four weeks, up 141% on the four weeks before" in out
    assert "spiking" in out

    # Alerts rendered as Slack and Discord would show them.
    assert "Slack · #rl-agents" in out
    assert "Discord · #rl-agents" in out
    assert "Unfollow topic" in out
    assert "Ask about this topic: RL for LLM Agents" in out
    assert "Q: which papers train agents with GRPO on ALFWorld, and what do they report?" in out
    assert "[1] " in out
    assert "more papers match" in out

    # The digest: files written and parseable, with the momentum section; a mail caught.
    html = (tmp_path / "out" / "digest.html").read_text()
    text = (tmp_path / "out" / "digest.txt").read_text()
    parser = _Text()
    parser.feed(html)
    visible = " ".join(parser.text)
    # The digest is as of the Monday that ends last week, so its counts may differ a
    # little from the table's "as of now"; the spike and the wording must be there.
    momentum = re.compile(r"\d+ papers in the last four weeks, up \d+% on the four weeks before")
    assert "RL for LLM Agents" in visible
    assert momentum.search(visible), visible[:2000]
    assert re.search("RL for LLM Agents: " + momentum.pattern, text), text[:2000]
    assert "Spiking" in visible or "SPIKING" in visible
    assert "Unsubscribe" in visible
    mails = sorted((tmp_path / "out" / "mailbox").glob("*.eml"))
    assert mails, out
    mail = email.message_from_bytes(mails[-1].read_bytes(), policy=policy.default)
    assert mail.get_content_type() == "multipart/alternative"
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    for path in ("out/digest.html", "out/digest.txt"):
        assert path in out

    # A second run reuses the store and sends nothing twice.
    second = _run_demo(tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Reusing the store" in second.stdout
    assert "0 new papers" in second.stdout
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from paper").fetchone()[0] == papers
        again = conn.execute("select count(*) from outbox where status = 'sent'").fetchone()[0]
    assert again == sent
    assert sorted((tmp_path / "out" / "mailbox").glob("*.eml")) == mails
