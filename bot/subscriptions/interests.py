"""Alerts proposed from a person's library: their frequent co-authors as `au:` queries and
their most distinctive title/abstract terms as one keyword alert, each with what it would
have matched in the last four weeks, for the person to accept one by one.

Co-authors: names counted over the entries (given names may be initials: `au:"Y Wu"`
matches "Yi Wu" and "Y. Wu" alike). A name on at least half of the entries (of three
or more) is the library's owner, not a co-author, and is left out.

Terms: words and two-word phrases of titles and abstracts, folded as the matcher folds
them, scored by how many entries use them times how rare they are among the store's
recent papers (`log((N + 1) / (df + 1))`), so "learning" loses to "singleton
abstraction". Stop words and one-entry terms never qualify.

Read (library, recent papers) → plan (pure) → counts; storing the proposals and adding
an accepted alert go through the target's settings and the alert table's owners.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import math
from collections import Counter
from collections.abc import Iterable
from typing import Any, TypedDict, cast

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.matching.query import format_query, parse_query
from bot.matching.textnorm import words
from bot.matching.trial import count_matches
from bot.outbox.targets import set_settings
from bot.store.models import Alert, Paper, Target
from bot.subscriptions.alerts import add_alert
from bot.subscriptions.library import Entry, Library, Name

MAX_COAUTHORS = 5
MAX_TERMS = 5
CORPUS_PAPERS = 3000  # recent papers the rarity of a term is measured on
SETTING = "import_proposals"
STOP = frozenset(
    """a about above across address addressing after again against all also alternative among an
    and any approach approaches are as at
    based be been being between both but by can could do does doing done during each either
    et al for from further given had has have having here how however if in into is it its
    include includes including itself less many may method methods more most much must new not
    novel of on one only or other our out
    over paper per present propose proposed provide results same several should show shows
    since so some such than that the their them then there these they this those through
    thus to two under up upon use used using via was we well were what when where which
    while who whose why will with within without work would yet contains different various
    particular known""".split()  # noqa: SIM905
)


class Proposal(TypedDict):
    n: int
    kind: str  # "coauthor" | "terms"
    query: str
    why: str
    count: int  # papers of the last four weeks it matches
    alert_id: int | None  # set once accepted


def _name_key(name: Name) -> tuple[str, str]:
    family = " ".join(words(name.family))
    given = words(name.given)
    return family, given[0][:1] if given else ""


def _author_query(name: Name) -> str | None:
    given = [w.strip(".") for w in name.given.replace('"', "").split() if w.strip(".")]
    family = name.family.replace('"', "").strip()
    if not given or not family:
        return None
    return f'au:"{" ".join(given)} {family}"'


def coauthors(entries: list[Entry]) -> list[tuple[Name, int]]:
    """(name, entries) of the most frequent co-authors, owner left out."""
    counts: Counter[tuple[str, str]] = Counter()
    shown: dict[tuple[str, str], Name] = {}
    for entry in entries:
        for key in {_name_key(n) for n in entry.authors if n.family}:
            counts[key] += 1
        for name in entry.authors:
            best = shown.get(_name_key(name))
            if best is None or len(name.given) > len(best.given):
                shown[_name_key(name)] = name  # the fullest spelling of the given names
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))  # ties: by name
    if ranked and len(entries) >= 3 and ranked[0][1] >= 0.75 * len(entries):
        ranked = ranked[1:]  # the owner of the library: on (nearly) every entry
    picked = [(shown[k], n) for k, n in ranked if n >= 2 and _author_query(shown[k])]
    return picked[:MAX_COAUTHORS]


def _terms(text: str) -> set[str]:
    found = [w for w in words(text) if len(w) > 2 and not w.isdigit()]
    grams = {w for w in found if w not in STOP}
    grams |= {f"{a} {b}" for a, b in itertools.pairwise(found)
              if a not in STOP and b not in STOP}  # fmt: skip
    return grams


def distinctive_terms(entries: list[Entry], corpus: Iterable[str]) -> list[str]:
    """The MAX_TERMS terms most particular to the library against `corpus` texts."""
    used: Counter[str] = Counter()
    for entry in entries:
        used.update(_terms(f"{entry.title} {entry.abstract}"))
    candidates = {t for t, n in used.items() if n >= 2}
    seen: Counter[str] = Counter()
    total = 0
    for text in corpus:
        total += 1
        seen.update(_terms(text) & candidates)
    scored = sorted(
        candidates,
        key=lambda t: (-used[t] * math.log((total + 1) / (seen[t] + 1)) * (1.3 if " " in t else 1),
                       t),
    )  # fmt: skip
    chosen: list[str] = []
    for term in scored:
        if any(set(term.split(" ")) & set(c.split(" ")) for c in chosen):
            continue  # "store" or "store abstraction" beside "store fragments" adds little
        chosen.append(term)
        if len(chosen) == MAX_TERMS:
            break
    return chosen


def plan_proposals(library: Library, corpus: list[str]) -> list[tuple[str, str, str]]:
    """(kind, query, why) for each proposal, co-authors first (pure)."""
    plans = []
    for name, n in coauthors(library.entries):
        query = _author_query(name)
        assert query is not None
        plans.append(
            ("coauthor", query, f"co-author on {n} of your {len(library.entries)} entries")
        )
    terms = distinctive_terms(library.entries, corpus)
    if terms:
        query = " OR ".join(f'"{t}"' if " " in t else t for t in terms)
        plans.append(("terms", query, "your most distinctive title and abstract terms"))
    return plans


async def _recent_texts(session: AsyncSession) -> list[str]:
    rows = await session.execute(
        select(col(Paper.title), col(Paper.abstract))
        .order_by(col(Paper.published).desc())
        .limit(CORPUS_PAPERS)
    )
    return [f"{title} {abstract}" for title, abstract in rows.all()]


async def propose(*, session: AsyncSession, library: Library) -> list[Proposal]:
    """Numbered proposals with their four-week counts (nothing is stored)."""
    corpus = await _recent_texts(session)
    # Folding and counting thousands of abstracts is CPU work: off the event loop.
    plans = await asyncio.to_thread(plan_proposals, library, corpus)
    queries = [format_query(parse_query(q)) for _, q, _ in plans]
    counts = await count_matches(session=session, exprs=queries) if queries else []
    rows = zip(plans, queries, counts, strict=True)
    return [
        Proposal(n=i, kind=kind, query=query, why=why, count=count, alert_id=None)
        for i, ((kind, _, why), query, count) in enumerate(rows, 1)
    ]


async def keep_proposals(
    *, session: AsyncSession, target: Target, proposals: list[Proposal]
) -> None:
    """Remember the proposals on the person's target until they accept them."""
    await set_settings(session=session, target=target, **{SETTING: list(proposals) or None})


def stored_proposals(target: Target | None) -> list[Proposal]:
    """The proposals waiting on a target (none if it has none)."""
    raw: Any = (target.settings if target is not None else {}).get(SETTING) or []
    keys = set(Proposal.__annotations__)
    return [cast(Proposal, p) for p in raw if isinstance(p, dict) and set(p) == keys]


class NoSuchProposal(LookupError):
    """No proposal with that number waits on this target."""


async def accept(*, session: AsyncSession, target: Target, n: int) -> tuple[Proposal, Alert | None]:
    """Turn proposal `n` into an alert on `target`; (proposal, new alert or None if it
    was accepted before)."""
    # A copy: changing the stored list in place would hide the change from the ORM.
    proposals = copy.deepcopy(stored_proposals(target))
    found = next((p for p in proposals if p.get("n") == n), None)
    if found is None:
        raise NoSuchProposal(n)
    if found.get("alert_id"):
        return found, None
    alert = await add_alert(session=session, target=target, query=str(found["query"]))
    found["alert_id"] = alert.id
    await keep_proposals(session=session, target=target, proposals=proposals)
    return found, alert
