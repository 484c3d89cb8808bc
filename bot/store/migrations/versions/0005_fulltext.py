"""full-text index of papers (paper_search, paper_fts on SQLite) and the ask quota

Revision ID: 0005_fulltext
Revises: 0001
Create Date: 2026-12-01

SQLite gets FTS5 (`porter unicode61`, accents removed) behind a mapping table; PostgreSQL
a tsvector column (`english`) with a GIN index. Papers stored before this revision are indexed here,
in chunks, with the same row builder ingest uses (bot.ask.index.search_row).
"""

from alembic import op
import sqlalchemy as sa

import bot.store.columns

revision = '0005_fulltext'
down_revision = '0004_query_semantics'
branch_labels = None
depends_on = None

_CHUNK = 1000


def _create_sqlite() -> None:
    op.execute(
        "CREATE TABLE paper_search ("
        " doc INTEGER PRIMARY KEY,"
        " paper_id VARCHAR(128) NOT NULL UNIQUE REFERENCES paper (id) ON DELETE CASCADE,"
        " published DATETIME NOT NULL)"
    )
    op.execute(
        "CREATE VIRTUAL TABLE paper_fts USING fts5("
        "title, abstract, authors, affiliations, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    # The FTS row goes with its mapping row (a re-indexed paper, or a deleted paper).
    op.execute(
        "CREATE TRIGGER paper_search_delete AFTER DELETE ON paper_search BEGIN "
        "DELETE FROM paper_fts WHERE rowid = old.doc; END"
    )


def _create_postgresql() -> None:
    op.execute(
        "CREATE TABLE paper_search ("
        " paper_id VARCHAR(128) PRIMARY KEY REFERENCES paper (id) ON DELETE CASCADE,"
        " published TIMESTAMP WITH TIME ZONE NOT NULL,"
        " document TSVECTOR NOT NULL)"
    )
    op.execute("CREATE INDEX ix_paper_search_document ON paper_search USING GIN (document)")


def _backfill() -> None:
    from bot.ask.index import search_row

    conn = op.get_bind()
    dialect = conn.dialect.name
    paper = sa.table(
        'paper',
        sa.column('id', sa.String()),
        sa.column('title', sa.Text()),
        sa.column('abstract', sa.Text()),
        sa.column('authors', sa.JSON()),
        sa.column('published', bot.store.columns.UTCDateTime()),
    )
    when = sa.bindparam('published', type_=bot.store.columns.UTCDateTime())
    if dialect == 'postgresql':
        inserts = [sa.text(
            "INSERT INTO paper_search (paper_id, published, document) VALUES (:paper_id, "
            ":published, setweight(to_tsvector('english', :title), 'A') || "
            "setweight(to_tsvector('english', :abstract), 'B') || "
            "setweight(to_tsvector('english', :authors), 'C') || "
            "setweight(to_tsvector('english', :affiliations), 'D'))"
        ).bindparams(when)]
    else:
        inserts = [
            sa.text(
                "INSERT INTO paper_search (paper_id, published) VALUES (:paper_id, :published)"
            ).bindparams(when),
            sa.text(
                "INSERT INTO paper_fts (rowid, title, abstract, authors, affiliations) "
                "SELECT doc, :title, :abstract, :authors, :affiliations FROM paper_search "
                "WHERE paper_id = :paper_id"
            ),
        ]
    last = ''
    while True:
        rows = conn.execute(
            sa.select(paper).where(paper.c.id > last).order_by(paper.c.id).limit(_CHUNK)
        ).mappings().all()
        if not rows:
            break
        batch = [
            dict(search_row(r['id'], r['published'], r['title'], r['abstract'], r['authors'] or []))
            for r in rows
        ]
        for statement in inserts:
            conn.execute(statement, batch)
        last = rows[-1]['id']


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        _create_postgresql()
    else:
        _create_sqlite()
    _backfill()


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        op.execute("DROP TRIGGER IF EXISTS paper_search_delete")
        op.execute("DROP TABLE IF EXISTS paper_fts")
    op.execute("DROP TABLE IF EXISTS paper_search")
