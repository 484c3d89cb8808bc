"""speed ingest: `alert_change`, the feed that keeps a poller's live engine current

Revision ID: 0007_speed_ingest
Revises: 0010_emerging
Create Date: 2026-12-01

A poller keeps one compiled MatchEngine for its whole life and applies only what
changed since its last poll (compiling 1M alerts costs ~40 s; a delta costs µs per
alert). Alerts change in other processes (chat and web in another `serve`), so the
change has to be in the database. Triggers, not the Python writer, fill the log:
a target's deletion removes its alerts by ON DELETE CASCADE, which no Python code
sees; a trigger sees every change, in the writer's own transaction (rolled back with
it). Each row only names the alert: the reader re-reads the alert's current row,
so replaying a change is harmless.
"""

import sqlalchemy as sa
from alembic import op

revision = '0007_speed_ingest'
down_revision = '0010_emerging'
branch_labels = None
depends_on = None

# Ids never change, so a row names the alert by NEW.id (insert, update) or OLD.id (delete).
_SQLITE_TRIGGERS = (
    "CREATE TRIGGER alert_change_insert AFTER INSERT ON alert BEGIN "
    "INSERT INTO alert_change (alert_id) VALUES (NEW.id); END",
    "CREATE TRIGGER alert_change_update AFTER UPDATE OF query, active ON alert "
    "WHEN OLD.query IS NOT NEW.query OR OLD.active IS NOT NEW.active "
    "BEGIN INSERT INTO alert_change (alert_id) VALUES (NEW.id); END",
    "CREATE TRIGGER alert_change_delete AFTER DELETE ON alert BEGIN "
    "INSERT INTO alert_change (alert_id) VALUES (OLD.id); END",
)
_PG_TRIGGERS = (
    "CREATE FUNCTION alert_change_log() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO alert_change (alert_id) "
    "VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END); "
    "RETURN NULL; END $$",
    "CREATE TRIGGER alert_change_write AFTER INSERT OR DELETE ON alert "
    "FOR EACH ROW EXECUTE FUNCTION alert_change_log()",
    "CREATE TRIGGER alert_change_update AFTER UPDATE OF query, active ON alert "
    "FOR EACH ROW WHEN (OLD.query IS DISTINCT FROM NEW.query "
    "OR OLD.active IS DISTINCT FROM NEW.active) "
    "EXECUTE FUNCTION alert_change_log()",
)


def upgrade() -> None:
    op.create_table(
        'alert_change',
        sa.Column('seq', sa.Integer(), nullable=False),
        sa.Column('alert_id', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('seq'),
        sqlite_autoincrement=True,
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in _PG_TRIGGERS if postgres else _SQLITE_TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS alert_change_update ON alert")
        op.execute("DROP TRIGGER IF EXISTS alert_change_write ON alert")
        op.execute("DROP FUNCTION IF EXISTS alert_change_log()")
    else:
        for name in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS alert_change_{name}")
    op.drop_table('alert_change')
