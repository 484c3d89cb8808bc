"""One compiled engine that matches papers against every topic and every active alert.

How a paper is matched, and why it costs what the paper and its candidate queries
cost, never what the total number of alerts costs:

1. Every term of every query becomes a `Pattern` (folded words; interned, so 3,000
   alerts on `GRPO` share one pattern, verified once per paper).
2. Each query is indexed under a few *anchor* patterns: one pattern of the rarest
   conjunct of an AND, every alternative of an OR. A query can only match if one of
   its anchors matches (a query always needs a positive term, see bot.query).
3. Each anchor pattern is indexed under one word that any paper it matches must
   contain (an exact word, or a prefix for `agent*`). A paper's distinct words are
   intersected with that word index (hash lookups; prefixes through a cached
   per-word table), matching patterns are verified on the words (word boundaries,
   phrases, author names), and only the queries they anchor are evaluated.

Adding or removing an alert touches only that alert's patterns and index entries.
User input is never turned into a regular expression.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from bot.errors import PapertideError, QueryError
from bot.match_terms import (
    Pattern,
    Tree,
    compile_term,
    compile_tree,
    holds,
    pattern_matches,
    positive_leaves,
    term_label,
    unique,
)
from bot.query import Node, Term, format_query, make_and, make_or, parse_query
from bot.store.models import Alert, Paper, Topic
from bot.textnorm import PaperText
from bot.timeutil import as_utc, utcnow
from bot.types import Author, Match, MatchKind, PaperRecord

log = logging.getLogger(__name__)

_PREFIX_CACHE_LIMIT = 200_000


def _pattern_cost(pattern: Pattern) -> int:
    """Guess how often a pattern matches (lower = rarer), to choose anchors."""
    if pattern.field == "cat":
        return 5000 if pattern.prefix else 1000
    if pattern.field == "au":
        return 1
    if len(pattern.words) > 1:
        return 3
    return 300 if pattern.prefix else max(5, 40 - len(pattern.words[0]))


def _index_key(pattern: Pattern) -> tuple[str, bool]:
    """A word every matching paper contains in the field: (word, is_prefix)."""
    if pattern.field == "cat":
        return pattern.words[0], pattern.prefix
    found = pattern.words[-pattern.surname :] if pattern.field == "au" else pattern.words
    exact = found[:-1] if pattern.prefix else found
    if exact:
        return max(exact, key=len), False
    return found[-1], True


def topic_query(query: str, categories: Sequence[str]) -> Node | None:
    """A topic as one tree: its query AND one of its categories (either may be empty)."""
    cats: list[Node] = []
    for raw in categories:
        value = raw.strip()
        if value:
            cats.append(Term("cat", value.rstrip("*"), prefix=value.endswith("*")))
    parts: list[Node] = [parse_query(query)] if query.strip() else []
    if cats:
        parts.append(make_or(cats))
    return make_and(parts, []) if parts else None


@dataclass(slots=True)
class _Query:
    kind: MatchKind
    ref_id: int
    tree: Tree
    labels: dict[int, str]  # pattern id -> the term as the user wrote it
    anchors: frozenset[int]
    uses: Counter[int]  # pattern id -> how often this query uses it


class MatchEngine:
    """The compiled engine (a `PaperMatcher`): topics and alerts, one index."""

    def __init__(self) -> None:
        self._ids: dict[Pattern, int] = {}
        self._patterns: dict[int, Pattern] = {}
        self._uses: Counter[int] = Counter()
        self._next_id = 0
        self._queries: dict[tuple[MatchKind, int], _Query] = {}
        self._direct: dict[int, set[tuple[MatchKind, int]]] = {}  # query == one pattern
        self._nested: dict[int, set[tuple[MatchKind, int]]] = {}  # pattern anchors a tree
        self._exact: dict[str, dict[str, set[int]]] = {}  # field -> word -> pattern ids
        self._prefix: dict[str, dict[str, set[int]]] = {}  # field -> prefix -> pattern ids
        self._prefix_lengths: dict[str, Counter[int]] = {}
        # field -> paper word -> pattern ids whose prefix it starts with (vocabularies
        # are Zipf-skewed, so most words of a paper were seen before)
        self._prefix_cache: dict[str, dict[str, tuple[int, ...]]] = {}
        self._anchoring: Counter[int] = Counter()  # pattern id -> queries it anchors

    def __len__(self) -> int:
        return len(self._queries)

    def add_alert(self, alert_id: int, query: str | Node) -> None:
        """Add (or replace) one alert; raises QueryError when the query is malformed."""
        node = parse_query(query) if isinstance(query, str) else query
        self._add(MatchKind.ALERT, alert_id, node)

    def remove_alert(self, alert_id: int) -> bool:
        return self._remove((MatchKind.ALERT, alert_id))

    def add_topic(self, topic_id: int, query: str, categories: Sequence[str] = ()) -> None:
        """Add (or replace) a topic: its categories (if any) AND its query (if any)."""
        node = topic_query(query, categories)
        if node is None:
            log.warning("matching.empty_topic", extra={"topic_id": topic_id})
            self._remove((MatchKind.TOPIC, topic_id))
            return
        self._add(MatchKind.TOPIC, topic_id, node)

    def remove_topic(self, topic_id: int) -> bool:
        return self._remove((MatchKind.TOPIC, topic_id))

    def match(self, paper: PaperRecord) -> list[Match]:
        """Every topic and alert the paper matches, with the terms that fired."""
        text = PaperText(paper)
        known: dict[int, bool] = {}
        patterns = self._patterns

        def test(pid: int) -> bool:
            hit = known.get(pid)
            if hit is None:
                hit = known[pid] = pattern_matches(patterns[pid], text)
            return hit

        found: list[Match] = []
        nested: set[tuple[MatchKind, int]] = set()
        for pid in self._candidates(text):
            if pid in known or not test(pid):
                continue
            for kind, ref_id in self._direct.get(pid, ()):
                label = self._queries[kind, ref_id].labels[pid]
                found.append(Match(paper.id, kind, ref_id, (label,)))
            nested.update(self._nested.get(pid, ()))
        for key in nested:
            query = self._queries[key]
            if holds(query.tree, test):
                terms = unique(query.labels[i] for i in positive_leaves(query.tree) if test(i))
                found.append(Match(paper.id, key[0], key[1], terms))
        found.sort(key=lambda m: (m.kind, m.ref_id))
        return found

    def _candidates(self, text: PaperText) -> list[int]:
        """Anchor patterns whose index word the paper has (exact words, then prefixes)."""
        hits: list[int] = []
        for name, index in self._exact.items():
            keys = text.category_keys if name == "cat" else text.tokens(name)
            for word in index.keys() & keys:
                hits.extend(index[word])
        for name, index in self._prefix.items():
            cache = self._prefix_cache.setdefault(name, {})
            if len(cache) > _PREFIX_CACHE_LIMIT:
                cache.clear()
            lengths = self._prefix_lengths[name]
            words_ = text.categories if name == "cat" else text.tokens(name)
            for word in words_:
                found = cache.get(word)
                if found is None:
                    found = cache[word] = tuple(
                        pid for n in lengths if n <= len(word) for pid in index.get(word[:n], ())
                    )
                hits.extend(found)
        return hits

    def _add(self, kind: MatchKind, ref_id: int, node: Node) -> None:
        key = (kind, ref_id)
        self._remove(key)
        labels: dict[int, str] = {}
        uses: Counter[int] = Counter()

        def leaf(term: Term) -> int:
            pid = self._intern(compile_term(term))
            labels.setdefault(pid, term_label(term))
            uses[pid] += 1
            return pid

        tree = compile_tree(node, leaf)
        anchors = frozenset(self._anchors(tree))
        self._queries[key] = _Query(kind, ref_id, tree, labels, anchors, uses)
        table = self._direct if isinstance(tree, int) else self._nested
        for pid in anchors:
            table.setdefault(pid, set()).add(key)
            self._anchoring[pid] += 1
            if self._anchoring[pid] == 1:
                self._index(pid, add=True)

    def _remove(self, key: tuple[MatchKind, int]) -> bool:
        query = self._queries.pop(key, None)
        if query is None:
            return False
        table = self._direct if isinstance(query.tree, int) else self._nested
        for pid in query.anchors:
            keys = table[pid]
            keys.discard(key)
            if not keys:
                del table[pid]
            self._anchoring[pid] -= 1
            if not self._anchoring[pid]:
                del self._anchoring[pid]
                self._index(pid, add=False)
        for pid, count in query.uses.items():
            self._uses[pid] -= count
            if not self._uses[pid]:
                del self._uses[pid], self._ids[self._patterns.pop(pid)]
        return True

    def _intern(self, pattern: Pattern) -> int:
        pid = self._ids.get(pattern)
        if pid is None:
            pid = self._ids[pattern] = self._next_id
            self._patterns[pid] = pattern
            self._next_id += 1
        self._uses[pid] += 1
        return pid

    def _anchors(self, tree: Tree) -> set[int]:
        """Patterns under which to index a query: one of them must match for it to."""
        if isinstance(tree, int):
            return {tree}
        is_or, items, _ = tree
        options = [self._anchors(item) for item in items]
        if is_or:
            return set().union(*options)
        return min(options, key=lambda s: sum(_pattern_cost(self._patterns[p]) for p in s))

    def _index(self, pid: int, *, add: bool) -> None:
        pattern = self._patterns[pid]
        word, is_prefix = _index_key(pattern)
        field = pattern.field
        table = (self._prefix if is_prefix else self._exact).setdefault(field, {})
        if is_prefix:
            self._prefix_cache.pop(field, None)  # O(1): a fresh cache refills lazily
            self._prefix_lengths.setdefault(field, Counter())[len(word)] += 1 if add else -1
            self._prefix_lengths[field] += Counter()  # drop lengths no prefix has
        if add:
            table.setdefault(word, set()).add(pid)
            return
        table[word].discard(pid)
        if not table[word]:
            del table[word]


def record_from_paper(paper: Paper) -> PaperRecord:
    """A stored paper row as the record the matcher reads."""
    return PaperRecord(
        id=paper.id,
        version=paper.version,
        title=paper.title,
        abstract=paper.abstract,
        authors=tuple(
            Author(str(a.get("name", "")), tuple(str(x) for x in a.get("affiliations") or ()))
            for a in paper.authors
        ),
        categories=tuple(paper.categories),
        published=as_utc(paper.published),
        updated=as_utc(paper.updated),
        source=paper.source,
        comment=paper.comment,
        journal_ref=paper.journal_ref,
        doi=paper.doi or "",
        links=dict(paper.links),
    )


async def load_engine(*, session: AsyncSession) -> MatchEngine:
    """Compile the engine from all active topics and active alerts in the store.

    A stored query that no longer parses is logged and skipped, never fatal.
    """
    engine = MatchEngine()
    topics = await session.execute(select(Topic).where(col(Topic.active).is_(True)))
    for topic in topics.scalars():
        assert topic.id is not None
        try:
            engine.add_topic(topic.id, topic.query, topic.categories)
        except QueryError as exc:
            log.warning("matching.bad_topic", extra={"topic": topic.slug, "error": str(exc)})
    alerts = await session.execute(select(Alert.id, Alert.query).where(col(Alert.active).is_(True)))
    for alert_id, query in alerts:
        try:
            engine.add_alert(alert_id, query)
        except QueryError as exc:
            log.warning("matching.bad_alert", extra={"alert_id": alert_id, "error": str(exc)})
    log.info("matching.loaded", extra={"queries": len(engine)})
    return engine


@dataclass(frozen=True, slots=True)
class TrialHit:
    paper: Paper
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class QueryTrial:
    """What a query would have matched: `count` papers since `since`, newest `hits`."""

    query: str  # canonical form
    weeks: int
    since: datetime
    count: int
    scanned: int
    hits: list[TrialHit] = field(default_factory=list)


async def test_query(
    *,
    session: AsyncSession,
    expr: str,
    weeks: int = 4,  # noqa: PT028 (not a pytest test: the name is the command's)
    now: datetime | None = None,  # noqa: PT028
    limit: int = 5,  # noqa: PT028
) -> QueryTrial:
    """Try a query on the store's papers published in the last `weeks` weeks.

    Raises QueryError for a malformed query. Papers stream newest first, so the first
    `limit` hits are the most recent ones; `count` covers the whole window.
    """
    if not 1 <= weeks <= 52:
        raise PapertideError(f"weeks must be between 1 and 52, not {weeks}")
    node = parse_query(expr)
    engine = MatchEngine()
    engine.add_alert(0, node)
    since = as_utc(now or utcnow()) - timedelta(weeks=weeks)
    stmt = (
        select(Paper)
        .where(col(Paper.published) >= since)
        .order_by(col(Paper.published).desc(), col(Paper.id))
        .execution_options(yield_per=500)
    )
    count = scanned = 0
    hits: list[TrialHit] = []
    async for paper in (await session.stream(stmt)).scalars():
        scanned += 1
        found = engine.match(record_from_paper(paper))
        if found:
            count += 1
            if len(hits) < limit:
                hits.append(TrialHit(paper, found[0].terms))
    return QueryTrial(format_query(node), weeks, since, count, scanned, hits)


test_query.__test__ = False  # type: ignore[attr-defined]  # pytest must not collect it
