"""Benchmark: matching one paper whose author name has 8,000 vs 32,000 words.

    .venv/bin/python bench/names.py [--small 8000] [--large 32000] [--rounds 5]

Issue 12, item 10: one feed entry with a 24,000-word author name froze `serve` for
18.7 s when any `au:` alert existed (8k words 2.3 s, 32k 37 s: quadratic). With 1,000
`au:` alerts loaded, times `MatchEngine.match` on a paper with a name of `--small` and of
`--large` distinct words (every initial distinct too, the worst case for name keys),
alternating, `--rounds` times each, each name fresh (no cache helps). Prints min and
median of both and their ratio: linear work gives about large/small (4), quadratic its
square (16). Goal: ratio < 8 and the large name under 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.matching.engine import MatchEngine
from bot.types import Author, PaperRecord

NOW = datetime(2026, 7, 1, tzinfo=UTC)


def paper(words: int, salt: int) -> PaperRecord:
    name = " ".join(f"{chr(0x4E00 + i % 20000)}{salt}x{i}" for i in range(words))
    return PaperRecord(
        id=f"2607.{salt:05d}",
        version=1,
        title="A paper",
        abstract="",
        authors=(Author(name + " Wu"), Author("Yi Wu")),
        categories=("cs.LG",),
        published=NOW,
        updated=NOW,
        source="bench",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=8000)
    ap.add_argument("--large", type=int, default=32000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    engine = MatchEngine()
    for i in range(1000):  # names as people follow them: surname and initial, or quoted
        query = f"au:Surname{i}_{chr(65 + i % 26)}" if i % 2 else f'au:"Given{i} Surname{i}"'
        engine.add_alert(i, query)
    engine.add_alert(1000, "au:Wu_Y")
    engine.match(paper(10, 0))  # first use builds the accent-folding table
    times: dict[int, list[float]] = {args.small: [], args.large: []}
    salt = 1
    for _ in range(args.rounds):
        for words in times:
            record = paper(words, salt)
            salt += 1
            t0 = time.process_time()
            found = engine.match(record)
            times[words].append(time.process_time() - t0)
            assert [m.ref_id for m in found] == [1000], found
    for words, runs in times.items():
        print(
            f"{words:>6} words: min {min(runs):.3f} s, median {statistics.median(runs):.3f} s "
            f"({', '.join(f'{r:.3f}' for r in runs)})"
        )
    ratio = min(times[args.large]) / min(times[args.small])
    size = args.large / args.small
    print(
        f"ratio large/small (min): {ratio:.1f} for {size:.0f}x the words (quadratic: {size**2:.0f})"
    )
    met = ratio < 2 * size and min(times[args.large]) < 1.0
    print(f"goal (ratio < {2 * size:.0f}, large name < 1 s): {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
