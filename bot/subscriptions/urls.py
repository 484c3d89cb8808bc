"""The one place where papertide's public routes and absolute links are spelled.

The web app registers these paths; mails, digests, chat replies and feeds build their
links with `PublicUrls`. Tokens and slugs are percent-encoded here, once.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

TOPICS = "/topics"
TOPIC = "/topics/{slug}"
TOPIC_FEED = "/topics/{slug}.atom"
TOPIC_ASK = "/topics/{slug}/ask"
EMERGING = "/emerging"
SUBSCRIBE = "/subscribe"
SUBSCRIBE_SENT = "/subscribe/sent"
CONFIRM = "/confirm/{token}"
LINK = "/link/{token}"
UNSUBSCRIBE = "/unsubscribe/{token}"
MANAGE = "/manage/{token}"
MANAGE_REACTIONS = "/manage/{token}/reactions"
REACT = "/react/{token}"  # ?paper=<paper id>&leaning=more|less
STATIC_CSS = "/static/site.css"
HEALTHZ = "/healthz"
METRICS = "/metrics"


def _slug(slug: str) -> str:
    return quote(slug, safe="")


def _token(token: str) -> str:
    return quote(token, safe="")


def topic_path(slug: str) -> str:
    return TOPIC.format(slug=_slug(slug))


def topic_search_path(slug: str, question: str) -> str:
    """The topic page listing the papers that match a question (`?q=`)."""
    return topic_path(slug) + "?" + urlencode({"q": question})


def topic_ask_path(slug: str, question: str | None = None) -> str:
    """The answer page of a question (without one: where the ask box sends it)."""
    path = TOPIC_ASK.format(slug=_slug(slug))
    return path if question is None else path + "?" + urlencode({"q": question})


def topic_ask_box_path(slug: str) -> str:
    """The topic page, scrolled to its 'Ask about this topic' box (the digest's `ask`)."""
    return topic_path(slug) + "#ask"


def manage_path(token: str) -> str:
    return MANAGE.format(token=_token(token))


def manage_reactions_path(token: str) -> str:
    """Where the manage page's Undo and "Erase all reactions" buttons post."""
    return MANAGE_REACTIONS.format(token=_token(token))


def react_path(token: str, paper_id: str, leaning: str) -> str:
    """A digest's "More / Less like this": the paper and leaning ride in the query, the
    person's react token in the path."""
    return (
        REACT.format(token=_token(token)) + "?" + urlencode({"paper": paper_id, "leaning": leaning})
    )


def confirm_path(token: str) -> str:
    return CONFIRM.format(token=_token(token))


def link_path(token: str) -> str:
    return LINK.format(token=_token(token))


def unsubscribe_path(token: str) -> str:
    return UNSUBSCRIBE.format(token=_token(token))


class PublicUrls:
    """Absolute links under `PAPERTIDE_PUBLIC_URL`."""

    def __init__(self, public_url: str) -> None:
        self.base = public_url.rstrip("/")

    def absolute(self, path: str) -> str:
        return self.base + path

    def topic(self, slug: str) -> str:
        return self.absolute(topic_path(slug))

    def topic_search(self, slug: str, question: str) -> str:
        return self.absolute(topic_search_path(slug, question))

    def topic_ask(self, slug: str, question: str | None = None) -> str:
        return self.absolute(topic_ask_path(slug, question))

    def topic_ask_box(self, slug: str) -> str:
        return self.absolute(topic_ask_box_path(slug))

    def topic_feed(self, slug: str) -> str:
        return self.absolute(TOPIC_FEED.format(slug=_slug(slug)))

    def emerging(self) -> str:
        return self.absolute(EMERGING)

    def confirm(self, token: str) -> str:
        return self.absolute(confirm_path(token))

    def link(self, token: str) -> str:
        return self.absolute(link_path(token))

    def unsubscribe(self, token: str) -> str:
        return self.absolute(unsubscribe_path(token))

    def manage(self, token: str) -> str:
        return self.absolute(manage_path(token))

    def react(self, token: str, paper_id: str, leaning: str) -> str:
        return self.absolute(react_path(token, paper_id, leaning))
