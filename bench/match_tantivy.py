"""tantivy as the comparison for bench/match.py: index the day, run every query.

An independent implementation of the query language's term semantics for the subset
the generated corpus uses (tests/support/match_corpus.py). Only the parse tree is
shared with papertide (bot.matching.query): words, folding, phrases, prefixes, names
and categories are tantivy's tokenizer, inverted index and queries, so a term-semantics
error in papertide shows up as a difference in the match sets.

Mapping (our term → tantivy):
- text fields are tokenized by tantivy (`simple` tokenizer: runs of letters and digits;
  lower case; ASCII folding, so `Çağatan` → `cagatan`, `Straße` → `strasse`);
- `word` → TermQuery; `"a b"` / `a-b` → PhraseQuery; `word*` → RegexQuery `word.*`;
- `all:` (the default) → the leaf on `ti` OR on `abs` (a phrase never spans the two);
- authors and affiliations are one field each, one value per person, with a gap word
  between them so that a phrase never spans two people;
- `au:Wu_Y` → a phrase on `aui`, where each author is written with given names as
  initials (`Yi Wu` → `y wu`); `au:"Yi Wu"` and `au:Wu` → a phrase / term on `au`;
- `cat:cs.AI` → the category or the archive (`cat:cs`); `cat:cs.*` → RegexQuery `cs\\..*`;
- AND / ANDNOT / OR → BooleanQuery with Must / MustNot / Should.

Known gaps (none met by the generated corpus): LaTeX is tokenized as written (`$\\mu$`
gives `mu`, papertide's `μ`); `au:Wu_Yi` (a given name longer than an initial in the
underscore form) is read as the initial only.
"""

from __future__ import annotations

import re

import tantivy

from bot.matching.query import And, Node, Or, Term
from bot.types import PaperRecord

GAP = "qqgapqq"  # between two people of one field: no alert ever names it
_TEXT = ("ti", "abs", "co", "jr", "au", "aui", "aff")
_FIELDS = {"all": ("ti", "abs")}


def _analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


def _regex_literal(text: str) -> str:
    return re.sub(r"([^A-Za-z0-9])", r"\\\1", text)


class TantivyDay:
    """The schema and the alert queries, built once; `run(papers)` indexes and searches."""

    def __init__(self) -> None:
        builder = tantivy.SchemaBuilder()
        for name in _TEXT:
            builder.add_text_field(name, tokenizer_name="fold", index_option="position")
        builder.add_text_field("cat", tokenizer_name="raw", index_option="basic")
        builder.add_text_field("arch", tokenizer_name="raw", index_option="basic")
        self.schema = builder.build()
        self.analyzer = _analyzer()
        self.queries: list[tuple[object, tantivy.Query]] = []
        self.unmapped = 0
        # A compiled regex (its automaton) costs ~100 KB: share one per distinct pattern,
        # as papertide shares one pattern per distinct term.
        self._regexes: dict[tuple[str, str], tantivy.Query] = {}

    def tokens(self, text: str) -> list[str]:
        return list(self.analyzer.analyze(text))

    # --- queries ---------------------------------------------------------------------------

    def add(self, key: object, node: Node) -> None:
        query = self._node(node)
        if query is None:
            self.unmapped += 1
            return
        self.queries.append((key, query))

    def _node(self, node: Node) -> tantivy.Query | None:
        if isinstance(node, Term):
            return self._term(node)
        if isinstance(node, Or):
            parts = [self._node(n) for n in node.items]
            if any(p is None for p in parts):
                return None
            return tantivy.Query.boolean_query([(tantivy.Occur.Should, p) for p in parts])
        assert isinstance(node, And)
        inc = [self._node(n) for n in node.include]
        exc = [self._node(n) for n in node.exclude]
        if any(p is None for p in (*inc, *exc)):
            return None
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, p) for p in inc] + [(tantivy.Occur.MustNot, p) for p in exc]
        )

    def _term(self, term: Term) -> tantivy.Query | None:
        schema = self.schema
        if term.field == "cat":
            value = term.value.strip().lower()
            if term.prefix:
                return self._regex("cat", _regex_literal(value) + ".*")
            return tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, tantivy.Query.term_query(schema, "cat", value)),
                    (tantivy.Occur.Should, tantivy.Query.term_query(schema, "arch", value)),
                ]
            )
        if term.field == "au" and not term.quoted and "_" in term.value:
            surname, *given = term.value.split("_")
            last = self.tokens(surname)
            initials = [t[0] for part in given for t in self.tokens(part)]
            if last:
                return self._words("aui", [*initials, *last], prefix=False)
        words = self.tokens(term.value)
        if not words:
            return None
        fields = _FIELDS.get(term.field, (term.field,))
        parts = [self._words(f, words, term.prefix) for f in fields]
        if len(parts) == 1:
            return parts[0]
        return tantivy.Query.boolean_query([(tantivy.Occur.Should, p) for p in parts])

    def _words(self, field: str, words: list[str], prefix: bool) -> tantivy.Query:
        schema = self.schema
        if prefix:
            last = _regex_literal(words[-1]) + ".*"
            if len(words) == 1:
                return self._regex(field, last)
            head = [_regex_literal(w) for w in words[:-1]]
            return tantivy.Query.regex_phrase_query(schema, field, [*head, last])
        if len(words) == 1:
            return tantivy.Query.term_query(schema, field, words[0])
        return tantivy.Query.phrase_query(schema, field, words)

    def _regex(self, field: str, pattern: str) -> tantivy.Query:
        found = self._regexes.get((field, pattern))
        if found is None:
            found = self._regexes[field, pattern] = tantivy.Query.regex_query(
                self.schema, field, pattern
            )
        return found

    # --- the day ---------------------------------------------------------------------------

    def _document(self, paper: PaperRecord) -> tantivy.Document:
        people = f" {GAP} ".join(a.name for a in paper.authors)
        initials = f" {GAP} ".join(
            " ".join([*(w[0] for w in words[:-1]), words[-1]])
            for words in (self.tokens(a.name) for a in paper.authors)
            if words
        )
        places = f" {GAP} ".join(x for a in paper.authors for x in a.affiliations)
        cats = [c.strip().lower() for c in paper.categories]
        return tantivy.Document(
            ti=[paper.title], abs=[paper.abstract], co=[paper.comment],
            jr=[paper.journal_ref], au=[people], aui=[initials], aff=[places],
            cat=cats, arch=sorted({c.split(".", 1)[0] for c in cats}),
        )  # fmt: skip

    def run(self, papers: list[PaperRecord]) -> list[tuple[int, object]]:
        """Index `papers` in RAM, run every query: (paper index, query key) per match."""
        index = tantivy.Index(self.schema)
        index.register_tokenizer("fold", _analyzer())
        writer = index.writer(heap_size=200_000_000, num_threads=1)
        for paper in papers:
            writer.add_document(self._document(paper))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        searcher = index.searcher()
        # One segment, filled in order: a hit's doc id is the paper's index.
        assert searcher.num_segments == 1, searcher.num_segments
        n = len(papers)
        found: list[tuple[int, object]] = []
        for key, query in self.queries:
            for _score, address in searcher.search(query, limit=n, count=False).hits:
                found.append((address.doc, key))
        return found
