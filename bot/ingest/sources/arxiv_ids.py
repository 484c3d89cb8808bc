"""arXiv identifiers: new style `2606.01234v2`, old style `hep-th/9901001v1`."""

from __future__ import annotations

import re

# New style YYMM.NNNN(N); old style archive(.subject)/YYMMNNN. Version optional.
_ID = r"(?P<id>\d{4}\.\d{4,5}|[a-z][a-z.-]*[a-z](?:\.[A-Z]{2})?/\d{7})(?:v(?P<v>\d+))?"
_EXACT = re.compile(rf"^(?:arXiv:)?{_ID}$", re.IGNORECASE)
_IN_TEXT = re.compile(rf"(?:arxiv\.org/(?:abs|pdf)/|arXiv:|oai:arXiv\.org:){_ID}", re.IGNORECASE)


def split_id(text: str) -> tuple[str, int] | None:
    """`2606.01234v2` -> ("2606.01234", 2); no version -> 1; not an arXiv id -> None."""
    match = _EXACT.match(text.strip())
    if not match:
        return None
    return match.group("id"), int(match.group("v") or 1)


def find_id(text: str) -> tuple[str, int] | None:
    """The first arXiv id in a URL or text (`https://arxiv.org/abs/2606.01234v2`)."""
    match = _IN_TEXT.search(text)
    if not match:
        return None
    return match.group("id"), int(match.group("v") or 1)


def sort_key(paper_id: str) -> tuple[int, int, str]:
    """Order of announcement: new-style ids by (YYMM, number); old style before them."""
    head, dot, tail = paper_id.partition(".")
    if dot and head.isdigit() and tail.isdigit():
        return int(head), int(tail), ""
    return 0, 0, paper_id
