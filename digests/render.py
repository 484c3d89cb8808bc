"""Render a `Digest` into an email payload (bot/payloads.py shape). Pure: returns data.

HTML goes through jinja2 autoescape and css-inline; the text part is written to be
read on its own. The HTML stays under `MAX_HTML_BYTES` (Gmail clips near 102 KB and
would hide the unsubscribe link): big digests collapse their last topics into
one-line "view all" entries until it fits.

A topic's section looks the same for everyone who follows it (unless their alerts
reorder it), so `DigestRenderer` renders and inlines each fragment once per run and
reuses it (digests/fragments.py): memory stays flat in the number of recipients.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from email.utils import parseaddr
from typing import Any

from markupsafe import Markup, escape

from bot.catalog.emerging import Emerging
from bot.catalog.momentum import Momentum, chart_weeks, momentum_line
from bot.outbox.payloads import EmailPayload
from digests.build import AlertInfo, Digest, DigestPaper, MissedPaper, SpikeItem, TopicSection
from digests.fragments import REACT_SLOT as _REACT_SLOT
from digests.fragments import Fragments, ascii_html, template
from digests.fragments import render_fragment as _render
from digests.links import DigestLinks

MAX_HTML_BYTES = 80_000
CHART_HEIGHT_PX = 28
_MAX_AUTHORS = 3
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# Ways to shrink a digest that is too big, mildest first: (papers per topic, full sections).
_FIT_LADDER = ((None, None), (3, None), (3, 12), (3, 6), (2, 3), (0, 0))


_BODY_SLOT = "ptslotbody"
_WHY_SLOT = "ptslotwhy"
_FOOTER_SLOTS = {
    "email": "ptslot0email",
    "manage_url": "ptslot1manage",
    "unsubscribe_url": "ptslot2unsubscribe",
}


@dataclass(frozen=True, slots=True)
class MailIdentity:
    """Sender facts every digest shares: From, and the List-Id built from its domain."""

    mail_from: str

    @property
    def domain(self) -> str:
        return _domain_of(self.mail_from)

    @property
    def list_id(self) -> str:
        return f"papertide weekly digest <digest.{self.domain}>"


class DigestRenderer:
    """Renders the digests of one run (one week), sharing inlined fragments between them."""

    def __init__(
        self, *, links: DigestLinks, identity: MailIdentity, cache_size: int = 4096
    ) -> None:
        self.links = links
        self.identity = identity
        # One run's fragments (digests/fragments.py); the aliases keep call sites short.
        self._fragments = Fragments(cache_size)
        self._frames, self._rows = self._fragments.frames, self._fragments.rows
        self._cached, self._assembled = self._fragments.cached, self._fragments.assembled
        self._filled, self._keep_rows = self._fragments.filled, self._fragments.keep_rows
        self._labels_of: dict[tuple[str, datetime], list[str]] = {}
        # A paper's template data is the same in every digest of the run (the reader's
        # token is a slot): built once, as ranked sections miss the section cache.
        self._papers: dict[tuple[DigestPaper, bool], dict[str, Any]] = {}
        self._slots: dict[tuple[Any, ...], tuple[str, str]] = {}  # missed rows, at the slot
        self._shells: dict[str, tuple[str, str]] = {}

    def render(self, digest: Digest) -> EmailPayload:
        """The email payload `{"to", "subject", "text", "html", "headers"}` of one digest."""
        recipient = digest.recipient
        unsubscribe = self.links.unsubscribe_url(recipient)
        footer = {
            "email": recipient.email,
            "manage_url": self.links.manage_url(recipient),
            "unsubscribe_url": unsubscribe,
        }
        head_html, tail_html = self._parts(digest, "html", footer)
        react = self.links.react_token(recipient)
        before, after = self._shell(digest.week)
        html = ""
        for cap, full in _FIT_LADDER:
            sections = self._sections(digest, "html", cap, full)
            html = self._filled([before, *head_html, *sections, *tail_html, after], react)
            if _size(html) - len(before) - len(after) <= MAX_HTML_BYTES:  # the body's
                break
        head_text, tail_text = self._parts(digest, "txt", footer)
        sections = self._sections(digest, "txt", None, None)
        text = self._filled([*head_text, *sections, *tail_text], react)
        mailto = self.links.unsubscribe_mailto(recipient)
        return {
            "to": recipient.email,
            "subject": subject_of(digest),
            "text": text,
            "html": html,
            "headers": {
                "List-Id": self.identity.list_id,
                "List-Unsubscribe": f"<{unsubscribe}>, <{mailto}>",
                "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            },
        }

    def warm(self, digests: Sequence[Digest]) -> None:
        """Render the paper rows `digests` need that no earlier fragment gave, in a few
        fragments (one per topic, one of missed papers, per part) rather than a whole
        section for each reader who first shows a paper: ranked digests order and pick
        papers per reader, so most of their sections are assembled from rows."""
        for ext in ("html", "txt"):
            sections: dict[tuple[str, str, bool], tuple[Digest, TopicSection, dict[str, Any]]] = {}
            missed: dict[str, tuple[Digest, dict[str, DigestPaper]]] = {}
            for d in digests:
                for s in d.sections:
                    for p in s.papers:
                        hit = p.id in s.alert_hits
                        if (ext, d.week, p.id, hit) not in self._rows:
                            sections.setdefault((d.week, s.slug, hit), (d, s, {}))[2][p.id] = p
                for m in d.missed:
                    if (ext, "missed", d.week, m.paper.id) not in self._rows:
                        missed.setdefault(d.week, (d, {}))[1][m.paper.id] = m.paper
            for (week, _slug, hit), (d, s, found) in sections.items():
                rows = tuple(found.values())
                whole = replace(
                    s,
                    papers=rows,
                    alert_hits=frozenset(found) if hit else frozenset(),
                    total=max(s.total, len(rows)),
                )
                labels = self._labels(d.as_of)
                context = self._section(whole, rows, False, labels, d.universe)
                keys: list[tuple[Any, ...]] = [(ext, week, p.id, hit) for p in rows]
                self._keep_rows(_render("_section", ext, context), ext, keys, {})
            for week, (_d, papers) in missed.items():
                slotted = tuple(MissedPaper(p, _WHY_SLOT) for p in papers.values())
                keys = [(ext, "missed", week, p.id) for p in papers.values()]
                shape = {} if ext == "html" else {"lines": 4, "last": "  "}
                self._keep_rows(_render("_missed", ext, self._missed(slotted)), ext, keys, shape)

    def _slotted(self, key: tuple[Any, ...]) -> tuple[str, str] | None:
        """A missed row, cut at its reason's slot (None: not rendered yet)."""
        found = self._slots.get(key)
        if found is None:
            row = self._rows.get(key)
            if row is None or row.count(_WHY_SLOT) != 1:
                return None
            before, _, after = row.partition(_WHY_SLOT)
            found = self._slots[key] = (before, after)
        return found

    def _parts(
        self, digest: Digest, ext: str, footer: dict[str, str]
    ) -> tuple[list[str], list[str]]:
        week, universe = digest.week, digest.universe
        monday = digest.as_of - timedelta(days=7)
        intro = {
            "week": week,
            "week_label": f"Week of {_day(monday)}, {monday.year}",
            "universe": universe,
            "quiet": digest.quiet,
            "follows_nothing": digest.follows_nothing,
        }
        head = [self._cached(("intro", ext, *intro.values()), "_intro", ext, dict, intro)]
        labels = self._labels(digest.as_of)
        for heading, items, with_chart in (
            ("Spiking in your topics", digest.followed_spikes, True),
            ("Spiking elsewhere: you may want to follow", digest.suggestions, False),
        ):
            if items:
                key = ("spikes", ext, week, heading, tuple(s.slug for s in items))
                spikes = (heading, items, with_chart, labels, universe)
                head.append(self._cached(key, "_spikes", ext, self._spikes, *spikes))
        if digest.emerging:
            rising = ("emerging", ext, week, tuple(e.words for e in digest.emerging))
            head.append(self._cached(rising, "_emerging", ext, self._emerging, digest.emerging))
        tail = []
        if digest.missed:
            # Readers who share interests often get the same picks: cached like sections.
            # Rendered with a slot for each reason (a reader's own words), so its
            # rows are the papers' alone and are shared between readers.
            reasons = [m.reason if ext == "txt" else _text_html(m.reason) for m in digest.missed]
            row_keys = [(ext, "missed", digest.week, m.paper.id) for m in digest.missed]
            frame = self._frames.get((ext, "missed", len(row_keys)))
            rows = [self._slotted(k) for k in row_keys]
            if frame is not None and all(r is not None for r in rows):
                # Each row split at its slot once per run, not the section per reader.
                cut = [r for r in rows if r is not None]
                body = "".join(a + why + b for (a, b), why in zip(cut, reasons, strict=True))
                missed = frame[0] + body + frame[1]
            else:
                slotted = tuple(MissedPaper(m.paper, _WHY_SLOT) for m in digest.missed)
                missed = "".join(
                    self._assembled(
                        ("missed", ext, tuple(m.paper.id for m in digest.missed)),
                        (ext, "missed", len(slotted)),
                        row_keys,
                        "_missed",
                        self._missed,
                        (slotted,),
                        {} if ext == "html" else {"lines": 4, "last": "  "},
                    )
                )
                pieces = missed.split(_WHY_SLOT)
                missed = pieces[0] + "".join(
                    r + p for r, p in zip(reasons, pieces[1:], strict=True)
                )
            tail.append(missed)
        alerts = tuple(a for a in digest.alerts if a.papers)
        if alerts:
            seen = tuple((a.query, tuple(p.id for p in a.papers)) for a in alerts)
            tail.append(self._cached(("alerts", ext, seen), "_alerts", ext, self._alerts, alerts))
        tail.append(self._footer(ext, footer))
        return head, tail

    def _sections(self, digest: Digest, ext: str, cap: int | None, full: int | None) -> list[str]:
        labels = self._labels(digest.as_of)
        out = []
        for i, section in enumerate(digest.sections):
            if not section.total and digest.quiet:
                continue
            collapsed = full is not None and i >= full
            papers = () if collapsed else section.papers[:cap]
            out += self._section_in(digest, ext, section, papers, collapsed, labels)
        return out

    def _section_in(
        self,
        digest: Digest,
        ext: str,
        section: TopicSection,
        papers: tuple[DigestPaper, ...],
        collapsed: bool,
        labels: list[str],
    ) -> list[str]:
        hits = tuple(p.id in section.alert_hits for p in papers)
        key = (
            "section", ext, digest.week, section.slug, tuple(p.id for p in papers), hits,
            section.total, collapsed,
        )  # fmt: skip
        frame = (ext, digest.week, section.slug, len(papers), section.total, collapsed)
        parts = (section, papers, collapsed, labels, digest.universe)
        # A paper is one object per week: its id and week name its row (hashing the
        # paper itself would hash every field, per row, per reader).
        rows = [(ext, digest.week, p.id, hit) for p, hit in zip(papers, hits, strict=True)]
        return self._assembled(key, frame, rows, "_section", self._section, parts, {})

    def _shell(self, week: str) -> tuple[str, str]:
        """The page around the body (ASCII), rendered once per week, cut at the body."""
        found = self._shells.get(week)
        if found is None:
            shell = template("email/digest.html.j2")
            # Every part is the output of an autoescaped template, so it is markup already.
            page = shell.render(week=week, body=Markup(_BODY_SLOT))  # noqa: S704
            before, _, after = ascii_html(page).partition(_BODY_SLOT)
            found = self._shells[week] = (before, after)
        return found

    def _footer(self, ext: str, footer: dict[str, str]) -> str:
        # Render (and inline) the footer once with placeholder slots, then fill in this
        # recipient's values, escaped exactly as autoescape would (HTML) or as they are
        # (text): no template run per recipient.
        text = self._cached(("footer", ext), "_footer", ext, dict, _FOOTER_SLOTS)
        for name, slot in _FOOTER_SLOTS.items():
            value = footer[name]
            text = text.replace(slot, value if ext == "txt" else str(escape(value)))
        return text

    def _labels(self, as_of: datetime) -> list[str]:
        key = ("labels", as_of)
        found = self._labels_of.get(key)
        if found is None:
            found = self._labels_of[key] = [_day(w) for w in chart_weeks(as_of)]
        return found

    def _spikes(
        self,
        heading: str,
        items: tuple[SpikeItem, ...],
        with_chart: bool,
        labels: list[str],
        universe: str,
    ) -> dict[str, Any]:
        spikes = [self._spike(s, labels, universe) for s in items]
        return {"heading": heading, "with_chart": with_chart, "spikes": spikes}

    def _emerging(self, items: tuple[Emerging, ...]) -> dict[str, Any]:
        return {"items": [e.line for e in items], "url": self.links.emerging_url()}

    def _spike(self, item: SpikeItem, labels: list[str], universe: str) -> dict[str, Any]:
        return {
            "name": item.name,
            "url": self.links.topic_url(item.slug),
            "line": momentum_line(item.momentum, universe),
            "chart": _chart(item.momentum, labels),
        }

    def _section(
        self,
        section: TopicSection,
        papers: tuple[DigestPaper, ...],
        collapsed: bool,
        labels: list[str],
        universe: str,
    ) -> dict[str, Any]:
        m = section.momentum
        return {
            "s": {
                "name": section.name,
                "url": self.links.topic_url(section.slug),
                "ask_url": self.links.ask_url(section.slug),
                "line": momentum_line(m, universe) if m is not None else "",
                "chart": _chart(m, labels) if m is not None and not collapsed else None,
                "papers": [self._paper(p, p.id in section.alert_hits) for p in papers],
                "total": section.total,
                "more": section.total - len(papers),
                "collapsed": collapsed,
            }
        }

    def _missed(self, missed: tuple[MissedPaper, ...]) -> dict[str, Any]:
        return {
            "missed": [{"paper": self._paper(m.paper, False), "reason": m.reason} for m in missed]
        }

    def _alerts(self, alerts: tuple[AlertInfo, ...]) -> dict[str, Any]:
        papers = [
            {"query": a.query, "papers": [self._paper(p, False) for p in a.papers]} for a in alerts
        ]
        return {"alerts": papers}

    def _paper(self, paper: DigestPaper, alert: bool) -> dict[str, Any]:
        key = (paper, alert)  # the paper itself, not its id: equal data, equal entry
        found = self._papers.get(key)
        if found is None:
            found = self._papers[key] = self._paper_data(paper, alert)
        return found

    def _paper_data(self, paper: DigestPaper, alert: bool) -> dict[str, Any]:
        names = list(paper.authors[:_MAX_AUTHORS])
        extra = len(paper.authors) - len(names)
        return {
            "title": _one_line(paper.title),
            "url": self.links.paper_url(paper.id, paper.url),
            "authors": ", ".join(names) + (f" +{extra}" if extra > 0 else ""),
            "category": paper.primary_category,
            "date": _day(paper.published),
            "alert": alert,
            "more_url": self.links.react_url(_REACT_SLOT, paper.id, "more"),
            "less_url": self.links.react_url(_REACT_SLOT, paper.id, "less"),
        }


def render_digest(digest: Digest, *, links: DigestLinks, identity: MailIdentity) -> EmailPayload:
    """Render one digest (no shared cache); use one `DigestRenderer` for a whole run."""
    return DigestRenderer(links=links, identity=identity, cache_size=256).render(digest)


def subject_of(digest: Digest) -> str:
    """One line, no CR/LF: the week and the headline."""
    head = f"papertide weekly, {digest.week}"
    if digest.quiet:
        return f"{head}: a quiet week"
    spiking = digest.followed_spikes
    if spiking:
        names = ", ".join(s.name for s in spiking[:2])
        more = f" and {len(spiking) - 2} more" if len(spiking) > 2 else ""
        verb = "is" if len(spiking) == 1 else "are"
        return _one_line(f"{head}: {names}{more} {verb} spiking")
    total = sum(s.total for s in digest.sections)
    papers = "paper" if total == 1 else "papers"
    return f"{head}: {total} new {papers} in your topics"


@functools.lru_cache(maxsize=16)
def _domain_of(mail_from: str) -> str:
    return parseaddr(mail_from)[1].rpartition("@")[2] or "localhost"


def _text_html(text: str) -> str:
    """`text` escaped as the CSS inliner writes a text node (no quotes escaped), then
    made ASCII like every inlined fragment."""
    return ascii_html(
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace("\xa0", "&nbsp;")
    )  # fmt: skip


def _size(html: str) -> int:
    """Bytes of `html` in UTF-8 (`len` when ASCII, as inlined fragments are)."""
    return len(html) if html.isascii() else len(html.encode("utf-8"))


def _day(instant: datetime) -> str:
    return f"{_MONTHS[instant.month - 1]} {instant.day}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _chart(m: Momentum, labels: list[str]) -> dict[str, Any]:
    peak = max(m.weekly, default=0) or 1
    bars = [
        {"height": max(1, round(CHART_HEIGHT_PX * n / peak)), "count": n, "label": label}
        for n, label in zip(m.weekly, labels, strict=True)
    ]
    alt = f"Papers per week, {labels[0]} to {labels[-1]}: " + ", ".join(str(n) for n in m.weekly)
    return {"bars": bars, "alt": alt, "first": labels[0], "last": labels[-1]}
