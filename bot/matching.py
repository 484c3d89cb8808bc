"""One compiled engine that matches papers against every topic and every active alert.

How a paper is matched, and why it costs what the paper and its candidate queries
cost, never what the total number of alerts costs:

1. Every term of every query becomes a `Pattern` (folded words; interned, so 3,000
   alerts on `GRPO` share one pattern, decided once per paper).
2. Every pattern is indexed under one key that any paper it matches must have: an
   exact word of its field, a word prefix (`agent*`), a category, or for names the
   (surname, initial) pair. A paper's distinct words are intersected with these
   hash tables (prefixes through a per-word cache); one-word patterns found there
   match outright, phrases and names are verified on the paper's words (word
   boundaries, one segment). The result is the exact set of patterns the paper has.
3. Each query is listed under a few *anchor* patterns (every alternative of an OR,
   the rarest-looking conjunct of an AND): a query can only match if an anchor does,
   since a query always needs a positive term (see bot.query). Only the queries
   anchored by the paper's patterns are evaluated, by set lookups.

The index is a token-hash equivalent of a multi-pattern automaton: it needs no
rebuild, so adding or removing an alert touches only that alert's patterns and index
entries. User input is never turned into a regular expression.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

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
NAME_KEYS = "au:name"  # the key space of (surname, first initial) pairs


def _pattern_cost(pattern: Pattern) -> int:
    """Guess how often a pattern matches (lower = rarer), to choose anchors."""
    if pattern.field == "cat":
        return 5000 if pattern.prefix else 1000
    if pattern.field == "au":
        return 1
    if len(pattern.words) > 1:
        return 3
    return 300 if pattern.prefix else max(5, 40 - len(pattern.words[0]))


def _index_key(pattern: Pattern) -> tuple[str, str, bool]:
    """Where to index a pattern: (key space, key, is_prefix).

    The key is something every paper the pattern matches has: an exact word of the
    field, a prefix of one, or for a name with a given name the `surname initial` pair
    (`wu y`) that PaperText.name_keys lists, so `au:"Yi Wu"` is not a candidate for
    every paper by some Wu.
    """
    field, found = pattern.field, pattern.words
    if field == "cat":
        return field, found[0], pattern.prefix
    if field == "au":
        cut = len(found) - pattern.surname
        if cut and not pattern.prefix:
            return NAME_KEYS, f"{found[cut]} {found[0][0]}", False
        found = found[cut:]
    exact = found[:-1] if pattern.prefix else found
    if exact:
        return field, max(exact, key=len), False
    # Title and abstract prefixes share one space: each paper word is looked up once.
    return ("all" if field in ("ti", "abs") else field), found[-1], True


def _paper_keys(text: PaperText, space: str) -> frozenset[str]:
    if space == "cat":
        return text.category_keys
    if space == NAME_KEYS:
        return text.name_keys
    return text.tokens(space)


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
    anchors: frozenset[int]
    positive: tuple[tuple[int, str], ...]  # (pattern id, label) outside exclusions
    uses: Counter[int]  # pattern id -> how often this query uses it


class MatchEngine:
    """The compiled engine (a `PaperMatcher`): topics and alerts, one index."""

    def __init__(self) -> None:
        self._ids: dict[Pattern, int] = {}
        self._patterns: dict[int, Pattern] = {}
        self._uses: Counter[int] = Counter()
        self._next_id = 0
        # Queries by a plain int slot: enum members hash in Python, ints in C.
        self._slots: dict[tuple[MatchKind, int], int] = {}
        self._queries: dict[int, _Query] = {}
        self._next_slot = 0
        # pattern id -> queries that are just that pattern -> their Match.terms
        self._direct: dict[int, dict[int, tuple[MatchKind, int, tuple[str]]]] = {}
        self._nested: dict[int, set[int]] = {}  # pattern anchors a tree
        # key space (field, or NAME_KEYS) -> word -> pattern ids
        self._sure: dict[str, dict[str, set[int]]] = {}  # match whenever the word is there
        self._exact: dict[str, dict[str, set[int]]] = {}  # to verify (phrases, names)
        self._prefix: dict[str, dict[str, set[int]]] = {}  # field -> prefix -> pattern ids
        self._prefix_lengths: dict[str, Counter[int]] = {}
        # field -> paper word -> pattern ids whose prefix it starts with (vocabularies
        # are Zipf-skewed, so most words of a paper were seen before)
        self._prefix_cache: dict[str, dict[str, tuple[int, ...]]] = {}

    def __len__(self) -> int:
        return len(self._queries)

    def stats(self) -> dict[str, int]:
        """Sizes, for diagnostics: queries, distinct patterns, index keys."""
        tables = (*self._sure.values(), *self._exact.values(), *self._prefix.values())
        return {
            "queries": len(self._queries),
            "patterns": len(self._patterns),
            "index_keys": sum(len(table) for table in tables),
        }

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
        """Every topic and alert the paper matches (in no particular order), with the
        terms that fired."""
        text = PaperText(paper)
        sure, check = self._candidates(text)
        # Every pattern is indexed, so after this `true` holds exactly the patterns
        # the paper matches: evaluating a query is then set lookups, no text work.
        true = set(sure)
        patterns = self._patterns
        for pid in set(check).difference(true):
            if pattern_matches(patterns[pid], text):
                true.add(pid)
        paper_id = paper.id
        found: list[Match] = []
        nested: set[int] = set()
        direct, anchored = self._direct, self._nested
        for pid in direct.keys() & true:  # iterates the (small) set `true`, in C
            found += [Match(paper_id, k, r, terms) for k, r, terms in direct[pid].values()]
        nested = nested.union(*[anchored[pid] for pid in anchored.keys() & true])
        queries, test = self._queries, true.__contains__
        for slot in nested:
            query = queries[slot]
            if holds(query.tree, test):
                terms = unique([label for i, label in query.positive if i in true])
                found.append(Match(paper_id, query.kind, query.ref_id, terms))
        return found

    def _candidates(self, text: PaperText) -> tuple[list[int], list[int]]:
        """Anchor patterns whose index key the paper has: (sure to match, to verify)."""
        sure: list[int] = []
        for space, index in self._sure.items():
            for word in index.keys() & _paper_keys(text, space):
                sure.extend(index[word])
        check: list[int] = []
        for space, index in self._exact.items():
            for word in index.keys() & _paper_keys(text, space):
                check.extend(index[word])
        for space, index in self._prefix.items():
            cache = self._prefix_cache.setdefault(space, {})
            if len(cache) > _PREFIX_CACHE_LIMIT:
                cache.clear()
            lengths = self._prefix_lengths[space]
            for word in text.categories if space == "cat" else text.tokens(space):
                found = cache.get(word)
                if found is None:
                    found = cache[word] = tuple(
                        pid for n in lengths if n <= len(word) for pid in index.get(word[:n], ())
                    )
                check.extend(found)
        return sure, check

    def _add(self, kind: MatchKind, ref_id: int, node: Node) -> None:
        key = (kind, ref_id)
        self._remove(key)
        slot = self._slots[key] = self._next_slot
        self._next_slot += 1
        labels: dict[int, str] = {}
        uses: Counter[int] = Counter()

        def leaf(term: Term) -> int:
            pid = self._intern(compile_term(term))
            labels.setdefault(pid, term_label(term))
            uses[pid] += 1
            return pid

        tree = compile_tree(node, leaf)
        anchors = frozenset(self._anchors(tree))
        positive = tuple((i, labels[i]) for i in dict.fromkeys(positive_leaves(tree)))
        self._queries[slot] = _Query(kind, ref_id, tree, anchors, positive, uses)
        for pid in anchors:
            if isinstance(tree, int):
                self._direct.setdefault(pid, {})[slot] = (kind, ref_id, (labels[pid],))
            else:
                self._nested.setdefault(pid, set()).add(slot)

    def _remove(self, key: tuple[MatchKind, int]) -> bool:
        slot = self._slots.pop(key, None)
        if slot is None:
            return False
        query = self._queries.pop(slot)
        table: dict[int, Any] = self._direct if isinstance(query.tree, int) else self._nested
        for pid in query.anchors:
            keys = table[pid]
            if isinstance(keys, set):
                keys.discard(slot)
            else:
                del keys[slot]
            if not keys:
                del table[pid]
        for pid, count in query.uses.items():
            self._uses[pid] -= count
            if not self._uses[pid]:
                self._index(pid, add=False)
                del self._uses[pid], self._ids[self._patterns.pop(pid)]
        return True

    def _intern(self, pattern: Pattern) -> int:
        pid = self._ids.get(pattern)
        if pid is None:
            pid = self._ids[pattern] = self._next_id
            self._patterns[pid] = pattern
            self._next_id += 1
            self._index(pid, add=True)
        self._uses[pid] += 1
        return pid

    def _anchors(self, tree: Tree) -> set[int]:
        """Patterns under which to index a query: one of them must match for it to."""
        if isinstance(tree, int):
            return {tree}
        is_or, items, _, _ = tree
        options = [self._anchors(item) for item in items]
        if is_or:
            return set().union(*options)
        return min(options, key=lambda s: sum(_pattern_cost(self._patterns[p]) for p in s))

    def _index(self, pid: int, *, add: bool) -> None:
        pattern = self._patterns[pid]
        field, word, is_prefix = _index_key(pattern)
        # One word that is the whole pattern: finding the word IS the match.
        sure = not is_prefix and len(pattern.words) == 1 and field == pattern.field
        tables = self._prefix if is_prefix else self._sure if sure else self._exact
        table = tables.setdefault(field, {})
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
