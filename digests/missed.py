"""A digest's "You may have missed": papers picked for its reader, each with the
reader's own reason. Pure.

Readers who share interests often get the same picks, so the section is rendered with a
slot for each reason: its rows are the papers' alone, kept and shared between readers,
and each reader's reasons are joined in at the slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from digests.build import Digest, DigestPaper, MissedPaper
from digests.context import TemplateData
from digests.fragments import Fragments, ascii_html, render_fragment

_WHY_SLOT = "ptslotwhy"


class MissedSection:
    """Renders the "You may have missed" sections of one run's digests."""

    def __init__(self, fragments: Fragments, data: TemplateData) -> None:
        self._fragments = fragments
        self._data = data
        self._slots: dict[tuple[Any, ...], tuple[str, str]] = {}  # rows, cut at the slot
        self._html: dict[str, str] = {}  # a reason -> escaped as the HTML part shows it

    def render(self, digest: Digest, ext: str) -> list[str]:
        """The section of `digest` (which has missed papers) with its reasons in, as
        pieces to join: the kept frame and row halves as they are (the renderer fills
        the react token into kept pieces without searching them), the reasons between."""
        if ext == "txt":
            reasons = [m.reason for m in digest.missed]
        else:  # readers share reasons ("like … that you marked"): each escaped once
            html = self._html
            reasons = [html.get(m.reason) or self._escaped(m.reason) for m in digest.missed]
        row_keys = [(ext, "missed", digest.week, m.paper.id) for m in digest.missed]
        frame = self._fragments.frames.get((ext, "missed", len(row_keys)))
        rows = [self._slotted(k) for k in row_keys]
        if frame is not None and all(r is not None for r in rows):
            # Each row split at its slot once per run, not the section per reader.
            out = [frame[0]]
            for (a, b), why in zip((r for r in rows if r is not None), reasons, strict=True):
                out += (a, why, b)
            out.append(frame[1])
            return out
        slotted = tuple(MissedPaper(m.paper, _WHY_SLOT) for m in digest.missed)
        missed = "".join(
            self._fragments.assembled(
                ("missed", ext, tuple(m.paper.id for m in digest.missed)),
                (ext, "missed", len(slotted)),
                row_keys,
                "_missed",
                self._data.missed,
                (slotted,),
                _shape(ext),
            )
        )
        pieces = missed.split(_WHY_SLOT)
        return [pieces[0] + "".join(r + p for r, p in zip(reasons, pieces[1:], strict=True))]

    def _escaped(self, reason: str) -> str:
        if len(self._html) > 65_536:
            self._html.clear()  # word reasons are per reader: keep the memory bounded
        found = self._html[reason] = _text_html(reason)
        return found

    def _slotted(self, key: tuple[Any, ...]) -> tuple[str, str] | None:
        """A missed row, cut at its reason's slot (None: not rendered yet)."""
        found = self._slots.get(key)
        if found is None:
            row = self._fragments.rows.get(key)
            if row is None or row.count(_WHY_SLOT) != 1:
                return None
            before, _, after = row.partition(_WHY_SLOT)
            found = self._slots[key] = (before, after)
            self._fragments.keep_cut(before, after)  # filled by joins, like any kept piece
        return found

    def warm(self, digests: Sequence[Digest], ext: str) -> None:
        """Render the missed rows of `digests` that no earlier fragment gave: one
        fragment per week."""
        missed: dict[str, tuple[Digest, dict[str, DigestPaper]]] = {}
        for d in digests:
            for m in d.missed:
                if (ext, "missed", d.week, m.paper.id) not in self._fragments.rows:
                    missed.setdefault(d.week, (d, {}))[1][m.paper.id] = m.paper
        for week, (_d, papers) in missed.items():
            slotted = tuple(MissedPaper(p, _WHY_SLOT) for p in papers.values())
            keys: list[tuple[Any, ...]] = [(ext, "missed", week, p.id) for p in papers.values()]
            fragment = render_fragment("_missed", ext, self._data.missed(slotted))
            self._fragments.keep_rows(fragment, ext, keys, _shape(ext))


def _shape(ext: str) -> dict[str, Any]:
    # A missed text row has four lines (no reaction links), its last indented (rows.py).
    return {} if ext == "html" else {"lines": 4, "last": "  "}


def _text_html(text: str) -> str:
    """`text` escaped as the CSS inliner writes a text node (no quotes escaped), then
    made ASCII like every inlined fragment."""
    return ascii_html(
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace("\xa0", "&nbsp;")
    )  # fmt: skip
