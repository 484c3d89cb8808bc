"""The one registry of sources: a new source is one module plus one line here."""

from __future__ import annotations

from bot.errors import ConfigError
from bot.ingest.sources import arxiv_api, arxiv_rss, feed, sample
from bot.ingest.sources.base import Source, SourceContext, SourceFactory
from bot.store.models import SourceState

# A source's name keys its stored state (`feed:<url>` included), so it must fit the key.
NAME_CHARS: int = SourceState.__table__.c.name.type.length  # type: ignore[attr-defined]

SOURCES: dict[str, SourceFactory] = {
    "arxiv": arxiv_api.create,
    "arxiv-rss": arxiv_rss.create,
    "sample": sample.create,
    "feed:": feed.create,  # a prefix: feed:<url>
}


def source_names() -> list[str]:
    """Names a user may configure (`feed:` takes a URL after the colon)."""
    return list(SOURCES)


def check_source_name(name: str) -> None:
    """Raise ConfigError for a name that cannot key a source's stored state."""
    if len(name) > NAME_CHARS:
        raise ConfigError(
            f"source name {name[:40]!r}… is longer than {NAME_CHARS} characters",
            variable="PAPERTIDE_SOURCES",
        )


def create_source(name: str, ctx: SourceContext) -> Source:
    """Build the source called `name`; raises ConfigError for an unknown name."""
    check_source_name(name)
    factory = SOURCES.get("feed:" if name.startswith("feed:") else name)
    if factory is None:
        known = ", ".join(source_names())
        raise ConfigError(f"unknown source {name!r}; known: {known}", variable="PAPERTIDE_SOURCES")
    return factory(name, ctx)
