"""ingest_index_queue: the full-text index catches up after ingest, off its transaction

Revision ID: 0010_ingest_index_queue
Revises: 0009_speed_serve
Create Date: 2026-12-01

Writing FTS5 rows or tsvectors cost ingest about 100 us a paper inside its transaction.
Ingest now only queues the ids of the papers it stores or changes; the indexer
(bot/ask/index.py) indexes them in batches and deletes their queue rows in the same
transaction. Papers stored before this revision are indexed already (0005_fulltext and
ingest kept the index current); any that is not, is queued here, so the indexer's first
run leaves every database fully indexed.
"""

from alembic import op
import sqlalchemy as sa

import bot.store.columns

revision = '0010_ingest_index_queue'
down_revision = '0009_speed_serve'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'paper_index_queue',
        sa.Column('paper_id', sa.String(length=128), nullable=False),
        sa.Column('queued_at', bot.store.columns.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['paper_id'], ['paper.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('paper_id'),
    )
    op.execute(
        "INSERT INTO paper_index_queue (paper_id, queued_at) SELECT id, ingested_at FROM paper"
        " WHERE NOT EXISTS (SELECT 1 FROM paper_search WHERE paper_search.paper_id = paper.id)"
    )


def downgrade() -> None:
    # The revisions below keep the index current in ingest's transaction and have no
    # queue: what is still queued is indexed here, as 0005_fulltext's backfill does.
    from bot.ask.index import search_row

    conn = op.get_bind()
    postgres = conn.dialect.name == 'postgresql'
    when = sa.bindparam('published', type_=bot.store.columns.UTCDateTime())
    if postgres:
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
    paper = sa.table(
        'paper',
        sa.column('id', sa.String()),
        sa.column('title', sa.Text()),
        sa.column('abstract', sa.Text()),
        sa.column('authors', sa.JSON()),
        sa.column('published', bot.store.columns.UTCDateTime()),
    )
    queued = sa.select(sa.column('paper_id')).select_from(sa.table('paper_index_queue'))
    rows = conn.execute(sa.select(paper).where(paper.c.id.in_(queued))).mappings().all()
    if rows:
        ids = [r['id'] for r in rows]
        conn.execute(
            sa.text("DELETE FROM paper_search WHERE paper_id = :paper_id"),
            [{'paper_id': pid} for pid in ids],
        )
        batch = [
            dict(search_row(r['id'], r['published'], r['title'], r['abstract'], r['authors'] or []))
            for r in rows
        ]
        for statement in inserts:
            conn.execute(statement, batch)
    op.drop_table('paper_index_queue')
