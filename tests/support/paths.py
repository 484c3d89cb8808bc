"""Where the repository, its fixtures and its golden files are, for every test module."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"
GOLDEN = TESTS / "golden"
