"""Benchmark: bench/match.py on two revisions of papertide, alternating, in one run.

    .venv/bin/python bench/compare_revisions.py [--base main] [--rounds 3] [-- match.py args]

Exports `--base` (a git revision) to a temporary directory and runs its bench/match.py
and this working tree's, one after the other, `--rounds` times each (alternating, so
both see the same machine load), in fresh processes. Prints each round's figures, then
per figure the min and median of both and the ratio (this tree / base; < 1 is faster).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = {
    "compile": re.compile(r"^compile: ([\d.]+) CPU s"),
    "day": re.compile(r"^engine: ([\d.]+) CPU s for the day"),
    "peak MiB": re.compile(r"^peak memory: (\d+) MiB"),
    "add µs": re.compile(r"^add one alert: median (\d+) µs"),
}


def export(revision: str, into: Path) -> Path:
    """The tree of `revision`, as files (git archive: no checkout, no worktree)."""
    archive = into / "base.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", revision], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def run(tree: Path, args: list[str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, str(tree / "bench" / "match.py"), *args],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        sys.exit(f"bench/match.py failed in {tree}:\n{done.stdout}\n{done.stderr}")
    found: dict[str, float] = {}
    for line in done.stdout.splitlines():
        for name, pattern in FIGURES.items():
            if match := pattern.match(line):
                found[name] = float(match.group(1))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="the git revision to compare with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("match_args", nargs="*", help="passed to bench/match.py (after --)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"base": export(args.base, Path(tmp)), "this": ROOT}
        results: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
        for round_no in range(1, args.rounds + 1):
            for label, tree in trees.items():
                figures = run(tree, args.match_args)
                results[label].append(figures)
                shown = ", ".join(f"{k} {v:g}" for k, v in figures.items())
                print(f"round {round_no} {label:>4}: {shown}", flush=True)
    print(f"\n{'figure':<9} {'base min':>9} {'base med':>9} {'this min':>9} {'this med':>9} ratio")
    for name in FIGURES:
        base = [r[name] for r in results["base"] if name in r]
        this = [r[name] for r in results["this"] if name in r]
        if not base or not this:
            continue
        ratio = min(this) / min(base)
        print(
            f"{name:<9} {min(base):>9g} {statistics.median(base):>9g} "
            f"{min(this):>9g} {statistics.median(this):>9g} {ratio:.2f}"
        )


if __name__ == "__main__":
    main()
