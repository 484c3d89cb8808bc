"""Render a `Digest` into an email payload (bot/payloads.py shape). Pure: returns data.

HTML goes through jinja2 autoescape and css-inline; the text part is written to be
read on its own. The HTML stays under `MAX_HTML_BYTES` (Gmail clips near 102 KB and
would hide the unsubscribe link): big digests collapse their last topics into
one-line "view all" entries until it fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parseaddr
from pathlib import Path
from typing import Any

import css_inline
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from digests.build import Digest, DigestPaper, SpikeItem, TopicSection
from digests.links import DigestLinks
from digests.momentum import Momentum, chart_weeks, momentum_line

MAX_HTML_BYTES = 80_000
CHART_HEIGHT_PX = 28
_MAX_AUTHORS = 3
# Ways to shrink a digest that is too big, mildest first: (papers per topic, full sections).
_FIT_LADDER = ((None, None), (3, None), (3, 12), (3, 6), (2, 3), (0, 0))


def _template_dir() -> Path:
    # In a checkout templates/ sits beside the packages; wheels ship it as bot/_templates.
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "templates", here.parent / "bot" / "_templates"):
        if (candidate / "email").is_dir():
            return candidate
    return here.parent / "templates"


_LOADER = FileSystemLoader(str(_template_dir()))
_HTML_ENV = Environment(
    loader=_LOADER,
    autoescape=select_autoescape(["html", "html.j2"], default_for_string=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_TEXT_ENV = Environment(
    loader=_LOADER,
    autoescape=False,  # noqa: S701 - the plain-text part is not HTML
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_INLINER = css_inline.CSSInliner(keep_at_rules=True, load_remote_stylesheets=False)


@dataclass(frozen=True, slots=True)
class MailIdentity:
    """Sender facts every digest shares: From, and the List-Id built from its domain."""

    mail_from: str

    @property
    def domain(self) -> str:
        address = parseaddr(self.mail_from)[1]
        return address.rpartition("@")[2] or "localhost"

    @property
    def list_id(self) -> str:
        return f"papertide weekly digest <digest.{self.domain}>"


def render_digest(digest: Digest, *, links: DigestLinks, identity: MailIdentity) -> dict[str, Any]:
    """The email payload `{"to", "subject", "text", "html", "headers"}` of one digest."""
    unsubscribe = links.unsubscribe_url(digest.recipient)
    base = _context(digest, links, unsubscribe)
    html = ""
    for cap, full in _FIT_LADDER:
        html = _render_html(_fit(base, cap, full))
        if len(html.encode("utf-8")) <= MAX_HTML_BYTES:
            break
    text = _TEXT_ENV.get_template("email/digest.txt.j2").render(**base)
    mailto = links.unsubscribe_mailto(digest.recipient)
    return {
        "to": digest.recipient.email,
        "subject": subject_of(digest),
        "text": text,
        "html": html,
        "headers": {
            "List-Id": identity.list_id,
            "List-Unsubscribe": f"<{unsubscribe}>, <{mailto}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    }


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


def _day(instant: datetime) -> str:
    return f"{instant:%b} {instant.day}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _render_html(context: dict[str, Any]) -> str:
    raw = _HTML_ENV.get_template("email/digest.html.j2").render(**context)
    return str(_INLINER.inline(raw))


def _fit(base: dict[str, Any], cap: int | None, full: int | None) -> dict[str, Any]:
    if cap is None and full is None:
        return base
    sections = []
    for i, section in enumerate(base["sections"]):
        collapsed = full is not None and i >= full
        papers = [] if collapsed else section["papers"][: cap if cap is not None else None]
        sections.append(
            section
            | {
                "papers": papers,
                "more": section["total"] - len(papers),
                "chart": None if collapsed else section["chart"],
                "collapsed": collapsed,
            }
        )
    return base | {"sections": sections}


def _context(digest: Digest, links: DigestLinks, unsubscribe: str) -> dict[str, Any]:
    monday = digest.as_of - timedelta(days=7)
    labels = [_day(w) for w in chart_weeks(digest.as_of)]
    return {
        "week": digest.week,
        "week_label": f"Week of {_day(monday)}, {monday.year}",
        "universe": digest.universe,
        "quiet": digest.quiet,
        "follows_nothing": digest.follows_nothing,
        "followed_spikes": [
            _spike(s, links, labels, digest.universe) for s in digest.followed_spikes
        ],
        "suggestions": [_spike(s, links, labels, digest.universe) for s in digest.suggestions],
        "sections": [_section(s, links, labels, digest.universe) for s in digest.sections],
        "alerts": [
            {"query": a.query, "papers": [_paper(p, links, False) for p in a.papers]}
            for a in digest.alerts
        ],
        "manage_url": links.manage_url(digest.recipient),
        "unsubscribe_url": unsubscribe,
        "email": digest.recipient.email,
    }


def _spike(item: SpikeItem, links: DigestLinks, labels: list[str], universe: str) -> dict[str, Any]:
    return {
        "name": item.name,
        "url": links.topic_url(item.slug),
        "line": momentum_line(item.momentum, universe),
        "chart": _chart(item.momentum, labels),
    }


def _section(
    section: TopicSection, links: DigestLinks, labels: list[str], universe: str
) -> dict[str, Any]:
    m = section.momentum
    return {
        "name": section.name,
        "url": links.topic_url(section.slug),
        "line": momentum_line(m, universe) if m is not None else "",
        "chart": _chart(m, labels) if m is not None else None,
        "papers": [_paper(p, links, p.id in section.alert_hits) for p in section.papers],
        "total": section.total,
        "more": section.more,
        "collapsed": False,
    }


def _paper(paper: DigestPaper, links: DigestLinks, alert: bool) -> dict[str, Any]:
    names = list(paper.authors[:_MAX_AUTHORS])
    extra = len(paper.authors) - len(names)
    return {
        "title": _one_line(paper.title),
        "url": links.paper_url(paper.id, paper.url),
        "authors": ", ".join(names) + (f" +{extra}" if extra > 0 else ""),
        "category": paper.primary_category,
        "date": _day(paper.published),
        "alert": alert,
    }


def _chart(m: Momentum, labels: list[str]) -> dict[str, Any]:
    peak = max(m.weekly, default=0) or 1
    bars = [
        {"height": max(1, round(CHART_HEIGHT_PX * n / peak)), "count": n, "label": label}
        for n, label in zip(m.weekly, labels, strict=True)
    ]
    alt = f"Papers per week, {labels[0]} to {labels[-1]}: " + ", ".join(str(n) for n in m.weekly)
    return {"bars": bars, "alt": alt, "first": labels[0], "last": labels[-1]}
