"""The data each email template of a digest is rendered with. Pure: dicts out.

A paper's data is the same in every digest of a run (the reader's react token is a
slot, `REACT_SLOT`), and so are a week's chart labels: `TemplateData` builds each once
per run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.catalog.emerging import Emerging
from bot.catalog.momentum import Momentum, chart_weeks, momentum_line
from digests.build import AlertInfo, DigestPaper, MissedPaper, SpikeItem, TopicSection
from digests.fragments import REACT_SLOT
from digests.links import DigestLinks

CHART_HEIGHT_PX = 28
_MAX_AUTHORS = 3
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class TemplateData:
    """Template contexts of one run's fragments, with the links they point to."""

    def __init__(self, links: DigestLinks) -> None:
        self.links = links
        self._labels_of: dict[tuple[str, datetime], list[str]] = {}
        # A paper's template data is the same in every digest of the run (the reader's
        # token is a slot): built once, as ranked sections miss the section cache.
        self._papers: dict[tuple[DigestPaper, bool], dict[str, Any]] = {}

    def labels(self, as_of: datetime) -> list[str]:
        """The chart's week labels of a digest as of `as_of`."""
        key = ("labels", as_of)
        found = self._labels_of.get(key)
        if found is None:
            found = self._labels_of[key] = [day(w) for w in chart_weeks(as_of)]
        return found

    def spikes(
        self,
        heading: str,
        items: tuple[SpikeItem, ...],
        with_chart: bool,
        labels: list[str],
        universe: str,
    ) -> dict[str, Any]:
        """templates/email/_spikes: one list of spiking topics under `heading`."""
        spikes = [self._spike(s, labels, universe) for s in items]
        return {"heading": heading, "with_chart": with_chart, "spikes": spikes}

    def emerging(self, items: tuple[Emerging, ...]) -> dict[str, Any]:
        """templates/email/_emerging: the rising phrases."""
        return {"items": [e.line for e in items], "url": self.links.emerging_url()}

    def _spike(self, item: SpikeItem, labels: list[str], universe: str) -> dict[str, Any]:
        return {
            "name": item.name,
            "url": self.links.topic_url(item.slug),
            "line": momentum_line(item.momentum, universe),
            "chart": chart(item.momentum, labels),
        }

    def section(
        self,
        section: TopicSection,
        papers: tuple[DigestPaper, ...],
        collapsed: bool,
        labels: list[str],
        universe: str,
    ) -> dict[str, Any]:
        """templates/email/_section: a topic's section showing `papers`."""
        m = section.momentum
        return {
            "s": {
                "name": section.name,
                "url": self.links.topic_url(section.slug),
                "ask_url": self.links.ask_url(section.slug),
                "line": momentum_line(m, universe) if m is not None else "",
                "chart": chart(m, labels) if m is not None and not collapsed else None,
                "papers": [self.paper(p, p.id in section.alert_hits) for p in papers],
                "total": section.total,
                "more": section.total - len(papers),
                "collapsed": collapsed,
            }
        }

    def missed(self, missed: tuple[MissedPaper, ...]) -> dict[str, Any]:
        """templates/email/_missed: "You may have missed", each paper with its reason."""
        return {
            "missed": [{"paper": self.paper(m.paper, False), "reason": m.reason} for m in missed]
        }

    def alerts(self, alerts: tuple[AlertInfo, ...]) -> dict[str, Any]:
        """templates/email/_alerts: the reader's alert queries and their papers."""
        papers = [
            {"query": a.query, "papers": [self.paper(p, False) for p in a.papers]} for a in alerts
        ]
        return {"alerts": papers}

    def paper(self, paper: DigestPaper, alert: bool) -> dict[str, Any]:
        """A paper row's data (built once per run)."""
        key = (paper, alert)  # the paper itself, not its id: equal data, equal entry
        found = self._papers.get(key)
        if found is None:
            found = self._papers[key] = self._paper_data(paper, alert)
        return found

    def _paper_data(self, paper: DigestPaper, alert: bool) -> dict[str, Any]:
        names = list(paper.authors[:_MAX_AUTHORS])
        extra = len(paper.authors) - len(names)
        return {
            "title": one_line(paper.title),
            "url": self.links.paper_url(paper.id, paper.url),
            "authors": ", ".join(names) + (f" +{extra}" if extra > 0 else ""),
            "category": paper.primary_category,
            "date": day(paper.published),
            "alert": alert,
            "more_url": self.links.react_url(REACT_SLOT, paper.id, "more"),
            "less_url": self.links.react_url(REACT_SLOT, paper.id, "less"),
        }


def day(instant: datetime) -> str:
    """ "Sep 21": a date as the digest writes it."""
    return f"{_MONTHS[instant.month - 1]} {instant.day}"


def one_line(text: str) -> str:
    """`text` with its whitespace runs (newlines too) as single spaces."""
    return " ".join(text.split())


def chart(m: Momentum, labels: list[str]) -> dict[str, Any]:
    """A momentum chart's bars (scaled to `CHART_HEIGHT_PX`) and alt text."""
    peak = max(m.weekly, default=0) or 1
    bars = [
        {"height": max(1, round(CHART_HEIGHT_PX * n / peak)), "count": n, "label": label}
        for n, label in zip(m.weekly, labels, strict=True)
    ]
    alt = f"Papers per week, {labels[0]} to {labels[-1]}: " + ", ".join(str(n) for n in m.weekly)
    return {"bars": bars, "alt": alt, "first": labels[0], "last": labels[-1]}
