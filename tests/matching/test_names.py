"""Author names cost what their words cost: a feed entry whose author name has tens of
thousands of words must not freeze matching (issue 12, item 10: 24,000 words took
18.7 s). Work is counted in operations, not timed (bench/names.py times it)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from bot.matching.engine import MatchEngine
from bot.matching.textnorm import PaperText
from bot.types import Author, PaperRecord

NOW = datetime(2026, 7, 1, tzinfo=UTC)


def _paper(name: str) -> PaperRecord:
    return PaperRecord(
        id="2607.00001",
        version=1,
        title="A title",
        abstract="",
        authors=(Author(name), Author("Yi Wu")),
        categories=("cs.LG",),
        published=NOW,
        updated=NOW,
        source="test",
    )


def _long_name(words: int) -> str:
    # Every word distinct, every initial distinct: the worst case for (surname, initial) keys.
    return " ".join(f"{chr(0x4E00 + i)}x{i}" for i in range(words))


def _operations(engine: MatchEngine, record: PaperRecord) -> int:
    """Python and C function calls (and generator resumptions) while matching one paper."""
    count = 0

    def profile(_frame: FrameType, _event: str, _arg: Any) -> None:
        nonlocal count
        count += 1

    sys.setprofile(profile)
    try:
        engine.match(record)
    finally:
        sys.setprofile(None)
    return count


def test_matching_a_long_author_name_costs_linear_operations() -> None:
    engine = MatchEngine()
    engine.add_alert(1, "au:Wu_Y")
    engine.add_alert(2, "au:Del_Maestro_A")
    engine.add_alert(3, 'au:"Ann Lee"')
    small, large = 300, 1200
    # Warm the caches of words and folding, so both counts measure matching alone.
    for words in (small, large):
        _operations(engine, _paper(_long_name(words)))
    cost_small = _operations(engine, _paper(_long_name(small)))
    cost_large = _operations(engine, _paper(_long_name(large)))
    # Four times the words: about four times the work (quadratic keys would be 16x).
    assert cost_large < 6 * cost_small
    assert cost_large < 20 * large


def test_name_structures_are_linear_in_the_words() -> None:
    name = _long_name(5000) + " Wu"
    text = PaperText(_paper(name))
    spans = text.name_positions({"wu"})
    assert len(spans) == 2  # the long name and Yi Wu, each once
    assert sum(len(last) + len(first) for _, last, first in spans) <= 2 * (5001 + 2)
    assert text.name_positions({"nobody"}) == []


def test_long_names_still_match_exactly() -> None:
    filler = " ".join(f"w{i}" for i in range(20_000))
    engine = MatchEngine()
    engine.add_alert(1, "au:Wu_Y")
    engine.add_alert(2, 'au:"Ann Q Lee"')
    engine.add_alert(3, "au:Lee_Z")
    record = _paper(f"Ann {filler} Q Lee")
    found = {m.ref_id for m in engine.match(record)}
    assert found == {1, 2}  # Yi Wu is the second author; no Z before Lee
    repeated = _paper("Lee " * 20_000 + "Ann Zed Lee")
    assert {m.ref_id for m in engine.match(repeated)} == {1, 3}
