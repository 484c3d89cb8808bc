"""The store: SQLModel tables, engine set-up, Alembic migrations, the `Store` object and
the one paper ↔ record ↔ row mapping (records.py).

May import: the kernel (bot.config, bot.errors, bot.types, bot.timeutil). Each table is
written by one module of the package that owns it (see ARCHITECTURE.md); the store
itself owns none but the schema.
"""
