"""Shared by the email tests: a throw-away DKIM key pair."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def dkim_keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    where = tmp_path_factory.mktemp("dkim")
    key = where / "dkim.pem"
    subprocess.run(
        ["openssl", "genrsa", "-traditional", "-out", str(key), "1024"],
        check=True, capture_output=True,
    )  # fmt: skip
    der = subprocess.run(
        ["openssl", "rsa", "-in", str(key), "-pubout", "-outform", "DER"],
        check=True, capture_output=True,
    ).stdout  # fmt: skip
    return key, base64.b64encode(der)
