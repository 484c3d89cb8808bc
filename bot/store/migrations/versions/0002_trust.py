"""trust: token versions, case-insensitive address keys, quotas, shared pacing

Revision ID: 0002_trust
Revises: 0001
Create Date: 2026-12-01

Written by hand for SQLite and PostgreSQL alike.
"""

from alembic import op
import sqlalchemy as sa
import bot.store.columns

revision = '0002_trust'
down_revision = '0005_fulltext'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('person', schema=None) as batch_op:
        batch_op.add_column(sa.Column('email_key', sa.String(length=320), nullable=True))
        batch_op.add_column(
            sa.Column('token_version', sa.Integer(), nullable=False, server_default='0')
        )
    # One key per address compared case-insensitively. Should two rows differ only in
    # case, the older keeps the key (and so the lookups); the newer stays reachable by
    # its own links until it leaves.
    op.execute(
        "UPDATE person SET email_key = lower(email) WHERE email IS NOT NULL AND id IN"
        " (SELECT min(id) FROM person WHERE email IS NOT NULL GROUP BY lower(email))"
    )
    with op.batch_alter_table('person', schema=None) as batch_op:
        batch_op.create_unique_constraint('uq_person_email_key', ['email_key'])

    op.create_table('quota',
    sa.Column('key', sa.String(length=400), nullable=False),
    sa.Column('window_start', bot.store.columns.UTCDateTime(timezone=True), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('quota', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_quota_window_start'), ['window_start'], unique=False)

    op.create_table('pacing',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('next_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )


def downgrade() -> None:
    op.drop_table('pacing')
    with op.batch_alter_table('quota', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_quota_window_start'))
    op.drop_table('quota')
    with op.batch_alter_table('person', schema=None) as batch_op:
        batch_op.drop_constraint('uq_person_email_key', type_='unique')
        batch_op.drop_column('token_version')
        batch_op.drop_column('email_key')
