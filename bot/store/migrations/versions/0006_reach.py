"""reach: target addresses hold Apprise and webhook URLs (up to 2,048 characters)

Revision ID: 0006_reach
Revises: 0001
Create Date: 2026-12-01

SQLite does not enforce VARCHAR lengths, so only PostgreSQL's column changes.
"""

from alembic import op
import sqlalchemy as sa

revision = '0006_reach'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column(
            "target", "address",
            type_=sa.String(length=2048), existing_type=sa.String(length=320),
            existing_nullable=False,
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column(
            "target", "address",
            type_=sa.String(length=320), existing_type=sa.String(length=2048),
            existing_nullable=False,
        )
