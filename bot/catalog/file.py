"""The topic catalog: a TOML file loaded, validated and synced into the store.

    [[topic]]
    slug = "rl-for-llm-agents"
    name = "RL for LLM Agents"
    categories = ["cs.LG", "cs.CL", "cs.AI", "cs.MA"]
    query = 'abs:("reinforcement learning" OR GRPO OR PPO) AND abs:agent*'
    related = ["agentic-rl", "credit-assignment-in-rl"]
    description = "optional"

Errors name the file, the line and the field (`TopicsFileError`). Reading the file is
its only I/O, but for `append_topic` (`papertide topics add`), which writes it;
bot/catalog/sync.py puts the catalog into the store.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.errors import QueryError, TopicsFileError
from bot.matching.query import check_query

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_CATEGORY = re.compile(r"^[a-z-]+(?:\.[A-Za-z-]+)?$")
_FIELDS = {"slug", "name", "categories", "query", "related", "description"}


@dataclass(frozen=True, slots=True)
class TopicSpec:
    slug: str
    name: str
    categories: tuple[str, ...]
    query: str
    related: tuple[str, ...] = ()
    description: str = ""


def load_topics(path: Path) -> list[TopicSpec]:
    """Read and validate a catalog; raises TopicsFileError naming file, line and field."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopicsFileError(where, f"cannot read ({exc.strerror})") from exc
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise TopicsFileError(
            where, str(exc).split(" (at")[0], line=int(found.group(1)) if found else None
        ) from exc
    tables = document.get("topic")
    if not isinstance(tables, list) or not tables:
        raise TopicsFileError(where, "no [[topic]] tables", line=1, field="topic")
    starts = [n for n, line in enumerate(text.splitlines(), 1) if line.strip() == "[[topic]]"]
    lines = text.splitlines()
    specs: list[TopicSpec] = []
    related_lines: list[int | None] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables):
        start = starts[index] if index < len(starts) else None

        def line_of(field: str, start: int | None = start) -> int | None:
            if start is None:
                return None
            for n in range(start, len(lines)):
                if lines[n].strip() == "[[topic]]":
                    break
                if re.match(rf"^\s*{re.escape(field)}\s*=", lines[n]):
                    return n + 1
            return start

        spec = _validate(table, where, line_of)
        if spec.slug in seen:
            raise TopicsFileError(
                where,
                f"duplicate slug {spec.slug!r} (first on line {seen[spec.slug]})",
                line=line_of("slug"),
                field="slug",
            )
        seen[spec.slug] = line_of("slug") or 0
        specs.append(spec)
        related_lines.append(line_of("related"))
    for spec, line in zip(specs, related_lines, strict=True):
        for slug in spec.related:
            if slug not in seen:
                raise TopicsFileError(
                    where,
                    f"related topic {slug!r} is not in the catalog",
                    line=line,
                    field="related",
                )
    return specs


def _validate(table: dict[str, Any], where: str, line_of: Any) -> TopicSpec:
    def bad(field: str, message: str) -> TopicsFileError:
        return TopicsFileError(where, message, line=line_of(field), field=field)

    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise bad(unknown[0], f"unknown field {unknown[0]!r}")
    for field in ("slug", "name", "query"):
        if not isinstance(table.get(field), str) or not table[field].strip():
            raise bad(field, f"{field} must be a non-empty string")
    if not _SLUG.match(table["slug"]):
        raise bad("slug", f"slug {table['slug']!r} must be lowercase words joined by '-'")
    lists: dict[str, tuple[str, ...]] = {}
    for field in ("categories", "related"):
        value = table.get(field, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad(field, f"{field} must be a list of strings")
        lists[field] = tuple(value)
    if not lists["categories"]:
        raise bad("categories", "categories must name at least one arXiv category")
    for category in lists["categories"]:
        if not _CATEGORY.match(category):
            raise bad("categories", f"{category!r} is not an arXiv category like cs.LG")
    description = table.get("description", "")
    if not isinstance(description, str):
        raise bad("description", "description must be a string")
    return TopicSpec(
        slug=table["slug"],
        name=table["name"].strip(),
        categories=lists["categories"],
        query=table["query"].strip(),
        related=lists["related"],
        description=description.strip(),
    )


def all_categories(topics: list[TopicSpec]) -> tuple[str, ...]:
    """The union of the topics' categories, sorted: what the arXiv sources poll."""
    return tuple(sorted({c for t in topics for c in t.categories}))


def _toml_string(value: str) -> str:
    # A literal string reads best ('ti:"a b"'); otherwise a JSON string, which is a
    # valid TOML basic string (same escapes, \uXXXX included).
    if "'" not in value and value.isprintable():
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)


def topic_toml(spec: TopicSpec) -> str:
    """One `[[topic]]` table for `spec`, as `load_topics` reads it back."""
    lines = [
        "[[topic]]",
        f"slug = {_toml_string(spec.slug)}",
        f"name = {_toml_string(spec.name)}",
        f"categories = [{', '.join(map(_toml_string, spec.categories))}]",
        f"query = {_toml_string(spec.query)}",
    ]
    if spec.related:
        lines.append(f"related = [{', '.join(map(_toml_string, spec.related))}]")
    if spec.description:
        lines.append(f"description = {_toml_string(spec.description)}")
    return "\n".join(lines) + "\n"


def append_topic(path: Path, spec: TopicSpec) -> None:
    """Add `spec` to the catalog file, checked first: the file is the catalog's source of
    truth (a topic only in the store would go inactive at the next sync). The new text
    is validated as a whole and replaces the file atomically, so a bad topic leaves the
    file as it was."""
    where = str(path)
    try:
        check_query(spec.query)
    except QueryError as exc:
        raise TopicsFileError(where, f"query {spec.query!r}: {exc}", field="query") from exc
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if any(t.slug == spec.slug for t in (load_topics(path) if text.strip() else [])):
        raise TopicsFileError(where, f"slug {spec.slug!r} is already in the catalog", field="slug")
    new_text = text + ("" if not text or text.endswith("\n") else "\n") + "\n" + topic_toml(spec)
    scratch = path.with_name(f".{path.name}.new")
    scratch.write_text(new_text, encoding="utf-8")
    try:
        load_topics(scratch)
    except TopicsFileError as exc:
        scratch.unlink()
        raise TopicsFileError(where, exc.message, field=exc.field) from exc
    os.replace(scratch, path)
