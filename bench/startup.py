"""Benchmark: how long `papertide --help` and `papertide config` take to start.

Each round runs, alternately, papertide's command and a bare typer app (one command,
nothing imported beyond typer), in fresh interpreters, and reads the imports' own time
from `python -X importtime`. Prints min and median of each and the ratio; the goal of
issue 11 is under 0.3 s of imports for papertide's two commands.

    .venv/bin/python bench/startup.py [--rounds 7]
    .venv/bin/python bench/startup.py --quick        # 3 rounds
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.sidebyside import Series, alternate, header, report, rounds_arg  # noqa: E402

BARE = "import typer\napp = typer.Typer()\n@app.command()\ndef hello() -> None:\n    pass\napp()\n"
ENV = {**os.environ, "PAPERTIDE_DATABASE_URL": "sqlite:///:memory:"}
_LINE = re.compile(r"import time:\s+(\d+) \|")


def measure(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, seconds of imports) of one fresh interpreter."""
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True, text=True, check=False, env=ENV, cwd=REPO,
    )  # fmt: skip
    wall = time.perf_counter() - started
    imports = sum(int(m.group(1)) for m in map(_LINE.match, out.stderr.splitlines()) if m)
    return wall, imports / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = rounds_arg(3 if args.quick else args.rounds)
    cases = {
        "papertide --help": ["-m", "bot.cli", "--help"],
        "papertide config": ["-m", "bot.cli", "config"],
        "bare typer --help": ["-c", BARE, "--help"],
    }
    imports: dict[str, list[float]] = {name: [] for name in cases}

    def case(name: str) -> Callable[[], float]:
        def run() -> float:
            wall, imported = measure(cases[name])
            imports[name].append(imported)
            return wall

        return run

    header("startup: papertide's commands vs a bare typer app, fresh interpreters", rounds,
           "wall = whole process; imports = the -X importtime total")  # fmt: skip
    walls = alternate({name: case(name) for name in cases}, rounds)
    bare = "bare typer --help"
    for name in ("papertide --help", "papertide config"):
        report(f"{name}: wall s", Series(name, walls[name]), Series("bare typer", walls[bare]),
               higher_is_better=False)  # fmt: skip
        report(f"{name}: imports s (goal of issue 11: < 0.3 s)", Series(name, imports[name]),
               Series("bare typer", imports[bare]), higher_is_better=False)  # fmt: skip


if __name__ == "__main__":
    main()
