"""reactions: "more like this" / "less like this" per target and paper

Revision ID: 0011_reactions
Revises: 0002_trust
Create Date: 2026-12-01

Written by hand for SQLite and PostgreSQL alike.
"""

from alembic import op
import sqlalchemy as sa
import bot.store.columns

revision = '0011_reactions'
down_revision = '0002_trust'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('reaction',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('target_id', sa.Integer(), nullable=False),
    sa.Column('paper_id', sa.String(length=128), nullable=False),
    sa.Column('leaning', sa.Integer(), nullable=False),
    sa.Column('via', sa.String(length=16), nullable=False),
    sa.Column('created_at', bot.store.columns.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['paper_id'], ['paper.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['target_id'], ['target.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('target_id', 'paper_id', name='uq_reaction')
    )
    with op.batch_alter_table('reaction', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_reaction_target_id'), ['target_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_reaction_paper_id'), ['paper_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('reaction', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_reaction_paper_id'))
        batch_op.drop_index(batch_op.f('ix_reaction_target_id'))
    op.drop_table('reaction')
