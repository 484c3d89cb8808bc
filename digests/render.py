"""Render a `Digest` into an email payload (bot/payloads.py shape). Pure: returns data.

HTML goes through jinja2 autoescape and css-inline; the text part is written to be
read on its own. The HTML stays under `MAX_HTML_BYTES` (Gmail clips near 102 KB and
would hide the unsubscribe link): big digests collapse their last topics into
one-line "view all" entries until it fits.

A topic's section looks the same for everyone who follows it (unless their alerts
reorder it), so `DigestRenderer` renders and inlines each fragment once per run and
reuses it (digests/fragments.py): memory stays flat in the number of recipients.
Here: the page shell, the head (intro, spikes, rising phrases), the alerts and footer,
and fitting the HTML; topic sections are digests/sections.py's, "You may have missed"
digests/missed.py's, and every template's data digests/context.py's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from email.utils import parseaddr
from typing import Any

from markupsafe import Markup, escape

from bot.outbox.payloads import EmailPayload
from digests.build import Digest
from digests.context import TemplateData, day, one_line
from digests.fragments import Fragments, ascii_html, template
from digests.links import DigestLinks
from digests.missed import MissedSection
from digests.sections import TopicSections

MAX_HTML_BYTES = 80_000
# Ways to shrink a digest that is too big, mildest first: (papers per topic, full sections).
_FIT_LADDER = ((None, None), (3, None), (3, 12), (3, 6), (2, 3), (0, 0))


# A fragment around the sections: (template, key without the part, context, arguments).
_Piece = tuple[str, tuple[Any, ...], Callable[..., dict[str, Any]], tuple[Any, ...]]

_BODY_SLOT = "ptslotbody"
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
        # One run's fragments (digests/fragments.py), shared by every part of a digest.
        self._fragments = Fragments(cache_size)
        self._data = TemplateData(links)
        self._sections = TopicSections(self._fragments, self._data)
        self._missed = MissedSection(self._fragments, self._data)
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
        plan = self._plan(digest)
        head_html, tail_html = self._parts(digest, "html", plan, footer)
        react = self.links.react_token(recipient)
        before, after = self._shell(digest.week)
        html = ""
        for cap, full in _FIT_LADDER:
            sections = self._sections.render(digest, "html", cap, full)
            html = self._fragments.filled([before, *head_html, *sections, *tail_html, after], react)
            if _size(html) - len(before) - len(after) <= MAX_HTML_BYTES:  # the body's
                break
        head_text, tail_text = self._parts(digest, "txt", plan, footer)
        sections = self._sections.render(digest, "txt", None, None)
        text = self._fragments.filled([*head_text, *sections, *tail_text], react)
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
            self._sections.warm(digests, ext)
            self._missed.warm(digests, ext)

    def _plan(self, digest: Digest) -> tuple[list[_Piece], list[_Piece]]:
        """The fragments around the sections, before and after, as (template, key tail,
        context, its arguments): the same for both parts, so worked out once a digest."""
        week, universe = digest.week, digest.universe
        monday = digest.as_of - timedelta(days=7)
        intro = {
            "week": week,
            "week_label": f"Week of {day(monday)}, {monday.year}",
            "universe": universe,
            "quiet": digest.quiet,
            "follows_nothing": digest.follows_nothing,
        }
        head: list[_Piece] = [("_intro", ("intro", *intro.values()), dict, (intro,))]
        labels = self._data.labels(digest.as_of)
        for heading, items, with_chart in (
            ("Spiking in your topics", digest.followed_spikes, True),
            ("Spiking elsewhere: you may want to follow", digest.suggestions, False),
        ):
            if items:
                key = ("spikes", week, heading, tuple(s.slug for s in items))
                spikes = (heading, items, with_chart, labels, universe)
                head.append(("_spikes", key, self._data.spikes, spikes))
        if digest.emerging:
            rising = ("emerging", week, tuple(e.words for e in digest.emerging))
            head.append(("_emerging", rising, self._data.emerging, (digest.emerging,)))
        tail: list[_Piece] = []
        alerts = tuple(a for a in digest.alerts if a.papers)
        if alerts:
            seen = tuple((a.query, tuple(p.id for p in a.papers)) for a in alerts)
            tail.append(("_alerts", ("alerts", seen), self._data.alerts, (alerts,)))
        return head, tail

    def _parts(
        self, digest: Digest, ext: str, plan: tuple[list[_Piece], list[_Piece]],
        footer: dict[str, str],
    ) -> tuple[list[str], list[str]]:  # fmt: skip
        cached = self._fragments.cached
        head = [
            cached((ext, key), name, ext, context, *args) for name, key, context, args in plan[0]
        ]
        tail = self._missed.render(digest, ext) if digest.missed else []
        tail += [
            cached((ext, key), name, ext, context, *args) for name, key, context, args in plan[1]
        ]
        tail.append(self._footer(ext, footer))
        return head, tail

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
        text = self._fragments.cached(("footer", ext), "_footer", ext, dict, _FOOTER_SLOTS)
        for name, slot in _FOOTER_SLOTS.items():
            value = footer[name]
            text = text.replace(slot, value if ext == "txt" else str(escape(value)))
        return text


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
        return one_line(f"{head}: {names}{more} {verb} spiking")
    total = sum(s.total for s in digest.sections)
    papers = "paper" if total == 1 else "papers"
    return f"{head}: {total} new {papers} in your topics"


@functools.lru_cache(maxsize=16)
def _domain_of(mail_from: str) -> str:
    return parseaddr(mail_from)[1].rpartition("@")[2] or "localhost"


def _size(html: str) -> int:
    """Bytes of `html` in UTF-8 (`len` when ASCII, as inlined fragments are)."""
    return len(html) if html.isascii() else len(html.encode("utf-8"))
