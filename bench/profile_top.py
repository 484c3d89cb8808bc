"""Where the time goes: the top functions of a py-spy raw profile (collapsed stacks).

    py-spy record --format raw --subprocesses -o /tmp/web.txt -- \\
        .venv/bin/python bench/web.py --quick
    .venv/bin/python bench/profile_top.py /tmp/web.txt [--top 25] [--match bot/]

Prints, per process (or per stack through `--within FRAME`), the functions with the
most samples on the stack (inclusive) and
at the top of the stack (self), each as a share of that process's samples. `--match`
keeps only frames whose text contains it (e.g. `bot/` for papertide's own code).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# py-spy: "process 123:"python x.py"" as the first frame when --subprocesses is on.
_PROCESS = re.compile(r"^process \d+:")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="")
    parser.add_argument(
        "--within",
        default="",
        help="only stacks through a frame (run_worker) or of a process whose command line "
        "contains this",
    )
    args = parser.parse_args()
    inclusive: dict[str, Counter[str]] = {}
    leaf: dict[str, Counter[str]] = {}
    totals: Counter[str] = Counter()
    for line in args.profile.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        process = "process"
        # With --subprocesses a stack starts with each parent's "process N:"cmdline""
        # frame; a command line may hold ';' (python -c "a; b"), so it ends at a quote.
        while frames and _PROCESS.match(frames[0]):
            end = next((i for i, f in enumerate(frames) if f.endswith('"')), 0)
            process = ";".join(frames[: end + 1])
            frames = frames[end + 1 :]
        frames = frames or ["(idle)"]
        if args.within:
            if args.within not in process and not any(args.within in f for f in frames):
                continue
            process += f" [within {args.within}]"
        totals[process] += count
        for frame in set(frames):
            if args.match in frame:
                inclusive.setdefault(process, Counter())[frame] += count
        if args.match in frames[-1]:
            leaf.setdefault(process, Counter())[frames[-1]] += count
    for process, total in totals.most_common():
        if total < 50:
            continue
        print(f"\n## {process[:120]}  ({total} samples)")
        for title, table in (("inclusive", inclusive), ("self", leaf)):
            print(f"-- {title}")
            for frame, count in table.get(process, Counter()).most_common(args.top):
                print(f"{100 * count / total:5.1f}%  {frame[:150]}")


if __name__ == "__main__":
    main()
