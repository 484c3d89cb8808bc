"""rank: each person's ranking model, kept for the signals it was trained on

Revision ID: 0012_taste_model
Revises: 0010_ingest_index_queue
Create Date: 2026-12-01

Written by hand for SQLite and PostgreSQL alike.
"""

from alembic import op
import sqlalchemy as sa
import bot.store.columns

revision = '0012_taste_model'
down_revision = '0010_ingest_index_queue'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('taste_model',
    sa.Column('person_id', sa.Integer(), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('model', sa.LargeBinary(), nullable=False),
    sa.Column('trained_at', bot.store.columns.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['person_id'], ['person.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('person_id')
    )


def downgrade() -> None:
    op.drop_table('taste_model')
