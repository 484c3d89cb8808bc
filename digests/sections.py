"""A digest's topic sections, each showing its reader's papers in their order. Pure.

A ranked digest picks and orders each section's papers per reader, so most of its
sections are assembled from the frames and rows that `Fragments` kept from earlier
readers (digests/rows.py); `warm` renders the rows a batch needs up front, a few
fragments for all of them instead of a whole section per reader who first shows a paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from digests.build import Digest, DigestPaper, TopicSection
from digests.context import TemplateData
from digests.fragments import Fragments, render_fragment

# A section as one digest shows it: its papers, collapsed or not, and its key's tail.
_Shown = tuple[TopicSection, tuple[DigestPaper, ...], bool, tuple[Any, ...]]


class TopicSections:
    """Renders the topic sections of one run's digests from its shared fragments."""

    def __init__(self, fragments: Fragments, data: TemplateData) -> None:
        self._fragments = fragments
        self._data = data
        # The last digest's sections as shown, by (cap, full): its parts share them.
        self._last: tuple[Digest | None, dict[tuple[int | None, int | None], list[_Shown]]]
        self._last = (None, {})

    def render(self, digest: Digest, ext: str, cap: int | None, full: int | None) -> list[str]:
        """The sections of `digest` in pieces to join: at most `cap` papers each, and
        the sections after the first `full` collapsed to one line (None: no limit)."""
        labels = self._data.labels(digest.as_of)
        out = []
        for section, papers, collapsed, tail in self._shown(digest, cap, full):
            # The whole section, when an earlier reader had it: the one lookup per part.
            found = self._fragments.hit(("section", ext, tail))
            if found is not None:
                out.append(found)
            else:
                out += self._section_in(digest, ext, section, papers, collapsed, labels, tail)
        return out

    def _shown(self, digest: Digest, cap: int | None, full: int | None) -> list[_Shown]:
        """What each section of `digest` shows and its cache key's part-independent tail,
        worked out once per digest for both parts (and every step of the HTML's fit)."""
        if self._last[0] is not digest:
            self._last = (digest, {})
        memo = self._last[1]
        shown = memo.get((cap, full))
        if shown is None:
            shown = memo[(cap, full)] = []
            for i, section in enumerate(digest.sections):
                if not section.total and digest.quiet:
                    continue
                collapsed = full is not None and i >= full
                papers = () if collapsed else section.papers[:cap]
                hits = tuple(p.id in section.alert_hits for p in papers)
                ids = tuple(p.id for p in papers)
                tail = (digest.week, section.slug, ids, hits, section.total, collapsed)
                shown.append((section, papers, collapsed, tail))
        return shown

    def _section_in(
        self,
        digest: Digest,
        ext: str,
        section: TopicSection,
        papers: tuple[DigestPaper, ...],
        collapsed: bool,
        labels: list[str],
        tail: tuple[Any, ...],
    ) -> list[str]:
        hits = tail[3]
        frame = (ext, digest.week, section.slug, len(papers), section.total, collapsed)
        parts = (section, papers, collapsed, labels, digest.universe)
        # A paper is one object per week: its id and week name its row (hashing the
        # paper itself would hash every field, per row, per reader).
        rows = [(ext, digest.week, p.id, hit) for p, hit in zip(papers, hits, strict=True)]
        return self._fragments.assembled(
            ("section", ext, tail), frame, rows, "_section", self._data.section, parts, {}
        )

    def warm(self, digests: Sequence[Digest], ext: str) -> None:
        """Render the section rows of `digests` that no earlier fragment gave: one
        fragment per topic (and alert hit) and week."""
        kept = self._fragments.rows
        sections: dict[tuple[str, str, bool], tuple[Digest, TopicSection, dict[str, Any]]] = {}
        for d in digests:
            for s in d.sections:
                for p in s.papers:
                    hit = p.id in s.alert_hits
                    if (ext, d.week, p.id, hit) not in kept:
                        sections.setdefault((d.week, s.slug, hit), (d, s, {}))[2][p.id] = p
        for (week, _slug, hit), (d, s, found) in sections.items():
            rows = tuple(found.values())
            whole = replace(
                s,
                papers=rows,
                alert_hits=frozenset(found) if hit else frozenset(),
                total=max(s.total, len(rows)),
            )
            labels = self._data.labels(d.as_of)
            context = self._data.section(whole, rows, False, labels, d.universe)
            keys: list[tuple[Any, ...]] = [(ext, week, p.id, hit) for p in rows]
            self._fragments.keep_rows(render_fragment("_section", ext, context), ext, keys, {})
