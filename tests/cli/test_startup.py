"""`papertide --help` and `papertide config` answer without loading the product.

They run on every install check and in scripts; loading a chat SDK, the store or an
HTTP client there would cost about a second each time (bench/startup.py measures it).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = {
    "slack_sdk", "slack_bolt", "discord", "aiosmtplib", "dkim", "css_inline",  # SDKs
    "sqlalchemy", "sqlmodel", "alembic", "psycopg", "aiosqlite",  # the store
    "httpx", "aiohttp", "apscheduler", "jinja2", "feedparser",  # HTTP, scheduler, templates
}  # fmt: skip

PROBE = """
import json, sys
sys.argv = ["papertide", *json.loads(sys.argv[1])]
from bot.cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.mark.parametrize("args", [["--help"], ["config"], ["config", "--json"], ["poll", "--help"]])
def test_help_and_config_load_no_sdk_no_store_no_http(args: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PAPERTIDE_DATABASE_URL": "sqlite:///:memory:"},
    )
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stderr.strip().splitlines()[-1]))
    assert loaded & HEAVY == set()
    assert out.stdout.strip()  # it did answer
