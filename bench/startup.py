"""Benchmark: how long `papertide --help` and `papertide config` take to start.

Each round runs, alternately, papertide's command and a bare typer app (one command,
nothing imported beyond typer), in fresh interpreters, and reads the imports' own time
from `python -X importtime`. Prints min and median of each and the ratio; the goal of
issue 11 is under 0.3 s of imports for papertide's two commands.

    .venv/bin/python bench/startup.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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
    rounds = max(3, parser.parse_args().rounds)
    cases = {
        "papertide --help": ["-m", "bot.cli", "--help"],
        "papertide config": ["-m", "bot.cli", "config"],
        "bare typer --help": ["-c", BARE, "--help"],
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(rounds):  # alternate, so drift on a shared machine hits every case alike
        for name, argv in cases.items():
            results[name].append(measure(argv))
    bare = statistics.median(w for w, _ in results["bare typer --help"])
    print(f"{rounds} rounds, alternating; wall = whole process, imports = -X importtime total")
    print(f"{'command':<20} {'wall min':>9} {'wall med':>9} {'imports min':>12} {'imports med':>12}"
          f" {'wall / bare':>12}")  # fmt: skip
    for name, runs in results.items():
        walls, imports = [w for w, _ in runs], [i for _, i in runs]
        print(
            f"{name:<20} {min(walls):>8.3f}s {statistics.median(walls):>8.3f}s "
            f"{min(imports):>11.3f}s {statistics.median(imports):>11.3f}s "
            f"{statistics.median(walls) / bare:>11.2f}x"
        )


if __name__ == "__main__":
    main()
