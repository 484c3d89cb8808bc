"""The subscription store: SQLModel tables, engine set-up and Alembic migrations."""
