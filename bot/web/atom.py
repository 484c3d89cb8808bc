"""Atom 1.0 feed of a topic's latest papers (RFC 4287), built with ElementTree.

ElementTree escapes text and attributes; we also drop the control characters XML 1.0
cannot carry at all, so a hostile title can neither break nor inject markup.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import datetime

from bot.web.topic_data import PaperView

ATOM_NS = "http://www.w3.org/2005/Atom"
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _XML_INVALID.sub("", text)


def _add(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, f"{{{ATOM_NS}}}{tag}", {k: _clean(v) for k, v in attrs.items()})
    if text is not None:
        element.text = _clean(text)
    return element


def build_feed(
    *,
    title: str,
    feed_url: str,
    page_url: str,
    papers: Sequence[PaperView],
    updated: datetime,
) -> bytes:
    """The feed document as UTF-8 bytes with an XML declaration."""
    ET.register_namespace("", ATOM_NS)
    feed = ET.Element(f"{{{ATOM_NS}}}feed")
    _add(feed, "id", feed_url)
    _add(feed, "title", title)
    newest = max((p.updated for p in papers), default=updated)
    _add(feed, "updated", newest.isoformat())
    _add(feed, "link", rel="self", type="application/atom+xml", href=feed_url)
    _add(feed, "link", rel="alternate", type="text/html", href=page_url)
    _add(feed, "generator", "papertide")
    _add(_add(feed, "author"), "name", "papertide")  # entries without authors inherit it
    for paper in papers:
        entry = _add(feed, "entry")
        _add(entry, "id", paper.url or f"{page_url}#{paper.id}")
        _add(entry, "title", paper.title)
        _add(entry, "updated", paper.updated.isoformat())
        _add(entry, "published", paper.published.isoformat())
        if paper.url:
            _add(entry, "link", rel="alternate", href=paper.url)
        for name in paper.authors:
            _add(_add(entry, "author"), "name", name)
        for category in paper.categories:
            _add(entry, "category", term=category)
        _add(entry, "summary", paper.abstract, type="text")
    return bytes(ET.tostring(feed, encoding="utf-8", xml_declaration=True))
