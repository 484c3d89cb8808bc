"""emerging: the emerging phrases of each week, computed after polls

Revision ID: 0010_emerging
Revises: 0011_reactions
Create Date: 2026-12-01

Written by hand for SQLite and PostgreSQL alike.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
import bot.store.columns

revision = '0010_emerging'
down_revision = '0011_reactions'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('emerging_week',
    sa.Column('week', sa.String(length=10), nullable=False),
    sa.Column('computed_at', bot.store.columns.UTCDateTime(timezone=True), nullable=False),
    sa.Column('complete', sa.Boolean(), nullable=False),
    sa.Column('papers', sa.Integer(), nullable=False),
    sa.Column('phrases', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.PrimaryKeyConstraint('week')
    )


def downgrade() -> None:
    op.drop_table('emerging_week')
