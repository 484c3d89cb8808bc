"""JSON shapes shared by the outbox, the chat adapters, the digest and the CLI.

A paper in a payload or in `--json` output:
    {"id", "version", "title", "abstract", "authors": [{"name", "affiliations"}],
     "categories" (primary first), "published", "updated" (ISO 8601), "url", "pdf_url",
     "comment", "journal_ref", "doi"}
A PAPER message payload:  {"paper": <paper>, "reasons": [<reason>, ...]}
A PAPER_GROUP payload:    {"items": [{"paper": <paper>, "reasons": [...]}, ...]}
A reason:  {"kind": "topic", "id", "slug", "name", "terms": [...]}
        or {"kind": "alert", "id", "query", "terms": [...]}
An email payload (DIGEST, CONFIRM): {"to", "subject", "text", "html", "headers": {...}}
"""

from __future__ import annotations

from typing import Any

from bot.store.models import Paper


def abs_url(paper_id: str) -> str:
    return f"https://arxiv.org/abs/{paper_id}"


def paper_payload(paper: Paper) -> dict[str, Any]:
    """The one JSON shape of a paper that every consumer reads."""
    is_arxiv = ":" not in paper.id
    return {
        "id": paper.id,
        "version": paper.version,
        "title": paper.title,
        "abstract": paper.abstract,
        "authors": [
            {"name": a.get("name", ""), "affiliations": list(a.get("affiliations", []))}
            for a in paper.authors
        ],
        "categories": list(paper.categories),
        "published": paper.published.isoformat(),
        "updated": paper.updated.isoformat(),
        "url": paper.links.get("abs") or (abs_url(paper.id) if is_arxiv else ""),
        "pdf_url": paper.links.get("pdf", ""),
        "comment": paper.comment,
        "journal_ref": paper.journal_ref,
        "doi": paper.doi or "",
    }
