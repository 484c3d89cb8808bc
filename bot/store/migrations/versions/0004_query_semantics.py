"""stored queries keep their meaning under arXiv's reading of the query language

Revision ID: 0004_query_semantics
Revises: 0001
Create Date: 2026-12-07

From this revision on, queries are read as arXiv reads them: words side by side mean
OR (they meant AND), AND binds the term before it (so `a OR b AND c` is `b AND c`, it
was `a OR (b AND c)`), and `au:del_maestro` is the surname Del Maestro (it was surname
Del, given name Maestro). Every stored alert and topic query is rewritten, with every
operator explicit, so that it matches exactly the papers it matched when it was saved.
Queries that already mean the same, and queries that never parsed, stay as they are.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_query_semantics"
down_revision = "0006_reach"
branch_labels = None
depends_on = None

_TABLES = ("alert", "topic")


def upgrade() -> None:
    # A data migration needs the query language itself: the grammar before this
    # revision lives, frozen, in bot.matching.legacy, beside the one that reads it now.
    from bot.matching.legacy import rewrite_legacy

    bind = op.get_bind()
    for table in _TABLES:
        rows = bind.execute(sa.text(f"SELECT id, query FROM {table}")).all()
        changes = []
        for row_id, query in rows:
            rewritten = rewrite_legacy(query) if query and query.strip() else None
            if rewritten is not None and rewritten != query:
                changes.append({"row_id": row_id, "query": rewritten})
        if changes:
            bind.execute(
                sa.text(f"UPDATE {table} SET query = :query WHERE id = :row_id"),
                changes,
            )


def downgrade() -> None:
    # Nothing to undo: the rewritten queries spell every operator out and group with
    # parentheses, which the grammar before this revision reads the same way (their
    # author terms are written in forms both grammars read alike).
    pass
